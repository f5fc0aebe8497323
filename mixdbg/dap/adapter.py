"""One DAP session: the state between requests, the loop that serves them, and the
translation of the engine's events into DAP events.

Threads: a reader thread turns each incoming message into an action on one queue; the
thread that calls ``serve`` takes actions from it, and once a debuggee is launched or
attached that queue is the session's own (``Session.run``), so every request runs on the
engine's thread, between gdb's records, like the terminal prompt's commands.
"""

from __future__ import annotations

import logging
import queue
import subprocess
import threading
import traceback
from dataclasses import dataclass, field
from typing import IO, Any, Union

from mixdbg import attach
from mixdbg.dap.ids import Handles
from mixdbg.dap.inflight import CANCELLED, Requests
from mixdbg.dap.output import OutputFiles
from mixdbg.dap.protocol import BadMessage, ClientGone, Connection, DapError, read_message
from mixdbg.dap.registry import HANDLERS
from mixdbg.dap.terminal import TerminalRequest
from mixdbg.dap.wording import describe, describe_stop
from mixdbg.engine.agents import AgentHub
from mixdbg.engine.gdb_boot import GdbAhead
from mixdbg.errors import GdbExitedError, MixdbgError
from mixdbg.events import (
    BreakpointChanged,
    Detached,
    Event,
    Exited,
    Notice,
    ProcessFollowed,
    ProgramOutput,
    Progress,
    Stopped,
)
from mixdbg.session import Session, SessionEnded

log = logging.getLogger(__name__)

#: What a stop's reason is called in DAP.
STOP_REASONS = {"data breakpoint": "data breakpoint", "breakpoint": "breakpoint", "step": "step",
                "signal": "exception", "interrupt": "pause", "entry": "entry", "exception": "exception",
                "goto": "goto", "other": "pause"}

Frame = tuple[int, int]  # (thread, index in its mixed stack)
Reference = Union[tuple[str, int, int], tuple[str, str, Any]]


@dataclass
class Breakpoints:
    """The client's breakpoints: DAP ids, and which engine breakpoints stand behind them."""

    next_id: int = 1
    #: C/C++ source path -> [(DAP id, engine number)]
    by_source: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    functions: list[tuple[int, int]] = field(default_factory=list)
    dap_id: dict[int, int] = field(default_factory=dict)  # engine number -> DAP id
    function_ids: set[int] = field(default_factory=set)  # DAP ids of function breakpoints
    instructions: list[tuple[int, int]] = field(default_factory=list)  # the Disassembly view's
    data_ids: set[int] = field(default_factory=set)  # DAP ids of data breakpoints

    def new_id(self) -> int:
        """A fresh DAP breakpoint id."""
        self.next_id += 1
        return self.next_id - 1


class Adapter:
    """Serves one client connection until it disconnects or goes away."""

    def __init__(self, connection: Connection, items: queue.SimpleQueue[Any] | None = None,
                 gdb_ahead: GdbAhead | None = None) -> None:
        self.connection = connection
        self.queue: queue.SimpleQueue[Any] = items if items is not None else queue.SimpleQueue()
        self.session: Session | None = None
        self.debuggee: attach.Debuggee | None = None
        #: The program of a launch without debugging (``noDebug``): no session, no debuggee.
        self.program: subprocess.Popen[bytes] | None = None
        self.hub: AgentHub | None = None
        self.output: OutputFiles | None = None
        self.terminal: TerminalRequest | None = None  # the editor's terminal, held for the session
        self.client: dict[str, Any] = {}
        self.launched = False
        self.configured = False
        self.ended = False  # the session is over (terminated sent)
        self.done = False  # the client disconnected: serve returns
        self.frames: Handles[Frame] = Handles("frame")
        self.references: Handles[Any] = Handles("variables reference")
        self.stop_cache: dict[Any, Any] = {}  # what one stop costs to read, kept until it ends
        self.breakpoints = Breakpoints()
        self.python_breakpoints: dict[str, list[dict[str, Any]]] = {}
        self.terminate_on_end = False
        self.requests = Requests(self)  # waiting and running, for cancel
        #: A gdb started before the launch or attach (with the process, reporting to
        #: ``items``, or at ``initialize``), for the session to take.
        self.gdb_ahead = gdb_ahead

    # --- the loop -----------------------------------------------------------------------

    def serve(self, stream: IO[bytes]) -> None:
        """Read requests from ``stream`` (on a thread) and serve them until the end."""
        threading.Thread(target=self._read, args=(stream,), name="dap-reader", daemon=True).start()
        while not self.done:
            if self.session is not None and not self.ended and self.configured:
                self._run_session()
                continue
            item = self.queue.get()
            try:
                if callable(item):
                    item(self.session)
                elif self.session is not None and not self.ended:
                    self.session.handle(item)
            except SessionEnded as end:  # before the program started (a launch that failed)
                self.end_session(end.code)
            except GdbExitedError as err:
                self.say(f"mixdbg: {err.message}", "important")
                self.end_session()
        self.close()

    def _read(self, stream: IO[bytes]) -> None:
        try:
            while True:
                try:
                    message = read_message(stream)
                except BadMessage as bad:
                    self.bad_message(bad)
                    continue
                if message.get("type") == "request":
                    if not self.requests.arrived(message):
                        self.queue.put(self._action(message))
                elif message.get("type") == "response":
                    self.connection.response_arrived(message)
        except ClientGone as gone:
            log.info("%s", gone.message)
            self.requests.interrupt_python()  # nobody waits for it any more
            if gone.broken:  # say why the session ends
                log.warning("mixdbg dap: %s; the session ends", gone.message)
                self.connection.event("output", {"category": "important",
                                                 "output": f"mixdbg dap: {gone.message}; the session ends\n"})
            self.queue.put(lambda session: self.client_gone())

    def bad_message(self, bad: BadMessage) -> None:
        """A message that is not DAP, in sound framing: answered at once (from the reader
        thread; the connection is thread-safe) and the session goes on. A request with a
        ``seq`` gets an error response; every bad message is also said in an ``output``
        event, which editors show (VS Code drops a response it has no request for)."""
        log.warning("mixdbg dap: %s", bad.message)
        if bad.seq is not None:
            self.connection.fail({"seq": bad.seq, "command": bad.command}, bad.message)
        self.connection.event("output", {"category": "important",
                                         "output": f"mixdbg dap: ignored {bad.message}\n"})

    def _action(self, request: dict[str, Any]) -> Any:
        return lambda session: self.dispatch(request)

    def dispatch(self, request: dict[str, Any]) -> None:
        """Serve one request: its handler's body as the response, or one line of error."""
        command = str(request.get("command"))
        handler = HANDLERS.get(command)
        if not self.requests.begin(request):
            self.connection.fail(request, CANCELLED)
            return
        cancelled = False
        try:
            try:
                if handler is None:
                    raise DapError(f"mixdbg does not support the '{command}' request")
                body = handler(self, request.get("arguments") or {})
            finally:
                cancelled = self.requests.end(request)
            if cancelled:  # interrupted: what it answered is not the whole answer
                self.connection.fail(request, CANCELLED)
            else:
                self.connection.respond(request, body)
        except SessionEnded:
            self.connection.respond(request)
            raise
        except GdbExitedError as err:
            self.connection.fail(request, err.message)
            raise
        except MixdbgError as err:
            self.connection.fail(request, CANCELLED if cancelled else err.message,
                                 show_user=not isinstance(err, DapError) or err.show_user)
        except Exception as err:  # noqa: BLE001 - a bug answers one request, the session goes on
            log.error("request %s failed:\n%s", command, traceback.format_exc())
            self.connection.fail(request, f"internal error in mixdbg: {type(err).__name__}: {err}")

    def _run_session(self) -> None:
        """Run the engine's loop (requests included) until the session ends."""
        assert self.session is not None
        code: int | None = None
        try:
            code = self.session.run()
        except GdbExitedError as err:
            self.say(f"mixdbg: {err.message}", "important")
        except MixdbgError as err:
            self.say(f"mixdbg: {err.message}", "important")
        self.end_session(code)

    def end_session(self, code: int | None = None) -> None:
        """Close the engine (the debuggee runs on unless it was ended) and tell the client."""
        if self.ended:
            return
        self.ended = True
        if self.session is not None:
            self.session.close()
        if self.hub is not None:
            self.hub.close()
        if self.output is not None:
            self.output.stop()
        if self.terminal is not None:
            self.terminal.close()
        log.info("session ended (%s)", code)
        if self.session is not None or self.program is not None:  # one that never launched: nothing to tell
            self.connection.event("terminated")

    def program_ended(self, returncode: int) -> None:
        """The program of a launch without debugging ended: its exit code, then the end."""
        if self.ended:
            return
        if self.output is not None:
            self.output.drain()
        self.connection.event("exited", {"exitCode": returncode if returncode >= 0 else 128 - returncode})
        self.end_session(returncode)

    def client_gone(self) -> None:
        """The client vanished: let the debuggee go (it runs on), end, and stop serving."""
        self.done = True
        if self.session is not None and not self.ended and self.session.state in ("running", "stopped"):
            self.session.detach("the DAP client went away")  # raises SessionEnded in the loop
        self.end_session()

    def close(self) -> None:
        """After the last request: nothing of ours may outlive the adapter but the debuggee."""
        self.end_session()
        if self.gdb_ahead is not None:
            self.gdb_ahead.discard()

    # --- what the engine says -------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        """An engine event, as the client's events."""
        if isinstance(event, Stopped):
            self._stopped(event)
        elif isinstance(event, BreakpointChanged):
            self._breakpoint_changed(event)
        elif isinstance(event, Exited):
            if event.pid is None:
                if self.output is not None:
                    self.output.drain()
                self.connection.event("exited", {"exitCode": _exit_code(event)})
            else:
                self.say(f"{event.process or event.pid}: exited with "
                         + (f"signal {event.signal}" if event.signal else f"code {event.code}"))
        elif isinstance(event, ProcessFollowed):
            self.say(f"mixdbg: following {event.label}: {' '.join(event.body.get('argv', []))}")
        elif isinstance(event, Notice):
            self.say(f"mixdbg: {event.message}", "important" if event.level == "warning" else "console")
        elif isinstance(event, ProgramOutput):
            self.say(event.text if event.text.endswith("\n") else event.text + "\n")
        elif isinstance(event, Detached):
            self.say(f"mixdbg: detached from PID {event.pid} ({event.reason}); it runs on")
        elif isinstance(event, Progress):
            self._progress(event)

    def _progress(self, event: Progress) -> None:
        """A slow symbol read (reported from the progress watcher's thread: only the
        connection, which is locked, is used): progressStart/Update/End where the client
        reports progress (VS Code: a notification), else a line in the debug console at its
        start and end."""
        if not self.client.get("supportsProgressReporting"):
            if event.phase != "update":
                self.say(f"mixdbg: {event.title}: {event.message}")
        elif event.phase == "start":
            self.connection.event("progressStart", {"progressId": event.id, "title": event.title,
                                                    "message": event.message, "cancellable": False})
        elif event.phase == "update":
            self.connection.event("progressUpdate", {"progressId": event.id, "message": event.message})
        else:
            self.connection.event("progressEnd", {"progressId": event.id, "message": event.message})

    def agent_message(self, pid: int, message: dict[str, Any]) -> None:
        """What an agent sends besides stops (on the agents' reader thread): logpoint
        output and problems, for the debug console."""
        if "output" in message:
            self.say(str(message["output"]))
        elif "problem" in message:
            self.say(f"mixdbg: PID {pid}: {message['problem']}", "important")

    def say(self, text: str, category: str = "console") -> None:
        """An ``output`` event for the debug console."""
        self.connection.event("output", {"category": category, "output": text if text.endswith("\n")
                                         else text + "\n"})

    def memory_changed(self, reference: str, offset: int, count: int) -> None:
        """Memory was written: a ``memory`` event for the client's memory views, and an
        ``invalidated`` one for the values it shows (each when the client takes it)."""
        if self.client.get("supportsMemoryEvent"):
            self.connection.event("memory", {"memoryReference": reference, "offset": offset, "count": count})
        if self.client.get("supportsInvalidatedEvent"):
            self.connection.event("invalidated", {"areas": ["variables"]})

    def resumed(self) -> None:
        """The program runs again: frame and variable ids of the stop are invalid."""
        self.frames.reset()
        self.references.reset()
        self.stop_cache.clear()

    def _stopped(self, event: Stopped) -> None:
        self.resumed()
        reason = STOP_REASONS.get(event.reason, "pause")
        body: dict[str, Any] = {"reason": reason, "allThreadsStopped": True, "preserveFocusHint": False}
        if event.thread is not None:
            body["threadId"] = event.thread
        hit = self._hit_ids(event)
        if hit:
            body["hitBreakpointIds"] = hit
            if all(number in self.breakpoints.function_ids for number in hit):
                body["reason"] = "function breakpoint"
        description = _describe(event)
        if event.value is not None and self.session is not None:
            description = describe_stop(self.session, event.breakpoint, event.value)
        if description:
            body["description"] = description
            body["text"] = description
        self.connection.event("stopped", body)

    def _hit_ids(self, event: Stopped) -> list[int]:
        if event.python is not None:
            return [int(number) for number in event.python.get("breakpoints", [])]
        if event.breakpoint is not None and event.breakpoint in self.breakpoints.dap_id:
            return [self.breakpoints.dap_id[event.breakpoint]]
        return []

    def _breakpoint_changed(self, event: BreakpointChanged) -> None:
        number = int(event.body.get("id", 0))
        dap_id = self.breakpoints.dap_id.get(number)
        if dap_id is None or event.deleted or not event.news:
            return
        self.connection.event("breakpoint", {"reason": "changed", "breakpoint": describe(dap_id, event.body)})


def _exit_code(event: Exited) -> int:
    if event.code is not None:
        return event.code
    return 128 + _signal_number(event.signal)


def _signal_number(name: str | None) -> int:
    import signal

    try:
        return int(signal.Signals[name or ""])
    except KeyError:
        return 0


def _describe(event: Stopped) -> str | None:
    if event.python is not None:
        text = event.python.get("description")
        return str(text) if text else None
    if event.signal:
        where = f" in {event.process}" if event.process else ""
        return f"signal {event.signal}{where}"
    if event.op:
        return f"operator {event.op}"
    if event.reason == "exception":
        return "C++ exception thrown"
    return None
