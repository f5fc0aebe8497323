"""A Debug Adapter Protocol client for tests, playing VS Code: the same start-up sequence
and capabilities, reverse requests answered (``runInTerminal`` really runs the command),
and every message sent or received checked against the protocol's JSON schema.

A reader thread receives everything; the test's thread waits, with a timeout, for a
response or the next event of a kind. A schema violation, a response to no request or a
malformed frame fails the next wait (or ``close()``) with the offending JSON."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psutil

from .schema import DapSchema, Message, ProtocolViolation
from .transport import Framer, PipeStream, SocketStream, Stream, connect_tcp, encode, wait_for_port

T = TypeVar("T")

#: What VS Code 1.9x says about itself in ``initialize``.
VSCODE_CLIENT: dict[str, Any] = {
    "clientID": "vscode", "clientName": "Visual Studio Code", "adapterID": "mixdbg", "locale": "en",
    "pathFormat": "path", "linesStartAt1": True, "columnsStartAt1": True, "supportsVariableType": True,
    "supportsVariablePaging": True, "supportsRunInTerminalRequest": True, "supportsMemoryReferences": True,
    "supportsProgressReporting": True, "supportsInvalidatedEvent": True, "supportsMemoryEvent": True,
    "supportsArgsCanBeInterpretedByShell": True, "supportsStartDebuggingRequest": True,
    "supportsANSIStyling": True,
}
#: Messages quoted when a wait fails.
RECENT = 10


class RequestFailed(AssertionError):
    """A request answered with ``success: false``; ``response`` is the whole answer."""

    def __init__(self, response: Message) -> None:
        self.response = response
        super().__init__(f"{response.get('command')} failed: {response.get('message')!r} "
                         f"{json.dumps(response.get('body'))[:1000]}")


class DapTimeout(AssertionError):
    """A wait ran out of time; the message says what was awaited and what was seen last."""


class AdapterGone(AssertionError):
    """The connection ended while something was still awaited."""


@dataclass
class Terminal:
    """A command the adapter had the editor run (``runInTerminal``): started detached, in a
    new session, its stdout and stderr going to ``log`` as in a terminal."""

    arguments: Message
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        """What the command printed so far."""
        return self.log.read_text(errors="replace")

    def wait(self, timeout: float) -> int:
        """Wait for the command to end; its exit code."""
        return self.process.wait(timeout)


@dataclass
class Startup:
    """What the start-up sequence answered: the ``launch``/``attach`` response and the
    breakpoints as the adapter reported them, per source path."""

    response: Message
    breakpoints: dict[str, list[Message]] = field(default_factory=dict)
    function_breakpoints: list[Message] = field(default_factory=list)


@dataclass(frozen=True)
class Timed:
    """A request's response and the event it led to, with seconds from sending the request."""

    response: Message
    event: Message
    to_response: float
    to_event: float


def _breakpoint(spec: int | Mapping[str, Any]) -> dict[str, Any]:
    return {"line": spec} if isinstance(spec, int) else dict(spec)


def _function_breakpoint(spec: str | Mapping[str, Any]) -> dict[str, Any]:
    return {"name": spec} if isinstance(spec, str) else dict(spec)


class DapClient:
    """One connection to a debug adapter. Make one with :meth:`spawn` (stdio),
    :meth:`serve` (an adapter listening on TCP) or :meth:`connect` (a port)."""

    def __init__(self, stream: Stream, workdir: Path, schema: DapSchema, *, process: subprocess.Popen[bytes] | None
                 = None, stderr: Path | None = None, timeout: float = 30.0) -> None:
        self.workdir = workdir
        self.schema = schema
        self.process = process
        self.stderr = stderr
        self.timeout = timeout
        #: The adapter's ``initialize`` answer (its capabilities), once initialized.
        self.capabilities: Message = {}
        self.initialized = False
        #: Every message in order: ("->" sent / "<-" received, message, time.monotonic()).
        self.log: list[tuple[str, Message, float]] = []
        #: ``runInTerminal`` commands run, and ``startDebugging`` arguments received.
        self.terminals: list[Terminal] = []
        self.start_debugging: list[Message] = []
        #: PIDs the client ended at close() because they outlived the session.
        self.killed: list[int] = []
        self._stream = stream
        self._framer = Framer(stream)
        self._seq = itertools.count(1)
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._sent: dict[int, tuple[str, float]] = {}
        self._responses: dict[int, tuple[Message, float]] = {}
        self._events: list[tuple[Message, float]] = []
        self._cursor: dict[str, int] = {}
        self._processes: list[psutil.Process] = []
        self._violations: list[ProtocolViolation] = []
        self._ended: str | None = None
        self._disconnected = False
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name="dap-client-reader", daemon=True)
        self._reader.start()

    # --- making a client ----------------------------------------------------------------

    @classmethod
    def spawn(cls, command: Sequence[str], workdir: Path, schema: DapSchema, *, env: Mapping[str, str] | None = None,
              cwd: Path | None = None, timeout: float = 30.0) -> DapClient:
        """Start an adapter speaking DAP on its stdin/stdout (its stderr goes to a file in
        ``workdir``); the client owns the process and ends it at :meth:`close`."""
        workdir.mkdir(parents=True, exist_ok=True)
        stderr = workdir / f"adapter-{time.monotonic_ns()}.stderr"
        with stderr.open("wb") as err:
            process = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                       env=None if env is None else dict(env), cwd=cwd)
        assert process.stdin is not None and process.stdout is not None
        return cls(PipeStream(process.stdin, process.stdout), workdir, schema, process=process, stderr=stderr,
                   timeout=timeout)

    @classmethod
    def serve(cls, command: Sequence[str], workdir: Path, schema: DapSchema, *, env: Mapping[str, str] | None = None,
              cwd: Path | None = None, timeout: float = 30.0) -> DapClient:
        """Start an adapter that serves DAP on a TCP port it prints on stdout (such as
        ``mixdbg dap --port 0``) and connect to it; the client owns the process."""
        workdir.mkdir(parents=True, exist_ok=True)
        stamp = time.monotonic_ns()
        stdout, stderr = workdir / f"adapter-{stamp}.stdout", workdir / f"adapter-{stamp}.stderr"
        with stdout.open("wb") as out, stderr.open("wb") as err:
            process = subprocess.Popen(list(command), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                       env=None if env is None else dict(env), cwd=cwd)
        try:
            port = wait_for_port(process, stdout, timeout)
            sock = connect_tcp("127.0.0.1", port, timeout)
        except BaseException:
            process.kill()
            process.wait(timeout)
            raise
        return cls(SocketStream(sock), workdir, schema, process=process, stderr=stderr, timeout=timeout)

    @classmethod
    def connect(cls, port: int, workdir: Path, schema: DapSchema, *, host: str = "127.0.0.1",
                timeout: float = 30.0) -> DapClient:
        """Connect to an adapter already serving DAP on ``host:port``."""
        workdir.mkdir(parents=True, exist_ok=True)
        return cls(SocketStream(connect_tcp(host, port, timeout)), workdir, schema, timeout=timeout)

    # --- sending --------------------------------------------------------------------------

    def _send(self, message: Message) -> int:
        with self._send_lock:
            seq = next(self._seq)
            message = {"seq": seq, **message}
            self.schema.check(message, "sent")
            now = time.monotonic()
            if message["type"] == "request":
                self._sent[seq] = (message["command"], now)
            with self._cond:
                self.log.append(("->", message, now))
            try:
                self._stream.send(encode(message))
            except OSError as error:
                raise AdapterGone(f"cannot send {message.get('command')}: {error}{self._stderr_tail()}") from None
        return seq

    def send_request(self, command: str, arguments: Mapping[str, Any] | None = None) -> int:
        """Send a request without waiting; its ``seq``, for :meth:`wait_response`."""
        if command == "disconnect":
            self._disconnected = True
        message: Message = {"type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = dict(arguments)
        return self._send(message)

    def wait_response(self, seq: int, timeout: float | None = None) -> Message:
        """The response to request ``seq``, successful or not."""
        command = self._sent[seq][0]
        found = self._wait(f"the response to {command} (seq {seq})",
                           lambda: self._responses[seq][0] if seq in self._responses else None, timeout)
        return found

    def request_raw(self, command: str, timeout: float | None = None, **arguments: Any) -> Message:
        """Send a request and return its response, even a failed one."""
        return self.wait_response(self.send_request(command, arguments), timeout)

    def request(self, command: str, timeout: float | None = None, **arguments: Any) -> Message:
        """Send a request and return its successful response; :class:`RequestFailed` otherwise."""
        response = self.request_raw(command, timeout, **arguments)
        if not response["success"]:
            raise RequestFailed(response)
        return response

    # --- receiving ------------------------------------------------------------------------

    def _read_loop(self) -> None:
        ended = "the adapter closed the connection"
        try:
            while (message := self._framer.next_message()) is not None:
                self._receive(message)
        except ProtocolViolation as violation:
            ended = f"the connection broke the framing: {violation}"
            self._violations.append(violation)
        except Exception as error:  # noqa: BLE001 (waits must learn why the reader stopped, not time out)
            ended = f"the client's reader failed: {error!r}"
        with self._cond:
            self._ended = ended
            self._cond.notify_all()

    def _receive(self, message: Message) -> None:
        now = time.monotonic()
        problems = []
        try:
            self.schema.check(message, "received")
        except ProtocolViolation as violation:
            problems.append(violation)
        kind = message.get("type")
        if kind == "response":
            sent = self._sent.get(message.get("request_seq", -1))
            if sent is None or sent[0] != message.get("command"):
                problems.append(ProtocolViolation(f"a response to no request of ours (we sent {sent}):\n"
                                                  f"{json.dumps(message)[:2000]}"))
        if kind == "event" and message.get("event") == "process":
            self._track_process(message)
        with self._cond:
            self._violations.extend(problems)
            self.log.append(("<-", message, now))
            if kind == "response":
                self._responses[message.get("request_seq", -1)] = (message, now)
            elif kind == "event":
                self._events.append((message, now))
            self._cond.notify_all()
        if kind == "request":
            self._answer_reverse_request(message)

    def _track_process(self, event: Message) -> None:
        pid = event.get("body", {}).get("systemProcessId")
        if isinstance(pid, int):
            try:
                self._processes.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass  # it already ended: nothing to clean up

    def _answer_reverse_request(self, request: Message) -> None:
        command, arguments = request.get("command"), request.get("arguments", {})
        response: Message = {"type": "response", "request_seq": request.get("seq"), "command": command,
                             "success": True}
        try:
            if command == "runInTerminal":
                response["body"] = self._run_in_terminal(arguments)
            elif command == "startDebugging":
                self.start_debugging.append(arguments)
            else:
                raise ValueError(f"the test client does not handle the reverse request {command!r}")
        except (OSError, ValueError) as error:
            response.update(success=False, message=str(error), body={"error": {"id": 1, "format": str(error)}})
        try:
            self._send(response)
        except (ProtocolViolation, AdapterGone) as problem:
            with self._cond:
                self._violations.append(ProtocolViolation(f"answering {command}: {problem}"))
                self._cond.notify_all()

    def _run_in_terminal(self, arguments: Message) -> Message:
        env = dict(os.environ)
        for name, value in (arguments.get("env") or {}).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        command = list(arguments["args"])
        if arguments.get("argsCanBeInterpretedByShell"):
            command = ["/bin/sh", "-c", " ".join(command)]
        log = self.workdir / f"terminal-{len(self.terminals)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(command, cwd=arguments.get("cwd") or None, env=env, stdin=subprocess.DEVNULL,
                                       stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.terminals.append(Terminal(arguments, process, log))
        return {"processId": process.pid, "shellProcessId": process.pid}

    # --- waiting --------------------------------------------------------------------------

    def _stderr_tail(self) -> str:
        if self.stderr is None or not self.stderr.exists():
            return ""
        return f"\nadapter stderr (end): {self.stderr.read_text(errors='replace')[-1500:]}"

    def recent(self, count: int = RECENT) -> str:
        """The last ``count`` messages, one a line, for failure messages."""
        with self._cond:
            last = self.log[-count:]
        return "\n".join(f"  {arrow} {json.dumps(message)[:600]}" for arrow, message, _ in last)

    def _raise_violations(self) -> None:
        if self._violations:
            first, others = self._violations[0], len(self._violations) - 1
            self._violations.clear()
            raise ProtocolViolation(f"{first}" + (f"\n(and {others} more violations)" if others else ""))

    def _wait(self, what: str, find: Callable[[], T | None], timeout: float | None) -> T:
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        with self._cond:
            while True:
                self._raise_violations()
                found = find()
                if found is not None:
                    return found
                if self._ended is not None:
                    raise AdapterGone(f"{self._ended} while waiting for {what}; last messages:\n"
                                      f"{self.recent()}{self._stderr_tail()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DapTimeout(f"timed out after {limit:g} s waiting for {what}; last messages:\n"
                                     f"{self.recent()}{self._stderr_tail()}")
                self._cond.wait(remaining)

    def wait_event(self, name: str, predicate: Callable[[Message], bool] | None = None,
                   timeout: float | None = None) -> Message:
        """The next ``name`` event (matching ``predicate``) after the last one this method
        returned for that name: events that came before the call are not lost."""
        def find() -> Message | None:
            for index in range(self._cursor.get(name, 0), len(self._events)):
                event = self._events[index][0]
                if event.get("event") == name and (predicate is None or predicate(event)):
                    self._cursor[name] = index + 1
                    return event
            return None
        return self._wait(f"event {name!r}" + (" matching the predicate" if predicate else ""), find, timeout)

    def events(self, name: str) -> list[Message]:
        """Every ``name`` event received so far."""
        with self._cond:
            return [event for event, _ in self._events if event.get("event") == name]

    def output(self, category: str | None = None) -> str:
        """The text of the ``output`` events so far, of one category (``stdout``,
        ``stderr``, ``console``, ``important``...) or of all."""
        return "".join(event["body"].get("output", "") for event in self.events("output")
                       if category is None or event["body"].get("category", "console") == category)

    # --- timing ---------------------------------------------------------------------------

    def received_at(self, message: Message) -> float:
        """When (``time.monotonic()``) ``message`` arrived."""
        with self._cond:
            return next(at for arrow, logged, at in self.log if logged is message)

    def elapsed(self, response: Message) -> float:
        """Seconds from sending a request to receiving its ``response``."""
        return self.received_at(response) - self._sent[response["request_seq"]][1]

    def timed(self, command: str, event: str = "stopped", timeout: float | None = None, **arguments: Any) -> Timed:
        """Send a request, then wait for its response and the first ``event`` (``stopped``
        by default) received after it was sent; seconds from the request to each."""
        with self._cond:
            self._cursor[event] = len(self._events)
        seq = self.send_request(command, arguments)
        response = self.wait_response(seq, timeout)
        if not response["success"]:
            raise RequestFailed(response)
        reached = self.wait_event(event, timeout=timeout)
        sent = self._sent[seq][1]
        return Timed(response, reached, self.received_at(response) - sent, self.received_at(reached) - sent)

    # --- the session as VS Code runs it --------------------------------------------------

    def initialize(self, **client: Any) -> Message:
        """``initialize`` with VS Code's arguments (``client`` overrides them); the
        adapter's capabilities."""
        response = self.request("initialize", **{**VSCODE_CLIENT, **client})
        self.capabilities = response.get("body") or {}
        self.initialized = True
        return self.capabilities

    def launch(self, config: Mapping[str, Any], breakpoints: Mapping[str | Path, Sequence[int | Mapping[str, Any]]]
               | None = None, function_breakpoints: Sequence[str | Mapping[str, Any]] = (),
               exception_filters: Sequence[str] = (), timeout: float | None = None) -> Startup:
        """VS Code's start: ``initialize`` (if not done), ``launch`` sent, the
        ``initialized`` event awaited, breakpoints per source, function and exception
        breakpoints, ``configurationDone``, then the ``launch`` response. Breakpoints are
        line numbers or SourceBreakpoint objects; function breakpoints names or objects.
        A failed ``launch`` raises :class:`RequestFailed`."""
        return self._start("launch", config, breakpoints, function_breakpoints, exception_filters, timeout)

    def attach(self, config: Mapping[str, Any], breakpoints: Mapping[str | Path, Sequence[int | Mapping[str, Any]]]
               | None = None, function_breakpoints: Sequence[str | Mapping[str, Any]] = (),
               exception_filters: Sequence[str] = (), timeout: float | None = None) -> Startup:
        """As :meth:`launch`, with an ``attach`` request."""
        return self._start("attach", config, breakpoints, function_breakpoints, exception_filters, timeout)

    def _start(self, kind: str, config: Mapping[str, Any],
               breakpoints: Mapping[str | Path, Sequence[int | Mapping[str, Any]]] | None,
               function_breakpoints: Sequence[str | Mapping[str, Any]], exception_filters: Sequence[str],
               timeout: float | None) -> Startup:
        if not self.initialized:
            self.initialize()
        seq = self.send_request(kind, config)

        def initialized_or_failed() -> Message | None:
            failed = self._responses.get(seq, ({}, 0.0))[0]
            if failed and not failed["success"]:
                return failed
            return next((event for event, _ in self._events if event.get("event") == "initialized"), None)
        first = self._wait(f"the initialized event after {kind}", initialized_or_failed, timeout)
        if first.get("type") == "response":
            raise RequestFailed(first)
        startup = Startup(response={})
        for source, specs in (breakpoints or {}).items():
            path = Path(source)
            answer = self.request("setBreakpoints", source={"name": path.name, "path": str(path)},
                                  breakpoints=[_breakpoint(spec) for spec in specs], sourceModified=False)
            startup.breakpoints[str(path)] = answer["body"]["breakpoints"]
        if function_breakpoints or self.capabilities.get("supportsFunctionBreakpoints"):
            answer = self.request("setFunctionBreakpoints",
                                  breakpoints=[_function_breakpoint(spec) for spec in function_breakpoints])
            startup.function_breakpoints = answer["body"]["breakpoints"]
        if exception_filters or self.capabilities.get("exceptionBreakpointFilters"):
            self.request("setExceptionBreakpoints", filters=list(exception_filters))
        if self.capabilities.get("supportsConfigurationDoneRequest"):
            self.request("configurationDone")
        startup.response = self.wait_response(seq, timeout)
        if not startup.response["success"]:
            raise RequestFailed(startup.response)
        return startup

    # --- at a stop ------------------------------------------------------------------------

    def wait_stopped(self, predicate: Callable[[Message], bool] | None = None,
                     timeout: float | None = None) -> Message:
        """The body of the next ``stopped`` event (whose body matches ``predicate``)."""
        body: Message = self.wait_event("stopped", None if predicate is None else lambda e: predicate(e["body"]),
                                        timeout)["body"]
        return body

    def wait_exited(self, timeout: float | None = None) -> int:
        """The exit code from the next ``exited`` event."""
        code: int = self.wait_event("exited", timeout=timeout)["body"]["exitCode"]
        return code

    def threads(self) -> list[Message]:
        """The ``threads`` answer's threads."""
        threads: list[Message] = self.request("threads")["body"]["threads"]
        return threads

    def stack(self, thread_id: int, levels: int | None = None) -> list[Message]:
        """The stack frames of a stopped thread, innermost first."""
        arguments: dict[str, Any] = {"threadId": thread_id}
        if levels is not None:
            arguments["levels"] = levels
        frames: list[Message] = self.request("stackTrace", **arguments)["body"]["stackFrames"]
        return frames

    def scopes(self, frame_id: int) -> list[Message]:
        """The scopes of a frame."""
        scopes: list[Message] = self.request("scopes", frameId=frame_id)["body"]["scopes"]
        return scopes

    def variables(self, reference: int) -> list[Message]:
        """The children of a ``variablesReference``."""
        variables: list[Message] = self.request("variables", variablesReference=reference)["body"]["variables"]
        return variables

    def frame_variables(self, frame_id: int, scope: str | None = None) -> dict[str, Message]:
        """The variables of one scope of a frame (the first scope, or the one named
        ``scope``), by name."""
        scopes = self.scopes(frame_id)
        chosen = next((s for s in scopes if scope is None or s["name"] == scope), None)
        if chosen is None:
            raise AssertionError(f"no scope {scope!r} in {[s['name'] for s in scopes]}")
        return {variable["name"]: variable for variable in self.variables(chosen["variablesReference"])}

    def evaluate(self, expression: str, frame_id: int | None = None, context: str = "repl") -> Message:
        """The body of a successful ``evaluate``."""
        arguments: dict[str, Any] = {"expression": expression, "context": context}
        if frame_id is not None:
            arguments["frameId"] = frame_id
        body: Message = self.request("evaluate", **arguments)["body"]
        return body

    # --- ending ---------------------------------------------------------------------------

    def close(self, terminate_debuggee: bool | None = None, timeout: float = 10.0, grace: float = 5.0) -> None:
        """End the session without ever hanging: ``disconnect`` if the connection is alive
        and none was sent, close the connection, end the adapter process we started (by
        PID, after ``timeout``), then end what outlived it (``runInTerminal`` commands and
        processes announced by ``process`` events) after ``grace`` seconds, recording
        their PIDs in :attr:`killed`. Raises, after all that, on an unanswered
        ``disconnect`` or an unreported protocol violation."""
        if self._closed:
            return
        self._closed = True
        problems: list[str] = []
        try:
            if self._ended is None and not self._disconnected:
                arguments = {} if terminate_debuggee is None else {"terminateDebuggee": terminate_debuggee}
                try:
                    self.request("disconnect", timeout, **arguments)
                except (DapTimeout, AdapterGone, RequestFailed, ProtocolViolation) as error:
                    problems.append(f"disconnect: {error}")
        finally:
            self._stream.close()
            self._reader.join(timeout)
            self._end_adapter(timeout)
            self._end_leftovers(grace)
        problems.extend(str(violation) for violation in self._violations)
        self._violations.clear()
        if problems:
            raise AssertionError("closing the DAP session: " + "\n".join(problems))

    def _end_adapter(self, timeout: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.killed.append(self.process.pid)
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def _end_leftovers(self, grace: float) -> None:
        deadline = time.monotonic() + grace
        for terminal in self.terminals:
            try:
                terminal.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.killed.append(terminal.process.pid)
                try:
                    for sig in (signal.SIGCONT, signal.SIGKILL):  # a stopped process: CONT first, as psutil does
                        os.killpg(terminal.process.pid, sig)
                except ProcessLookupError:
                    pass  # the group ended between the wait and the kill
                terminal.process.wait(10)
        alive = _wait_gone(self._processes, deadline)
        for proc in alive:
            try:
                proc.resume()
                proc.kill()
                self.killed.append(proc.pid)
            except psutil.NoSuchProcess:
                pass  # ended between the wait and the kill
        _wait_gone(alive, time.monotonic() + 10)


def _ended(proc: psutil.Process) -> bool:
    """Whether ``proc`` has ended: gone, or a zombie (whose parent, maybe a container's
    init that never reaps, is not ours to wait for)."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(processes: Sequence[psutil.Process], deadline: float) -> list[psutil.Process]:
    """Poll until every process has ended or the deadline passes; those still running."""
    alive = list(processes)
    while True:
        alive = [proc for proc in alive if not _ended(proc)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)
