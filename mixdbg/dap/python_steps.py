"""Where a Python stop can go besides the next line, as debugpy offers it: Step Into Target
(``stepInTargets``, then ``stepIn`` with a ``targetId``: the chosen call on the line) and
Jump to Cursor (``gotoTargets``/``goto``: another line of the stopped function, run from
there). The agent answers both at the Python stop (``pyagent/jumps.py``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import request
from mixdbg.session import Session

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter

#: ``stop_cache`` keys: the targets handed out at this stop (DAP id -> the agent's target).
STEP_TARGETS = "step in targets"


def _python_stop(adapter: Adapter) -> Session:
    session = adapter.session
    if session is None or adapter.ended:
        raise DapError("no program is being debugged")
    if session.state != "stopped" or session.stop is None or session.stop.mailbox is None:
        raise DapError("this needs the program stopped in Python (at a Python breakpoint or step)")
    return session


def _stop_frame(adapter: Adapter, session: Session, frame_id: Any) -> int:
    """The thread of the Python stop, when ``frame_id`` is its stopped frame (or None)."""
    stop = session.stop
    assert stop is not None
    if frame_id is not None:
        thread, index = adapter.frames.get(int(frame_id))
        frames = session.inspect.stack(thread).frames
        first = next((i for i, frame in enumerate(frames) if frame.kind == "python"), None)
        if thread != stop.thread or index != first:
            raise DapError("Step Into Target and Jump to Cursor work in the frame where Python stopped")
    return stop.thread


@request("stepInTargets", supportsStepInTargetsRequest=True)
def step_in_targets(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """The calls on the stopped line, in the order Python makes them."""
    session = _python_stop(adapter)
    thread = _stop_frame(adapter, session, arguments.get("frameId"))
    targets = session.python_request(thread, {"command": "stepInTargets"}).get("targets", [])
    adapter.stop_cache[STEP_TARGETS] = {int(target["id"]): target for target in targets}
    return {"targets": [{key: target[key] for key in ("id", "label", "line", "column", "endLine", "endColumn")}
                        for target in targets]}


def step_target(adapter: Adapter, target_id: int) -> dict[str, Any]:
    """What the agent needs to step into target ``target_id`` of this stop."""
    target = adapter.stop_cache.get(STEP_TARGETS, {}).get(target_id)
    if target is None:
        raise DapError(f"no step-in target {target_id} at this stop (ask stepInTargets first)")
    return {"target": str(target["name"]), "skip": int(target["skip"])}


@request("gotoTargets", supportsGotoTargetsRequest=True)
def goto_targets(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Where Jump to Cursor can go: the line, when it is one of the stopped function's."""
    session = _python_stop(adapter)
    stop = session.stop
    assert stop is not None
    path = str((arguments.get("source") or {}).get("path") or "")
    frame = next((f for f in session.inspect.stack(stop.thread).frames if f.kind == "python"), None)
    if frame is None or frame.file is None or not _same_file(path, frame.file, session.inspect.pid_of(stop.thread)):
        raise DapError(f"{os.path.basename(path) or 'that file'} is not the file of the stopped Python function: "
                       "Python jumps only within the running function")
    body = session.python_request(stop.thread, {"command": "gotoTargets", "line": int(arguments["line"])})
    return {"targets": body.get("targets", [])}


def _same_file(path: str, frame_file: str, pid: int) -> bool:
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = os.getcwd()
    return os.path.realpath(path) == os.path.realpath(os.path.join(cwd, frame_file))


@request("goto")
def goto(adapter: Adapter, arguments: dict[str, Any]) -> None:
    """Jump: the stopped frame goes on from the target line (it has not run yet); the
    stop is reported again there (reason ``goto``)."""
    session = _python_stop(adapter)
    session.jump(int(arguments["threadId"]), int(arguments["targetId"]))
