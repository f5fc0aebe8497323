"""The agent's tracer on Python 3.12+: ``sys.monitoring`` (PEP 669), with events only where
they are needed.

A code object gets events only while it needs them: line events while it holds a
breakpoint (and then only on its breakpoints' lines: every other line location is
``DISABLE``d at its first event), while a step is armed in its frame or a caller's, or
while stopOnEntry waits for it; return events while a step waits for it to return (the
step's caller, the return value shown after the step); one instruction event while a step
waits for the caller a return lands in. The start of a code object is seen once (then
``DISABLE``d); raise events only while the raised filter asks, unwind events only while
the user-uncaught filter asks. When the configuration changes or a step is armed,
``sys.monitoring.restart_events()`` makes every ``DISABLE``d location report again, and
the code of the frames already running is given what it needs at once.

The tool id is ``DEBUGGER_ID`` when it is free, else another free one: a program that
monitors itself (coverage.py 7.4+ takes ``COVERAGE_ID``, profilers ``PROFILER_ID``) keeps
its own. When none is free the agent traces with ``sys.settrace`` and says so.

Standard library only; loaded by path beside ``agent.py`` as ``_mixdbg_agent_monitoring``.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from types import CodeType, FrameType
from typing import Any

NAME = "monitoring"
#: Tool ids in the order they are tried: the debugger's, then those no tool claims by
#: convention, then the optimizer's, the profiler's and coverage's.
TOOL_IDS = (0, 4, 3, 5, 2, 1)

monitoring: Any = getattr(sys, "monitoring", None)
if monitoring is not None:
    EVENTS = monitoring.events
    DISABLE = monitoring.DISABLE
    LINE, PY_RETURN, INSTRUCTION = EVENTS.LINE, EVENTS.PY_RETURN, EVENTS.INSTRUCTION
    STARTS = EVENTS.PY_START | EVENTS.PY_RESUME

agent: Any = None  # the agent module (install)
_armed: Any = memoryview(bytearray(4)).cast("I")  # the shared block's ``armed`` (install)
tool = -1
#: id(code) -> (code, its breakpoints by line): code objects with line events for breakpoints.
_bp_codes: dict[int, tuple[CodeType, dict[int, list[dict[str, Any]]]]] = {}
#: id(code) -> (code, events): what steps (and stopOnEntry) added to a code object's events.
_step_codes: dict[int, tuple[CodeType, int]] = {}


def install(core: Any) -> str | None:
    """Take a free tool id and register the callbacks; the reason when none is free."""
    global agent, _armed, tool
    free = [candidate for candidate in TOOL_IDS if monitoring.get_tool(candidate) is None]
    if not free:
        used = ", ".join(f"{candidate}: {monitoring.get_tool(candidate)}" for candidate in TOOL_IDS)
        return (f"every sys.monitoring tool id is in use ({used}): Python is traced with sys.settrace, "
                "which is slower")
    agent, _armed, tool = core, core.armed, free[0]
    monitoring.use_tool_id(tool, "mixdbg")
    for event, callback in ((EVENTS.PY_START, _on_start), (EVENTS.PY_RESUME, _on_start), (LINE, _on_line),
                            (PY_RETURN, _on_return), (INSTRUCTION, _on_instruction),
                            (EVENTS.RAISE, _on_raise), (EVENTS.PY_UNWIND, _on_unwind)):
        monitoring.register_callback(tool, event, callback)
    return None


def start() -> None:
    """Nothing more to do: the events were set with the configuration."""


def stop() -> None:
    """At exit (the last ``atexit`` handler): no events while the interpreter tears down."""
    monitoring.set_events(tool, 0)
    for code, _ in list(_bp_codes.values()) + list(_step_codes.values()):
        monitoring.set_local_events(tool, code, 0)


# --- the callbacks -------------------------------------------------------------------------

def _on_start(code: CodeType, offset: int) -> Any:
    """A code object starts (or resumes, for a generator): it gets line events if it holds
    a breakpoint; its start is not reported again until something changes."""
    if _armed[0]:
        return _start_while_armed(code, sys._getframe(1))
    _watch_breakpoints(code)
    if agent.entry_pending and code.co_name == "<module>" and agent.is_entry(sys._getframe(1)):
        _add_step_events(code, LINE)
    return DISABLE


def _on_line(code: CodeType, line: int) -> Any:
    """A line of a code object with line events: its breakpoint, or else never again (while
    nothing is armed: a step re-enables every line)."""
    if _armed[0]:
        frame = sys._getframe(1)
        found = _bp_codes.get(id(code))
        agent.step_line(frame, found[1] if found is not None and found[0] is code else None)
        return None
    found = _bp_codes.get(id(code))
    if found is not None and found[0] is code:
        breakpoints = found[1].get(line)
        if breakpoints is not None:
            agent.hit(sys._getframe(1), breakpoints)
            return None
    if agent.entry_pending and id(code) in _step_codes:
        frame = sys._getframe(1)
        if agent.is_entry(frame):
            agent.entry_stop(frame)
            return None
    return DISABLE


def _on_return(code: CodeType, offset: int, value: Any) -> Any:
    """A return a step waits for: keep the value; maybe stop in the caller after the call."""
    if not _armed[0]:
        return DISABLE
    caller = agent.step_return(sys._getframe(1), value, False)
    if caller is not None:
        _add_step_events(caller.f_code, INSTRUCTION)
    return None


def _on_instruction(code: CodeType, offset: int) -> Any:
    """The first instruction of the caller a return landed in (a step waits for it there)."""
    frame = sys._getframe(1)
    state = agent._threads.get(threading.get_native_id())
    if state is not None and state.return_frame is frame:
        agent.returned_into(frame)
        return None
    return None if _armed[0] else DISABLE


def _on_raise(code: CodeType, offset: int, exc: BaseException) -> None:
    agent.raised(sys._getframe(1), exc)


def _on_unwind(code: CodeType, offset: int, exc: BaseException) -> None:
    agent.unwinding(sys._getframe(1), exc)


def _start_while_armed(code: CodeType, frame: FrameType) -> Any:
    """A code object starts while something is armed: pending configuration first, then
    the step of this thread (its lines, or its return value for the stop ahead)."""
    agent.sync_configuration()
    _watch_breakpoints(code)
    slot = agent.my_slot()
    if slot is not None:
        if agent.target_reached(frame, slot) or agent.step_needs_frame(frame, slot):
            _add_step_events(code, LINE | PY_RETURN)
            return None
        if agent.show_return_value and slot.mode == agent.STEP_TO_DEPTH and agent.depth_of(frame) == slot.depth + 1:
            _add_step_events(code, PY_RETURN)
            return None
    # Another thread's Step Into (or Step Into Target) may still call this code.
    return None if _any_step_in() else DISABLE


def _any_step_in() -> bool:
    return any(slot.mode == agent.STEP_IN for slot in agent._shared.slots) or \
        any(state.target is not None for state in list(agent._threads.values()))


# --- events per code object ----------------------------------------------------------------

def _watch_breakpoints(code: CodeType) -> None:
    """Line events for a code object that holds breakpoints (none for one that no longer does)."""
    lines = agent.code_breakpoints(code)
    known = id(code) in _bp_codes
    if lines:
        _bp_codes[id(code)] = (code, lines)
    elif known:
        del _bp_codes[id(code)]
    if lines or known:
        _set_events(code)


def _set_events(code: CodeType) -> None:
    events = (LINE if id(code) in _bp_codes else 0) | _step_codes.get(id(code), (code, 0))[1]
    monitoring.set_local_events(tool, code, events)


def _add_step_events(code: CodeType, events: int) -> None:
    old = _step_codes.get(id(code), (code, 0))[1]
    if old | events != old:
        _step_codes[id(code)] = (code, old | events)
        _set_events(code)


# --- what the agent asks of the tracer -----------------------------------------------------

def configuration_changed() -> None:
    """New breakpoints, filters or justMyCode: the events every code object needs now,
    those of the code already running included; every ``DISABLE``d location reports again."""
    events = STARTS
    if agent.exception_stops.rules.raised:
        events |= EVENTS.RAISE
    if agent.exception_stops.rules.user:
        events |= EVENTS.PY_UNWIND
    monitoring.set_events(tool, events)
    for code, _ in list(_bp_codes.values()):
        _watch_breakpoints(code)
    for top in list(sys._current_frames().values()):
        frame: FrameType | None = top
        while frame is not None:
            _watch_breakpoints(frame.f_code)
            frame = frame.f_back
    monitoring.restart_events()


def slots_armed() -> None:
    """The engine armed steps at a native stop: the code of those threads' frames gets
    what the steps need."""
    by_native = {thread.native_id: thread.ident for thread in threading.enumerate()}
    frames = sys._current_frames()
    for slot in agent._shared.slots:
        ident = by_native.get(slot.tid) if slot.mode else None
        if ident is not None and ident in frames:
            _step_stack(frames[ident])
    monitoring.restart_events()


def step_armed(frame: FrameType) -> None:
    """The calling thread armed a step at ``frame``: its code and its callers' get line and
    return events; every ``DISABLE``d start reports again (a Step Into may go anywhere)."""
    _step_stack(frame)
    monitoring.restart_events()


def _step_stack(top: FrameType) -> None:
    frame: FrameType | None = top
    while frame is not None:
        if agent.is_user(frame.f_code):
            _add_step_events(frame.f_code, LINE | PY_RETURN)
        frame = frame.f_back


def step_ended() -> None:
    """A stop ends every step: the events steps added are removed."""
    codes = [code for code, _ in _step_codes.values()]
    _step_codes.clear()
    for code in codes:
        _set_events(code)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Nothing to do: a stop never nests in its own thread (the agent's guard)."""
    yield
