"""Changing and completing in a stopped frame, in either language: setting a variable (a
Python local, global, attribute or item through the agent; a native local, argument,
member or register through gdb's ``-var-assign``), assigning to an expression, and the
completions the Debug Console offers (Python names and attributes from the agent, C/C++
from gdb's ``-complete``).

Nothing here calls a function in the debuggee that gdb could not call safely: gdb's
``may-call-functions`` is off where calls are unsafe (``calls``), and an assignment whose
value would call one fails with one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mixdbg.engine.inspect import Inspector, Variable, gdb_refusal, python_variable
from mixdbg.errors import DebuggerError, UsageError
from mixdbg.gdbmi import GdbCommandError, mi_quote

#: Where gdb's expression completion starts a word (``p a.b`` completes ``b``).
_WORD_BREAK = re.compile(r"[^\w$]")


@dataclass(frozen=True)
class Owner:
    """What a variable to set belongs to: a frame's scope (``kind`` ``python-locals``,
    ``python-globals``, ``native-locals``, ``registers``; ``thread`` and mixed-stack
    ``index``) or a value's members (``kind`` ``py`` or ``var``, ``handle``)."""

    kind: str
    thread: int = 0
    index: int = 0
    handle: Any = None


def set_variable(inspect: Inspector, owner: Owner, name: str, value: str, hex_ints: bool = False) -> Variable:
    """Set member ``name`` of ``owner`` to the value of expression ``value`` (evaluated in
    the owner's frame, as debugpy and gdb do); the member as it is now."""
    if owner.kind in ("python-locals", "python-globals", "py"):
        return _set_python(inspect, owner, name, value, hex_ints)
    if owner.kind in ("native-locals", "registers"):
        level = inspect.frame_at(owner.thread, owner.index).level or 0
        handle = str(inspect.native_varobj(owner.thread, level, name)["name"])
    elif owner.kind == "var":
        handle = _child_handle(inspect, str(owner.handle), name)
    else:
        raise UsageError("this value is read from memory and cannot be changed")
    return _assign(inspect, handle, name, value, hex_ints)


def _set_python(inspect: Inspector, owner: Owner, name: str, value: str, hex_ints: bool) -> Variable:
    request: dict[str, Any] = {"command": "setVariable", "name": name, "value": value, "format": {"hex": hex_ints}}
    if owner.kind == "py":
        request["ref"] = owner.handle
    else:
        inspect.require_python_stop(owner.thread)
        request["frame"] = inspect.python_index(owner.thread, owner.index)
        request["scope"] = "globals" if owner.kind == "python-globals" else "locals"
    return python_variable(inspect.agent_request(request))


def _child_handle(inspect: Inspector, parent: str, name: str) -> str:
    """The variable object of member ``name`` (gdb's ``exp``) of variable object ``parent``."""
    first = int(name) if name.isdigit() else 0
    for start, end in ((first, first + 1), (0, 100_000)):
        try:
            listed = inspect.gdb.command(f"-var-list-children {parent} {start} {end}")
        except GdbCommandError as err:
            raise DebuggerError(f"members: {err.gdb_message}") from err
        for child in listed.get("children", []):
            raw = child if "name" in child else child.get("child", {})
            if str(raw.get("exp")) == name:
                return str(raw["name"])
    raise UsageError(f"no member {name} here")


def _assign(inspect: Inspector, handle: str, name: str, value: str, hex_ints: bool) -> Variable:
    """gdb's ``-var-assign``: the new value is written to the program's memory or register."""
    try:
        inspect.gdb.command(f"-var-assign {handle} {mi_quote(value)}")
        shown = inspect.gdb.command(f"-var-evaluate-expression {'-f hexadecimal ' if hex_ints else ''}{handle}")
        described = inspect.gdb.command(f"-var-info-type {handle}")
    except GdbCommandError as err:
        raise DebuggerError(gdb_refusal(err)) from err
    return Variable(name, str(shown.get("value", "")), described.get("type"))


def set_expression(inspect: Inspector, thread: int, index: int, expression: str, value: str,
                   hex_ints: bool = False) -> Variable:
    """``expression = value`` in frame ``index`` of ``thread``, in the frame's language; the
    expression's new value."""
    frame = inspect.frame_at(thread, index)
    if frame.kind == "python":
        inspect.require_python_stop(thread)
        body = inspect.agent_request({"command": "setExpression", "frame": inspect.python_index(thread, index),
                                      "expression": expression, "value": value, "format": {"hex": hex_ints}})
        return python_variable(body)
    level = frame.level or 0
    try:
        inspect.gdb.command(f"-data-evaluate-expression --thread {thread} --frame {level} "
                            f"{mi_quote(f'({expression}) = ({value})')}")
    except GdbCommandError as err:
        raise DebuggerError(gdb_refusal(err)) from err
    return inspect.native_value(thread, level, expression, hex_ints=hex_ints)


def completions(inspect: Inspector, thread: int, index: int, text: str, column: int,
                line: int | None = None) -> list[dict[str, Any]]:
    """What the Debug Console offers at ``column`` (1-based) of ``text`` in frame ``index``:
    Python names and attributes at a Python stop, C/C++ symbols, locals and members in a
    native frame (gdb's ``complete``); nothing for a Python frame at a native stop (the
    interpreter is frozen)."""
    frame = inspect.frame_at(thread, index)
    if frame.kind == "python":
        if not inspect.at_python_stop(thread):
            return []
        body = inspect.agent_request({"command": "completions", "frame": inspect.python_index(thread, index),
                                      "text": text, "column": column, "line": line})
        targets: list[dict[str, Any]] = body.get("targets", [])
        return targets
    lines = text.splitlines() or [""]
    typed = lines[min(max((line or 1) - 1, 0), len(lines) - 1)][:max(column - 1, 0)]
    try:
        found = inspect.gdb.command(f"-complete --thread {thread} --frame {frame.level or 0} {mi_quote('p ' + typed)}")
    except GdbCommandError as err:
        raise DebuggerError(f"completions: {err.gdb_message}") from err
    return native_targets(typed, [str(match)[2:] for match in found.get("matches", [])])


def native_targets(typed: str, matches: list[str]) -> list[dict[str, Any]]:
    """gdb's completed lines as DAP targets: each replaces the word being typed (after the
    last ``.``, ``->``, space or operator), as a label of its own."""
    breaks = [m.end() for m in _WORD_BREAK.finditer(typed)]
    start = breaks[-1] if breaks else 0
    labels = dict.fromkeys(match[start:] for match in matches if match.startswith(typed[:start]))
    return [{"label": label, "start": start, "length": len(typed) - start} for label in labels if label]
