"""A Debug Adapter Protocol client for tests, playing VS Code: its capabilities and
start-up sequence, reverse requests answered (``runInTerminal`` really runs the command,
detached, as an editor's terminal does), helpers for stops, and a close() that never
hangs and leaves nothing running. Every message is checked against the DAP schema (see
:mod:`dap.connection`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from .connection import AdapterGone, DapConnection, DapTimeout, RequestFailed, Timed
from .schema import DapSchema, Message, ProtocolViolation
from .transport import PipeStream, SocketStream, Stream, connect_tcp, wait_for_port

__all__ = ["VSCODE_CLIENT", "AdapterGone", "DapClient", "DapTimeout", "ProtocolViolation", "RequestFailed", "Startup",
           "Terminal", "Timed"]

#: What VS Code 1.9x says about itself in ``initialize``.
VSCODE_CLIENT: dict[str, Any] = {
    "clientID": "vscode", "clientName": "Visual Studio Code", "adapterID": "mixdbg", "locale": "en",
    "pathFormat": "path", "linesStartAt1": True, "columnsStartAt1": True, "supportsVariableType": True,
    "supportsVariablePaging": True, "supportsRunInTerminalRequest": True, "supportsMemoryReferences": True,
    "supportsProgressReporting": True, "supportsInvalidatedEvent": True, "supportsMemoryEvent": True,
    "supportsArgsCanBeInterpretedByShell": True, "supportsStartDebuggingRequest": True,
    "supportsANSIStyling": True,
}


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
    #: When (``time.monotonic()``) the ``launch``/``attach`` request was sent.
    sent_at: float
    breakpoints: dict[str, list[Message]] = field(default_factory=dict)
    function_breakpoints: list[Message] = field(default_factory=list)


def _breakpoint(spec: int | Mapping[str, Any]) -> dict[str, Any]:
    return {"line": spec} if isinstance(spec, int) else dict(spec)


def _function_breakpoint(spec: str | Mapping[str, Any]) -> dict[str, Any]:
    return {"name": spec} if isinstance(spec, str) else dict(spec)


class DapClient(DapConnection):
    """A debug adapter's client, as VS Code is. Make one with :meth:`spawn` (stdio),
    :meth:`serve` (an adapter listening on TCP) or :meth:`connect` (a port)."""

    def __init__(self, stream: Stream, workdir: Path, schema: DapSchema, *, process: subprocess.Popen[bytes] | None
                 = None, stderr: Path | None = None, timeout: float = 30.0) -> None:
        #: Where terminal logs and the adapter's stderr go.
        self.workdir = workdir
        #: The adapter process, when the client started it.
        self.process = process
        #: The adapter's ``initialize`` answer (its capabilities), once initialized.
        self.capabilities: Message = {}
        self.initialized = False
        #: ``runInTerminal`` commands run, and ``startDebugging`` arguments received.
        self.terminals: list[Terminal] = []
        self.start_debugging: list[Message] = []
        #: PIDs the client ended at close() because they outlived the session.
        self.killed: list[int] = []
        self._processes: list[psutil.Process] = []
        self._closed = False
        super().__init__(stream, schema, stderr=stderr, timeout=timeout)

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

    # --- what an editor does for the adapter ---------------------------------------------

    def _received_event(self, event: Message) -> None:
        if event.get("event") != "process":
            return
        pid = event.get("body", {}).get("systemProcessId")
        if isinstance(pid, int):
            try:
                self._processes.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass  # it already ended: nothing to clean up

    def reverse_request(self, command: str, arguments: Message) -> Message | None:
        """``runInTerminal`` runs the command; ``startDebugging`` is recorded and
        acknowledged; anything else is answered with an error."""
        if command == "runInTerminal":
            return self._run_in_terminal(arguments)
        if command == "startDebugging":
            self.start_debugging.append(arguments)
            return None
        return super().reverse_request(command, arguments)

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

    def processes(self) -> list[int]:
        """The PIDs the adapter announced in ``process`` events, in order."""
        return [event["body"]["systemProcessId"] for event in self.events("process")
                if isinstance(event.get("body", {}).get("systemProcessId"), int)]

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
            failed = self._responses.get(seq)
            if failed is not None and not failed["success"]:
                return failed
            return next((event for event in self._events if event.get("event") == "initialized"), None)
        first = self._wait(f"the initialized event after {kind}", initialized_or_failed, timeout)
        if first.get("type") == "response":
            raise RequestFailed(first)
        startup = Startup(response={}, sent_at=self._sent[seq][1])
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

    def step(self, command: str, thread_id: int, timeout: float | None = None, **arguments: Any) -> Message:
        """``next``, ``stepIn``, ``stepOut`` or ``continue`` on a thread, then the body of
        the ``stopped`` event it leads to."""
        self.request(command, threadId=thread_id, **arguments)
        return self.wait_stopped(timeout=timeout)

    def wait_exited(self, timeout: float | None = None) -> int:
        """The exit code from the next ``exited`` event."""
        code: int = self.wait_event("exited", timeout=timeout)["body"]["exitCode"]
        return code

    def threads(self) -> list[Message]:
        """The ``threads`` answer's threads."""
        threads: list[Message] = self.request("threads")["body"]["threads"]
        return threads

    def stack(self, thread_id: int, levels: int | None = None, start: int = 0) -> list[Message]:
        """The stack frames of a stopped thread, innermost first (``levels`` of them from
        frame ``start``, as VS Code pages a deep stack; all by default)."""
        arguments: dict[str, Any] = {"threadId": thread_id, "startFrame": start}
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

    def children(self, variable: Message) -> dict[str, Message]:
        """The children of a variable (a structure's fields, a container's items), by name."""
        reference = variable.get("variablesReference", 0)
        if not reference:
            raise AssertionError(f"variable {variable.get('name')!r} has no children: {json.dumps(variable)}")
        return {child["name"]: child for child in self.variables(reference)}

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
