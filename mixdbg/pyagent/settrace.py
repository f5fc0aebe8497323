"""The agent's tracer on Python 3.10 and 3.11 (and on 3.12+ when no ``sys.monitoring`` tool
id is free): ``sys.settrace``, with a line tracer only on the frames that need one.

Every new frame passes the global trace function (the interpreter calls it at each call):
:func:`_trace_call`, which looks only at the frame's file, or, while something is armed
for its thread (a step; configuration the engine left pending), :func:`_trace_call_armed`.
A frame gets a local tracer only when its code holds a breakpoint, a step on its thread
needs it (its frame or a caller's), an exception filter needs its exception events, or
stopOnEntry waits for it; every other frame runs without one: no line event reaches
Python. Frames already running when that changes get their tracer from the thread that
applies the change (``sys._current_frames``). While the process is stopped in native code
the engine reaches every thread by writing into memory (the shared block says where): the
armed trace function as the thread's trace object, :func:`attend` as the ``f_trace`` of its
innermost frame.

Standard library only; loaded by path beside ``agent.py`` as ``_mixdbg_agent_settrace``.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import dis
import sys
import threading
from collections.abc import Iterator
from types import CodeType, FrameType
from typing import Any, Callable

NAME = "settrace"
Tracer = Callable[[FrameType, str, Any], Any]

agent: Any = None  # the agent module (install)
_armed: Any = memoryview(bytearray(4)).cast("I")  # the shared block's ``armed`` (install)
#: co_filename -> None (no local tracer), a tracer for all its frames, or a dict by code id
#: (a file with breakpoints: only the code objects that hold one get line events).
_tracers: dict[str, Any] = {}
#: Replaced when the configuration changes: a line tracer made before sees it and steps aside.
_generation: list[object] = [object()]
#: Opcodes of a frame that leaves with a value, not an exception ('return' events carry
#: None both for ``return None`` and for an exception).
_LEAVING = frozenset(dis.opmap[name] for name in ("RETURN_VALUE", "YIELD_VALUE", "YIELD_FROM", "SEND")
                     if name in dis.opmap)


def install(core: Any) -> None:
    """Bind the agent; publish where the engine reaches its threads."""
    global agent, _armed, _trace_object
    agent, _armed = core, core.armed
    # The engine (and the agent for its other threads) write these functions' addresses
    # into frames and thread states without references of their own: they must never be
    # freed (a frame, a thread state releases its reference when it ends).
    for function in (attend, _trace_call, _trace_call_armed):
        ctypes.c_ssize_t.from_address(id(function)).value += 1 << 40
    _trace_object = _trace_object_offset()
    shared = core._shared
    shared.attend, shared.trace_call, shared.attend_call = id(attend), id(_trace_call), id(_trace_call_armed)
    shared.frame_trace, shared.trace_object = _f_trace_offset(), _trace_object


def _found_once(raw: bytes, value: int) -> int:
    """The offset (a multiple of 8) where ``raw`` holds the pointer ``value``, if only once."""
    address = value.to_bytes(8, sys.byteorder)
    found = [offset for offset in range(0, len(raw), 8) if raw[offset:offset + 8] == address]
    return found[0] if len(found) == 1 else 0


def _f_trace_offset() -> int:
    """Where a frame object keeps ``f_trace``: found by setting it and looking (0: not found)."""
    frame = sys._getframe()
    frame.f_trace = attend
    try:
        return _found_once(ctypes.string_at(id(frame), 256), id(attend))
    finally:
        frame.f_trace = None


_thread_state = ctypes.pythonapi.PyThreadState_Get
_thread_state.restype = ctypes.c_void_p


def _trace_object_offset() -> int:
    """Where a thread state keeps its trace function's object: found by setting one and
    looking (0: not found)."""
    previous = sys.gettrace()
    sys.settrace(attend)
    try:
        return _found_once(ctypes.string_at(_thread_state(), 512), id(attend))
    finally:
        sys.settrace(previous)


_trace_object = 0  # install


def start() -> None:
    """Trace this thread and the threads ``threading`` starts from now on."""
    threading.settrace(_trace_call)
    sys.settrace(_trace_entry_call if agent.entry_pending else _trace_call)


def stop() -> None:
    """At exit (the last ``atexit`` handler): no tracing while the interpreter tears down."""
    threading.settrace(None)  # type: ignore[arg-type,unused-ignore]
    sys.settrace(None)


def _arm_thread(ident: int) -> None:
    """Thread ``ident`` takes the armed trace function (if it has the agent's fast one): a
    thread state's trace object written in place, as the engine writes it from a stop."""
    if ident == threading.get_ident():
        if sys.gettrace() is _trace_call:
            sys.settrace(_trace_call_armed)
        return
    if not _trace_object:
        return
    interpreter = ctypes.pythonapi.PyInterpreterState_Get()
    state = _thread_head(interpreter)
    while state:
        if _thread_id(state) == ident:
            slot = ctypes.c_void_p.from_address(state + _trace_object)
            if slot.value == id(_trace_call):
                slot.value = id(_trace_call_armed)
            return
        state = _thread_next(state)


ctypes.pythonapi.PyInterpreterState_Get.restype = ctypes.c_void_p
_thread_head = ctypes.pythonapi.PyInterpreterState_ThreadHead
_thread_head.argtypes, _thread_head.restype = [ctypes.c_void_p], ctypes.c_void_p
_thread_next = ctypes.pythonapi.PyThreadState_Next
_thread_next.argtypes, _thread_next.restype = [ctypes.c_void_p], ctypes.c_void_p
_thread_id = ctypes.pythonapi.PyThreadState_GetID
_thread_id.argtypes, _thread_id.restype = [ctypes.c_void_p], ctypes.c_uint64


# --- choosing a frame's tracer -------------------------------------------------------------

def _file_tracer(filename: str) -> Any:
    info = agent.file_info(filename)
    if info.lines:
        tracer: Any = {}
    elif info.user and (agent.exception_stops.rules.raised or agent.exception_stops.rules.user):
        tracer = _trace_events
    else:
        tracer = None
    _tracers[filename] = tracer
    return tracer


def _code_tracer(codes: dict[int, tuple[CodeType, Any]], code: CodeType) -> Any:
    """The tracer of a code object of a file with breakpoints (by first line: the cheapest
    key, checked; two code objects on one line share the slower way)."""
    entry = codes.get(code.co_firstlineno)
    if entry is not None and entry[0] is code:
        return entry[1]
    lines = agent.code_breakpoints(code)
    if lines:
        tracer: Any = _line_tracer(lines)
    elif agent.is_user(code) and (agent.exception_stops.rules.raised or agent.exception_stops.rules.user):
        tracer = _trace_events
    else:
        tracer = None
    if entry is None:
        codes[code.co_firstlineno] = (code, tracer)
    return tracer


def base_tracer(frame: FrameType) -> Any:
    """The tracer a frame needs with no step armed: its code's breakpoints, the exception
    filters, or stopOnEntry; None: none."""
    code = frame.f_code
    tracer = _tracers.get(code.co_filename, _file_tracer)
    if tracer is _file_tracer:
        tracer = _file_tracer(code.co_filename)
    if tracer.__class__ is dict:
        tracer = _code_tracer(tracer, code)
    return tracer


class _EveryName:
    """Every function name (exception filters need a look at every frame's file)."""

    def __contains__(self, name: object) -> bool:
        return True


#: The names of the code objects that may need a local tracer: those of the scopes that
#: hold a breakpoint's line (read from the source), or every name (_EveryName).
_names: Any = frozenset()


def _trace_call(frame: FrameType, event: str, arg: Any) -> Any:
    """The global trace function: the local tracer of a new frame, most often none. A frame
    whose function's name no breakpoint's scope has is let go at once (the cheapest test
    Python can make here: one set lookup); the others are looked at by file and code."""
    if frame.f_code.co_name not in _names:
        return None
    return _trace_file(frame, event, arg)


def _trace_file(frame: FrameType, event: str, arg: Any, tracers: Any = _tracers.get) -> Any:
    """A new frame's local tracer, by its file, and by code object in a file with breakpoints."""
    code = frame.f_code
    tracer = tracers(code.co_filename, _file_tracer)
    if tracer is None:
        return None
    if tracer.__class__ is dict:
        entry = tracer.get(code.co_firstlineno)
        tracer = entry[1] if entry is not None and entry[0] is code else _code_tracer(tracer, code)
        if tracer is None:
            return None
    elif tracer is _file_tracer:
        return _trace_file(frame, event, arg) if _file_tracer(code.co_filename) is not None else None
    if tracer is _trace_events:
        frame.f_trace_lines = False
    return tracer


def _trace_call_armed(frame: FrameType, event: str, arg: Any) -> Any:
    """The global trace function while something is armed for this thread: pending
    configuration first, then the step of this thread (its lines, or its return value
    for the stop ahead); the fast one again once nothing is left."""
    agent.sync_configuration()
    if agent.my_slot() is None:
        if sys.gettrace() is _trace_call_armed:
            sys.settrace(_trace_call)
        return _trace_file(frame, event, arg)
    return _call_while_armed(frame)


def _trace_entry_call(frame: FrameType, event: str, arg: Any) -> Any:
    """The global trace function while stopOnEntry waits for the main module's first line."""
    if not agent.entry_pending:
        sys.settrace(_trace_call)
        return _trace_file(frame, event, arg)
    if agent.is_entry(frame):
        sys.settrace(_trace_call)
        return _trace_entry
    return _trace_file(frame, event, arg)


def _trace_entry(frame: FrameType, event: str, arg: Any) -> None:
    """The main module's tracer until its first line: the entry stop."""
    if event == "line" and agent.entry_pending:
        agent.entry_stop(frame)
    if frame.f_trace is _trace_entry:
        frame.f_trace = base_tracer(frame)


def _call_while_armed(frame: FrameType) -> Any:
    """A new frame while a step is armed on this thread."""
    tracer = base_tracer(frame)
    slot = agent.my_slot()
    if slot is None:
        return tracer
    if agent.target_reached(frame, slot) or agent.step_needs_frame(frame, slot):
        return _line_tracer(agent.code_breakpoints(frame.f_code)) if not _is_line_tracer(tracer) else tracer
    if tracer is None and agent.show_return_value and slot.mode == agent.STEP_TO_DEPTH \
            and agent.depth_of(frame) == slot.depth + 1:
        frame.f_trace_lines = False
        return _trace_events
    return tracer


def _is_line_tracer(tracer: Any) -> bool:
    return getattr(tracer, "__name__", "") == "trace_lines"


# --- the local tracers ---------------------------------------------------------------------

def _line_tracer(lines: dict[int, list[dict[str, Any]]] | None) -> Tracer:
    """The local tracer of a frame that needs line events: the breakpoints of its code
    (``lines``), steps and everything else while ``armed``."""
    get = lines.get if lines else None
    generation = _generation[0]

    def trace_lines(frame: FrameType, event: str, arg: Any) -> None:
        if event == "line":
            if _armed[0]:  # the step, if any, keeps this tracer on the frame
                current = generation is _generation[0]
                agent.step_line(frame, lines if current else agent.code_breakpoints(frame.f_code))
                return
            if generation is not _generation[0]:  # made before the configuration changed
                frame.f_trace = base_tracer(frame)
                if frame.f_trace is not None:
                    frame.f_trace(frame, event, arg)
            elif get is not None:
                breakpoints = get(frame.f_lineno)
                if breakpoints is not None:
                    agent.hit(frame, breakpoints)
        else:
            _trace_events(frame, event, arg)
    return trace_lines


def _trace_events(frame: FrameType, event: str, arg: Any) -> None:
    """Returns, exceptions and the first instruction after a return (a frame's only
    tracer when it needs no lines: set ``f_trace_lines`` off)."""
    if event == "return":
        _returning(frame, arg)
    elif event == "exception":
        _unwinds[threading.get_native_id()] = (frame, arg[1], arg[2])
        agent.raised(frame, arg[1], arg[2])
    elif event == "opcode":
        frame.f_trace_opcodes = False
        agent.returned_into(frame)


#: Per thread: the frame an exception last went through, the exception and its traceback.
_unwinds: dict[int, tuple[FrameType, BaseException, Any]] = {}


def _returning(frame: FrameType, value: Any) -> None:
    unwinding = value is None and frame.f_code.co_code[frame.f_lasti] not in _LEAVING
    if unwinding:
        seen = _unwinds.get(threading.get_native_id())
        if seen is not None and seen[0] is frame:
            agent.unwinding(frame, seen[1], seen[2])
    if not _armed[0]:
        return
    caller = agent.step_return(frame, value, unwinding)
    if caller is not None:
        if caller.f_trace is None:
            caller.f_trace = _trace_events
            caller.f_trace_lines = False
        caller.f_trace_opcodes = True
        agent._thread().step_frames.append(caller)


def attend(frame: FrameType, event: str, arg: Any) -> None:
    """The tracer the engine writes into a frame while the process is stopped in native
    code: at its first event, apply what the engine left pending, then give the frame the
    tracer it needs (often none) and let that one see this event."""
    agent.sync_configuration()
    if frame.f_trace is attend:
        frame.f_trace = base_tracer(frame)
        slot = agent.my_slot()
        if slot is not None and agent.step_needs_frame(frame, slot) and not _is_line_tracer(frame.f_trace):
            frame.f_trace = _line_tracer(agent.code_breakpoints(frame.f_code))
    tracer = frame.f_trace
    if tracer is not None:
        tracer(frame, event, arg)


# --- what the agent asks of the tracer -----------------------------------------------------

def configuration_changed() -> None:
    """New breakpoints, filters or justMyCode: new frames choose again; running frames
    whose code now holds a breakpoint get line events (the ``<module>`` loop too)."""
    global _names
    _tracers.clear()
    _generation[0] = object()
    filters = agent.exception_stops.rules.raised or agent.exception_stops.rules.user
    _names = _EveryName() if filters else _scope_names(agent._breakpoints)
    if agent.entry_pending and sys.gettrace() is _trace_call:
        sys.settrace(_trace_entry_call)
    for top in list(sys._current_frames().values()):
        frame: FrameType | None = top
        while frame is not None:
            if frame.f_trace is None and frame.f_code.co_filename not in agent._AGENT_FILES:
                frame.f_trace = base_tracer(frame)
            frame = frame.f_back


def _scope_names(breakpoints: dict[str, dict[int, Any]]) -> Any:
    """The names of the code objects whose lines may hold a breakpoint: of every scope
    (module, class, function, lambda, comprehension) that contains a breakpoint's line;
    every name when a file's source cannot be read."""
    names: set[str] = set()
    for path, lines in breakpoints.items():
        try:
            with open(path, "rb") as source:
                tree = ast.parse(source.read(), path)
        except (OSError, SyntaxError, ValueError):
            return _EveryName()
        names.add("<module>")
        for node in ast.walk(tree):
            name = _SCOPES.get(type(node)) or getattr(node, "name", None)
            first, last = getattr(node, "lineno", 0), getattr(node, "end_lineno", 0) or 0
            if name is not None and isinstance(node, _SCOPE_TYPES) and any(first <= line <= last for line in lines):
                names.add(name)
    return frozenset(names)


#: The code object names of the scopes that have no name of their own.
_SCOPES = {ast.Lambda: "<lambda>", ast.ListComp: "<listcomp>", ast.SetComp: "<setcomp>",
           ast.DictComp: "<dictcomp>", ast.GeneratorExp: "<genexpr>"}
_SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, *_SCOPES)


def slots_armed() -> None:
    """The engine armed steps at a native stop: the frames already on those threads' stacks
    get line events, and new frames the armed trace function."""
    by_native = {thread.native_id: thread.ident for thread in threading.enumerate()}
    frames = sys._current_frames()
    for slot in agent._shared.slots:
        ident = by_native.get(slot.tid) if slot.mode else None
        if ident is not None and ident in frames:
            _trace_stack(frames[ident], agent._threads_of(slot.tid))
            _arm_thread(ident)


def step_armed(frame: FrameType) -> None:
    """The calling thread armed a step at ``frame``: it and its callers get line events, and
    new frames the armed trace function."""
    _trace_stack(frame, agent._thread())
    _arm_thread(threading.get_ident())


def _trace_stack(top: FrameType, state: Any) -> None:
    frame: FrameType | None = top
    while frame is not None:
        if agent.is_user(frame.f_code) and not _is_line_tracer(frame.f_trace):
            frame.f_trace = _line_tracer(agent.code_breakpoints(frame.f_code))
            frame.f_trace_lines = True
            state.step_frames.append(frame)
        frame = frame.f_back


def step_ended() -> None:
    """The calling thread's step ended: its frames go back to the tracer they need."""
    state = agent._threads.get(threading.get_native_id())
    if state is None:
        return
    frames, state.step_frames = state.step_frames, []
    if sys.gettrace() is _trace_call_armed:
        sys.settrace(_trace_call)
    for frame in frames:
        frame.f_trace_opcodes = False
        frame.f_trace = base_tracer(frame)
        frame.f_trace_lines = True


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No tracing of this thread meanwhile (evaluation at an uncaught exception's stop)."""
    previous = sys.gettrace()
    sys.settrace(None)
    try:
        yield
    finally:
        sys.settrace(previous)
