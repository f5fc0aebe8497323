"""The Python agent inside the debuggee (standard library only; see docs/dap-design.md).

bootstrap loads this file by path as ``_mixdbg_agent`` and calls :func:`start` before the
user's program. The agent stops a thread by calling :data:`trap` with the address of the
thread's mailbox; gdb has a breakpoint on the trap, and the engine answers through the
mailbox. Configuration (breakpoints, exception filters, justMyCode, stopOnEntry) arrives on
a Unix socket, read without a thread of the agent's own: by a thread leaving a stop, and
at the first event after the engine marked it pending (``armed``; see "Attention").

This module holds what both tracers share: configuration, breakpoints, steps, exception
stops and the stop itself. How events reach it is the tracer's: ``monitoring.py``
(``sys.monitoring``, 3.12+) or ``settrace.py`` (``sys.settrace``, 3.10/3.11, and 3.12+ when
no monitoring tool id is free).
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import signal
import site
import sys
import sysconfig
import threading
import time
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any, Callable

#: How long a fork child waits for the engine's welcome (its current configuration) before
#: it runs on with what it inherited; the engine answers within a millisecond or two.
FORK_WELCOME_TIMEOUT = 10.0
#: The agent's attention signal (see "Attention" in docs/dap-design.md): the engine has gdb
#: deliver it to a process's main thread when it wrote configuration or armed a step there
#: and no Python event may come soon enough; Python runs its handler at the main thread's
#: next check for pending work. After a native Step Out into a main thread's Python caller
#: it is delivered right after the call returned: the stop is then on the call's line, the
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
    from mixdbg.pyagent import channel, exception_stops, jumps, layout, members, stopsession, values
else:  # in dependency order: stopsession uses members and values
    layout, members, values, stopsession, channel, jumps, exception_stops = (
        _load_sibling(name)
        for name in ("layout", "members", "values", "stopsession", "channel", "jumps", "exception_stops"))
STEP_IN, STEP_TO_DEPTH, STEP_OUT = layout.STEP_IN, layout.STEP_TO_DEPTH, layout.STEP_OUT
_TRACER_FILES = tuple(os.path.join(os.path.dirname(__file__), f"{name}.py") for name in ("settrace", "monitoring"))
#: The agent's own code files, whose frames are never shown (nor counted in K).
_AGENT_FILES = frozenset({__file__, *(module.__file__ for module in (layout, members, values, stopsession, channel,
                                                                   jumps, exception_stops)),
                          *_TRACER_FILES})
#: The exception events the tracers report (the stops are exception_stops').
raised, unwinding = exception_stops.raised, exception_stops.unwinding
_native_trap = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(("Py_GetCompiler", ctypes.pythonapi))
#: The stop: called with a mailbox address, returns when the engine resumes the thread.
#: Tests replace it by a Python callable that plays the engine.
trap: Callable[[int], object] = _native_trap

_shared = layout.Shared(magic=layout.MAGIC, version=layout.VERSION)
#: The shared block as the tracers read it: memoryview items are the cheapest reads of memory.
_words = memoryview((ctypes.c_uint64 * (ctypes.sizeof(layout.Shared) // 8)).from_buffer(_shared)).cast("B").cast("Q")
_halves = _words.cast("B").cast("I")
armed = _halves[3:4]  # Shared.armed: slots in use, plus 1 while the engine has something pending
_slot_tids = _words[2:2 + 2 * len(_shared.slots):2]  # Slot.tid of each slot
_slot_modes = _halves[6:6 + 4 * len(_shared.slots):4]  # Slot.mode of each slot

# Configuration, replaced wholesale when a message changes it (never mutated in place).
_breakpoints: dict[str, dict[int, list[dict[str, Any]]]] = {}  # real path -> line -> breakpoints
_hits: dict[int, int] = {}  # breakpoint id -> hits counted so far
just_my_code = True
entry_pending = False
show_return_value = True


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


class FileInfo:
    """What the agent knows of one code file (``co_filename``): whether it is user code
    (justMyCode), and its breakpoints by line (None: it has none)."""

    __slots__ = ("lines", "user")

    def __init__(self, user: bool, lines: dict[int, list[dict[str, Any]]] | None) -> None:
        self.user, self.lines = user, lines


_files: dict[str, FileInfo] = {}


def file_info(filename: str) -> FileInfo:
    """The file's info (classified at first sight). A library file is known by its name,
    unresolved (resolving every file of ``import torch`` costs 0.1 s), unless a file with
    breakpoints has its base name."""
    info = _files.get(filename)
    if info is not None:
        return info
    if just_my_code and filename.startswith(_LIBRARY_ROOTS) and os.path.basename(filename) not in _bp_basenames:
        info = FileInfo(False, None)
    else:
        real = os.path.realpath(filename) if not filename.startswith("<") else filename
        info = FileInfo(is_user_code(real, just_my_code), _breakpoints.get(real))
    _files[filename] = info
    return info


def code_breakpoints(code: CodeType) -> dict[int, list[dict[str, Any]]] | None:
    """The breakpoints on lines of ``code`` itself (not of the functions it defines)."""
    lines = file_info(code.co_filename).lines
    if not lines:
        return None
    own = {line: lines[line] for _, _, line in code.co_lines() if line in lines}
    return own or None


def is_user(code: CodeType) -> bool:
    """Whether ``code`` is user code (justMyCode)."""
    return file_info(code.co_filename).user


def is_entry(frame: FrameType) -> bool:
    """Whether ``frame`` is the main module's, where stopOnEntry stops."""
    return frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__" \
        and frame.f_code.co_filename not in _AGENT_FILES


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

def my_slot() -> layout.Slot | None:
    """The slot armed for the calling thread, if any."""
    tid = threading.get_native_id()
    tids = _slot_tids.tolist()
    if tid not in tids:
        return None
    slot: layout.Slot = _shared.slots[tids.index(tid)]
    return slot if slot.mode else None


def _slots_in_use() -> int:
    modes = _slot_modes.tolist()
    return len(modes) - modes.count(0)


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


def step_needs_frame(frame: FrameType, slot: layout.Slot) -> bool:
    """Whether a frame may stop the step of ``slot``: any user frame for a Step Into; one no
    deeper than the step's frame for ``next``; one less deep for ``stepOut``; the target's
    frame for a Step Into Target."""
    if not is_user(frame.f_code):
        return False
    if slot.mode == STEP_IN:
        return True
    state = _threads.get(threading.get_native_id())
    if state is not None and state.target is not None and state.target_frame is frame:
        return True
    return _depth_at_most(frame, slot.depth - 1 if slot.mode == STEP_OUT else slot.depth)


def target_reached(frame: FrameType, slot: layout.Slot) -> bool:
    """Whether ``frame`` (just started) is the call a Step Into Target waits for: the named
    function, called from the step's frame. Remembered, so that its lines stop the step."""
    state = _threads.get(threading.get_native_id())
    if state is None or state.target is None or state.target_frame is not None:
        return False
    if frame.f_code.co_name != state.target or not _depth_at_most(frame, slot.depth + 1) \
            or _depth_at_most(frame, slot.depth):
        return False
    if state.target_skip:  # an earlier call of the same name on the line
        state.target_skip -= 1
        return False
    state.target_frame = frame
    return True


def step_line(frame: FrameType, lines: dict[int, list[dict[str, Any]]] | None) -> None:
    """A line while ``armed``: pending configuration first (the breakpoints may have changed),
    then the line's breakpoints, then the step armed on this thread."""
    if sync_configuration():
        lines = code_breakpoints(frame.f_code)
    if lines is not None and frame.f_lineno in lines and hit(frame, lines[frame.f_lineno]):
        return
    if entry_pending and is_entry(frame):
        entry_stop(frame)
        return
    slot = my_slot()
    if slot is not None and step_needs_frame(frame, slot):
        stop(frame, "step", description="Paused after step")


def step_return(frame: FrameType, value: Any, unwinding: bool) -> FrameType | None:
    """A frame returns while a step is armed on this thread: keep its value for the stop
    ahead (debugpy's ``(return) name``), and return its caller when the step stops there,
    right after the call (as debugpy does): the caller is user code and the step waited
    for this frame or an outer one."""
    slot = my_slot()
    if slot is None:
        return None
    state = _thread()
    deep = not _depth_at_most(frame, slot.depth)
    caller = frame.f_back
    if show_return_value and not unwinding and caller is not None and \
            (slot.mode == STEP_IN or not deep or (slot.mode == STEP_TO_DEPTH and _depth_at_most(frame, slot.depth + 1))):
        state.returns.append((caller, _function_name(frame), value))
    if deep and slot.mode != STEP_IN:
        return None
    if caller is None or not is_user(caller.f_code):
        return None
    state.return_frame = caller
    return caller


def _function_name(frame: FrameType) -> str:
    """A function's name as debugpy shows its return value: ``Class.method`` for a method."""
    code = frame.f_code
    qualname = getattr(code, "co_qualname", None)  # 3.11+
    if qualname is not None:
        return str(qualname).replace(".<locals>", "")
    first = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount and code.co_varnames else None
    if code.co_varnames and code.co_varnames[0] in ("self", "cls") and first is not None:
        owner = first if isinstance(first, type) else type(first)
        return f"{owner.__name__}.{code.co_name}"
    return code.co_name


def returned_into(frame: FrameType) -> None:
    """The first instruction of a caller after the return a step was waiting for."""
    state = _thread()
    if state.return_frame is frame:
        state.return_frame = None
        if my_slot() is not None:
            stop(frame, "step", description="Paused after step")


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
    """The engine's :data:`STEP_SIGNAL`: apply what it left pending; after a native Step
    Out that returned into ``frame``, stop there if the step armed on this thread still
    waits for a frame that deep; after a native Step Into that reached Python (``frame``
    about to run its first line), trace it. Sent while a request is served, it ends the
    request if it was cancelled."""
    values.raise_if_cancelled()
    if not _running:
        return  # still taking the engine's first configuration
    if not sync_configuration():
        _drain()  # configuration sent while the program ran (the engine did not stop it)
    slot = my_slot()
    if frame is None or slot is None:
        return
    if slot.mode == STEP_IN:  # a native Step Into reached Python: this frame's lines stop it
        tracer.step_armed(frame)
    elif slot.mode == STEP_TO_DEPTH and is_user(frame.f_code) and _depth_at_most(frame, slot.depth):
        stop(frame, "step", description="Paused after step")


# --- attention: applying what the engine left pending -----------------------------------------

def sync_configuration() -> bool:
    """Whether the engine had something pending (configuration, or a step armed at a
    native stop), now applied. The engine adds 1 to ``armed`` beyond the slots in use when
    it wrote either, so that the first event that sees it, in any thread, applies it."""
    in_use = _slots_in_use()
    if armed[0] <= in_use:
        return False
    _shared.armed = in_use
    _drain()
    tracer.slots_armed()
    return True


# --- breakpoints ---------------------------------------------------------------------------

def hit(frame: FrameType, breakpoints: list[dict[str, Any]]) -> bool:
    """Evaluate the breakpoints of a line; stop (or log) and say whether the line stopped."""
    stopping: list[int] = []
    for bp in breakpoints:
        try:
            if "code" in bp and not eval(bp["code"], frame.f_globals, frame.f_locals):
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
        stop(frame, "breakpoint", breakpoints=stopping, description="Paused on breakpoint")
    return bool(stopping)


def entry_stop(frame: FrameType) -> None:
    """The main module's first line: the entry stop (stopOnEntry)."""
    global entry_pending
    entry_pending = False
    stop(frame, "entry", description="Paused on entry")


def _set_breakpoints(files: dict[str, list[dict[str, Any]]]) -> None:
    """Replace every breakpoint; the tracer applies them to code already running."""
    global _breakpoints, _bp_basenames
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
    _files.clear()


# --- stops ---------------------------------------------------------------------------------

class ThreadState:
    """What the agent keeps per thread: its mailbox, whether it is at a stop, exception
    bookkeeping, and the step's: the caller a return lands in, return values seen
    (``(caller, name, value)``), a Step Into Target's function name (the calls of that
    name to let by first) and, once called, frame; the frames the tracer gave line events
    for the step."""

    __slots__ = (
        "mailbox",
        "reported",
        "return_frame",
        "returns",
        "step_frames",
        "stopping",
        "target",
        "target_frame",
        "target_skip",
        "unhandled",
    )

    def __init__(self) -> None:
        self.mailbox: layout.Mailbox | None = None
        self.stopping = False
        self.reported: BaseException | None = None
        self.unhandled: BaseException | None = None
        self.return_frame: FrameType | None = None
        self.returns: list[tuple[FrameType, str, Any]] = []
        self.target: str | None = None
        self.target_skip = 0
        self.target_frame: FrameType | None = None
        self.step_frames: list[FrameType] = []


_threads: dict[int, ThreadState] = {}


def _threads_of(tid: int) -> ThreadState:
    """The state of the thread whose native id is ``tid`` (made on first use)."""
    state = _threads.get(tid)
    if state is None:
        state = _threads[tid] = ThreadState()
    return state


def _thread() -> ThreadState:
    return _threads_of(threading.get_native_id())


def _mailbox(state: ThreadState) -> layout.Mailbox:
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


def _end_step(state: ThreadState) -> None:
    """A stop ends the thread's step: its slot, its events, what it remembered."""
    slot = my_slot()
    if slot is not None:
        _clear_slot(slot)
    state.return_frame = state.target = state.target_frame = None
    state.target_skip = 0
    state.returns = []
    tracer.step_ended()


def stop(frame: FrameType | None, reason: str, *, breakpoints: list[int] | None = None,
         description: str = "", exception: dict[str, str] | None = None,
         frames: list[FrameType] | None = None) -> None:
    """Stop the calling thread: trap until the engine resumes it, serving its requests (a
    stop never nests: code evaluated at a stop runs without stopping)."""
    state = _thread()
    if state.stopping:
        return
    state.stopping = True
    try:
        _stop(state, frame, reason, breakpoints, description, exception, frames)
    finally:
        state.stopping = False


def _stop(state: ThreadState, frame: FrameType | None, reason: str, breakpoints: list[int] | None,
          description: str, exception: dict[str, str] | None, frames: list[FrameType] | None) -> None:
    _forget_dead_threads()
    returns = [(name, value) for caller, name, value in state.returns if caller is frame]
    _end_step(state)
    depth = depth_of(frame)
    message: dict[str, Any] = {"event": "stopped", "reason": reason, "breakpoints": breakpoints or [],
                               "depth": depth, "description": description}
    if exception is not None:
        message["exception"] = exception
    if frames is not None:
        message["frames"] = [values.frame_record(f) for f in frames]
    mailbox = _mailbox(state)
    # A request is cancelled by the engine writing into ``in`` while it runs (DAP cancel, Pause).
    session = stopsession.StopSession(frames if frames is not None else _user_frames(frame), returns=returns,
                                      cancelled=lambda: mailbox.in_len != 0,
                                      signalled=_step_signal is not None
                                      and threading.current_thread() is threading.main_thread())
    while True:
        command = layout.exchange(mailbox, message, trap) or {"command": "continue"}
        name = command.get("command", "continue")
        if name in ("continue", "next", "stepIn", "stepOut"):
            break
        message = _answer(session, command, frame, reason)
    _drain()
    sync_configuration()
    if frame is None:
        return
    if name == "continue":
        if my_slot() is not None:  # the engine armed a step here (from an outer frame)
            tracer.step_armed(frame)
        return
    if name == "stepIn" and command.get("target"):
        state.target, state.target_skip = str(command["target"]), int(command.get("skip", 0))
        _arm(STEP_TO_DEPTH, depth)
    else:
        _arm({"next": STEP_TO_DEPTH, "stepIn": STEP_IN, "stepOut": STEP_OUT}[name], 0 if name == "stepIn" else depth)
    tracer.step_armed(frame)


def _answer(session: Any, command: dict[str, Any], frame: FrameType | None, reason: str) -> dict[str, Any]:
    """A request at a stop: the tracer's own (Step Into targets, jumps), or values'."""
    name = command.get("command")
    if name not in ("stepInTargets", "gotoTargets", "goto"):
        reply: dict[str, Any] = session.handle(command)
        return reply
    reply = {"event": "reply", "id": command.get("id")}
    try:
        if frame is None:
            raise ValueError("this stop has no running Python frame (the exception ended it)")
        if name == "stepInTargets":
            reply["body"] = {"targets": jumps.call_targets(frame)}
        elif name == "gotoTargets":
            reply["body"] = {"targets": jumps.goto_targets(frame, int(command["line"]))}
        else:
            reply["body"] = {"line": jumps.jump(frame, int(command["line"]), reason)}
    except Exception as err:  # a line Python cannot jump to, a bad request: one line
        reply["error"] = values.one_line(err)
    return reply


# --- the config channel --------------------------------------------------------------------

_channel: Any = None  # channel.Channel, once connected
_running = False  # configured and let go (the signal handler applies configuration from then on)
_socket_path = ""
_step_signal: int | None = None  # STEP_SIGNAL once its handler is ours
tracer: Any = None  # the tracer module (settrace or monitoring), once started


def _send(message: dict[str, Any]) -> None:
    """One line of JSON to the engine, if connected."""
    if _channel is not None:
        _channel.send(message)


def _handle(message: dict[str, Any]) -> None:
    """Apply one configuration message; a malformed one is reported, not raised."""
    global just_my_code, entry_pending, show_return_value
    try:
        if "breakpoints" in message:
            _set_breakpoints(message["breakpoints"])
        if "exceptions" in message:
            exception_stops.set_rules(message["exceptions"])
        if "justMyCode" in message and bool(message["justMyCode"]) != just_my_code:
            just_my_code = bool(message["justMyCode"])
            _files.clear()
        if "stopOnEntry" in message:
            entry_pending = bool(message["stopOnEntry"])
        if "showReturnValue" in message:
            show_return_value = bool(message["showReturnValue"])
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        _send({"problem": f"bad configuration message: {values.one_line(err)}"})


def _connect(path: str) -> Any:
    """Connect to the engine and say hello (OSError if it is not there)."""
    global _channel
    _channel = channel.Channel(path)
    _send({"hello": os.getpid(), "shared": ctypes.addressof(_shared), "python": ".".join(map(str, sys.version_info[:3])),
           "step_signal": _step_signal, "tracing": tracer.NAME if tracer is not None else None})
    return _channel


def _drain() -> None:
    """Apply what the engine sent while this process was stopped (or while it ran: the
    engine then stopped it and marked it pending), before running on."""
    if _channel is None:
        return
    handled: list[dict[str, Any]] = []

    def handle(message: dict[str, Any]) -> None:
        _handle(message)
        handled.append(message)
    _channel.pump(handle, wait=0)
    if handled:
        tracer.configuration_changed()


def start(socket_path: str) -> None:
    """Connect to the engine, apply its configuration until ``{"go": true}``, then trace.

    Raises AgentError when the engine cannot be reached or closes the socket before ``go``:
    the program must never run undebugged."""
    global _socket_path, tracer, _running
    _take_step_signal()
    tracer = _choose_tracer()
    try:
        connection = _connect(socket_path)
    except OSError as err:
        raise AgentError(f"cannot reach the debugger at {socket_path}: {err.strerror or err}") from err
    _socket_path = socket_path
    if not _configured(connection, None):
        raise AgentError("the debugger went away before the program started")
    exception_stops.install(sys.modules[__name__])
    os.register_at_fork(after_in_child=_after_fork_in_child)
    atexit.register(tracer.stop)  # registered first: runs last, after the program's own
    tracer.start()
    _running = True
    _drain()  # what came meanwhile: the engine's signal went unanswered before _running


def _choose_tracer() -> Any:
    """``sys.monitoring`` where there is one and a tool id is free; else ``sys.settrace``
    (then the reason is told once the engine listens)."""
    if sys.version_info >= (3, 12):
        monitoring = _load_sibling("monitoring")
        problem = monitoring.install(sys.modules[__name__])
        if problem is None:
            return monitoring
        _pending_problems.append(problem)
    settrace = _load_sibling("settrace")
    settrace.install(sys.modules[__name__])
    return settrace


_pending_problems: list[str] = []


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
    for problem in _pending_problems:
        _send({"problem": problem})
    _pending_problems.clear()
    tracer.configuration_changed()
    return True


def _after_fork_in_child() -> None:
    """A fork child: no slot or mailbox of the parent is ours; reconnect as a new process."""
    global _channel, _running
    _running = False
    for slot in _shared.slots:
        slot.tid = slot.mode = slot.depth = 0
    _shared.armed = 0
    _threads.clear()
    tracer.step_ended()
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
    _running = True
    _drain()
