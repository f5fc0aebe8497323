"""The requests in flight (waiting and running) and how they are cancelled (the ``cancel``
request itself is ``cancel.py``'s), with cancellable progress for slow requests.

Requests wait on the adapter's queue, then run one at a time on the session's thread, so a
``cancel`` is served at once on the reader thread (it cannot wait behind the request it
cancels): a request still queued is answered ``cancelled`` when its turn comes; the one
running is interrupted where it runs: a Python request by the agent at its next line (or,
waiting in native code, paused there), a gdb command as Ctrl-C interrupts it. Pause,
disconnect, terminate and the client's departure interrupt a running Python request too:
the program must never stay stuck in an evaluation nobody waits for.

A request still running after PROGRESS_AFTER seconds shows a cancellable progress
notification (``progressStart``) to a client that reports progress (VS Code): its Cancel
button sends ``cancel`` with the ``progressId``.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import HANDLERS

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter

#: Seconds a request runs before its progress notification appears.
PROGRESS_AFTER = 1.0
#: Requests that may run long enough to show progress.
SLOW = frozenset({"evaluate", "variables", "setVariable", "setExpression", "completions"})
#: Requests that interrupt a running Python request as they arrive.
INTERRUPTING = frozenset({"pause", "disconnect", "terminate"})
CANCELLED = "cancelled"


class Requests:
    """Which requests wait and which one runs (for ``cancel``); thread-safe."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._waiting: set[int] = set()
        self._cancelled: set[int] = set()
        self._running: dict[str, Any] | None = None  # the request, while it may show progress
        self._running_seq: int | None = None
        self._started = 0.0
        self._progress: str | None = None
        self._watcher: threading.Thread | None = None

    def arrived(self, message: dict[str, Any]) -> bool:
        """A request arrived (reader thread): True if it was served here (``cancel``),
        else it is recorded as waiting for its turn."""
        seq = int(message.get("seq", 0))
        command = message.get("command")
        if command == "cancel":
            try:
                self.adapter.connection.respond(message, HANDLERS["cancel"](self.adapter, message.get("arguments") or {}))
            except DapError as err:
                self.adapter.connection.fail(message, err.message)
            return True
        if command in INTERRUPTING:
            self.interrupt_python()
        with self._lock:
            self._waiting.add(seq)
        return False

    def begin(self, message: dict[str, Any]) -> bool:
        """The request's turn (session thread): False if it was cancelled while it waited."""
        seq = int(message.get("seq", 0))
        with self._lock:
            self._waiting.discard(seq)
            if seq in self._cancelled:
                self._cancelled.discard(seq)
                return False
            self._running_seq, self._started = seq, time.monotonic()
            if message.get("command") in SLOW and self.adapter.client.get("supportsProgressReporting"):
                self._running = message
                self._changed.notify()
                if self._watcher is None:
                    self._watcher = threading.Thread(target=self._watch, name="dap-progress", daemon=True)
                    self._watcher.start()
        return True

    def end(self, message: dict[str, Any]) -> bool:
        """The request was answered or failed: whether it had been cancelled (its error
        is then worded ``cancelled``)."""
        seq = int(message.get("seq", 0))
        with self._lock:
            self._running, self._running_seq = None, None
            if self.adapter.session is not None:  # under the lock: see cancel
                self.adapter.session.drop_upcoming_cancel()
            cancelled = seq in self._cancelled
            self._cancelled.discard(seq)
            progress, self._progress = self._progress, None
        if progress is not None:
            self.adapter.connection.event("progressEnd", {"progressId": progress})
        return cancelled

    def cancel(self, seq: int | None, progress: str | None) -> None:
        """Cancel request ``seq`` (or the one behind progress ``progress``): remembered if it
        waits, interrupted if it runs, ignored if it is over (as DAP allows)."""
        with self._lock:
            if progress is not None and progress == self._progress:
                seq = self._running_seq
            if seq is None:
                return
            if seq in self._waiting:
                self._cancelled.add(seq)
                return
            if seq != self._running_seq:
                return
            self._cancelled.add(seq)
            if self.adapter.session is not None:  # its Python request, even one not asked yet
                self.adapter.session.cancel_python_request(upcoming=True)
        self.interrupt_running()

    def interrupt_python(self) -> bool:
        """Cancel the Python request the session serves, if one runs."""
        session = self.adapter.session
        return session is not None and session.cancel_python_request()

    def interrupt_running(self) -> None:
        """Interrupt the running request where it runs: the agent's request, or gdb's
        command (only while the program is stopped: a SIGINT to gdb while it runs the
        program would pause it)."""
        session = self.adapter.session
        if session is None or self.interrupt_python():
            return
        if session.state == "stopped":
            session.gdb.interrupt_command()

    def _watch(self) -> None:
        """The progress thread: a request that has run PROGRESS_AFTER seconds gets its
        cancellable progress notification (once)."""
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._running is not None and self._progress is None)
                message, late = self._running, self._started + PROGRESS_AFTER - time.monotonic()
                if message is None or late > 0:
                    self._changed.wait(max(late, 0.01))
                    continue
                self._running = None  # shown: not again
                self._progress = f"mixdbg-request-{message.get('seq')}"
                # sent under the lock: ``end`` cannot send its progressEnd before this
                self.adapter.connection.event("progressStart", {
                    "progressId": self._progress, "title": _title(message), "requestId": int(message.get("seq", 0)),
                    "cancellable": True, "message": "Cancel stops it (a Python evaluation at its next line)"})


def _title(message: dict[str, Any]) -> str:
    arguments = message.get("arguments") or {}
    command = str(message.get("command"))
    if command == "evaluate":
        return f"Evaluating {str(arguments.get('expression', ''))[:80]}"
    if command in ("setVariable", "setExpression"):
        return f"Setting {arguments.get('name') or arguments.get('expression')}"
    return {"variables": "Reading variables", "completions": "Completing", "stackTrace": "Reading the stack",
            "scopes": "Reading the frame"}.get(command, f"mixdbg: {command}")
