"""Requests that change or complete in a stopped frame: setVariable (VARIABLES' Set Value),
setExpression (a Watch edited), completions (the Debug Console). Python at Python stops
through the agent, C/C++ through gdb (the engine's ``editing``), with debugpy's meaning:
the value set is the one the program then uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mixdbg.dap.inspection import _frame_of, _result, _stopped, _variable
from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import request
from mixdbg.engine import editing

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter


def _owner(adapter: Adapter, reference: int) -> editing.Owner:
    """What a ``variablesReference`` names, as the engine's owner of variables."""
    found = adapter.references.get(reference)
    kind = found[0]
    if kind in ("python-locals", "python-globals", "native-locals", "registers"):
        return editing.Owner(kind, thread=found[1], index=found[2])
    if kind == "children":
        handle_kind, handle = found[1]
        return editing.Owner(handle_kind, handle=handle)
    raise DapError("these values are read from memory (a tensor's, a native stop's Python locals): "
                   "they are changed at a Python stop or in a native frame")


def _hex(arguments: dict[str, Any]) -> bool:
    return bool((arguments.get("format") or {}).get("hex"))


@request("setVariable", supportsSetVariable=True)
def set_variable(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Set a local, global, attribute or item (Python) or a local, argument, member or
    register (C/C++) to the value of an expression; the program then uses that value."""
    session = _stopped(adapter)
    owner = _owner(adapter, int(arguments["variablesReference"]))
    changed = editing.set_variable(session.inspect, owner, str(arguments["name"]), str(arguments["value"]),
                                   _hex(arguments))
    shown = _variable(adapter, changed)
    body: dict[str, Any] = {key: shown[key] for key in ("value", "type", "variablesReference", "indexedVariables",
                                        "namedVariables") if key in shown}
    return body


@request("setExpression", supportsSetExpression=True)
def set_expression(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """``expression = value`` in the frame (a Watch expression edited); its new value."""
    session = _stopped(adapter)
    thread, index, _ = _frame_of(adapter, arguments.get("frameId"))
    changed = editing.set_expression(session.inspect, thread, index, str(arguments["expression"]),
                                     str(arguments["value"]), _hex(arguments))
    shown = _result(_variable(adapter, changed))
    shown["value"] = shown.pop("result")
    return shown


@request("completions", supportsCompletionsRequest=True, completionTriggerCharacters=["."])
def completions(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """What the Debug Console offers where the user types: Python names, attributes and
    dict keys in Python frames, C/C++ symbols, locals and members in native ones."""
    session = _stopped(adapter)
    thread, index, _ = _frame_of(adapter, arguments.get("frameId"))
    line, column = arguments.get("line"), int(arguments.get("column", 1))
    if adapter.client.get("columnsStartAt1") is False:
        column += 1
    targets = editing.completions(session.inspect, thread, index, str(arguments.get("text", "")), column,
                                  int(line) if line is not None else None)
    return {"targets": targets}
