"""The Python agent inside the debuggee (standard library only; see docs/dap-design.md).

bootstrap loads this file by path as ``_mixdbg_agent`` and calls :func:`start` before the
user's program. The agent traces Python with ``sys.settrace``/``threading.settrace`` and stops
a thread by calling :data:`trap` with the address of the thread's mailbox; gdb has a
breakpoint on the trap, and the engine answers through the mailbox. Configuration
(breakpoints, exception filters, justMyCode, stopOnEntry) arrives on a Unix socket.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import signal
import site
import sys
import sysconfig
import threading
import time
from types import CodeType, FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Callable

#: Exceptions that are control flow, not errors: never a "raised" stop.
_QUIET_EXCEPTIONS = (StopIteration, StopAsyncIteration, GeneratorExit)
#: 3.12's legacy tracing ignores ``f_trace_opcodes`` set on a running frame unless settrace
#: is called again, which then traces every instruction of the program (3.13 fixed it): there
#: the stop after a return uses a sys.monitoring INSTRUCTION event on the caller's code only.
_MONITOR_RETURNS = sys.version_info[:2] == (3, 12)
#: How long a fork child waits for the engine's welcome (its current configuration) before
#: it runs on with what it inherited; the engine answers within a millisecond or two.
FORK_WELCOME_TIMEOUT = 10.0
#: The signal the engine has gdb deliver to a main thread whose native Step Out has just
#: returned into its Python caller: Python runs its handler at the call's own check for
#: pending work, before the next instruction, so the stop is on the caller's line with the
#: call complete (where debugpy's Step Out and gdb's ``finish`` land). A high real-time
#: signal, taken only while the program has no handler of its own for it.
STEP_SIGNAL = int(getattr(signal, "SIGRTMAX", 64)) - 5


class AgentError(Exception):
    """The engine could not be reached, or went away before the program was let go."""


def _load_sibling(name: str) -> Any:
    """A sibling module, loaded by path like this file (no package is importable)."""
    module_name = f"_mixdbg_agent_{name}"
    if module_name not in sys.modules:
        path = os.path.join(os.path.dirname(__file__), f"{name}.py")
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


if TYPE_CHECKING:
    from mixdbg.pyagent import channel, layout, members, stopsession, values
else:  # in dependency order: stopsession uses members and values
    layout, members, values, stopsession, channel = (
        _load_sibling(name) for name in ("layout", "members", "values", "stopsession", "channel"))
STEP_IN, STEP_TO_DEPTH, STEP_OUT = layout.STEP_IN, layout.STEP_TO_DEPTH, layout.STEP_OUT
#: The agent's own code files, whose frames are never shown (nor counted in K).
_AGENT_FILES = frozenset({__file__, *(module.__file__ for module in (layout, members, values, stopsession, channel))})
_native_trap = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(("Py_GetCompiler", ctypes.pythonapi))
#: The stop: called with a mailbox address, returns when the engine resumes the thread.
#: Tests replace it by a Python callable that plays the engine.
trap: Callable[[int], object] = _native_trap

_shared = layout.Shared(magic=layout.MAGIC, version=layout.VERSION)
#: The shared block as the tracer reads it: memoryview items are the cheapest reads of memory.
_words = memoryview((ctypes.c_uint64 * (ctypes.sizeof(layout.Shared) // 8)).from_buffer(_shared)).cast("B").cast("Q")
_halves = _words.cast("B").cast("I")
_armed = _halves[3:4]  # Shared.armed
_slot_tids = _words[2::2]  # Slot.tid of each slot
_slot_modes = _halves[6::4]  # Slot.mode of each slot

# Configuration, replaced wholesale by the reader thread (never mutated in place).
_breakpoints: dict[str, dict[int, list[dict[str, Any]]]] = {}  # real path -> line -> breakpoints
_hits: dict[int, int] = {}  # breakpoint id -> hits counted so far
_break_raised = False
_break_uncaught = False
_just_my_code = True
_entry_pending = False

# Per code file name (co_filename), filled lazily by the tracer.
_real: dict[str, str] = {}  # co_filename -> real path
_user: dict[str, bool] = {}  # co_filename -> user code (justMyCode)
_tracers: dict[str, Any] = {}  # co_filename -> its frames' line tracer (None: no line events)
_bp_lines: dict[str, dict[int, list[dict[str, Any]]]] = {}  # co_filename -> line -> breakpoints

_AGENT_DIR = os.path.dirname(os.path.realpath(__file__))
_MIXDBG_DIR = os.path.dirname(_AGENT_DIR)


def _library_roots() -> tuple[str, ...]:
    """Directories whose files are never user code: the standard library and site-packages,
    each as configured and resolved (a file's name is checked before it is resolved)."""
    paths = sysconfig.get_paths()
    roots = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    roots += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    roots.append(site.getusersitepackages())
    forms = {os.path.abspath(root) for root in roots} | {os.path.realpath(root) for root in roots}
    return tuple(sorted(os.path.join(root, "") for root in forms))


_LIBRARY_ROOTS = _library_roots()
_bp_basenames: frozenset[str] = frozenset()  # of the files with breakpoints


def is_user_code(filename: str, just_my_code: bool = True) -> bool:
    """Whether a code file is the user's: a real file, not mixdbg's own and, with justMyCode,
    not under the standard library or site-packages."""
    if filename.startswith("<") or not filename:
        return False
    real = os.path.realpath(filename)
    if real.startswith(os.path.join(_MIXDBG_DIR, "")):
        return False
    return not just_my_code or not real.startswith(_LIBRARY_ROOTS)


def _classify(filename: str) -> Any:
    """Classify a code file seen for the first time; the line tracer of its frames. A library
    file is known by its name, unresolved (resolving every file of ``import torch`` costs
    0.1 s), unless a file with breakpoints has its base name."""
    if _just_my_code and filename.startswith(_LIBRARY_ROOTS) and os.path.basename(filename) not in _bp_basenames:
        _real[filename], _user[filename] = "", False
        _tracers[filename] = None
        return None
    real = _real[filename] = os.path.realpath(filename) if not filename.startswith("<") else filename
    user = _user[filename] = is_user_code(real, _just_my_code)
    table = _breakpoints.get(real)
    if table is not None:
        _bp_lines[filename] = table
    tracer = _tracers[filename] = _tracer_for(filename, user)
    return tracer


def _tracer_for(filename: str, user: bool) -> Any:
    if filename in _bp_lines:
        return _trace_breakpoints
    return _trace_steps if user else None


# --- tracing -------------------------------------------------------------------------------

# The tracers run on every call and line: what they read often is bound as a default
# argument (a local variable is the cheapest read). ``_tracers`` is never rebound.

def _trace_call(frame: FrameType, event: str, arg: Any, tracers: Any = _tracers.get) -> Any:
    """The global trace function: a line tracer for user frames and files with breakpoints."""
    tracer = tracers(frame.f_code.co_filename, _classify)
    if tracer is None:
        return None
    if tracer is _classify:
        tracer = _classify(frame.f_code.co_filename)
        if tracer is None:
            return None
    if _armed[0]:
        if _sync_configuration():
            tracer = _tracers.get(frame.f_code.co_filename)
        if tracer is _trace_steps and not _break_raised and not _step_call(frame):
            return None
    if _entry_pending and frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
        return _trace_entry
    return tracer


def _trace_breakpoints(frame: FrameType, event: str, arg: Any, armed: memoryview = _armed) -> Any:
    """The line tracer of files with breakpoints: breakpoints first, then armed steps."""
    if event == "line":
        if armed[0]:
            _step_line(frame)
            return _trace_breakpoints
        lines = _bp_lines.get(frame.f_code.co_filename)
        if lines is not None and frame.f_lineno in lines:
            _hit(frame, lines[frame.f_lineno])
    elif event == "return":
        if _armed[0]:
            _step_return(frame)
    else:
        _other_event(frame, event, arg)
    return _trace_breakpoints


def _trace_steps(frame: FrameType, event: str, arg: Any, armed: memoryview = _armed) -> Any:
    """The line tracer of user files without breakpoints: only armed steps."""
    if event == "line":
        if armed[0]:
            _step_line(frame)
    elif event == "return":
        if _armed[0]:
            _step_return(frame)
    else:
        _other_event(frame, event, arg)
    return _trace_steps


def _other_event(frame: FrameType, event: str, arg: Any) -> None:
    """exception (raised), opcode (the first instruction after a return)."""
    if event == "exception":
        if _break_raised:
            _raised(frame, arg)
    elif event == "opcode":
        _step_opcode(frame)


def _trace_entry(frame: FrameType, event: str, arg: Any) -> Any:
    """The main module's first line: the entry stop (stopOnEntry)."""
    global _entry_pending
    tracer = _tracers.get(frame.f_code.co_filename) or _trace_steps
    if event == "line" and _entry_pending:
        _entry_pending = False
        frame.f_trace = tracer
        _stop(frame, "entry", description="Paused on entry")
        return tracer
    return tracer(frame, event, arg)


def depth_of(frame: FrameType | None) -> int:
    """The number of Python frames from the thread's outermost frame to ``frame`` (outermost: 1)."""
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


def _depth_at_most(frame: FrameType | None, limit: int) -> bool:
    """``depth_of(frame) <= limit``, walking at most ``limit`` frames."""
    for _ in range(limit):
        if frame is None:
            return True
        frame = frame.f_back
    return frame is None


# --- steps (slots) -------------------------------------------------------------------------

def _my_slot() -> layout.Slot | None:
    """The slot armed for the calling thread, if any."""
    tid = threading.get_native_id()
    tids = _slot_tids.tolist()
    if tid not in tids:
        return None
    slot: layout.Slot = _shared.slots[tids.index(tid)]
    return slot if slot.mode else None


def _clear_slot(slot: layout.Slot) -> None:
    slot.tid = slot.mode = slot.depth = 0
    if _shared.armed:
        _shared.armed -= 1


def _arm(mode: int, depth: int) -> None:
    """Arm a step on the calling thread (the agent's own steps use the slots too)."""
    for slot in _shared.slots:
        if not slot.mode:
            slot.tid, slot.mode, slot.depth = threading.get_native_id(), mode, depth
            _shared.armed += 1
            return


def _forget_dead_threads() -> None:
    """Free the mailboxes and slots of threads that have ended (a step can outlive its
    thread: ``next`` on the last line of a thread's function)."""
    alive = _live_thread_ids()
    for tid in [tid for tid in _threads if tid not in alive]:
        del _threads[tid]
    for slot in _shared.slots:
        if slot.mode and slot.tid not in alive:
            _clear_slot(slot)


def _live_thread_ids() -> set[int]:
    """Native ids of the process's threads, those that C code started included."""
    try:
        return {int(tid) for tid in os.listdir("/proc/self/task")}
    except OSError:
        return {thread.native_id for thread in threading.enumerate() if thread.native_id is not None}


def _step_call(frame: FrameType) -> bool:
    """Whether a new frame of a file without breakpoints may stop the step armed on this
    thread: a frame deeper than a ``next`` or ``stepOut`` needs no line events (as in bdb)."""
    slot = _my_slot()
    return slot is None or slot.mode == STEP_IN or _depth_at_most(frame, slot.depth)


def _sync_configuration() -> bool:
    """Whether the engine had configuration pending, now applied. After writing configuration
    at a native stop the engine adds 1 to ``armed`` beyond the slots in use, so that the
    first traced event, in any thread, applies it before a line runs (the reader thread
    may not get the GIL for 5 ms)."""
    modes = _slot_modes.tolist()
    in_use = len(modes) - modes.count(0)
    if _armed[0] <= in_use:
        return False
    _shared.armed = in_use
    _drain()
    return True


def _step_line(frame: FrameType) -> None:
    """A line while ``armed``: pending configuration first (the breakpoints may have changed),
    then the line's breakpoints, then the step armed on this thread."""
    _sync_configuration()
    lines = _bp_lines.get(frame.f_code.co_filename)
    if lines is not None and frame.f_lineno in lines and _hit(frame, lines[frame.f_lineno]):
        return
    slot = _my_slot()
    if slot is None:
        return
    limit = slot.depth - 1 if slot.mode == STEP_OUT else slot.depth
    if slot.mode == STEP_IN or _depth_at_most(frame, limit):
        _stop(frame, "step", description="Paused after step")


def _step_return(frame: FrameType) -> None:
    """A frame the step was waiting for returns: stop in its caller right after the call (as
    debugpy does), through an opcode event in the caller, when the caller is traced."""
    slot = _my_slot()
    if slot is None or not (slot.mode == STEP_IN or _depth_at_most(frame, slot.depth)):
        return
    caller = frame.f_back
    tracer = _tracers.get(caller.f_code.co_filename) if caller is not None else None
    if caller is None or tracer is None:
        return
    if caller.f_trace is None:
        caller.f_trace = tracer
    if _MONITOR_RETURNS:
        if not _watch_instructions(caller.f_code):
            return
    else:
        caller.f_trace_opcodes = True
    _thread().return_frame = caller


def _watch_instructions(code: CodeType) -> bool:
    """3.12: INSTRUCTION events for one code object, to :func:`_on_instruction`."""
    global _monitor_tool
    monitoring = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
    if _monitor_tool is None:
        free = [tool for tool in range(5, 1, -1) if monitoring.get_tool(tool) is None]
        if not free:
            return False
        _monitor_tool = free[0]
        monitoring.use_tool_id(_monitor_tool, "mixdbg")
        monitoring.register_callback(_monitor_tool, monitoring.events.INSTRUCTION, _on_instruction)
    monitoring.set_local_events(_monitor_tool, code, monitoring.events.INSTRUCTION)
    return True


def _on_instruction(code: CodeType, offset: int) -> None:
    frame = sys._getframe(1)
    state = _threads.get(threading.get_native_id())
    if state is not None and state.return_frame is frame:
        sys.monitoring.set_local_events(_monitor_tool, code, 0)  # type: ignore[attr-defined,unused-ignore]
        _step_opcode(frame)


_monitor_tool: int | None = None


def _step_opcode(frame: FrameType) -> None:
    """The first instruction of a caller after the return a step was waiting for."""
    frame.f_trace_opcodes = False
    state = _thread()
    if state.return_frame is frame:
        state.return_frame = None
        if _my_slot() is not None:
            _stop(frame, "step", description="Paused after step")


def _take_step_signal() -> None:
    """Handle :data:`STEP_SIGNAL` (from the main thread, where Python allows it), unless the
    program or a library already does."""
    global _step_signal
    try:
        if signal.getsignal(STEP_SIGNAL) != signal.SIG_DFL:
            return
        signal.signal(STEP_SIGNAL, _on_step_signal)
        signal.siginterrupt(STEP_SIGNAL, False)
    except (ValueError, OSError):  # not the main thread, or no such signal here
        return
    _step_signal = STEP_SIGNAL


def _on_step_signal(signum: int, frame: FrameType | None) -> None:
    """The engine's :data:`STEP_SIGNAL`: a native Step Out returned into ``frame``; stop
    there if the step armed on this thread still waits for a frame that deep. Sent while a
    request is served, it ends the request if it was cancelled."""
    values.raise_if_cancelled()
    slot = _my_slot()
    if frame is not None and slot is not None and slot.mode == STEP_TO_DEPTH and _depth_at_most(frame, slot.depth):
        _stop(frame, "step", description="Paused after step")


# --- breakpoints ---------------------------------------------------------------------------

def _hit(frame: FrameType, breakpoints: list[dict[str, Any]]) -> bool:
    """Evaluate the breakpoints of a line; stop (or log) and say whether the line stopped."""
    stopping: list[int] = []
    for bp in breakpoints:
        try:
            if "condition" in bp and not eval(bp["code"], frame.f_globals, frame.f_locals):
                continue
            _hits[bp["id"]] = hits = _hits.get(bp["id"], 0) + 1
            if "hitCondition" in bp and not values.hit_condition_met(bp["hitCondition"], hits):
                continue
        except Exception as err:  # the user's condition: reported, and the line stops
            _send({"problem": f"breakpoint condition failed: {values.one_line(err)}", "breakpoint": bp["id"]})
            stopping.append(bp["id"])
            continue
        if "logMessage" in bp:
            _send({"output": values.interpolate(bp["logMessage"], frame) + "\n", "pid": os.getpid()})
        else:
            stopping.append(bp["id"])
    if stopping:
        _stop(frame, "breakpoint", breakpoints=stopping, description="Paused on breakpoint")
    return bool(stopping)


def _set_breakpoints(files: dict[str, list[dict[str, Any]]]) -> None:
    """Replace every breakpoint; lines of files already running get traced from now on."""
    global _breakpoints, _bp_lines, _bp_basenames
    table: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for path, bps in files.items():
        for bp in bps:
            if "condition" in bp:
                try:
                    bp["code"] = compile(bp["condition"], "<condition>", "eval")
                except SyntaxError as err:
                    _send({"problem": f"breakpoint condition: {values.one_line(err)}", "breakpoint": bp["id"]})
                    bp["code"] = compile("True", "<condition>", "eval")
            table.setdefault(os.path.realpath(path), {}).setdefault(int(bp["line"]), []).append(bp)
    _breakpoints = table
    _bp_basenames = frozenset(os.path.basename(path) for path in table)
    known = [(name, real or _resolve_if_named(name)) for name, real in list(_real.items())]
    _bp_lines = {name: table[real] for name, real in known if real in table}
    for name, _real_path in known:
        _tracers[name] = _tracer_for(name, _user.get(name, False))
    for top in list(sys._current_frames().values()):
        frame: FrameType | None = top
        while frame is not None:
            if frame.f_code.co_filename in _bp_lines and frame.f_trace in (None, _trace_steps):
                frame.f_trace = _trace_breakpoints
            frame = frame.f_back


def _resolve_if_named(name: str) -> str:
    """The real path of a library file not resolved yet, if a breakpoint file has its name."""
    if os.path.basename(name) not in _bp_basenames:
        return ""
    _real[name] = os.path.realpath(name)
    return _real[name]


# --- exceptions ----------------------------------------------------------------------------

def _exception_info(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> dict[str, str]:
    import traceback  # only at an exception stop: it costs several ms at every start

    text = "".join(traceback.format_exception(kind, exc, tb))
    return {"type": kind.__qualname__, "message": str(exc), "text": text[-(64 << 10):]}


def _raised(frame: FrameType, arg: tuple[type[BaseException], BaseException, TracebackType]) -> None:
    """A raised exception seen in a user frame (a library file traced for its breakpoints
    does not count): stop once per exception object."""
    kind, exc, tb = arg
    state = _thread()
    if issubclass(kind, _QUIET_EXCEPTIONS) or state.reported is exc or _quiet_exit(exc) or \
            not _user.get(frame.f_code.co_filename):
        return
    state.reported = exc  # a strong reference: an id could be reused by the next exception
    info = _exception_info(kind, exc, tb)
    _stop(frame, "exception", description=f"{info['type']}: {info['message']}", exception=info)


def _quiet_exit(exc: BaseException) -> bool:
    """``sys.exit()``, ``sys.exit(0)``: a normal end, never a stop (debugpy's default)."""
    return isinstance(exc, SystemExit) and exc.code in (None, 0)


def _post_mortem(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """An uncaught exception (from an exception hook): stop with the traceback's frames."""
    if not _break_uncaught or _channel is None:
        return
    info = _exception_info(kind, exc, tb)
    frames: list[FrameType] = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename not in _AGENT_FILES:
            frames.insert(0, tb.tb_frame)
        tb = tb.tb_next
    previous = sys.gettrace()
    sys.settrace(None)  # evaluation at this stop must not stop again
    try:
        _stop(None, "exception", description=f"{info['type']}: {info['message']}", exception=info,
              frames=frames)
    finally:
        sys.settrace(previous)


def _excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    _post_mortem(kind, exc, tb)
    _original_excepthook(kind, exc, tb)


def _threading_excepthook(args: Any) -> None:
    if args.exc_type is not SystemExit and args.exc_value is not None:
        _post_mortem(args.exc_type, args.exc_value, args.exc_traceback)
    _original_threading_excepthook(args)


_original_excepthook = sys.excepthook
_original_threading_excepthook = threading.excepthook


# --- stops ---------------------------------------------------------------------------------

class _ThreadState:
    """What the agent keeps per thread: its mailbox and step/exception bookkeeping."""

    __slots__ = ("mailbox", "reported", "return_frame")

    def __init__(self) -> None:
        self.mailbox: layout.Mailbox | None = None
        self.reported: BaseException | None = None
        self.return_frame: FrameType | None = None


_threads: dict[int, _ThreadState] = {}


def _thread() -> _ThreadState:
    tid = threading.get_native_id()
    state = _threads.get(tid)
    if state is None:
        state = _threads[tid] = _ThreadState()
    return state


def _mailbox(state: _ThreadState) -> layout.Mailbox:
    if state.mailbox is None:
        state.mailbox = layout.Mailbox(magic=layout.MAGIC, shared=ctypes.addressof(_shared), tid=threading.get_native_id())
    return state.mailbox


def _user_frames(frame: FrameType | None) -> list[FrameType]:
    """The thread's Python frames from ``frame`` outward, the agent's own left out (index K)."""
    frames = []
    while frame is not None:
        if frame.f_code.co_filename not in _AGENT_FILES:
            frames.append(frame)
        frame = frame.f_back
    return frames


def _stop(frame: FrameType | None, reason: str, *, breakpoints: list[int] | None = None,
          description: str = "", exception: dict[str, str] | None = None,
          frames: list[FrameType] | None = None) -> None:
    """Stop the calling thread: trap until the engine resumes it, serving its requests."""
    _forget_dead_threads()
    state = _thread()
    slot = _my_slot()
    if slot is not None:
        _clear_slot(slot)
    state.return_frame = None
    depth = depth_of(frame)
    message: dict[str, Any] = {"event": "stopped", "reason": reason, "breakpoints": breakpoints or [],
                               "depth": depth, "description": description}
    if exception is not None:
        message["exception"] = exception
    if frames is not None:
        message["frames"] = [values.frame_record(f) for f in frames]
    mailbox = _mailbox(state)
    # A request is cancelled by the engine writing into ``in`` while it runs (DAP cancel, Pause).
    session = stopsession.StopSession(frames if frames is not None else _user_frames(frame),
                                      cancelled=lambda: mailbox.in_len != 0,
                                      signalled=_step_signal is not None
                                      and threading.current_thread() is threading.main_thread())
    while True:
        command = layout.exchange(mailbox, message, trap) or {"command": "continue"}
        name = command.get("command", "continue")
        if name in ("continue", "next", "stepIn", "stepOut"):
            break
        message = session.handle(command)
    _drain()
    if name == "next" and frame is not None:
        _arm(STEP_TO_DEPTH, depth)
    elif name == "stepIn" and frame is not None:
        _arm(STEP_IN, 0)
    elif name == "stepOut" and frame is not None:
        _arm(STEP_OUT, depth)


# --- the config channel --------------------------------------------------------------------

_channel: Any = None  # channel.Channel, once connected
_socket_path = ""
_step_signal: int | None = None  # STEP_SIGNAL once its handler is ours


def _send(message: dict[str, Any]) -> None:
    """One line of JSON to the engine, if connected."""
    if _channel is not None:
        _channel.send(message)


def _handle(message: dict[str, Any]) -> None:
    """Apply one configuration message; a malformed one is reported, not raised."""
    global _break_raised, _break_uncaught, _just_my_code, _entry_pending
    try:
        if "breakpoints" in message:
            _set_breakpoints(message["breakpoints"])
        if "exceptions" in message:
            _break_raised = bool(message["exceptions"].get("raised"))
            _break_uncaught = bool(message["exceptions"].get("uncaught"))
        if "justMyCode" in message and bool(message["justMyCode"]) != _just_my_code:
            _just_my_code = bool(message["justMyCode"])
            _forget_files()
        if "stopOnEntry" in message:
            _entry_pending = bool(message["stopOnEntry"])
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        _send({"problem": f"bad configuration message: {values.one_line(err)}"})


def _forget_files() -> None:
    """Classify every file again (justMyCode changed)."""
    for table in (_tracers, _user, _bp_lines, _real):
        table.clear()


def _connect(path: str) -> Any:
    """Connect to the engine and say hello (OSError if it is not there)."""
    global _channel
    _channel = channel.Channel(path)
    _send({"hello": os.getpid(), "shared": ctypes.addressof(_shared), "python": ".".join(map(str, sys.version_info[:3])),
           "step_signal": _step_signal})
    return _channel


def _drain() -> None:
    """Apply what the engine sent while this process was stopped, before running on."""
    if _channel is not None:
        _channel.pump(_handle, wait=0)


def _read_messages(connection: Any, announced: threading.Event) -> None:
    """The reader thread: say which thread it is (the debugger's machinery, not shown as the
    user's), then apply configuration until the engine closes the socket."""
    sys.settrace(None)
    _send({"reader": threading.get_native_id()})
    announced.set()
    while connection.pump(_handle, wait=None):
        pass


def _start_reader(connection: Any) -> None:
    """Start the reader thread, once it told the engine its id (before any stop can list it)."""
    announced = threading.Event()
    threading.Thread(target=_read_messages, args=(connection, announced), name="mixdbg-agent", daemon=True).start()
    announced.wait(1.0)


def start(socket_path: str) -> None:
    """Connect to the engine, apply its configuration until ``{"go": true}``, then trace.

    Raises AgentError when the engine cannot be reached or closes the socket before ``go``:
    the program must never run undebugged."""
    global _socket_path
    _take_step_signal()
    try:
        connection = _connect(socket_path)
    except OSError as err:
        raise AgentError(f"cannot reach the debugger at {socket_path}: {err.strerror or err}") from err
    _socket_path = socket_path
    if not _configured(connection, None):
        raise AgentError("the debugger went away before the program started")
    _start_reader(connection)
    sys.excepthook = _excepthook
    threading.excepthook = _threading_excepthook
    os.register_at_fork(after_in_child=_after_fork_in_child)
    threading.settrace(_trace_call)
    sys.settrace(_trace_call)


def _configured(connection: Any, timeout: float | None) -> bool:
    """Apply the engine's configuration until its ``go``; False if the socket closed first
    or ``timeout`` seconds passed (None: no limit)."""
    started = []

    def handle(message: dict[str, Any]) -> None:
        _handle(message)
        if message.get("go"):
            started.append(True)
    deadline = None if timeout is None else time.monotonic() + timeout
    while not started:
        left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
        if not connection.pump(handle, wait=left) and not started:
            return False
        if deadline is not None and time.monotonic() >= deadline:
            return bool(started)
    return True


def _after_fork_in_child() -> None:
    """A fork child: no slot or mailbox of the parent is ours; reconnect as a new process."""
    global _channel
    for slot in _shared.slots:
        slot.tid = slot.mode = slot.depth = 0
    _shared.armed = 0
    _threads.clear()
    if _channel is not None:
        _channel.abandon()
        _channel = None
    try:
        connection = _connect(_socket_path)
    except OSError:
        return  # the debugger is gone: the child runs on, its stops resume at once
    # The configuration the child inherited may be stale (changed while the fork was under
    # way): the engine's welcome is applied before the child runs another line.
    _configured(connection, FORK_WELCOME_TIMEOUT)
    _start_reader(connection)
