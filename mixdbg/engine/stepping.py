"""Stepping in both languages and across the boundary between them.

A step is a plan carried out while the whole tree is stopped: gdb's own step commands in
native frames; the agent's step commands at Python stops; and, to cross the boundary,
arming the other side first: temporary gdb breakpoints on the user's native functions
(Python -> C), a step request in the agent's shared block (C -> Python), a temporary
breakpoint at the native caller's return address (Python callback -> C++ caller). Every
stop disarms whatever the step left (``disarm``): no stray breakpoint, no stale request.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from mixdbg.engine import agents, native_sources
from mixdbg.engine.frames import first_visible, is_glue_source, outer_visible
from mixdbg.errors import DebuggerError, UsageError
from mixdbg.gdbmi import GdbCommandError, GdbMi, mi_quote
from mixdbg.proctree import procfs
from mixdbg.stack import Frame, MixedStack

log = logging.getLogger(__name__)

STEP_KINDS = ("next", "stepIn", "stepOut", "nextInstruction", "stepInstruction")
#: One machine instruction (the Disassembly view's steps): gdb's nexti and stepi in a
#: native frame, and reported wherever they end (glue too); a line in a Python frame.
INSTRUCTION_STEPS = {"nextInstruction": ("-exec-next-instruction", "next"),
                     "stepInstruction": ("-exec-step-instruction", "stepIn")}
#: A user's native function in one process image: (pid, the image's layout, source, name).
EntryKey = tuple[int, Optional[tuple[str, ...]], str, str]
#: How many times a native step may pass through glue before it is reported where it is.
MAX_GLUE_HOPS = 8
#: Where the interpreter starts running Python called from C (exported by every build):
#: a native Step Into breaks there, in its thread, on 3.12+ (see ``entered_python``).
PYTHON_ENTRY = "_PyEval_EvalFrameDefault"
#: Where gdb's ``step`` never stops: the interpreter's and binding libraries' sources (a
#: Python callback they call is reached through the agent instead).
SKIPPED_SOURCES = ("*/Objects/*", "*/Python/*", "*/Include/*", "*/Modules/*", "*/Parser/*",
                   "*/pybind11/*", "*/nanobind/*", "/usr/include/*")

@dataclass
class StepContext:
    """What a step starts from: the process, gdb thread, its LWP, the frame's index in the
    thread's mixed stack (read only when the step needs it: a native step from the stop's
    own frame does not), and the agent's mailbox and shared block where there are."""

    pid: int
    thread: int
    tid: int
    index: int
    mailbox: agents.Mailbox | None  # the agent's, when this thread is at a Python stop
    shared: int | None  # the process's agent shared block (None: no agent there)
    read_stack: Callable[[], MixedStack]
    #: The frame is the stop's own, in native code (known without reading the stack).
    native_stop_frame: bool = False
    _stack: MixedStack | None = None

    @property
    def stack(self) -> MixedStack:
        """The thread's mixed stack (read once)."""
        if self._stack is None:
            self._stack = self.read_stack()
        return self._stack

    @property
    def frame(self) -> Frame:
        """The frame the step is for."""
        return self.stack.frames[self.index]

    @property
    def in_python(self) -> bool:
        """Whether the step starts in a Python frame."""
        return not self.native_stop_frame and self.frame.kind == "python"

    @property
    def level(self) -> int:
        """The frame's gdb level (native frames)."""
        return 0 if self.native_stop_frame else self.frame.level or 0


@dataclass
class Stepper:
    """Carries out steps and disarms what they leave. ``write`` writes the debuggee's
    memory (through gdb); ``resume_all`` lets the whole tree run; ``tell_agent`` gives
    the trapped thread's agent its command (it then leaves the stop when resumed);
    ``agents_of`` lists the processes that have an agent."""

    gdb: GdbMi
    write: agents.WriteMemory
    resume_all: Callable[[], None]
    tell_agent: Callable[..., None]
    #: Every process's agent shared block (pid -> address): all are disarmed at a stop.
    agents_of: Callable[[], dict[int, int]] = dict
    #: Make gdb read a loaded library's symbols (it reads only those breakpoints need).
    read_library: Callable[[str], None] = lambda path: None
    #: The signal a process's agent stops at after a native Step Out (None: it has none).
    step_signal_of: Callable[[int], int | None] = lambda pid: None
    #: A step was armed in process ``pid``'s agent: it must apply it before it runs on.
    mark: Callable[[int], None] = lambda pid: None
    #: Before gdb runs the tree for a step of gdb thread N: tell the agents what is pending
    #: (``attention``), without a signal to that thread (gdb's step would stop in the handler).
    attend: Callable[[int], None] = lambda thread: None
    #: Whether process ``pid``'s agent traces with sys.monitoring (3.12+).
    monitors: Callable[[int], bool] = lambda pid: False
    #: The temporary breakpoint where a native Step Into reaches Python, and its process.
    python_entry: tuple[str, int] | None = None
    temporary: list[str] = field(default_factory=list)
    #: A gdb step of ours is under way on this thread (its stops may need a glue hop).
    native_thread: int | None = None
    kind: str = "next"
    hops: int = 0
    #: A native Step Out under way to a Python caller: (its depth, the agent's signal).
    landing: tuple[int, int] | None = None
    #: Step Into preparation left for idle time: (library, the function's key in ``_entries``).
    _idle: list[tuple[str, EntryKey]] = field(default_factory=list)
    #: The signals gdb already passes to the program without stopping (``_queue_signal``).
    _passed: set[int] = field(default_factory=set)
    #: Where gdb breaks in the user's functions; None: not at one address.
    _entries: dict[EntryKey, str | None] = field(default_factory=dict)

    def disarm(self) -> None:
        """At any stop: delete the temporary breakpoints and clear the agents' requests."""
        self.landing = self.python_entry = None
        if self.temporary:
            try:
                self.gdb.command("-break-delete " + " ".join(self.temporary))
            except GdbCommandError as err:  # a temporary one that hit is gone already
                log.debug("deleting step breakpoints: %s", err.gdb_message)
            self.temporary.clear()
        for pid, shared in self.agents_of().items():
            try:
                agents.clear_slots(self.write, pid, shared)
            except DebuggerError as err:  # an exiting process: nothing left to disarm
                log.debug("disarming PID %d: %s", pid, err.message)

    def step(self, kind: str, at: StepContext, target: dict[str, Any] | None = None) -> None:
        """Start step ``kind`` (next, stepIn, stepOut) from frame ``at.index``; ``target``: a
        Step Into Target's call (``{"target": name, "skip": n}``, Python stops only)."""
        if kind not in STEP_KINDS:
            raise UsageError(f"unknown step {kind!r}")
        self.hops = 0
        if at.in_python and kind in INSTRUCTION_STEPS:
            kind = INSTRUCTION_STEPS[kind][1]
        self.kind = kind
        if target is not None:
            if not at.in_python or at.mailbox is None or at.index != first_visible(at.stack):
                raise UsageError("Step Into Target steps from the frame of a Python stop")
            self.tell_agent("stepIn", **target)
            self.resume_all()
        elif at.in_python:
            self._python_step(kind, at)
        elif kind in INSTRUCTION_STEPS:
            self._gdb_step(INSTRUCTION_STEPS[kind][0], at.thread, at.level)
        else:
            self._native_step(kind, at)

    def _python_step(self, kind: str, at: StepContext) -> None:
        outer = outer_visible(at.stack, at.index)
        native_caller = outer[1] if outer is not None and outer[1].kind == "native" else None
        if kind in ("next", "stepOut") and native_caller is not None and native_caller.pc:
            # A callback called from C/C++: returning lands in the native caller.
            self._temporary_break(f"*{native_caller.pc}", at.thread)
        if kind == "stepIn":
            self._break_in_user_functions(at.pid, at.thread)
        if at.mailbox is not None and at.index == first_visible(at.stack):
            command = "continue" if kind == "stepOut" and native_caller is not None else kind
            self.tell_agent(command)
        elif at.frame.depth is not None:  # a Python frame of a native stop, or an outer one
            mode, depth = ((agents.STEP_IN, 0) if kind == "stepIn"
                           else (agents.STEP_TO_DEPTH, at.frame.depth - (kind == "stepOut")))
            self._arm(at, mode, depth)
        self.resume_all()

    def _native_step(self, kind: str, at: StepContext) -> None:
        level = at.level
        if kind == "stepOut":
            outer = outer_visible(at.stack, at.index)
            if outer is not None and outer[1].kind == "python" and outer[1].depth is not None \
                    and at.shared is not None:
                self._out_to_python(at, at.stack, outer[0], outer[1].depth)
                return
            if outer is None:
                self.resume_all()
                return
            returning = _returning_frame(at.stack, outer[0])
            level = returning.level if returning is not None and returning.level is not None else level
            self._gdb_step("-exec-finish", at.thread, level)
            return
        if kind == "stepIn":
            self._arm(at, agents.STEP_IN, 0)  # a Python callback on this line stops at its first line
            if at.shared is not None and self.monitors(at.pid):
                self._break_at_python_entry(at)
        self._gdb_step("-exec-step" if kind == "stepIn" else "-exec-next", at.thread, level)

    def _break_at_python_entry(self, at: StepContext) -> None:
        """3.12+: the agent sees a callback's start only if its code was never disabled, so
        a native Step Into also breaks where the interpreter starts running Python called
        from C, in this thread: there ``entered_python`` gets the agent's attention."""
        number = len(self.temporary)
        self._temporary_break(PYTHON_ENTRY, at.thread)
        if len(self.temporary) > number:
            self.python_entry = (self.temporary[-1], at.pid)

    def entered_python(self, number: str, thread: int) -> bool:
        """Breakpoint ``number`` hit: if it is a native Step Into's Python entry, have gdb
        deliver the agent's signal as the thread starts the Python code (its handler runs
        before the first instruction and sets up the step's events) and let it run:
        the agent stops at the first user line. False when it is not that breakpoint."""
        if self.python_entry is None or self.python_entry[0] != number:
            return False
        pid = self.python_entry[1]
        self.python_entry, self.native_thread = None, None
        signal = self.step_signal_of(pid)
        if signal is not None:
            self.queue_signal(thread, signal)
        self.resume_all()
        return True

    def _out_to_python(self, at: StepContext, stack: MixedStack, caller: int, depth: int) -> None:
        """Out of native code called from the Python frame ``caller`` (at ``depth``) of
        ``stack``: a Step Out, or a ``next`` off the end of the user's native function.
        The agent stops at the caller's next line; in a main thread whose agent has its
        signal, gdb first finishes the call into the interpreter's loop, and the signal then
        stops the caller on its own line, the call complete (``after_native_step``)."""
        self._arm(at, agents.STEP_TO_DEPTH, depth)
        signal = self.step_signal_of(at.pid) if at.tid == at.pid else None
        returning = _returning_frame(stack, caller)
        if signal is None or returning is None or returning.level is None:
            self.resume_all()
            return
        self.landing = (depth, signal)
        self._gdb_step("-exec-finish", at.thread, returning.level)

    def after_native_step(self, stack: MixedStack, at: StepContext) -> bool:
        """A gdb step of ours ended in ``stack``: True to report it; False when it landed
        in glue and this went on (to the Python caller, or out to the user's native code)."""
        if self.landing is not None:
            (depth, signal), self.landing = self.landing, None
            visible = first_visible(stack)
            if visible is not None and stack.frames[visible].depth == depth:
                self.queue_signal(at.thread, signal)
                self.resume_all()
                return False
        if self.hops >= MAX_GLUE_HOPS or not stack.frames or self.kind in INSTRUCTION_STEPS:
            return True
        top = stack.frames[0]
        if top.kind == "python" or (top.file is not None and not is_glue_source(top.file)
                                    and first_visible(stack) == 0):
            return True
        visible = first_visible(stack)
        if visible is None:
            return True
        self.hops += 1
        target = stack.frames[visible]
        if target.kind == "python" and at.shared is None:
            return True  # no agent to stop at the Python line: shown here, under it
        if target.kind == "python" and target.depth is not None:
            if self.kind == "stepIn":  # a Step Into stays armed for any Python line
                self.resume_all()
            else:
                self._out_to_python(at, stack, visible, target.depth)
        else:
            returning = _returning_frame(stack, visible)
            self._gdb_step("-exec-finish", at.thread, (returning.level or 0) if returning is not None else 0)
        return False

    def prepare(self, pid: int) -> None:
        """At a Python stop: find which native functions are the user's in the background
        (pyelftools, once per library: up to seconds for a large module); then, while the
        stop is idle, ``idle_work`` has gdb find where a Step Into would break in each."""
        def find() -> None:
            image = procfs.image_layout(pid)
            self._idle = [(library, (pid, image, source, name))
                          for library, functions in native_sources.user_functions(pid).items()
                          for source, name in functions if (pid, image, source, name) not in self._entries]
        self._idle = []
        threading.Thread(target=find, name="native-sources", daemon=True).start()

    def idle_work(self) -> bool:
        """One piece of a Step Into's preparation, done while the user reads a Python stop:
        where gdb would break in one of the user's functions, found through a breakpoint at
        once deleted (its library's symbols read first). A Step Into then breaks at these
        addresses, which gdb takes at once; by name it took 5-16 ms each, 340 ms for the
        first in the tests' pybind11 module. False when nothing is left."""
        if not self._idle:
            return False
        library, key = self._idle.pop(0)
        source, name = key[2], key[3]
        self.read_library(library)
        try:
            found = self.gdb.command(f"-break-insert -d --source {mi_quote(source)} --function {mi_quote(name)}")
            self.gdb.command(f"-break-delete {found['bkpt']['number']}")
        except GdbCommandError as err:
            log.debug("preparing %s: %s", name, err.gdb_message)
            found = {}
        address = str(found.get("bkpt", {}).get("addr", ""))
        self._entries[key] = address if address.startswith("0x") else None
        return True

    def _break_in_user_functions(self, pid: int, thread: int) -> None:
        """Temporary breakpoints, on ``thread``, on every function of the user's native
        sources loaded in process ``pid``: where a Step Into from Python may land."""
        image = procfs.image_layout(pid)  # an exec'd process's addresses are not its old image's
        for library, functions in native_sources.user_functions(pid).items():
            for source, name in functions:
                address = self._entries.get((pid, image, source, name))
                if address:
                    self._temporary_break(f"*{address}", thread)
                    continue
                self.read_library(library)
                self._temporary_break(f"--source {mi_quote(source)} --function {mi_quote(name)}", thread,
                                      explicit=True)

    def _arm(self, at: StepContext, mode: int, depth: int) -> None:
        if at.shared is None:
            return
        agents.arm_slot(self.write, at.pid, at.shared, at.tid, mode, depth)
        self.mark(at.pid)

    def _temporary_break(self, location: str, thread: int, explicit: bool = False) -> None:
        """A temporary breakpoint on ``thread`` at ``location`` (a linespec, or with
        ``explicit`` MI's explicit-location options)."""
        where = location if explicit else mi_quote(location)
        try:
            result: dict[str, Any] = self.gdb.command(f"-break-insert -t -p {thread} {where}")
        except GdbCommandError as err:
            log.info("step breakpoint at %s: %s", location, err.gdb_message)
            return
        log.debug("step breakpoint %s at %s", result["bkpt"].get("number"), location)
        self.temporary.append(str(result["bkpt"]["number"]))

    def queue_signal(self, thread: int, number: int) -> None:
        """Have gdb deliver signal ``number`` to ``thread`` as it resumes, without stopping
        (gdb is told once per signal to pass it silently)."""
        if not self.pass_signal(thread, number):
            return  # the agent's next-line stop is still armed
        try:
            self.gdb.command(f"-interpreter-exec --thread {thread} console {mi_quote(f'queue-signal SIG{number}')}")
        except GdbCommandError as err:
            log.info("step signal: %s", err.gdb_message)

    def pass_signal(self, thread: int, number: int) -> bool:
        """Tell gdb, once per session, to pass signal ``number`` to the program without
        stopping (the agent's step signal; a cancelled request's too); False if gdb refused."""
        if number in self._passed:
            return True
        try:
            self.gdb.command(f"-interpreter-exec --thread {thread} console "
                             f"{mi_quote(f'handle SIG{number} nostop noprint pass')}")
        except GdbCommandError as err:
            log.info("passing SIG%d: %s", number, err.gdb_message)
            return False
        self._passed.add(number)
        return True

    def _gdb_step(self, command: str, thread: int, level: int) -> None:
        self.native_thread = thread
        self.attend(thread)
        try:
            self.gdb.command(f"{command} --thread {thread} --frame {level}")
        except GdbCommandError as err:
            self.native_thread = None
            raise DebuggerError(f"gdb cannot step here: {err.gdb_message}") from err


def _returning_frame(stack: MixedStack, caller: int) -> Frame | None:
    """The frame whose return lands in frame ``caller`` of ``stack``: the first inward of it
    that is not inlined (gdb finishes real frames only: asked to finish a frame inlined in
    another, it stopped at once on 3.10's ``call_function``)."""
    return next((frame for frame in reversed(stack.frames[:caller]) if not frame.inline), None)
