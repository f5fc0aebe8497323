"""Data breakpoints (VS Code's "Break When Value Changes"): dataBreakpointInfo names the
memory behind a C/C++ variable, member or expression; setDataBreakpoints watches it, as a
gdb watchpoint in every followed process (``engine.watchpoints``). A stop there has reason
``data breakpoint`` and says the old and new values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mixdbg.dap.inspection import stopped_session
from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import request
from mixdbg.engine.watchpoints import ACCESS_OPTIONS, Watch, WatchSpec
from mixdbg.errors import MixdbgError
from mixdbg.session import Session

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter

ACCESS_TYPES = list(ACCESS_OPTIONS)
#: What a watch on an address shows its value as, by the bytes watched.
SIZED_TYPES = {1: "unsigned char", 2: "short", 4: "int", 8: "long"}


_stopped = stopped_session


def _where(adapter: Adapter, session: Session, arguments: dict[str, Any]) -> tuple[int, int, str]:
    """The frame (thread, level) and C/C++ expression the arguments name."""
    name = str(arguments.get("name", ""))
    if arguments.get("variablesReference"):
        reference = adapter.references.get(int(arguments["variablesReference"]))
        if reference[0] in ("native-locals", "native-globals"):
            _, thread, index = reference
            return thread, session.inspect.stack(thread).frames[index].level or 0, name
        if reference[0] == "children":
            return session.inspect.child_expression(reference[1], name)
        raise DapError("data breakpoints are for C/C++ values")
    if arguments.get("frameId") is not None:
        thread, index = adapter.frames.get(int(arguments["frameId"]))
        frame = session.inspect.stack(thread).frames[index]
        if frame.kind == "python":
            raise DapError("data breakpoints are for C/C++ values: select a native frame")
        return thread, frame.level or 0, name
    stop = session.stop
    if stop is None:
        raise DapError("no stop to evaluate in")
    return stop.thread, 0, name


@request("dataBreakpointInfo", supportsDataBreakpoints=True)
def data_breakpoint_info(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """The memory a variable or expression occupies, as a ``dataId``, or why it cannot be
    watched (``dataId: null``: a Python value, a register, a constant)."""
    session = _stopped(adapter)
    name = str(arguments.get("name", ""))
    try:
        if arguments.get("asAddress"):
            size = int(arguments.get("bytes") or 8)
            address, kind = int(name, 0), SIZED_TYPES.get(size, "")
        else:
            address, size, kind = session.inspect.lvalue(*_where(adapter, session, arguments))
    except (MixdbgError, ValueError) as err:
        reason = err.message if isinstance(err, MixdbgError) else f"{name!r} is not an address"
        return {"dataId": None, "description": reason}
    return {"dataId": f"{address:#x}:{size}:{kind}:{name}", "accessTypes": ACCESS_TYPES, "canPersist": False,
            "description": f"{name} ({size} bytes at {address:#x})"}


def _spec(raw: dict[str, Any]) -> WatchSpec:
    try:
        address, size, kind, label = str(raw["dataId"]).split(":", 3)
        return WatchSpec(int(address, 16), int(size), kind, str(raw.get("accessType") or "write"),
                         raw.get("condition") or None, label)
    except (KeyError, ValueError):
        raise DapError(f"data breakpoint id {raw.get('dataId')!r} did not come from dataBreakpointInfo") from None


@request("setDataBreakpoints")
def set_data_breakpoints(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Replace every data breakpoint: each watched in every followed process (and in
    those that start later), hardware where the machine has the debug registers."""
    session = adapter.session
    if session is None or adapter.ended:
        raise DapError("no program is being debugged")
    specs = [_spec(raw) for raw in arguments.get("breakpoints") or []]
    for number in [n for n, dap_id in adapter.breakpoints.dap_id.items() if dap_id in adapter.breakpoints.data_ids]:
        del adapter.breakpoints.dap_id[number]
    results = session.watchpoints.replace(specs, session.stop.thread if session.stop else None)
    answers, ids = [], set()
    for spec, result in zip(specs, results):
        dap_id = adapter.breakpoints.new_id()
        if isinstance(result, Watch):
            ids.add(dap_id)
            for number in result.numbers.values():
                adapter.breakpoints.dap_id[number] = dap_id
            answer: dict[str, Any] = {"id": dap_id, "verified": True, "description": spec.label}
            if not result.hardware:
                answer["message"] = "a software watchpoint (no debug register left): the program runs much slower"
        else:
            answer = {"id": dap_id, "verified": False, "message": result}
        answers.append(answer)
    adapter.breakpoints.data_ids = ids
    return {"breakpoints": answers}
