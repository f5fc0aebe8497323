"""One connection to a debug adapter: DAP messages framed both ways, each checked against
the protocol's JSON schema, a reader thread receiving everything, and waits with timeouts
for responses and events. A schema violation, a response to no request or a malformed
frame fails the next wait with the offending JSON. :class:`dap.client.DapClient` adds
what VS Code does on top."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .schema import DapSchema, Message, ProtocolViolation
from .transport import Framer, Stream, encode

T = TypeVar("T")

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


@dataclass(frozen=True)
class Timed:
    """A request's response and the event it led to, with seconds from sending the request."""

    response: Message
    event: Message
    to_response: float
    to_event: float


class DapConnection:
    """Requests and their responses, events, and reverse requests over one stream; the
    adapter's stderr file, when known, is quoted when something fails."""

    def __init__(self, stream: Stream, schema: DapSchema, *, stderr: Path | None = None,
                 timeout: float = 30.0) -> None:
        self.schema = schema
        self.stderr = stderr
        #: Seconds a wait lasts unless it says otherwise.
        self.timeout = timeout
        #: Every message in order: ("->" sent / "<-" received, message, time.monotonic()).
        self.log: list[tuple[str, Message, float]] = []
        self._stream = stream
        self._framer = Framer(stream)
        self._seq = itertools.count(1)
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._sent: dict[int, tuple[str, float]] = {}
        self._responses: dict[int, Message] = {}
        self._events: list[Message] = []
        self._cursor: dict[str, int] = {}
        self._violations: list[ProtocolViolation] = []
        self._ended: str | None = None
        self._disconnected = False
        self._reader = threading.Thread(target=self._read_loop, name="dap-reader", daemon=True)
        self._reader.start()

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

    def send_bytes(self, data: bytes, command: str | None = None) -> int:
        """Send ``data`` as it is (a malformed message, unchecked); with ``command``, a
        response to it is expected under the next ``seq``, which is returned (the caller
        puts that seq in ``data``)."""
        with self._send_lock:
            seq = next(self._seq)
            if command is not None:
                self._sent[seq] = (command, time.monotonic())
            self._stream.send(data)
        return seq

    def next_seq(self) -> int:
        """The ``seq`` the next message sent will carry (for :meth:`send_bytes`)."""
        with self._send_lock:
            upcoming = next(self._seq)
            self._seq = itertools.count(upcoming)
        return upcoming

    def wait_response(self, seq: int, timeout: float | None = None) -> Message:
        """The response to request ``seq``, successful or not."""
        command = self._sent[seq][0]
        found = self._wait(f"the response to {command} (seq {seq})",
                           lambda: self._responses.get(seq), timeout)
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
        ended, broken = "the adapter closed the connection", None
        try:
            while (message := self._framer.next_message()) is not None:
                self._receive(message)
        except ProtocolViolation as violation:
            ended, broken = f"the connection broke the framing: {violation}", violation
        except Exception as error:  # noqa: BLE001 (waits must learn why the reader stopped, not time out)
            ended = f"the client's reader failed: {error!r}"
        with self._cond:
            if broken is not None:
                self._violations.append(broken)
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
            elif message.get("request_seq") in self._responses:
                problems.append(ProtocolViolation(f"a second response to one request:\n{json.dumps(message)[:2000]}"))
        if kind == "event":
            self._received_event(message)
        with self._cond:
            self._violations.extend(problems)
            self.log.append(("<-", message, now))
            if kind == "response":
                self._responses[message.get("request_seq", -1)] = message
            elif kind == "event":
                self._events.append(message)
            self._cond.notify_all()
        if kind == "request":
            self._answer_reverse_request(message)

    def _received_event(self, event: Message) -> None:
        """Called by the reader for each event, before it is published (for subclasses)."""

    def reverse_request(self, command: str, arguments: Message) -> Message | None:
        """The body answering a reverse request; raise ValueError or OSError to answer
        with an error. This class handles none."""
        raise ValueError(f"the test client does not handle the reverse request {command!r}")

    def _answer_reverse_request(self, request: Message) -> None:
        command, arguments = request.get("command"), request.get("arguments", {})
        response: Message = {"type": "response", "request_seq": request.get("seq"), "command": command,
                             "success": True}
        try:
            body = self.reverse_request(str(command), arguments)
            if body is not None:
                response["body"] = body
        except (OSError, ValueError) as error:
            response.update(success=False, message=str(error), body={"error": {"id": 1, "format": str(error)}})
        try:
            self._send(response)
        except (ProtocolViolation, AdapterGone) as problem:
            with self._cond:
                self._violations.append(ProtocolViolation(f"answering {command}: {problem}"))
                self._cond.notify_all()

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
                event = self._events[index]
                if event.get("event") == name and (predicate is None or predicate(event)):
                    self._cursor[name] = index + 1
                    return event
            return None
        return self._wait(f"event {name!r}" + (" matching the predicate" if predicate else ""), find, timeout)

    def events(self, name: str) -> list[Message]:
        """Every ``name`` event received so far."""
        with self._cond:
            return [event for event in self._events if event.get("event") == name]

    def output(self, category: str | None = None) -> str:
        """The text of the ``output`` events so far, of one category (``stdout``,
        ``stderr``, ``console``, ``important``...) or of all."""
        return "".join(event["body"].get("output", "") for event in self.events("output")
                       if category is None or event["body"].get("category", "console") == category)

    # --- timing ---------------------------------------------------------------------------

    def received_at(self, message: Message) -> float:
        """When (``time.monotonic()``) ``message`` (or the message whose body it is, as
        :meth:`wait_stopped` returns) arrived."""
        with self._cond:
            return next(at for arrow, logged, at in self.log
                        if arrow == "<-" and (logged is message or logged.get("body") is message))

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

