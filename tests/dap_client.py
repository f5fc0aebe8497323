"""A minimal Debug Adapter Protocol client, playing VS Code's Python debugger in tests."""

from __future__ import annotations

import itertools
import json
import socket
import time
from typing import Any


class DapClient:
    """Speaks DAP over TCP: Content-Length framed JSON requests, responses and events."""

    def __init__(self, host: str, port: int, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.timeout = timeout
        self.seq = itertools.count(1)
        self.buffer = b""
        self.backlog: list[dict[str, Any]] = []

    def close(self) -> None:
        self.sock.close()

    def send(self, command: str, **arguments: Any) -> int:
        """Send a request; return its sequence number."""
        seq = next(self.seq)
        body = json.dumps({"seq": seq, "type": "request", "command": command, "arguments": arguments}).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return seq

    def _read_message(self) -> dict[str, Any]:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        header, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        length = int(header.decode().split("Content-Length:")[1].strip().split()[0])
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        message: dict[str, Any] = json.loads(body)
        return message

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the debug adapter closed the connection")
        self.buffer += chunk

    def wait_for(self, kind: str, name: str, timeout: float | None = None) -> dict[str, Any]:
        """Wait for a response to ``name`` (kind "response") or an event ``name``."""
        key = "command" if kind == "response" else "event"
        for index, message in enumerate(self.backlog):
            if message["type"] == kind and message.get(key) == name:
                return self.backlog.pop(index)
        deadline = time.monotonic() + (timeout or self.timeout)
        while time.monotonic() < deadline:
            message = self._read_message()
            if message["type"] == kind and message.get(key) == name:
                return message
            self.backlog.append(message)
        raise TimeoutError(f"no {kind} {name}")

    def request(self, command: str, **arguments: Any) -> dict[str, Any]:
        """Send a request and wait for its response."""
        self.send(command, **arguments)
        return self.wait_for("response", command)
