"""Requests about a stopped program: threads, stackTrace, scopes, variables, evaluate,
disassemble, exceptionInfo. Everything comes from the engine's ``Inspector`` (gdb and
memory at native stops; the agent for full Python objects at Python stops)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import request
from mixdbg.engine.frames import is_glue, is_user_native
from mixdbg.engine.inspect import Page, Variable
from mixdbg.errors import MixdbgError
from mixdbg.gdbmi import GdbCommandError
from mixdbg.pytorch import tensors
from mixdbg.session import Session
from mixdbg.sources import local_file, missing_reason
from mixdbg.stack import Frame, MixedStack

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter

#: Python files of the interpreter and installed packages: shown, but quietly.
_LIBRARY_PARTS = ("/lib/python3", "/site-packages/", "/dist-packages/")


def stopped_session(adapter: Adapter) -> Session:
    """The session, stopped: else a one-line error (no program, or it runs)."""
    session = adapter.session
    if session is None or adapter.ended:
        raise DapError("no program is being debugged")
    if session.state != "stopped":
        raise DapError("the program is running; this needs it stopped (pause it first)")
    return session


_stopped = stopped_session


@request("threads")
def threads(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Every thread of every followed process, named after its process."""
    session = adapter.session
    if session is None or adapter.ended:
        return {"threads": []}
    try:
        found = session.inspect.threads()
    except (MixdbgError, GdbCommandError):
        found = []
    if not found:
        return {"threads": [{"id": 1, "name": f"pid {session.pid}"}]}
    return {"threads": [{"id": t.id, "name": t.name} for t in found]}


@request("stackTrace", supportsDelayedStackTraceLoading=True)
def stack_trace(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """The thread's one mixed stack: Python and native frames in the order they ran."""
    session = _stopped(adapter)
    thread = int(arguments["threadId"])
    stack = session.inspect.stack(thread)
    start = int(arguments.get("startFrame") or 0)
    levels = int(arguments.get("levels") or 0) or len(stack.frames)
    cwd = _cwd(session.inspect.pid_of(thread))
    sources: dict[str, dict[str, Any] | None] = {}  # a recursion's 200 frames: one file, looked at once
    frames = [_frame(adapter, thread, index, frame, cwd, sources)
              for index, frame in enumerate(stack.frames[start:start + levels], start)]
    return {"stackFrames": frames, "totalFrames": len(stack.frames)}


def _cwd(pid: int) -> str:
    """Where a process's relative paths (a script run as ``python dir/x.py``) start."""
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return os.getcwd()


def _frame(adapter: Adapter, thread: int, index: int, frame: Frame, cwd: str,
           sources: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    result: dict[str, Any] = {"id": adapter.frames.add((thread, index)), "name": frame.function,
                              "line": frame.line or 0, "column": 1 if frame.line else 0}
    if frame.kind == "python":
        path = os.path.join(cwd, frame.file) if frame.file and not frame.file.startswith("<") else frame.file or ""
        if path not in sources:
            sources[path] = _python_source(path)
        source = sources[path]
        if source is not None:
            result["source"] = source
        else:  # <frozen importlib._bootstrap>, <string>: no file to open
            result["source"] = {"name": path, "presentationHint": "deemphasize", "origin": "no source file"}
            result["presentationHint"] = "subtle"
        return result
    if frame.pc:
        result["instructionPointerReference"] = frame.pc
    library = Path(frame.library or "??").name
    local = local_file(frame.file, (cwd,)) if frame.line else None
    if local is not None:
        result["source"] = {"name": Path(local).name, "path": local}
    elif frame.file and frame.line and not is_glue(frame):
        # debug info naming a file that is not here: say so, keep the line and the disassembly
        # (not for the interpreter's and bindings' frames: an editor would open them first)
        result["source"] = {"name": Path(frame.file).name, "presentationHint": "deemphasize",
                            "origin": missing_reason(frame.file)}
    else:
        result["name"] = f"{library}!{frame.function}"
    if index > 0 and (is_glue(frame) or not is_user_native(frame)):  # the stop's own frame stays in view
        result["presentationHint"] = "subtle"
    return result


def _python_source(path: str) -> dict[str, Any] | None:
    """A Python frame's source (de-emphasised in libraries), or None without a file to open."""
    if not os.path.isfile(path):
        return None
    source: dict[str, Any] = {"name": Path(path).name, "path": path}
    if any(part in path for part in _LIBRARY_PARTS):
        source["presentationHint"] = "deemphasize"
    return source


def _frame_of(adapter: Adapter, frame_id: Any) -> tuple[int, int, MixedStack]:
    session = _stopped(adapter)
    if frame_id is None:
        stop = session.stop
        if stop is None:
            raise DapError("no frame to evaluate in")
        return stop.thread, 0, session.inspect.stack(stop.thread)
    thread, index = adapter.frames.get(int(frame_id))
    return thread, index, session.inspect.stack(thread)


@request("scopes")
def scopes(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """A frame's scopes: decoded tensor/list/scalar arguments at the stop frame of an
    operator or of a function without debug info, then the frame's locals (native or
    Python)."""
    session = _stopped(adapter)
    thread, index, stack = _frame_of(adapter, arguments.get("frameId"))
    frame = stack.frames[index]
    result = []
    # With debug info (a source line) Locals has the arguments, read by gdb's tensor printers;
    # an operator's stop names them after its schema too.
    last = session.last_stop
    named = last is not None and last.op is not None
    if index == 0 and (frame.file is None or named) and _stop_arguments(adapter, session, thread):
        result.append({"name": "Arguments", "presentationHint": "arguments", "expensive": False,
                       "variablesReference": adapter.references.add(("arguments", thread, 0))})
    kind = "python-locals" if frame.kind == "python" else "native-locals"
    result.append({"name": "Locals", "presentationHint": "locals", "expensive": False,
                   "variablesReference": adapter.references.add((kind, thread, index))})
    if frame.kind == "python" and session.inspect.at_python_stop(thread):  # debugpy's second scope
        result.append({"name": "Globals", "expensive": False,
                       "variablesReference": adapter.references.add(("python-globals", thread, index))})
    elif frame.kind == "native":
        if frame.file:  # its source file's globals (read when opened), as gdb's DAP shows them
            result.append({"name": "Globals", "presentationHint": "globals", "expensive": True,
                           "variablesReference": adapter.references.add(("native-globals", thread, index))})
        # gdb's DAP shows them too; setVariable writes them
        result.append({"name": "Registers", "presentationHint": "registers", "expensive": True,
                       "variablesReference": adapter.references.add(("registers", thread, index))})
    return {"scopes": result}


@request("variables", supportsVariableType=True, supportsValueFormattingOptions=True)
def variables(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """The values behind a scope or an expandable value: a page of them (``filter``,
    ``start``, ``count``) for a client that pages; integers in hex with ``format.hex``."""
    session = _stopped(adapter)
    reference = adapter.references.get(int(arguments["variablesReference"]))
    kind = reference[0]
    hex_ints = bool((arguments.get("format") or {}).get("hex"))
    if kind == "arguments":
        found = [_argument(adapter, raw) for raw in _stop_arguments(adapter, session, reference[1])]
    elif kind in ("python-locals", "python-globals"):
        _, thread, index = reference
        scope = "globals" if kind == "python-globals" else "locals"
        try:
            values = session.inspect.python_locals(thread, index, session.inspect.stack(thread), scope, hex_ints)
        except MixdbgError as err:  # unreadable memory at a native stop
            values = [Variable("(locals)", err.message)]
        found = [_variable(adapter, v) for v in values]
    elif kind in ("native-locals", "registers"):
        _, thread, index = reference
        frame = session.inspect.stack(thread).frames[index]
        read = session.inspect.registers if kind == "registers" else session.inspect.native_locals
        try:
            values = read(thread, frame.level or 0, hex_ints)
        except MixdbgError as err:  # no debug info: a library built without -g
            values = [Variable("(no locals)", err.message)]
        found = [_variable(adapter, v) for v in values]
    elif kind == "native-globals":
        _, thread, index = reference
        frame = session.inspect.stack(thread).frames[index]
        found = [_variable(adapter, v) for v in session.inspect.native_globals(thread, frame.level or 0)]
    elif kind == "children":
        found = [_variable(adapter, v) for v in session.inspect.children(reference[1], _page(adapter, arguments))]
    elif kind == "values":
        found = [_plain(adapter, name, wrapped.value) for name, wrapped in reference[1]]
    else:
        raise DapError(f"unknown variables reference kind {kind!r}")
    return {"variables": found}


def _stop_arguments(adapter: Adapter, session: Session, thread: int) -> list[dict[str, Any]]:
    """The stopped frame's tensor, list and scalar arguments, decoded from memory (once
    per stop), when ``thread`` is the one that stopped."""
    last = session.last_stop
    if last is None or last.thread != thread:
        return []
    key = ("decoded arguments", thread)
    if key not in adapter.stop_cache:
        decoded = session.native_arguments(session.inspect.stack(thread), last.op)
        adapter.stop_cache[key] = decoded or []
    found: list[dict[str, Any]] = adapter.stop_cache[key]
    return found


def _page(adapter: Adapter, arguments: dict[str, Any]) -> Page:
    """Which children the client asks for (paging only for a client that says it pages)."""
    hex_ints = bool((arguments.get("format") or {}).get("hex"))
    if not adapter.client.get("supportsVariablePaging"):
        return Page(hex=hex_ints)
    which = arguments.get("filter")
    return Page(int(arguments.get("start") or 0), int(arguments.get("count") or 0),
                str(which) if which in ("indexed", "named") else None, hex_ints)


def _variable(adapter: Adapter, value: Variable) -> dict[str, Any]:
    result: dict[str, Any] = {"name": value.name, "value": value.value, "variablesReference": 0}
    if value.type:
        result["type"] = value.type
    if value.memory is not None and adapter.client.get("supportsMemoryReferences"):
        result["memoryReference"] = hex(value.memory[1])
    if value.children is not None:
        result["variablesReference"] = adapter.references.add(("children", value.children))
        if value.indexed is not None and adapter.client.get("supportsVariablePaging"):
            result["indexedVariables"] = value.indexed
            result["namedVariables"] = value.named or 0
    if value.evaluate is not None:
        result["evaluateName"] = value.evaluate
    hint = presentation_hint(value.hint)
    if hint:
        result["presentationHint"] = hint
    return result


def presentation_hint(hint: str | None) -> dict[str, Any]:
    """The agent's hint words (``readOnly``, ``rawString``, ``virtual``) as DAP's
    ``VariablePresentationHint``."""
    words = (hint or "").split()
    result: dict[str, Any] = {}
    if "virtual" in words:
        result["kind"] = "virtual"
    attributes = [word for word in words if word in ("readOnly", "rawString")]
    if attributes:
        result["attributes"] = attributes
    return result


def _argument(adapter: Adapter, raw: dict[str, Any]) -> dict[str, Any]:
    name = str(raw.get("name") or f"#{raw.get('position')}")
    if "tensor" in raw:
        return _plain(adapter, name, raw["tensor"], raw.get("type"))
    if "tensors" in raw:
        return _plain(adapter, name, raw["tensors"], raw.get("type"))
    if "error" in raw:
        return {"name": name, "value": f"<{raw['error']}>", "variablesReference": 0}
    return _plain(adapter, name, raw.get("value"), raw.get("type"))


def _plain(adapter: Adapter, name: str, value: Any, type_name: str | None = None) -> dict[str, Any]:
    """A value decoded from memory (a tensor's fields, a list), expandable where it has parts."""
    result: dict[str, Any] = {"name": name, "variablesReference": 0}
    if type_name:
        result["type"] = str(type_name)
    if isinstance(value, _Address):
        result["memoryReference"] = str(value)
    if isinstance(value, dict) and "dtype" in value:  # a tensor: as gdb's tensor printers show it
        result["value"] = tensors.summary_line(value)
        parts = tuple((key, _Address(text) if key == "data" else text) for key, text in tensors.fields(value))
        result["variablesReference"] = adapter.references.add(("values", _frozen(parts)))
    elif isinstance(value, dict):
        result["value"] = "{...}"
        result["variablesReference"] = adapter.references.add(("values", _frozen(tuple(value.items()))))
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        result["value"] = f"[{len(value)} items]"
        parts = tuple((f"[{i}]", item) for i, item in enumerate(value))
        result["variablesReference"] = adapter.references.add(("values", _frozen(parts)))
    else:
        result["value"] = _text(value)
    return result


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # as gdb shows a double: alpha = 2
    return str(value)


def _frozen(parts: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    """Make the parts hashable for the id table (lists become tuples of their text)."""
    return tuple((name, _Frozen(value)) for name, value in parts)


class _Address(str):
    """A tensor's ``data``: an address a memory view can open (``memoryReference``)."""


class _Frozen:
    """A decoded value kept as is, hashed by identity (ids are per stop anyway)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return _text(self.value)


@request("evaluate", supportsEvaluateForHovers=True, supportsClipboardContext=True)
def evaluate(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """An expression in the selected frame: Python in Python frames (at Python stops), C/C++
    in native ones; in the debug console also mixdbg's own ``tensor ADDRESS``. ``clipboard``
    (Copy Value): the whole value, untruncated; ``format.hex``: integers in hex."""
    expression = str(arguments.get("expression", "")).strip()
    context = str(arguments.get("context") or "repl")
    session = _stopped(adapter)
    if context == "repl" and expression.startswith("tensor "):
        try:
            found = session.inspect.tensor_at(int(expression.split(None, 1)[1], 0))
        except ValueError:
            raise DapError("tensor ADDRESS: an address like 0x7f...") from None
        if "tensor" not in found:
            raise DapError(str(found.get("error", "no tensor there")))
        return _result(_plain(adapter, expression, found["tensor"]))
    thread, index, _ = _frame_of(adapter, arguments.get("frameId"))
    hex_ints = bool((arguments.get("format") or {}).get("hex"))
    value = session.inspect.evaluate(expression, thread, index, context, hex_ints)
    if value.value.startswith("<") and value.children is None and value.type is None:
        raise DapError(value.value.strip("<>"))
    return _result(_variable(adapter, value))


def _result(variable: dict[str, Any]) -> dict[str, Any]:
    """A VARIABLE as an evaluate (or setExpression) answer's body."""
    result = {"result": variable["value"], "variablesReference": variable["variablesReference"]}
    for key in ("type", "presentationHint", "indexedVariables", "namedVariables", "memoryReference"):
        if key in variable:
            result[key] = variable[key]
    return result


@request("exceptionInfo", supportsExceptionInfoRequest=True)
def exception_info(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """What the exception stop was: a Python exception (type, message, traceback) or a
    native crash's signal."""
    session = _stopped(adapter)
    last = session.last_stop
    if last is None:
        raise DapError("no stop yet")
    if last.python is not None and last.python.get("exception"):
        info = last.python["exception"]
        return {"exceptionId": str(info.get("type", "Exception")), "description": str(info.get("message", "")),
                "breakMode": str(info.get("breakMode", "always")),
                "details": {"typeName": str(info.get("type", "")), "stackTrace": str(info.get("text", ""))}}
    if last.signal:
        return {"exceptionId": last.signal, "description": f"the process received {last.signal}",
                "breakMode": "always"}
    raise DapError("this stop is not an exception")


@request("disassemble", supportsDisassembleRequest=True)
def disassemble(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Exactly ``instructionCount`` instructions around ``memoryReference`` (invalid ones
    where memory cannot be read), for frames without source."""
    session = _stopped(adapter)
    address = int(str(arguments["memoryReference"]), 0) + int(arguments.get("offset") or 0)
    skip = int(arguments.get("instructionOffset") or 0)
    count = int(arguments["instructionCount"])
    start = address + min(skip, 0) * 16 - 64
    end = address + (max(skip, 0) + count) * 16 + 64
    try:
        result = session.gdb.command(f"-data-disassemble -s {max(start, 0):#x} -e {end:#x} -- 0")
        lines = result.get("asm_insns", [])
    except GdbCommandError:
        lines = []
    decoded = [{"address": line["address"], "instruction": line.get("inst", ""),
                "symbol": f"{line.get('func-name', '')}+{line.get('offset', '0')}"} for line in lines]
    at = next((i for i, line in enumerate(decoded) if int(line["address"], 16) >= address), len(decoded))
    first = at + skip
    picked = [decoded[i] if 0 <= i < len(decoded) else {"address": hex(address), "instruction": "??",
                                                        "presentationHint": "invalid"}
              for i in range(first, first + count)]
    return {"instructions": picked}
