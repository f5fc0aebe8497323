"""Byte streams to a debug adapter (its stdio, or a TCP connection) and DAP's framing:
``Content-Length: N\\r\\n\\r\\n`` followed by N bytes of UTF-8 JSON."""

from __future__ import annotations

import json
import os
import re
import select
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

from .schema import Message, ProtocolViolation


class Stream:
    """Both directions of one connection to an adapter."""

    def send(self, data: bytes) -> None:
        """Write all of ``data``; raises OSError when the adapter is gone."""
        raise NotImplementedError

    def recv(self) -> bytes:
        """The next bytes available; ``b""`` at the end of the stream."""
        raise NotImplementedError

    def close(self) -> None:
        """Close our end (the reader then sees the end of the stream)."""
        raise NotImplementedError


class PipeStream(Stream):
    """The adapter's stdin and stdout."""

    def __init__(self, writer: IO[bytes], reader: IO[bytes]) -> None:
        self._writer = writer
        self._reader = reader
        self._closed = threading.Event()

    def send(self, data: bytes) -> None:
        self._writer.write(data)
        self._writer.flush()

    def recv(self) -> bytes:
        # Polled, so that close() ends the reading: the adapter's own children (a debuggee)
        # may have inherited its stdout and keep the pipe open after the adapter is gone.
        while not self._closed.is_set():
            readable, _, _ = select.select([self._reader], [], [], 0.1)
            if readable:
                return os.read(self._reader.fileno(), 65536)
        return b""

    def close(self) -> None:
        self._closed.set()
        try:
            self._writer.close()
        except OSError:
            pass  # a broken pipe on the final flush: the adapter has already gone


class SocketStream(Stream):
    """A TCP connection to an adapter serving DAP."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def recv(self) -> bytes:
        try:
            return self._sock.recv(65536)
        except OSError:  # closed by close() while the reader waited: the end of the stream
            return b""

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already disconnected by the adapter
        self._sock.close()


def connect_tcp(host: str, port: int, timeout: float) -> socket.socket:
    """Connect, retrying while the server is not listening yet (up to ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection((host, port), timeout=timeout)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def encode(message: Message) -> bytes:
    """One framed message."""
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Framer:
    """Splits the bytes read from a stream into messages."""

    def __init__(self, stream: Stream) -> None:
        self._stream = stream
        self._buffer = b""

    def _fill(self) -> bool:
        chunk = self._stream.recv()
        self._buffer += chunk
        return bool(chunk)

    def next_message(self) -> Message | None:
        """The next message, or None at the end of the stream; a malformed header or body
        raises :class:`ProtocolViolation`."""
        while b"\r\n\r\n" not in self._buffer:
            if not self._fill():
                if self._buffer.strip():
                    raise ProtocolViolation(f"the stream ended inside a header: {self._buffer[:200]!r}")
                return None
        header, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
        lengths = [line.split(b":", 1)[1].strip() for line in header.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")]
        if len(lengths) != 1 or not lengths[0].isdigit():
            raise ProtocolViolation(f"a header without one Content-Length: {header[:200]!r}")
        length = int(lengths[0])
        while len(self._buffer) < length:
            if not self._fill():
                raise ProtocolViolation(f"the stream ended inside a {length}-byte body")
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        try:
            message: Any = json.loads(body.decode("utf-8"))
        except ValueError as error:
            raise ProtocolViolation(f"a body that is not UTF-8 JSON ({error}): {body[:400]!r}") from None
        if not isinstance(message, dict):
            raise ProtocolViolation(f"a body that is not a JSON object: {body[:400]!r}")
        return message


_PORT_PATTERNS = (re.compile(r"port\D{0,3}(\d+)", re.IGNORECASE), re.compile(r":(\d+)\b"),
                  re.compile(r"^\s*(\d+)\s*$"))


def port_in(text: str) -> int | None:
    """The TCP port an adapter announced on stdout: ``{"port": N}``, ``... port N``,
    ``HOST:N`` or a line holding only ``N``."""
    for line in text.splitlines():
        if line.lstrip().startswith("{"):
            try:
                announced = json.loads(line)
            except ValueError:
                announced = None
            if isinstance(announced, dict) and isinstance(announced.get("port"), int):
                return int(announced["port"])
        for pattern in _PORT_PATTERNS:
            match = pattern.search(line)
            if match:
                return int(match.group(1))
    return None


def wait_for_port(process: subprocess.Popen[bytes], stdout: Path, timeout: float) -> int:
    """Poll the file the server's stdout goes to until it names a port."""
    deadline = time.monotonic() + timeout
    while True:
        text = stdout.read_text(errors="replace") if stdout.exists() else ""
        port = port_in(text)
        if port is not None:
            return port
        if process.poll() is not None:
            raise AssertionError(f"the adapter exited with {process.returncode} before naming a port; "
                                 f"stdout: {text[-1000:]!r}")
        if time.monotonic() > deadline:
            raise AssertionError(f"the adapter named no port within {timeout:g} s; stdout: {text[-1000:]!r}")
        time.sleep(0.02)
