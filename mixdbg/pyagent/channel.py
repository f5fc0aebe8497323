"""The agent's config channel: newline-delimited JSON on the engine's Unix socket.

Standard library only; loaded by path beside ``agent.py`` as ``_mixdbg_agent_channel``.
Messages are handled in the order they arrive, by whichever thread pumps: a thread leaving
a stop, which first handles what the engine sent while the process was stopped (so a
breakpoint set at a stop is there before the next line runs), or the first event after the
engine marked configuration pending. The agent has no thread of its own: a program that
forks sees the threads it started, no more (3.12 warns at a fork of a threaded process).
"""

from __future__ import annotations

import json
import select
import socket
import threading
from typing import Any, Callable

Handler = Callable[[dict[str, Any]], None]


class Channel:
    """One agent's connection to the engine."""

    def __init__(self, path: str) -> None:
        """Connect (OSError if the engine is not there)."""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self._send_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._buffer = b""
        self.closed = False

    def send(self, message: dict[str, Any]) -> None:
        """One line of JSON to the engine; dropped if the engine is gone (the program runs on)."""
        data = json.dumps(message).encode() + b"\n"
        with self._send_lock:
            try:
                self.sock.sendall(data)
            except OSError:
                self.closed = True  # nobody is left to tell

    def pump(self, handle: Handler, wait: float | None) -> bool:
        """Handle every complete message received so far, after waiting up to ``wait``
        seconds for data (None: until there is some; 0: not at all). False once the engine
        has closed the socket and every message has been handled."""
        if wait != 0 and not self.closed:
            try:
                select.select([self.sock], [], [], wait)
            except (OSError, ValueError):  # closed under us (a fork child replaced it)
                self.closed = True
        if not self._read_lock.acquire(blocking=False):
            return not self.closed  # another pump (maybe the one this signal handler interrupted) reads
        try:
            self._receive()
            *lines, self._buffer = self._buffer.split(b"\n")
            for line in lines:
                self._handle_line(line, handle)
        finally:
            self._read_lock.release()
        return not self.closed

    def _receive(self) -> None:
        while not self.closed:
            try:
                data = self.sock.recv(1 << 16, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.closed = True
                return
            self._buffer += data

    def _handle_line(self, line: bytes, handle: Handler) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError as err:
            self.send({"problem": f"bad configuration message: {err}"})
            return
        if isinstance(message, dict):
            handle(message)
        else:
            self.send({"problem": "bad configuration message: not an object"})

    def abandon(self) -> None:
        """Close this process's copy of the socket (a fork child, whose parent keeps it)."""
        self.closed = True
        self.sock.close()
