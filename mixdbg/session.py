"""One debugging session: gdb attached to one debuggee and the processes it follows, the
run loop, what happens at each stop, and the session's end. The engine's parts it drives
are the same for every front end (the prompt, ``--json``, ``mixdbg dap``): breakpoints
(``engine.breakpoint_table``), what is read at a stop (``engine.inspect``), steps
(``engine.stepping``), the Python agents (``engine.pystops``).

Everything that touches gdb happens on the thread that calls ``run``: gdb's reader thread,
signal handlers, the interactive prompt and the control socket only put items on one
queue (a ``SimpleQueue``, whose ``put`` is safe even inside a signal handler). Items are
MI records (``None`` when gdb's output ends) or actions, ``Callable[[Session], None]``.

The debuggee's fate is the user's: every way out of ``run`` (its end, a detach, a signal,
gdb dying, a bug) goes through ``close``, which detaches gdb and leaves the debuggee
running unless the user asked to kill it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import queue
import signal
import subprocess
import threading
import time
from typing import Any, Callable, Union

from mixdbg import attach, calls, indexcache, ptrace, stack
from mixdbg.breakpoint_repair import restore_breakpoint_bytes
from mixdbg.breakpoints import Breakpoint, BreakSpec
from mixdbg.engine import agents
from mixdbg.engine.breakpoint_table import BreakpointTable
from mixdbg.engine.frames import is_users_frame_record
from mixdbg.engine.gdb_boot import GdbAhead, prepare
from mixdbg.engine.inspect import Inspector, StopPoint
from mixdbg.engine.pystops import PythonStops
from mixdbg.engine.stepping import SKIPPED_SOURCES, Stepper
from mixdbg.engine.watchpoints import Watchpoints
from mixdbg.errors import DebuggerError, GdbExitedError, MixdbgError, UsageError
from mixdbg.events import Detached, Event, Exited, Notice, Stopped
from mixdbg.gdbmi import SLOW_COMMAND_TIMEOUT, GdbCommandError, GdbMi, MiRecord
from mixdbg.proctree import FOLLOW_NONE, FOLLOW_PYTHON, Process, ProcessTree, workers
from mixdbg.solibs import Binder, SymbolReader, added_libraries
from mixdbg.sources import SourceMap
from mixdbg.stopview import StopView

log = logging.getLogger(__name__)

Action = Callable[["Session"], None]
QueueItem = Union[MiRecord, None, Action]

CRASH_SIGNALS = frozenset({"SIGSEGV", "SIGABRT", "SIGFPE", "SIGBUS", "SIGILL"})
#: How long a new process waits for its data breakpoints (it is held meanwhile).
WATCH_NEW_PROCESS_TIMEOUT = 5.0
#: Time allowed for gdb to report a stop after an interrupt, and to detach.
STOP_TIMEOUT = 10.0
#: After gdb died: how long to watch the debuggee before saying it runs on.
FATE_GRACE = 1.0
#: Before detaching: how many times to let gdb run the debuggee into a queued SIGINT.
PENDING_SIGINT_ROUNDS = 3
#: While nothing happens: how often to check /proc for exits gdb did not report.
RECONCILE_INTERVAL = 2.0
#: At a stop: how long the queue stays empty before a piece of idle work is done.
IDLE = 0.05
#: How many times (one per interval) to retry a resume gdb refused before giving up.
MAX_STALLED_RESUMES = 5
#: After a Python request was cancelled: how long it may take to end (the main thread's at
#: the agent's signal, sent at once; another thread's at its next traced line or call)
#: before its thread is paused where it waits (in native code).
CANCEL_GRACE = 2.0


def _runs_until_cancelled(request: dict[str, Any]) -> bool:
    """Whether an agent request is the user's own code (the Debug Console, the clipboard,
    a value set), which may take as long as it takes."""
    command = request.get("command")
    return command in ("setVariable", "setExpression") or (
        command == "evaluate" and request.get("context") in ("repl", "clipboard"))


class SessionEnded(Exception):
    """Raised inside the loop to leave it; carries the exit code for ``run``."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Session:
    """A gdb attached to one debuggee, and to the descendants it follows (``follow``: see
    ``proctree``; the process tree is ``tree``).

    ``emit`` receives every event. With ``auto_continue`` each stop is reported and the
    debuggee resumed at once; otherwise it stays stopped until an action resumes it.
    ``all_threads`` adds every thread's stack to each stop. Without ``eager_stacks`` a
    stop is reported without its stack and arguments (``mixdbg dap``: the editor asks for
    them, through ``inspect``, when it shows them). ``debuginfod``: the user's opt-in to
    gdb fetching debug info from the servers in ``DEBUGINFOD_URLS`` (off otherwise).
    ``sources``: where native sources are here (the user's source map).
    """

    def __init__(self, emit: Callable[[Event], None], auto_continue: bool = True,
                 gdb: str | None = None, max_frames: int = 128, all_threads: bool = False,
                 python: str | None = None, follow: str = FOLLOW_PYTHON,
                 hub: agents.AgentHub | None = None,
                 items: queue.SimpleQueue[QueueItem] | None = None, eager_stacks: bool = True,
                 ahead: GdbAhead | None = None, debuginfod: bool = False,
                 sources: SourceMap | None = None) -> None:
        self.emit = emit
        self.sources = sources or SourceMap()
        self.auto_continue = auto_continue
        self.all_threads = all_threads
        self.eager_stacks = eager_stacks
        self.queue: queue.SimpleQueue[QueueItem] = items if items is not None else queue.SimpleQueue()
        self._ahead = ahead  # a gdb started before the session, records to ``items``
        self.gdb = ahead.gdb if ahead is not None else GdbMi(on_record=self.queue.put, gdb=gdb, debuginfod=debuginfod)
        self.view = StopView(self.gdb, lambda message: emit(Notice("warning", message)), max_frames, python)
        self.tree = ProcessTree(self.gdb, emit, follow,
                                workers.worker_id_reader(self.view.python_frames, self.view.frame_locals))
        self.pid: int | None = None
        self.state = "detached"  # "running" | "stopped" | "detached" | "exited"
        self._child: attach.Debuggee | None = None
        self._quitting = False
        self._kill_asked = False
        self._releasing = False
        self.call_safety = calls.CallSafety(True, "not checked yet")
        self.solibs = SymbolReader(self.gdb, emit)
        self.solibs.unwind_only = auto_continue  # nobody waits at a stop: see SymbolReader
        self.table = BreakpointTable(self.gdb, emit, self.tree, self.solibs, self.view.demangle, python,
                                     by_address=follow == FOLLOW_NONE,
                                     attached=lambda: self.state != "detached", pid=lambda: self.pid,
                                     layout_of=self.view.torch_layout)
        self.watchpoints = Watchpoints(self.gdb, self.tree)
        #: New processes whose watches wait for the next stop (one we make: ``watch_new_process``).
        self._watch_pending: list[tuple[int, threading.Event]] = []
        self.last_stop: Stopped | None = None
        self._kicking = False
        self._pausing = False  # the user asked for a pause (an interrupt) not reported yet
        self._stalled = 0  # failed resumes in a row
        #: The Python agents (``mixdbg dap``), their trap's gdb breakpoint number.
        self.hub = hub
        self._trap: int | None = None
        self.inspect = Inspector(self.gdb, self.view, self.tree, hub, self._agent_request)
        if hub is not None:
            hub.before_welcome = self.watch_new_process
        self.python = PythonStops(self.gdb, hub, self.inspect,
                                  lambda: set(self.tree.live_pids()) | ({self.pid} if self.pid else set()))
        self.stepper = Stepper(self.gdb, self.inspect.write_memory, self.resume,
                               lambda command, **arguments: self.python.tell(self.stop, command, **arguments),
                               self.python.alive, self.solibs.read, self.python.step_signal, self.python.mark,
                               self._attend_agents, self.python.monitors)
        self._reply: dict[str, Any] | None = None
        #: The mailbox of the Python request being served, and when it was cancelled (any
        #: thread may cancel it: see ``cancel_python_request``).
        self._asking: agents.Mailbox | None = None
        self._cancelled_at: float | None = None
        self._cancel_upcoming = False  # see cancel_python_request
        self._asking_lock = threading.Lock()
        self._released = False  # the gate just opened: see release
        self._deferred: list[Action] = []
        self._alone = False  # gdb's scheduler-locking is on: see run_alone

    @property
    def stop(self) -> StopPoint | None:
        """Where the tree is stopped, for stepping, frames, variables and evaluation."""
        return self.inspect.stop

    @stop.setter
    def stop(self, point: StopPoint | None) -> None:
        self.inspect.stop = point

    # --- setting up -------------------------------------------------------------------

    def start_gdb(self, while_gdb_boots: Callable[[], None] | None = None) -> None:
        """Start gdb and put it in the mode mixdbg relies on; ``while_gdb_boots`` runs
        between gdb's start and its first command (launching the debuggee meanwhile saves
        one of the two start-ups: 80-90 ms each). A gdb started ahead is only waited for."""
        if self._ahead is None:
            self.gdb.start()
        if while_gdb_boots is not None:
            while_gdb_boots()
        if self._ahead is None:
            prepare(self.gdb)
        else:
            self._ahead.ready()
        self.solibs.start()
        self.sources.configure(self.gdb)
        self.call_safety = calls.guard(self.gdb)
        for pattern in SKIPPED_SOURCES:
            self.gdb.console(f"skip -gfile {pattern}")
        if self.hub is not None:  # the agents' trap: every Python stop is this breakpoint's hit
            self._trap = self.table.insert_trap(agents.TRAP_FUNCTION)

    def attach(self, pid: int, child: attach.Debuggee | None = None) -> None:
        """Attach gdb to ``pid``; on refusal raise the precise cause from the ptrace module.

        A debuggee we launched (``child``) is held at its gate, so it is let run again at
        once and gdb reads the symbols of its libraries while debugpy starts up; a process
        we attach to stays stopped until its symbols are read, so no breakpoint misses."""
        self.pid = pid
        self.inspect.root_pid = pid
        self._child = child
        if child is not None:
            self.gdb.command("-gdb-set auto-solib-add off")
        self.tree.configure()
        try:
            self.gdb.command(f"-target-attach {pid}", SLOW_COMMAND_TIMEOUT)
        except GdbCommandError as err:
            raise ptrace.explain_attach_failure(err.gdb_message, pid) from err
        self._pump_until(lambda: self.state == "stopped", SLOW_COMMAND_TIMEOUT, "the attach")
        if child is not None:  # its libraries that can hold a breakpoint now, the others in run
            self.resume()
            self.table.read_libraries()
        self.view.locate_python(pid)
        self.table.ops.bind(pid, self.table.items)  # a process that has torch already (attach)
        self.table.bind_registered(pid)
        self._load_printers(self._mapped_libraries())  # a libstdc++ it has already (attach)
        if child is None:
            self.solibs.configure()
            self.tree.start_following()

    def _on_loaded(self, payload: dict[str, Any], added: list[str]) -> None:
        """The process stopped in ``payload`` loaded ``added`` (and the libraries gdb took
        into its list while it read others: ``SymbolReader.read_running``): read or bind
        the breakpoints that can be in them."""
        added = self.solibs.unseen(self._inferior(payload), added) if self.solibs.selective else added
        if added or payload.get("reason") == "solib-event":
            self.solibs.on_load(added, self._specs(), self.table.ops.kernel_library(), self._binder(payload))
            self._load_printers(added)
            self._on_library_load(payload)

    def _specs(self) -> list[BreakSpec]:
        return [breakpoint.spec for breakpoint in self.table.items.values()]

    def _inferior(self, payload: dict[str, Any]) -> str:
        """The gdb inferior ("i2") a stop is in (the debuggee's: i1, when the tree does not know)."""
        process = self.tree.table.of_thread(str(payload.get("thread-id", "")))  # not stopped_in: it announces
        return process.inferior if process is not None else "i1"

    def _binder(self, payload: dict[str, Any]) -> Binder | None:
        """How function breakpoints are bound at a load without gdb reading the library
        (``engine.address_breaks``), in the process stopped there if it is the debuggee;
        None elsewhere (gdb reads the library and resolves them itself)."""
        process = self.tree.stopped_in(payload)
        if process is None and self.tree.follow != FOLLOW_NONE:
            return None  # a process the tree does not know yet: gdb reads its libraries
        pid = process.pid if process is not None else self.pid
        if pid is None or (process is not None and process.quiet) or pid != self.pid:
            # in the debuggee itself only: in DataLoader workers loading a library at the
            # same time, a breakpoint added while they ran missed one worker in 3 runs of
            # test_break_from_another_terminal_stops_every_worker (0 in 4 with gdb's own
            # resolution there); the seed run's libraries load in the debuggee
            return None
        return self.table.binder(pid)

    def _on_library_load(self, payload: dict[str, Any]) -> None:
        """At a library-load stop: bind the operator breakpoints in the stopped process."""
        process = self.tree.stopped_in(payload)
        pid = process.pid if process is not None else self.pid
        if pid is not None and (process is None or not process.quiet):
            self.table.bind_operators(pid, added_libraries(payload))

    def _mapped_libraries(self) -> list[str]:
        """The libraries the selected process has mapped, as gdb lists them."""
        try:
            listed = self.gdb.command("-file-list-shared-libraries").get("shared-libraries", [])
        except GdbCommandError as err:
            log.info("listing libraries: %s", err.gdb_message)
            return []
        return [str(library.get("target-name") or library.get("id") or "") for library in listed]

    def _load_printers(self, added: list[str]) -> None:
        """Each libstdc++ the program maps brings its own pretty printers and xmethods
        (``gdb_helper``'s ``mixdbg-libstdcxx``): std::vector indexes in expressions."""
        for path in added:
            if "libstdc++.so" in path:
                try:
                    self.gdb.console(f"mixdbg-libstdcxx {path}")
                except GdbCommandError as err:
                    log.info("libstdc++ printers of %s: %s", path, err.gdb_message)

    def enable_breakpoints(self) -> None:
        """Enable every breakpoint (inserted disabled while the debuggee started up), read
        the symbols its start-up needed, and follow the debuggee's children from now on."""
        self.table.enable_all()
        self.table.read_libraries()  # those debugpy's start loaded
        self.solibs.configure()
        self.tree.start_following()

    def release(self) -> None:
        """Open the launched program's gate: its script starts, and the loop then has gdb
        read the libraries no breakpoint needs and expand CPython's call path."""
        if self._child is not None:
            self._child.release()
            self._released = True

    def announce_breakpoints(self) -> None:
        """Report every breakpoint's current state, and the debuggee as the first process
        when children are followed (used once the session is known)."""
        self.table.announce_all()
        if self.tree.follow != FOLLOW_NONE:
            self.tree.announce_root()

    # --- running ----------------------------------------------------------------------

    def resume(self) -> None:
        """Let the debuggee (and every followed process) run. When gdb can resume none of
        them (they are exiting: gdb refuses until it has seen the exits), the exits are
        awaited, and the resume retried meanwhile (``_unstick``)."""
        if self.state == "stopped":
            self._attend_agents()
            self._leave_stop()
            if not self.tree.continue_all():
                self._reconcile()
                log.info("gdb could resume no followed process yet; retrying")
                self._stalled = 1
            self.state = "running"

    def add_in_each_process(self, spec: BreakSpec) -> list[Breakpoint]:
        """An address breakpoint (``*ADDRESS``: the Disassembly view's) in every followed
        process that shares the address (fork children do; a fork after this inherits
        it). gdb binds one to the inferior selected when it is set (``info breakpoints``
        says ``inf 1``): one per process, each inserted with one of its threads selected."""
        processes = self.tree.one_thread_each() if self.tree.follow != FOLLOW_NONE and self.state == "stopped" else []
        if len(processes) < 2:
            return [self.table.add(spec, announce=False)]
        added = []
        try:
            for _, thread in processes:
                self.gdb.command(f"-thread-select {thread}")
                added.append(self.table.add(spec, announce=False))
        finally:
            if self.stop is not None and self.stop.thread:
                self.gdb.command(f"-thread-select {self.stop.thread}")
        return added

    def run_alone(self, thread: int | None) -> None:
        """Let ``thread`` alone run until the next stop (gdb's scheduler-locking: DAP's
        ``singleThread``), or every thread (None). The stop ends it (``_everyone``): what
        the engine resumes at a stop (a Python request) runs as it always does."""
        self._require_stopped("single-thread runs")
        if thread is None:
            self._everyone()
            return
        try:
            self.gdb.command(f"-thread-select {thread}")
        except GdbCommandError as err:
            raise UsageError(f"no thread {thread}: {err.gdb_message}") from err
        self.gdb.console("set scheduler-locking on")
        self._alone = True

    def _everyone(self) -> None:
        if self._alone:
            self._alone = False
            self.gdb.console("set scheduler-locking off")

    def step(self, kind: str, thread: int, index: int, target: dict[str, Any] | None = None) -> None:
        """Step ``kind`` (next, stepIn, stepOut) from frame ``index`` of ``thread``'s mixed
        stack, in either language, across the boundary where the code goes there;
        ``target``: a Step Into Target's call (``{"target": name, "skip": n}``, from the
        agent's ``stepInTargets``)."""
        self._require_stopped("steps")
        last = self.last_stop
        own_frame = last is not None and last.thread == thread and last.reason in ("breakpoint", "step")
        at = self.inspect.step_context(self.stop, thread, index, native_stop_frame=own_frame)
        if not at.native_stop_frame and not 0 <= index < len(at.stack.frames):
            raise UsageError(f"no frame #{index} in thread {thread}")
        self.stepper.step(kind, at, target)
        if self.state == "stopped":  # a gdb step: the tree runs until its stop
            self.state = "running"
            self.inspect.forget()
            self.stop = None

    def configure_agents(self, **changes: Any) -> None:
        """Change what the Python agents are told (see ``pystops``). The agents read it when
        the tree resumes; a running tree is stopped for that, unseen (as ``_unstick``
        does), and resumed at once."""
        if self.python.configure(**changes) and self.state == "running" and not self._kicking \
                and self.stepper.native_thread is None:  # a gdb step under way attends at its end
            self._kick()

    def _kick(self) -> None:
        """Stop the running tree unseen (``_on_stopped`` resumes it at once): a SIGINT to a
        followed process that can take it, the root first, and gdb's own interrupt only when
        none can. gdb's ``-exec-interrupt`` signals the root alone, and a root that gdb left
        in a ptrace stop never takes it: nothing would stop, and nothing would unstick it."""
        self._kicking = True
        awake = self.tree.awake()
        try:
            if awake is not None:
                os.kill(awake, signal.SIGINT)
                return
        except ProcessLookupError:
            log.debug("pid %d ended before the interrupt; gdb interrupts", awake)
        self.gdb.command("-exec-interrupt")

    def _attend_agents(self, stepping: int | None = None) -> None:
        """Before the tree runs: every agent applies what the engine left pending
        (``attention``); never by a signal to gdb thread ``stepping`` (a gdb step's)."""
        self.python.attend(self.stop, lambda pid, number: self._queue_agent_signal(pid, number, stepping))

    def _queue_agent_signal(self, pid: int, number: int, stepping: int | None) -> bool:
        """Have gdb deliver the agent's signal to process ``pid``'s main thread as it resumes;
        False when that thread is ``stepping`` (the signal waits for the next resume)."""
        main = next((thread for thread in self.inspect.threads() if thread.lwp == pid), None)
        if main is None or main.id == stepping:
            return main is None
        self.stepper.queue_signal(main.id, number)
        return True

    def _leave_stop(self) -> None:
        """Before the tree runs: a thread at a Python stop is told to continue (unless a
        step told it otherwise), and what was read at the stop is forgotten."""
        if self.stop is not None and not self.stop.answered:
            self.python.tell(self.stop, "continue")
        self.inspect.forget()
        self.stop = None

    def _agent_request(self, request: dict[str, Any]) -> dict[str, Any]:
        """Have the agent of the thread at the Python stop answer ``request`` (evaluate,
        variables, children, ...); a native breakpoint hit meanwhile ends the request. What
        the user typed (the Debug Console, the clipboard, a new value) runs until it ends or
        is cancelled; anything else is cancelled after STOP_TIMEOUT."""
        stop, self._reply = self.stop, None
        signal_number = self._cancel_signal(stop)
        self.python.ask(stop, request)
        self._begin_asking(stop.mailbox if stop is not None else None)
        paused = False
        try:
            self.state = "running"
            paused = self._await_reply(stop, None if _runs_until_cancelled(request) else STOP_TIMEOUT,
                                       signal_number)
        finally:
            with self._asking_lock:
                self._asking = None
            reply, self._reply = self._reply, None
        try:
            return self.python.asked(reply)
        except DebuggerError:
            if paused:
                raise DebuggerError("cancelled; the request waited in native code: its thread is paused there") from None
            raise

    def _begin_asking(self, mailbox: agents.Mailbox | None) -> None:
        """The agent at ``mailbox`` was asked: from now on a cancel reaches it, and one that
        came before (``cancel_python_request``'s ``upcoming``) does at once."""
        with self._asking_lock:
            self._asking, self._cancelled_at = mailbox, None
            cancelled_before = self._cancel_upcoming
        if cancelled_before:
            self.cancel_python_request()

    def _await_reply(self, stop: StopPoint | None, timeout: float | None, signal_number: int | None) -> bool:
        """Process gdb's records until the agent replies (or another stop came first). Past
        ``timeout`` the request is cancelled; a cancelled request gets the agent's signal
        (``signal_number``: the main thread's, None elsewhere), and one that has not ended
        CANCEL_GRACE later has its thread paused where it waits (True)."""
        started, signalled = time.monotonic(), False

        def settled() -> bool:
            return self._reply is not None or self.stop is not stop

        def due() -> bool:
            now, cancelled = time.monotonic(), self._cancelled_at
            if cancelled is None:
                return timeout is not None and now - started >= timeout
            return (signal_number is not None and not signalled) or now - cancelled >= CANCEL_GRACE
        while True:
            self._pump_until(lambda: settled() or due(), float("inf"), "the Python request", reporting=True)
            if settled():
                return False
            if self._cancelled_at is None:
                self.cancel_python_request()
            elif signal_number is not None and not signalled and stop is not None:
                signalled = True
                os.kill(stop.pid, signal_number)  # the main thread: the only one running
            else:  # the reply may come first: the wait ended as gdb was told to pause
                self.gdb.command("-exec-interrupt")
                self._pump_until(settled, STOP_TIMEOUT, "the pause of a Python request", reporting=True)
                return self.stop is not stop

    def _cancel_signal(self, stop: StopPoint | None) -> int | None:
        """The signal that ends a cancelled request waiting in native code: the agent's step
        signal, when the request runs in the main thread and gdb passes it silently."""
        if stop is None or stop.mailbox is None or stop.mailbox.tid != stop.pid:
            return None
        number = self.python.step_signal(stop.pid)
        if number is None or not self.stepper.pass_signal(stop.thread, number):
            return None
        return number

    def cancel_python_request(self, upcoming: bool = False) -> bool:
        """Cancel the Python request being served, from any thread (a DAP ``cancel``, Pause):
        the agent ends it at its next Python line with the error ``cancelled``. False when
        no Python request runs; with ``upcoming`` (a front end's request cancelled on its
        way to the agent: it may not have asked yet), the next one is cancelled as it is
        asked, until ``drop_upcoming_cancel``."""
        with self._asking_lock:
            if self._asking is None:
                self._cancel_upcoming = self._cancel_upcoming or upcoming
                return False
            if self._cancelled_at is None:
                agents.post_while_running(self._asking, {"command": "cancel"})
                self._cancelled_at = time.monotonic()
            return True

    def python_request(self, thread: int, request: dict[str, Any]) -> dict[str, Any]:
        """A request of the tracer (Step Into targets, jump targets) at the Python stop of
        ``thread``: its reply's body, or ``UsageError`` where there is no such stop."""
        if self.stop is None or self.stop.mailbox is None or self.stop.thread != thread:
            raise UsageError("this needs the thread stopped in Python (at a Python breakpoint or step)")
        return self._agent_request(request)

    def jump(self, thread: int, line: int) -> None:
        """Make the Python frame stopped in ``thread`` go on from ``line`` of its function,
        then report the stop there (reason ``goto``), as debugpy's Jump to Cursor does."""
        self.python_request(thread, {"command": "goto", "line": line})
        last = self.last_stop
        if last is None or last.python is None:
            return
        self.inspect.forget()
        message = dict(last.python, reason="goto", breakpoints=[], description=f"Jumped to line {line}")
        self.last_stop = dataclasses.replace(last, reason="goto", breakpoint=None, python=message)
        self.emit(self.last_stop)

    def drop_upcoming_cancel(self) -> None:
        """The front end's request ended: a cancel meant for it (see
        ``cancel_python_request``) is forgotten."""
        with self._asking_lock:
            self._cancel_upcoming = False

    def read_loaded_libraries(self) -> None:
        """Have gdb read the symbols of every library the debuggee has loaded and gdb has
        not read (a stack or a step may go through any of them)."""
        self.solibs.read_all(self.tree.root.inferior if self.tree.root is not None else "i1")

    def interrupt(self) -> None:
        """Stop the running debuggee; the stop is reported as an ``interrupt``."""
        if self.state == "running":
            self._pausing = True
            self.gdb.command("-exec-interrupt")

    def run(self) -> int:
        """Process records and actions until the session ends; return the exit code."""
        try:
            while True:
                if self._released:  # what no breakpoint needs, read while the program starts
                    self._released = False
                    self.read_loaded_libraries()
                    self.view.start_warming()
                try:
                    busy = self.state == "stopped" or self.view.warming
                    # while the program runs, the first stack is prepared whenever gdb has
                    # nothing to report (it often reaches its first stop within 50 ms)
                    wait = 0.0 if self.view.warming and self.state == "running" else IDLE if busy else RECONCILE_INTERVAL
                    self.handle(self.queue.get(timeout=wait) if wait else self.queue.get_nowait())
                except queue.Empty:  # idle: a Step Into's or the first stack's work is done ahead
                    if not (self.state == "stopped" and self.stepper.idle_work()) and not self.view.warm_next():
                        self._reconcile()
                        self._unstick()
        except SessionEnded as end:
            return end.code
        except GdbExitedError:
            # gdb died while we waited for one of its answers (e.g. mid stop report), not
            # between commands: the same repair and report as when its output ends.
            self._gdb_died()
            raise

    def _pump_until(self, done: Callable[[], bool], timeout: float, what: str,
                    reporting: bool = False) -> None:
        """Process gdb's records until ``done()``; raise if that takes longer than ``timeout``.
        Actions (requests of front ends) wait until the loop takes them again."""
        deadline = time.monotonic() + timeout
        try:
            while not done():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DebuggerError(f"gdb did not finish {what} within {timeout:.0f} s")
                try:
                    item = self.queue.get(timeout=min(remaining, 1.0))
                except queue.Empty:
                    continue
                if callable(item):
                    self._deferred.append(item)
                else:
                    self.handle(item, reporting=reporting)
        finally:
            for action in self._deferred:
                self.queue.put(action)
            self._deferred.clear()

    def handle(self, item: QueueItem, reporting: bool = True) -> None:
        """Process one queue item: a gdb record, gdb's end, or an action."""
        if item is None:
            self._gdb_died()
        elif isinstance(item, MiRecord):
            if item.kind == "async":
                self._on_async(item, reporting)
            elif item.kind == "console":
                self.tree.on_console(str(item.payload))
                self.table.on_console(str(item.payload))
            elif item.kind in ("log", "output"):
                log.debug("gdb: %s", item.payload)
        else:
            item(self)

    def _on_async(self, record: MiRecord, reporting: bool) -> None:
        payload: dict[str, Any] = record.payload or {}
        if record.message == "running":
            self.state = "running"
        elif record.message == "stopped":
            self.state = "stopped"
            self._on_stopped(payload, reporting)
        elif record.message in ("breakpoint-modified", "breakpoint-deleted"):
            self.table.on_changed(record.message, payload)
        elif record.message is not None and record.message.startswith("thread-"):
            process = self.tree.on_notify(record)
            if process is not None and process is self.tree.root and "exit-code" in payload:
                self._finish(int(payload["exit-code"], 8), None)

    def _unstick(self) -> None:
        """While the tree runs and nothing happens: retry a resume gdb refused, and get a
        process gdb left in a ptrace stop (a gdb 13.1 bug) going again through an interrupt
        and a continue of them all."""
        if self._stalled:
            self._stalled = 0 if self.tree.continue_all() else self._stalled + 1
            if self._stalled > MAX_STALLED_RESUMES:
                raise DebuggerError("gdb could resume none of the followed processes")
            return
        stuck = self.tree.stuck() if self.state == "running" and not self._kicking else set()
        if stuck:
            log.warning("gdb left pid(s) %s stopped while it runs them; interrupting and resuming", sorted(stuck))
            self._kick()

    def _reconcile(self) -> None:
        """Exits gdb did not report (it loses some with many processes): the root's ends the
        session."""
        if self.state in ("running", "stopped") and self.tree.root in self.tree.reconcile():
            self._finish(None, None)

    def watch_new_process(self, pid: int) -> None:
        """A new process's agent says hello (a fork child, held until it is welcomed): with
        data breakpoints set, the tree is stopped, they are set in that process too, and it
        runs on. Called on the agents' thread; waits for the session's (5 s at most)."""
        if not self.watchpoints.watches or pid == self.pid:
            return
        done = threading.Event()

        def watch(session: Session) -> None:
            self._watch_pending.append((pid, done))
            if self.state == "stopped":
                self._add_pending_watches()
            elif self.state == "running" and not self._kicking:
                self._kick()  # a stop of ours: resumed once the watches are in
        self.queue.put(watch)
        if not done.wait(WATCH_NEW_PROCESS_TIMEOUT):
            log.warning("the data breakpoints could not be set in PID %d before it ran on", pid)

    def _add_pending_watches(self) -> None:
        pending, self._watch_pending = self._watch_pending, []
        for pid, done in pending:
            inferior = self.tree.inferior_of(pid)
            try:
                if inferior is not None:
                    self.watchpoints.add_process(inferior, self.stop.thread if self.stop else None)
            except MixdbgError as err:
                log.warning("data breakpoints in PID %d: %s", pid, err.message)
            finally:
                done.set()

    def _on_stopped(self, payload: dict[str, Any], reporting: bool) -> None:
        reason = payload.get("reason", "")
        if self._watch_pending and not reason.startswith("exited"):
            self._add_pending_watches()
        if reporting and reason != "solib-event" and not reason.startswith("exited") \
                and self.solibs.swept(self._inferior(payload)):
            self._on_loaded(payload, [])  # libraries gdb took in while it read others: before anything runs
        if reason.startswith("exited"):
            self._on_exit_stop(reason, payload, reporting)
        elif reason == "solib-event":  # libraries loaded: read those breakpoints can be in, bind, go on
            self._on_loaded(payload, added_libraries(payload))
            self.resume()
            self.solibs.read_deferred(self._binder(payload), self._specs(), self._inferior(payload))
        elif not reporting:
            return  # a stop of ours (attaching, detaching): not the user's
        elif self._kicking and reason in ("", "signal-received") and payload.get("signal-name") in (None, "SIGINT"):
            self._kicking = False  # our own interrupt (see _unstick): not the user's
            self.resume()
        elif self.tree.passes_silently(payload, CRASH_SIGNALS):
            self.resume()
        elif reason == "breakpoint-hit":
            self._on_breakpoint_hit(payload)
        elif reason.endswith("watchpoint-trigger"):
            self._report("data breakpoint", int((payload.get("wpt") or payload.get("hw-rwpt") or payload.get("hw-awpt")
                                                 or {}).get("number", 0)), None, payload)
        elif reason == "signal-received" and payload.get("signal-name") != "SIGINT":
            self._report("signal", None, str(payload.get("signal-name")), payload)
        elif reason in ("end-stepping-range", "function-finished", "location-reached") or \
                (not reason and self.stepper.native_thread is not None and not self._pausing):
            # gdb 18 ends some finishes (into CPython's eval loop) with no reason at all
            self._on_step_end(payload)
        else:  # an interrupt (gdb says SIGINT, or gives no reason) or a stop gdb names otherwise
            self._report("interrupt" if reason in ("", "signal-received") else "other", None, None, payload)

    def _on_exit_stop(self, reason: str, payload: dict[str, Any], reporting: bool) -> None:
        """An exit: the root's ends the session; a followed child's is reported by the tree,
        then the others run on."""
        process = self.tree.on_exit_stop(payload)
        if process is not None and process is not self.tree.root:
            self._reconcile()
            if reporting:
                self.resume()
        elif reason in ("exited-normally", "exited"):  # gdb gives no code for a normal exit
            self._finish(int(payload.get("exit-code", "0"), 8), None)
        else:
            self._finish(None, str(payload.get("signal-name", "")))

    def _on_step_end(self, payload: dict[str, Any]) -> None:
        """A gdb step of ours ended: report it, unless it ended in glue and goes on."""
        thread = str(payload.get("thread-id", ""))
        if self.stepper.native_thread is not None and thread.isdigit() and not is_users_frame_record(payload.get("frame") or {}):
            stack = self.inspect.stack(int(thread))
            at = self.inspect.step_context(None, int(thread), 0)
            if not self.stepper.after_native_step(stack, at):
                self.inspect.forget()
                self.state = "running" if self.state == "stopped" else self.state
                return
        self.stepper.native_thread = None
        self._report("step", None, None, payload)

    def _on_trap(self, payload: dict[str, Any]) -> None:
        """The agent's trap: a Python stop, or the reply to a request; anything else that
        called the trap function is not the agent and runs on."""
        process = self.tree.stopped_in(payload)
        pid = process.pid if process else self.pid
        mailbox = self.inspect.trapped_mailbox(pid) if pid is not None else None
        if mailbox is None:
            self.resume()
            return
        message = mailbox.message
        if message.get("event") == "reply" and self.python.is_reply_for(self.stop, mailbox):
            self._reply = message
            return
        if message.get("event") == "reply" or self.python.withdrawn(message):
            self.python.run_on(mailbox)  # a reply given up on (a native stop came first), a stop
            self.resume()  # for breakpoints removed since: the thread runs on
            return
        self.stepper.native_thread = None
        self._report(str(message.get("reason", "breakpoint")), None, None, payload, python=mailbox)
        if pid is not None:
            self.stepper.prepare(pid)

    def _on_breakpoint_hit(self, payload: dict[str, Any]) -> None:
        hit = int(payload.get("bkptno", 0))
        if hit == self._trap:
            self._on_trap(payload)
            return
        if hit == self.table.throw_catch:
            self._report("exception", None, None, payload)
            return
        thread = str(payload.get("thread-id", ""))
        if thread.isdigit() and self.stepper.entered_python(str(hit), int(thread)):
            return  # a native Step Into reached Python: the agent stops at its first line
        if str(hit) in self.stepper.temporary:  # where a step across the boundary lands
            self._report("step", None, None, payload)
            return
        if self.table.after_load(hit):  # a library load returned: its operators are bound now
            self.resume()
            return
        breakpoint = self.table.owner(hit)
        function = (payload.get("frame") or {}).get("func")
        if breakpoint is None or breakpoint.is_plt_hit(payload.get("locno"), function):
            self.resume()  # a PLT stub or a breakpoint that is not ours: never a user stop
            return
        breakpoint.hits += 1
        self._report("breakpoint", breakpoint.number, None, payload, op=breakpoint.targets.get(hit))

    def _report(self, reason: str, breakpoint: int | None, signal_name: str | None,
                payload: dict[str, Any], op: str | None = None,
                python: agents.Mailbox | None = None) -> None:
        thread = payload.get("thread-id")
        thread_id = int(thread) if thread and str(thread).isdigit() else None
        process: Process | None = self.tree.stopped_in(payload)
        pid = process.pid if process else self.pid
        self._pausing = False
        self.stepper.disarm()
        self._everyone()
        if pid is not None:
            self.view.select(pid)
        self.inspect.forget()  # a stop during a Python request: what the last stop read is stale
        self.stop = StopPoint(pid or 0, thread_id or 0, python)
        if self.eager_stacks:
            stack_now = self.view.mixed_stack(self.all_threads)
            if thread_id is not None:
                stack_now = self.inspect.as_stopped(thread_id, stack_now)
                self.inspect.remember(thread_id, stack_now)
            arguments = self.native_arguments(stack_now, op)
        else:
            stack_now, arguments = stack.MixedStack((), "not read", False), None
        stopped = Stopped(reason=reason, breakpoint=breakpoint, signal=signal_name, thread=thread_id,
                          stack=stack_now, op=op, arguments=arguments, pid=pid,
                          process=process.label() if process and process is not self.tree.root else None,
                          python=python.message if python is not None else None,
                          value=payload.get("value") if reason == "data breakpoint" else None)
        self.last_stop = stopped
        self.emit(stopped)
        if self.auto_continue:
            self.resume()

    def native_arguments(self, stack_now: stack.MixedStack, op: str | None = None) -> list[dict[str, Any]] | None:
        """The innermost frame's tensor, list and scalar arguments, named after operator
        ``op``'s schema when it is an operator's kernel (see ``stopview``)."""
        if op is None:
            return self.view.native_arguments(stack_now, None, None)
        return self.view.native_arguments(stack_now, self.table.ops.argument_names(op), self.table.ops.return_type(op))

    def _require_stopped(self, what: str) -> None:
        if self.state != "stopped":
            raise UsageError(f"the debuggee is running; {what} are read while it is stopped")

    # --- ending -----------------------------------------------------------------------

    def _finish(self, code: int | None, signal_name: str | None) -> None:
        if self.state == "exited":
            return
        self.state = "exited"
        if self._child is not None:
            try:  # our child: its own status is the authority (gdb's may lack a signal name)
                code, signal_name = attach.exit_status(self._child.process.wait(STOP_TIMEOUT))
            except subprocess.TimeoutExpired:
                log.warning("gdb saw the debuggee exit, but PID %d has not ended", self._child.pid)
        self.emit(Exited(code=code, signal=signal_name))
        self.table.warn_unresolved()
        raise SessionEnded(attach.shell_status(code, signal_name))

    def _gdb_died(self) -> None:
        """gdb ended under us: undo the int3 bytes it left, then say what became of the
        debuggee. A thread stopped at, or executing, a breakpoint between gdb's death and
        the repair is sent SIGTRAP by the kernel and the debuggee dies: the remaining window."""
        if self._quitting or self.state in ("exited", "detached"):
            return
        self.state = "detached"
        # Our pipe closes before the kernel releases gdb's tracees: repair once gdb is gone.
        self.gdb.wait_exit(STOP_TIMEOUT)
        restored = self._release_processes(repair=True)
        fate = attach.fate(self._child, self.pid, FATE_GRACE)
        if self._kill_asked and fate in ("was killed by SIGKILL", "is gone"):  # gdb died of the kill itself
            self._finish(None, "SIGKILL")
        raise GdbExitedError(attach.after_gdb_died(self.gdb.pid, self.pid, fate, restored))

    def detach(self, reason: str, code: int = 0) -> None:
        """Action: let go of the debuggee (it runs on) and end the session with ``code``.
        (A second request while the first is detaching is left to the first.)"""
        if self._releasing:
            return
        self._release()
        if self.pid is not None:
            self.emit(Detached(pid=self.pid, reason=reason))
        raise SessionEnded(code)

    def kill(self) -> None:
        """Action: the user asked to end the debuggee (and every process followed with it)."""
        self._kill_asked = True
        self.tree.kill_all()
        if self.pid is not None and self.tree.root is None:
            os.kill(self.pid, signal.SIGKILL)
        if self.state == "stopped":
            try:  # let gdb see the death (it may already have: then there is nothing to run)
                self.gdb.command("-exec-continue")
            except GdbCommandError as err:
                log.debug("continue after SIGKILL: %s", err)

    def _release(self) -> None:
        """Detach gdb (interrupting first if needed); its stops meanwhile are not reported."""
        self._releasing = True
        if self.gdb.alive and self.state in ("running", "stopped"):
            try:
                if self.state == "running":
                    self.gdb.command("-exec-interrupt")
                    self._pump_until(lambda: self.state != "running", STOP_TIMEOUT, "the interrupt")
                if self.state == "stopped":
                    self._take_pending_sigint()
                    self.tree.detach_all()
            except (DebuggerError, SessionEnded) as err:
                log.warning("detaching cleanly failed (%s); gdb's exit will detach", err)
        elif self.gdb.alive and self.state == "exited":
            try:  # followed processes outliving the debuggee run on
                self.tree.detach_all()
            except DebuggerError as err:
                log.warning("letting the remaining processes go failed (%s); gdb's exit will detach", err)
        self.state = "detached" if self.state != "exited" else "exited"

    def _take_pending_sigint(self) -> None:
        """Let gdb take a SIGINT queued while it held the debuggee (our interrupt, when it
        raced a breakpoint hit, leaves one): after the detach the kernel would deliver it
        and Python would die of KeyboardInterrupt. Attached, gdb never passes SIGINT on. Any
        followed process can hold one: ``_kick`` signals the first that can take it."""
        for _ in range(PENDING_SIGINT_ROUNDS):
            if not any(attach.signal_pending(pid, signal.SIGINT) for pid in self.tree.live_pids()):
                return
            self.resume()
            self._pump_until(lambda: self.state != "running", STOP_TIMEOUT, "taking a pending SIGINT")

    def close(self) -> None:
        """End the session on any path: detach, quit gdb, make sure the debuggee runs."""
        self._quitting = True
        try:
            self._release()
        finally:
            major = self.gdb.major_version() if self.solibs.unindexed and self.gdb.alive else 0
            killed = self.gdb.quit()
            # what gdb read without a cache entry is indexed now, by a gdb of its own
            indexcache.write_later(self.gdb.path, self.solibs.unindexed, major)
            if self._child is not None:
                self._child.release()
            # every process runs on (after an exit: the children outliving the root); when gdb
            # had to be killed (``killed``), it may have left breakpoint bytes behind
            if self.pid is not None or self.state == "exited":
                self._release_processes(repair=killed)
            if self._child is not None and self.state != "exited":
                self._child.disown()

    def _release_processes(self, repair: bool) -> int:
        """With gdb gone: restore breakpoint bytes (``repair``) in, and SIGCONT, every
        followed process (the debuggee too); return the bytes restored."""
        restored = self.tree.release_all(repair)
        if self.pid is not None and self.tree.root is None:
            restored += restore_breakpoint_bytes(self.pid) if repair else 0
            attach.ensure_running(self.pid)
        return restored
