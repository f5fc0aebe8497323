"""Breakpoint requests: source lines (Python ones go to the agents, C/C++ ones to gdb),
functions (C/C++ names and ``op:`` operators), exception filters."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mixdbg.breakpoints import BreakSpec, parse_spec
from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import request
from mixdbg.dap.wording import describe
from mixdbg.engine.agents import PythonBreakpoint
from mixdbg.errors import GdbExitedError, MixdbgError
from mixdbg.gdbmi import GdbCommandError
from mixdbg.session import Session

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter

PYTHON_SUFFIXES = (".py", ".pyw")
#: The message of every breakpoint of a launch without debugging.
NOT_DEBUGGING = "Run Without Debugging: breakpoints are not used"


def _session(adapter: Adapter) -> Session:
    if adapter.session is None:
        raise DapError("set breakpoints after launch or attach")
    return adapter.session


def _not_debugging(count: int) -> list[dict[str, Any]]:
    """The answer to ``count`` breakpoints of a launch without debugging (``noDebug``): none is used."""
    return [{"verified": False, "message": NOT_DEBUGGING} for _ in range(count)]


def _check_python_condition(text: str | None, what: str) -> None:
    if not text:
        return
    try:
        compile(text, f"<{what}>", "eval")
    except SyntaxError as err:
        raise DapError(f"{what} {text!r} is not a Python expression: {err.msg}") from None


@request("setBreakpoints", supportsConditionalBreakpoints=True, supportsHitConditionalBreakpoints=True,
         supportsLogPoints=True)
def set_breakpoints(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Replace the breakpoints of one source file: Python lines go to the agents, other
    files' lines (C, C++, Cython's .pyx) to gdb."""
    path = str((arguments.get("source") or {}).get("path") or "")
    if not path:
        raise DapError("setBreakpoints needs a source with a path")
    wanted = arguments.get("breakpoints") or [{"line": line} for line in arguments.get("lines", [])]
    if adapter.program is not None:
        return {"breakpoints": _not_debugging(len(wanted))}
    if path.endswith(PYTHON_SUFFIXES):
        return {"breakpoints": _python_lines(adapter, path, wanted)}
    return {"breakpoints": _native_lines(adapter, path, wanted)}


def _python_lines(adapter: Adapter, path: str, wanted: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if adapter.hub is None:
        message = ("Python breakpoints need a program that mixdbg dap launched; after an attach, "
                   "C/C++ breakpoints work and Python frames are read from memory")
        return [{"verified": False, "line": int(b["line"]), "message": message} for b in wanted]
    for spec in wanted:
        _check_python_condition(spec.get("condition"), "condition")
    chosen = [PythonBreakpoint(id=adapter.breakpoints.new_id(), line=int(b["line"]),
                               condition=b.get("condition") or None, hitCondition=b.get("hitCondition") or None,
                               logMessage=b.get("logMessage") or None) for b in wanted]
    breakpoints = dict(adapter.hub.config.breakpoints)
    breakpoints[str(Path(path).resolve())] = chosen
    if not chosen:
        del breakpoints[str(Path(path).resolve())]
    _session(adapter).configure_agents(breakpoints=breakpoints)
    return [{"id": b.id, "verified": True, "line": b.line, "source": {"path": path}} for b in chosen]


def _native_lines(adapter: Adapter, path: str, wanted: list[dict[str, Any]]) -> list[dict[str, Any]]:
    session = _session(adapter)
    specs = [_line_spec(path, b) for b in wanted]
    for dap_id, number in adapter.breakpoints.by_source.pop(path, []):
        _delete(session, adapter, number)
    result, kept = [], []
    for spec, raw in zip(specs, wanted):
        dap_id = adapter.breakpoints.new_id()
        if raw.get("logMessage"):
            result.append({"id": dap_id, "verified": False, "line": int(raw["line"]),
                           "message": "logpoints are for Python lines; in C/C++ use a condition"})
            continue
        breakpoint = session.table.add(spec, announce=False)
        _hit_condition(session, breakpoint.number, raw.get("hitCondition"))
        adapter.breakpoints.dap_id[breakpoint.number] = dap_id
        kept.append((dap_id, breakpoint.number))
        result.append(describe(dap_id, breakpoint.to_json()))
    adapter.breakpoints.by_source[path] = kept
    return result


def _line_spec(path: str, raw: dict[str, Any]) -> BreakSpec:
    condition = raw.get("condition")
    try:
        return parse_spec(f"{path}:{int(raw['line'])}" + (f" if {condition}" if condition else ""))
    except MixdbgError as err:
        raise DapError(err.message) from None


def _hit_condition(session: Session, number: int, text: str | None) -> None:
    """A C/C++ breakpoint's hit count: "N" (or ">=N") stops from the Nth hit on."""
    if not text:
        return
    digits = text.strip().lstrip(">=").strip()
    if not digits.isdigit():
        raise DapError(f"hit condition {text!r}: C/C++ breakpoints take a number N (stop from the Nth hit)")
    try:
        session.table.ignore(number, max(int(digits) - 1, 0))
    except GdbCommandError as err:
        raise DapError(f"hit condition {text!r}: {err.gdb_message}") from None


def delete_all(adapter: Adapter, breakpoints: list[tuple[int, int]]) -> None:
    """Delete the engine's breakpoints behind a list of (DAP id, engine number)."""
    for _, number in breakpoints:
        _delete(_session(adapter), adapter, number)


#: The root of DAP exception paths for Python, as debugpy names it.
PYTHON_EXCEPTIONS = "Python Exceptions"


def _exception_options(options: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """DAP ``exceptionOptions`` as the agents take them: for each option whose path starts
    at "Python Exceptions", the classes it names (the path's next level; the whole
    category: ``BaseException``) and its break mode. None: no options (the filters rule)."""
    if not options:
        return None
    rules = []
    for option in options:
        path = option.get("path") or []
        if not path or PYTHON_EXCEPTIONS not in (path[0].get("names") or []):
            continue
        names = [str(name) for level in path[1:] for name in level.get("names") or []] or ["BaseException"]
        rules.append({"names": names, "breakMode": str(option.get("breakMode", "never"))})
    return rules


def _delete(session: Session, adapter: Adapter, number: int) -> None:
    adapter.breakpoints.dap_id.pop(number, None)
    try:
        session.table.delete(number)
    except (GdbExitedError, KeyboardInterrupt):
        raise
    except MixdbgError as err:  # already gone (its process exited): nothing to undo
        adapter.say(f"mixdbg: deleting breakpoint {number}: {err.message}")


@request("setFunctionBreakpoints", supportsFunctionBreakpoints=True)
def set_function_breakpoints(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Replace the function breakpoints: C/C++ names (every overload) and ``op:`` operators.
    One bad name or condition fails the request and changes nothing."""
    wanted = arguments.get("breakpoints") or []
    if adapter.program is not None:
        return {"breakpoints": _not_debugging(len(wanted))}
    session = _session(adapter)
    specs = []
    for raw in wanted:
        text = str(raw.get("name", "")).strip() + (f" if {raw['condition']}" if raw.get("condition") else "")
        try:
            specs.append(parse_spec(text))
        except MixdbgError as err:
            raise DapError(err.message) from None
    added: list[tuple[int, int]] = []
    result = []
    try:
        for spec, raw in zip(specs, wanted):
            breakpoint = session.table.add(spec, announce=False)
            dap_id = adapter.breakpoints.new_id()
            added.append((dap_id, breakpoint.number))
            adapter.breakpoints.dap_id[breakpoint.number] = dap_id
            _hit_condition(session, breakpoint.number, raw.get("hitCondition"))
            result.append(describe(dap_id, breakpoint.to_json()))
    except MixdbgError:
        for _, number in added:
            _delete(session, adapter, number)
        raise
    for _, number in adapter.breakpoints.functions:
        _delete(session, adapter, number)
    adapter.breakpoints.functions = added
    adapter.breakpoints.function_ids = {dap_id for dap_id, _ in added}
    return {"breakpoints": result}


@request("setExceptionBreakpoints", supportsExceptionOptions=True)
def set_exception_breakpoints(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Python exceptions (raised, uncaught, user-uncaught) through the agents, per exception
    class with ``exceptionOptions`` (which then replace the Python filters, as in
    debugpy); C++ throw through gdb's catchpoint. Native crashes always stop: the process
    would die unseen otherwise."""
    filters = set(arguments.get("filters") or [])
    filters.update(str(option.get("filterId")) for option in arguments.get("filterOptions") or [])
    if adapter.program is not None:
        return {"breakpoints": _not_debugging(len(filters))}
    _session(adapter).configure_agents(raised="python-raised" in filters, uncaught="python-uncaught" in filters,
                                       user_uncaught="python-user-uncaught" in filters,
                                       exception_options=_exception_options(arguments.get("exceptionOptions")))
    try:
        _session(adapter).table.catch_throw("cpp-throw" in filters)
    except GdbCommandError as err:
        raise DapError(f"C++ throw: {err.gdb_message}") from None
    return {"breakpoints": [{"verified": True} for _ in sorted(filters)]}
