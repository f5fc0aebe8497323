"""Running requests: continue, next, stepIn, stepOut, pause. Steps work in the frame's
own language and cross the Python <-> C/C++ boundary where the code does (the engine's
``stepping``). With ``singleThread`` the request's thread alone runs, as gdb's own adapter
does it (``scheduler-locking``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mixdbg.dap.protocol import DapError
from mixdbg.dap.python_steps import step_target
from mixdbg.dap.registry import request
from mixdbg.session import Session

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter


def _session(adapter: Adapter) -> Session:
    if adapter.session is None or adapter.ended:
        raise DapError("no program is being debugged")
    return adapter.session


def _single(session: Session, arguments: dict[str, Any]) -> bool:
    """Whether the request runs its thread alone (``singleThread``), told to the engine."""
    alone = bool(arguments.get("singleThread"))
    session.run_alone(int(arguments["threadId"]) if alone else None)
    return alone


@request("continue", supportsSingleThreadExecutionRequests=True)
def continue_(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Let every followed process run (all-stop: they all stopped together), or with
    ``singleThread`` the thread alone."""
    session = _session(adapter)
    alone = False
    if session.state == "stopped":
        alone = _single(session, arguments)
        adapter.resumed()
        session.resume()
    return {"allThreadsContinued": not alone}


def _step(adapter: Adapter, arguments: dict[str, Any], kind: str) -> None:
    session = _session(adapter)
    if session.state != "stopped":
        raise DapError("the program is running; steps start from a stop")
    target = step_target(adapter, int(arguments["targetId"])) if arguments.get("targetId") is not None else None
    if arguments.get("granularity") == "instruction" and kind in ("next", "stepIn"):
        kind += "Instruction"
    _single(session, arguments)
    adapter.resumed()
    session.step(kind, int(arguments["threadId"]), 0, target)


@request("next", supportsSteppingGranularity=True)
def next_(adapter: Adapter, arguments: dict[str, Any]) -> None:
    """Step over one line, in Python or C/C++ (one instruction with ``granularity:
    instruction`` in a native frame: the Disassembly view's step)."""
    _step(adapter, arguments, "next")


@request("stepIn")
def step_in(adapter: Adapter, arguments: dict[str, Any]) -> None:
    """Step into the call on this line, across the boundary when it goes there (one
    instruction, into calls, with ``granularity: instruction``); with a ``targetId``
    (Step Into Target), into that call of the Python line."""
    _step(adapter, arguments, "stepIn")


@request("stepOut")
def step_out(adapter: Adapter, arguments: dict[str, Any]) -> None:
    """Run to the caller, Python or native."""
    _step(adapter, arguments, "stepOut")


@request("pause")
def pause(adapter: Adapter, arguments: dict[str, Any]) -> None:
    """Stop every followed process where it is."""
    _session(adapter).interrupt()
