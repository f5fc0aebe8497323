"""The Python agents' side of a session: what they are told (their configuration, a
stopped thread's next command), the requests a stopped thread answers (evaluate,
variables), and which processes have one. The session's loop decides when; this module
knows how (``docs/dap-design.md``).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from mixdbg.engine import agents, attention
from mixdbg.engine.inspect import Inspector, StopPoint
from mixdbg.errors import DebuggerError, UsageError
from mixdbg.gdbmi import GdbMi

log = logging.getLogger(__name__)

#: Deliver the agent's signal to process ``pid``'s main thread as it resumes (the session's
#: gdb does it): (pid, signal number) -> False when it must wait for the next resume.
QueueSignal = Callable[[int, int], bool]


class PythonStops:
    """The agents of a session (``hub`` None: no agent, e.g. after an attach)."""

    def __init__(self, gdb: GdbMi, hub: agents.AgentHub | None, inspect: Inspector,
                 live_pids: Callable[[], set[int]]) -> None:
        self.gdb = gdb
        self.hub = hub
        self.inspect = inspect
        self.live_pids = live_pids
        #: Processes whose agent must apply something before the program runs on.
        self.pending: set[int] = set()
        self._places: dict[int, tuple[str, int]] = {}  # every breakpoint id given: its file and line

    def alive(self) -> dict[int, int]:
        """The live processes that have an agent, and its shared block's address."""
        if self.hub is None:
            return {}
        live = self.live_pids()
        return {pid: shared for pid, shared in self.hub.shared.items() if pid in live}

    def monitors(self, pid: int) -> bool:
        """Whether process ``pid``'s agent traces with sys.monitoring (3.12+)."""
        return self.hub is not None and self.hub.tracing.get(pid) == "monitoring"

    def step_signal(self, pid: int) -> int | None:
        """The signal process ``pid``'s agent stops at after a native Step Out (None: none)."""
        return self.hub.step_signals.get(pid) if self.hub is not None else None

    def configure(self, **changes: Any) -> bool:
        """Change what the agents are told (``AgentConfig`` fields); every process must apply
        it before it runs another line (``attend``): True when running programs must be
        stopped for that (the agents read configuration only when told to)."""
        if self.hub is None:
            return False
        for path, lines in (changes.get("breakpoints") or {}).items():
            self._places.update({breakpoint.id: (path, breakpoint.line) for breakpoint in lines})
        self.hub.configure(**changes)
        self.pending.update(self.alive())
        return self.hub.released

    def mark(self, pid: int) -> None:
        """Process ``pid``'s agent has a step armed by the engine to apply before it runs on."""
        self.pending.add(pid)

    def attend(self, stop: StopPoint | None, queue_signal: QueueSignal) -> None:
        """Before the tree runs: every process with something pending is told (see
        ``attention``), except the one at a Python stop, whose thread applies it when it
        leaves the stop, before any other thread of its process runs Python."""
        pending, self.pending = self.pending, set()
        at_python_stop = stop.pid if stop is not None and stop.mailbox is not None else None
        for pid, shared in self.alive().items():
            if pid not in pending:
                continue
            try:
                if not agents.nudge(self.inspect.write_memory, pid, shared) or pid == at_python_stop:
                    continue
                if self.hub is not None and self.hub.tracing.get(pid) == "settrace" and \
                        attention.wake_threads(pid, shared, self.inspect.write_memory):
                    continue
            except DebuggerError as err:  # an exiting process: nothing left to tell
                log.debug("attention of PID %d: %s", pid, err.message)
                continue
            signal = self.step_signal(pid)
            if signal is not None and not queue_signal(pid, signal):
                self.pending.add(pid)

    def tell(self, stop: StopPoint | None, command: str, **arguments: Any) -> None:
        """Give the thread at a Python stop its command for when it runs again."""
        if stop is not None and stop.mailbox is not None:
            agents.post_to_mailbox(self.inspect.write_memory, stop.mailbox, {"command": command, **arguments})
            stop.answered = True

    def run_on(self, mailbox: agents.Mailbox) -> None:
        """A reply nobody waits for any more (a native stop came first): the thread goes on."""
        agents.post_to_mailbox(self.inspect.write_memory, mailbox, {"command": "continue"})

    def ask(self, stop: StopPoint | None, request: dict[str, Any]) -> None:
        """Start a request at a Python stop: only the stopped thread runs until it answers
        (scheduler-locking, ended by ``asked``)."""
        if stop is None or stop.mailbox is None:
            raise UsageError("Python values are asked of the agent at Python stops only")
        agents.post_to_mailbox(self.inspect.write_memory, stop.mailbox, request)
        self.gdb.command("-gdb-set scheduler-locking on")
        self.gdb.command(f"-exec-continue --thread {stop.thread}")

    def asked(self, reply: dict[str, Any] | None) -> dict[str, Any]:
        """End a request: every thread runs again on resumes; the reply's body, or its error."""
        self.gdb.command("-gdb-set scheduler-locking replay")
        if reply is None:
            raise DebuggerError("the program stopped elsewhere while Python evaluated")
        if "error" in reply:
            raise DebuggerError(str(reply["error"]))
        body: dict[str, Any] = reply.get("body", {})
        return body

    def withdrawn(self, message: dict[str, Any]) -> bool:
        """Whether a Python stop is for breakpoints that were all removed since it was hit,
        none of them replaced by one at its line: a thread that trapped while gdb stopped the
        tree is reported only when the tree resumes, after the user removed them (gdb drops
        such native stops too)."""
        hit = message.get("breakpoints") or []
        if self.hub is None or message.get("reason") != "breakpoint" or not hit:
            return False
        current = {b.id for lines in self.hub.config.breakpoints.values() for b in lines}
        # an editor gives a file's breakpoints new ids whenever one of them changes: a hit of
        # a breakpoint replaced by one at the same line is the new one's, never withdrawn
        places = {(path, b.line) for path, lines in self.hub.config.breakpoints.items() for b in lines}
        return not current.intersection(hit) and not any(self._places.get(number) in places for number in hit)

    def is_reply_for(self, stop: StopPoint | None, mailbox: agents.Mailbox) -> bool:
        """Whether a trapped reply is the one the current Python stop waits for."""
        return stop is not None and stop.mailbox is not None and stop.mailbox.tid == mailbox.tid
