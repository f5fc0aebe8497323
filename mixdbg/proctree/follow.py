"""Following a debuggee's descendants in the session's one gdb: settings, events, exits.

One gdb holds every followed process as an inferior (``detach-on-fork off``): the kernel
attaches each child of a traced process to the tracer before it runs one instruction, so
a fork child inherits the inserted breakpoints and an exec'd child resolves pending ones as
its libraries load: no child runs a line unobserved. gdb shares symbol tables between
inferiors mapping the same files, so a torch worker costs gdb almost no memory.

gdb 13.1's multi-inferior all-stop mode has sharp edges; the settings below are the
measured cure (research/multiprocess.md §2.7):

* ``maint set target-non-stop off``: otherwise a vfork from a multi-threaded parent
  (``subprocess`` on Python >= 3.10, torchrun starting its ranks) leaves a thread in
  ptrace-stop forever, and detaching a process at its exec catchpoint kills it with SIGTRAP;
* ``handle SIGSTOP nostop noprint nopass``: with that setting gdb sometimes reports its own
  stop requests as SIGSTOP signals, which passed on would freeze the process;
* exits: after a child's exit gdb keeps the dead inferior selected and refuses to continue
  (select a live thread first), and some exits are never reported (check /proc).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import time
from typing import Any, Callable

import psutil

from mixdbg import attach
from mixdbg.breakpoint_repair import restore_breakpoint_bytes
from mixdbg.events import Event, Exited, ProcessFollowed
from mixdbg.gdbmi import GdbCommandError, GdbMi, MiRecord
from mixdbg.proctree import procfs
from mixdbg.proctree.table import DATALOADER_WORKER, Process, ProcessTable, tag
from mixdbg.proctree.workers import WorkerIdReader

log = logging.getLogger(__name__)

FOLLOW_NONE, FOLLOW_PYTHON, FOLLOW_ALL = "none", "python", "all"
#: How long a process /proc shows ended is left for gdb to report before it is taken as gone.
EXIT_REPORT_GRACE = 1.0
_EXEC_LINE = re.compile(r"^process (\d+) is executing new program: (.+)$")
FOLLOW_MODES = (FOLLOW_NONE, FOLLOW_PYTHON, FOLLOW_ALL)
_FOLLOW_SETTINGS = (
    "set schedule-multiple on",
    "set follow-exec-mode same",
    "maint set target-non-stop off",
    "handle SIGSTOP nostop noprint nopass",
)


class ProcessTree:
    """The processes of one session: which gdb follows, what they are, how they end.

    ``emit`` receives ``process`` events (when a process first matters: its exec into a
    followed program, its first stop, its exit), per-process ``exited`` events and
    ``detached`` events for programs let go. The root (the debuggee) is the first process
    gdb reports; its own exit ends the session and is the session's business."""

    def __init__(self, gdb: GdbMi, emit: Callable[[Event], None], follow: str = FOLLOW_PYTHON,
                 worker_ids: WorkerIdReader | None = None) -> None:
        self.gdb = gdb
        self.emit = emit
        self.follow = follow
        self.worker_ids = worker_ids
        self.table = ProcessTable()
        self._last_exit: Process | None = None
        self.following = False
        #: (pid, label) of the live, announced processes: replaced whole on each change, so
        #: other threads (the control socket's) can read it without a lock.
        self.summary: tuple[tuple[int, str], ...] = ()
        self._trace_stopped: set[int] = set()
        self._ended_at: dict[int, float] = {}  # pid -> when /proc first showed it ended

    # --- setting up -------------------------------------------------------------------

    def configure(self) -> None:
        """Prepare gdb for following (before it attaches: the target settings apply then)."""
        if self.follow == FOLLOW_NONE:
            return
        for command in _FOLLOW_SETTINGS:
            self.gdb.console(command)

    def start_following(self) -> None:
        """Follow children from now on. Until then (a launched debuggee starting debugpy,
        whose ``platform`` module runs ``uname``) gdb lets forks go as it always did: in
        all-stop, a followed child's exit would stop the debuggee while nobody reads gdb's
        events yet."""
        if self.follow == FOLLOW_NONE or self.following:
            return
        self.gdb.console("set detach-on-fork off")
        self.following = True

    @property
    def root(self) -> Process | None:
        """The debuggee itself."""
        return self.table.root

    # --- gdb's notifications ----------------------------------------------------------

    def on_notify(self, record: MiRecord) -> Process | None:
        """Track ``=thread-group-*`` and ``=thread-*`` records; return the process whose
        exit this record reports (the root's exit ends the session: the caller's part)."""
        payload: dict[str, Any] = record.payload or {}
        if record.message == "thread-group-started":
            self.table.started(str(payload["id"]), int(payload["pid"]))
        elif record.message == "thread-created":
            self.table.thread_created(str(payload["id"]), str(payload.get("group-id", "")))
        elif record.message == "thread-exited":
            self.table.thread_exited(str(payload["id"]))
        elif record.message == "thread-group-exited":
            return self._group_exited(str(payload["id"]), payload.get("exit-code"))
        return None

    def _group_exited(self, inferior: str, exit_code: str | None) -> Process | None:
        process = self.table.by_inferior.get(inferior)
        if process is None:
            return None
        self._last_exit = process
        if process is self.root or process.quiet:
            self.table.ended(process)  # the root's end is the session's; a quiet one untold
        elif not process.ended and exit_code is not None:
            self._exited(process, int(exit_code, 8), None)
        # else: signalled (the *stopped that follows names the signal), or let go by us
        return process

    def on_exit_stop(self, payload: dict[str, Any]) -> Process | None:
        """A bare ``*stopped,reason="exited…"``: gdb names no process, it pairs with the last
        ``=thread-group-exited``. Report a child's signal death; return the process."""
        process = self._last_exit
        if process is not None and process is not self.root and not process.ended:
            self._exited(process, None, str(payload.get("signal-name") or "") or None)
        return process

    def _exited(self, process: Process, code: int | None, signal_name: str | None) -> None:
        self.table.ended(process)
        if process.quiet:
            return
        self._announce(process)
        self._publish()
        self.emit(Exited(code=code, signal=signal_name, pid=process.pid, process=process.label()))

    # --- stops ------------------------------------------------------------------------

    def on_console(self, text: str) -> None:
        """gdb's console line ``process N is executing new program: PATH`` (an exec; gdb
        follows it and lets the process run on): follow the new program, tagged anew, or,
        if it is not Python, keep it quiet: never reported, never stopped, and so are its
        descendants until one of them execs Python.

        Not detached, and no ``catch exec`` stop to detach it at: gdb 13.1 dies
        (internal-error in x86_linux_update_debug_registers) when a vfork child
        (``subprocess``, ``posix_spawn``) is detached at its exec catchpoint, and hangs the
        next ``-exec-continue`` when it is detached at a later stop (measured)."""
        match = _EXEC_LINE.match(text.strip())
        if match is None:
            return
        pid, program = int(match.group(1)), match.group(2)
        process = next((p for p in self.table.live() if p.pid == pid), None)
        if process is None or process is self.root:
            return
        process.execed = True
        process.quiet = not (self.follow == FOLLOW_ALL or (procfs.is_python_executable(program)
                                                            and not _is_debugpy_adapter(process.pid)))
        if not process.quiet:
            tag(process)
            self._announce(process)

    def stopped_in(self, payload: dict[str, Any]) -> Process | None:
        """The process a reported stop is in, tagged and announced (first stop only; never
        without children followed: the debuggee alone is not a tree)."""
        process = self.table.of_thread(str(payload.get("thread-id", "")))
        if process is not None and not process.announced and not process.quiet and self.follow != FOLLOW_NONE:
            tag(process)
            if process.role == DATALOADER_WORKER and self.worker_ids is not None:
                process.worker_id = self.worker_ids(process.pid)
            self._announce(process)
        return process

    def passes_silently(self, payload: dict[str, Any], fatal: frozenset[str]) -> bool:
        """Whether a stop is not for the user: any in a quiet process (a program that is not
        Python), a fatal signal already reported for its process (torch's DataLoader worker
        handler prints and re-raises it), a child's other signals (a pool terminating its
        workers: its ``exited`` event tells). The caller resumes, passing the signal on."""
        process = self.stopped_in(payload)
        if process is None:
            return False
        reason, name = payload.get("reason"), payload.get("signal-name")
        if process.quiet:
            return True
        if reason == "signal-received" and name in fatal:
            repeated = bool(process.crash_signal == name)
            process.crash_signal = str(name)
            return repeated
        return process is not self.root and reason == "signal-received" and name != "SIGINT"

    def announce_root(self) -> None:
        """Report the debuggee itself as the first ``process``."""
        if self.root is not None:
            self._announce(self.root)

    def _announce(self, process: Process) -> None:
        if not process.announced:
            process.announced = True
            self._publish()
            self.emit(ProcessFollowed(process.to_json(), process.label()))

    def _publish(self) -> None:
        self.summary = tuple((p.pid, p.label()) for p in self.table.live() if p.announced)

    # --- resuming ---------------------------------------------------------------------

    def continue_all(self) -> bool:
        """Resume every followed process; False if none could be resumed. After an exit gdb
        keeps the dead process selected and refuses to continue: select a live thread."""
        try:
            self.gdb.command("-exec-continue")
            return True
        except GdbCommandError as err:
            log.debug("continue: %s; selecting a live thread", err.gdb_message)
        for thread in self.table.live_threads():
            try:
                self.gdb.command(f"-thread-select {thread}")
                self.gdb.command("-exec-continue")
                return True
            except GdbCommandError as err:
                if "is running" in err.gdb_message:
                    return True
                log.debug("resuming through thread %s: %s", thread, err.gdb_message)
        return False

    def reconcile(self) -> list[Process]:
        """Report the exits gdb lost (seen in /proc); return the processes found gone, the
        root included (its end is the caller's)."""
        gone = []
        now = time.monotonic()
        live = self.table.live()  # a pid seen ended and since reported may be a new process's later
        self._ended_at = {pid: at for pid, at in self._ended_at.items() if any(p.pid == pid for p in live)}
        for process in live:
            ended, code, signal_number = procfs.exit_status(process.pid)
            if not ended or now - self._ended_at.setdefault(process.pid, now) < EXIT_REPORT_GRACE:
                continue  # gdb, busy or slowed by load, may report it yet (with its real status)
            gone.append(process)
            log.info("gdb did not report the exit of pid %d (found in /proc)", process.pid)
            if process is self.root:
                self.table.ended(process)
            else:
                name = attach.signal_name(int(signal_number)) if signal_number else None
                self._exited(process, code, name)
        return gone

    def stuck(self) -> set[int]:
        """Followed processes with a thread in a ptrace stop, and that had one at the last
        call too. While gdb says everything runs, that is gdb 13.1 having forgotten to resume
        it (measured: a forkserver after its children exited, about 1 run in 10)."""
        stopped = {p.pid for p in self.table.live() if procfs.trace_stopped(p.pid)}
        stuck, self._trace_stopped = stopped & self._trace_stopped, stopped
        return stuck

    def awake(self) -> int | None:
        """A live, reported process with no thread in a ptrace stop now, the root first: the
        one to send the SIGINT that gets gdb to stop (and then resume) them all. gdb's own
        ``-exec-interrupt`` (all-stop, native) sends it to the process of gdb's first running
        thread only, the root's, and a process in a ptrace stop that gdb forgot never takes
        it: nothing stops (CI, after a worker's crash)."""
        return next((p.pid for p in self.table.live() if not p.quiet and not procfs.trace_stopped(p.pid)), None)

    # --- ending -----------------------------------------------------------------------

    def pids_of(self, inferiors: set[str]) -> list[int]:
        """The pids of the live, reported processes among gdb's ``inferiors`` ("i2")."""
        return sorted(p.pid for p in self.table.live() if p.inferior in inferiors and not p.quiet)

    def inferior_of(self, pid: int) -> str | None:
        """The gdb inferior ("i2") of live process ``pid``, if followed."""
        return next((p.inferior for p in self.table.live() if p.pid == pid), None)

    def one_thread_each(self) -> list[tuple[str, str]]:
        """(inferior, one of its gdb threads) of each live process that is shown (not
        quiet), the root first: where something must be set once per process (gdb binds a
        watchpoint or an address breakpoint to the inferior selected when it is set)."""
        threads = self.table.threads_by_inferior()
        return [(p.inferior, threads[p.inferior][0]) for p in self.table.live()
                if not p.quiet and threads.get(p.inferior)]

    def live_pids(self) -> list[int]:
        """Pids of the processes still followed, children first (the order to let go in)."""
        return [p.pid for p in reversed(self.table.live())]

    def unknown_descendants(self) -> list[int]:
        """Descendants of followed processes gdb does not list: forks in flight, which carry
        a copy of the parent's breakpoint bytes (and children of processes let go)."""
        known = {p.pid for p in self.table.by_inferior.values()}
        found: set[int] = set()
        for pid in self.live_pids():
            try:
                found.update(child.pid for child in psutil.Process(pid).children(recursive=True))
            except psutil.Error as err:
                log.debug("children of %d: %s", pid, err)
        return sorted(found - known)

    def detach_all(self) -> None:
        """Let every followed process go, children first, after repairing forks in flight
        (measured: detaching kills such a child with SIGTRAP at its first breakpoint)."""
        for pid in self.unknown_descendants():
            if attach.process_state(pid).get("TracerPid") == str(self.gdb.pid):
                restore_breakpoint_bytes(pid)
        for process in reversed(self.table.live()):
            try:
                self.gdb.command(f"-target-detach --thread-group {process.inferior}")
            except GdbCommandError as err:
                log.info("detaching %s: %s", process.label(), err.gdb_message)

    def kill_all(self) -> None:
        """SIGKILL every followed process, children first (the user asked to end them)."""
        for pid in self.live_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                log.debug("pid %d already gone", pid)

    def release_all(self, repair: bool) -> int:
        """After gdb is gone: restore breakpoint bytes (``repair``) and SIGCONT in every
        followed process and their descendants; return the bytes restored."""
        restored = 0
        for pid in [*self.unknown_descendants(), *self.live_pids()]:
            if repair:
                restored += restore_breakpoint_bytes(pid)
            attach.ensure_running(pid)
        return restored


def _is_debugpy_adapter(pid: int) -> bool:
    """debugpy's adapter process (with --wait-for-client) is mixdbg's machinery, not the user's."""
    try:
        return attach.classify(psutil.Process(pid)) == attach.ROLE_ADAPTER
    except psutil.Error:
        return False
