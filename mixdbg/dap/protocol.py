"""The Debug Adapter Protocol's wire: Content-Length framed JSON over a byte stream, and
one connection's sending side (sequence numbers, responses, events, reverse requests).

Nothing here knows about debugging: ``server`` reads requests and hands them to the
handlers; handlers answer through a ``Connection``.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import IO, Any, Callable

from mixdbg.errors import MixdbgError, UsageError

log = logging.getLogger(__name__)
traffic = logging.getLogger("mixdbg.dap.traffic")

#: A request larger than this is not a client we can serve (the largest real ones, a
#: setBreakpoints of a long file, are a few KiB).
MAX_MESSAGE = 16 << 20


class DapError(UsageError):
    """A request that cannot be served: its one-line message goes in the error response,
    which the editor shows the user (``show_user``) unless it is routine for the editor."""

    show_user = True


class StaleReference(DapError):
    """A reference (variables, frame) handed out before the program last ran. Editors ask
    with one routinely, racing a continue: answered as an error, but not shown to the user
    (VS Code made each a notification that had nothing to tell)."""

    show_user = False


class ClientGone(MixdbgError):
    """The client closed the stream, or broke its framing (``broken``: no message can be
    found after it): the session cannot go on."""

    def __init__(self, message: str, broken: bool = False) -> None:
        super().__init__(message)
        self.broken = broken


class BadMessage(MixdbgError):
    """A framed message that is not a DAP message (not JSON, not an object, no ``type``):
    its framing was sound, so the next message can still be read. DAP has no id to answer
    it with; ``seq`` is the request's when it had one."""

    def __init__(self, message: str, seq: int | None = None, command: str = "") -> None:
        super().__init__(message)
        self.seq = seq
        self.command = command


def read_message(stream: IO[bytes]) -> dict[str, Any]:
    """Read one framed message; ``ClientGone`` at the end of the stream or when its framing
    is broken, ``BadMessage`` for a well-framed body that is not a DAP message."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise ClientGone("the client closed the connection")
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError as err:
                raise ClientGone(f"a bad Content-Length header: {value.strip()!r}", broken=True) from err
    if length is None:
        raise ClientGone("a message without a Content-Length header: the stream cannot be read further", broken=True)
    if not 0 < length <= MAX_MESSAGE:
        raise ClientGone(f"a Content-Length of {length} bytes (1 to {MAX_MESSAGE} expected)", broken=True)
    body = stream.read(length)
    if len(body) != length:
        raise ClientGone("the client closed the connection mid-message")
    traffic.debug("<- %s", body.decode("utf-8", "replace"))
    try:
        message = json.loads(body)
    except ValueError as err:
        raise BadMessage(f"a message that is not JSON ({err})") from None
    return checked(message)


def checked(message: Any) -> dict[str, Any]:
    """``message`` if it is a DAP message mixdbg can act on; else ``BadMessage`` naming what
    is wrong (and its ``seq`` and ``command`` when it had them, to answer it by)."""
    if not isinstance(message, dict):
        raise BadMessage(f"a message that is not a JSON object but {type(message).__name__}")
    seq = message.get("seq")
    seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
    kind = message.get("type")
    if kind not in ("request", "response", "event"):
        raise BadMessage(f"a message whose type is {kind!r}, not 'request', 'response' or 'event'", seq)
    if kind == "request":
        command = message.get("command")
        if seq is None:
            raise BadMessage(f"a request without an integer 'seq' (command {command!r})")
        if not isinstance(command, str) or not command:
            raise BadMessage("a request without a 'command'", seq)
        if not isinstance(message.get("arguments", {}), dict):
            raise BadMessage(f"a '{command}' request whose arguments are not an object", seq, command)
    return message


class Connection:
    """The sending side of one client connection; safe to use from several threads."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._seq = 0
        self._pending: dict[int, Callable[[dict[str, Any]], None]] = {}
        self.closed = False

    def _send(self, message: dict[str, Any],
              on_response: Callable[[dict[str, Any]], None] | None = None) -> int:
        with self._lock:
            self._seq += 1
            if on_response is not None:
                self._pending[self._seq] = on_response
            message = {"seq": self._seq, **message}
            data = json.dumps(message, separators=(",", ":")).encode()
            traffic.debug("-> %s", data.decode("utf-8", "replace"))
            if self.closed:
                return self._seq
            try:
                self._stream.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
                self._stream.flush()
            except (OSError, ValueError) as err:  # the client is gone; the reader will see it
                log.info("cannot write to the client: %s", err)
                self.closed = True
            return self._seq

    def respond(self, request: dict[str, Any], body: dict[str, Any] | None = None) -> None:
        """A success response to ``request``."""
        response: dict[str, Any] = {"type": "response", "request_seq": request["seq"], "success": True,
                                    "command": request["command"]}
        if body is not None:
            response["body"] = body
        self._send(response)

    def fail(self, request: dict[str, Any], message: str, show_user: bool = True) -> None:
        """An error response to ``request``, with one line saying why (for the editor to show
        the user, unless ``show_user`` is False)."""
        line = " ".join(message.split())
        self._send({"type": "response", "request_seq": request["seq"], "success": False,
                    "command": request["command"], "message": line,
                    "body": {"error": {"id": 1, "format": line.replace("{", "(").replace("}", ")"),
                                       "showUser": show_user}}})

    def event(self, name: str, body: dict[str, Any] | None = None) -> None:
        """An event."""
        message: dict[str, Any] = {"type": "event", "event": name}
        if body is not None:
            message["body"] = body
        self._send(message)

    def reverse_request(self, command: str, arguments: dict[str, Any],
                        on_response: Callable[[dict[str, Any]], None]) -> None:
        """A request to the client (``runInTerminal``); ``on_response`` gets its response."""
        self._send({"type": "request", "command": command, "arguments": arguments}, on_response)

    def response_arrived(self, response: dict[str, Any]) -> None:
        """The client answered one of our reverse requests."""
        with self._lock:
            callback = self._pending.pop(int(response.get("request_seq", -1)), None)
        if callback is not None:
            callback(response)
