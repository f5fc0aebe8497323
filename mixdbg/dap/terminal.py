"""The debuggee in the editor's own terminal (``console: integratedTerminal``).

The adapter asks the editor (``runInTerminal``) to run this module in a terminal; it tells
the adapter its terminal device over a private Unix socket, then waits for the adapter to
close that socket. The debuggee is started with that terminal as its stdin, stdout and
stderr: the user types to it and reads it there, and its output survives the adapter.

``python -m mixdbg.dap.terminal SOCKET`` (the editor's side), ``TerminalRequest`` (ours).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import IO, Callable

from mixdbg.rundir import runtime_dir

#: How long the editor may take to open its terminal and run us.
TERMINAL_TIMEOUT = 15.0


class TerminalRequest:
    """A terminal asked of the editor: ``arguments()`` for ``runInTerminal``, then ``wait``
    for the terminal's device (None: no terminal came)."""

    def __init__(self, title: str, cwd: str) -> None:
        self.title = title
        self.cwd = cwd
        self.directory = Path(tempfile.mkdtemp(prefix="terminal-", dir=runtime_dir(create=True)))
        self.path = self.directory / "tty.sock"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self._server.listen(1)
        self._held: socket.socket | None = None

    def arguments(self) -> dict[str, object]:
        """The ``runInTerminal`` request's arguments."""
        return {"kind": "integrated", "title": self.title, "cwd": self.cwd,
                "args": [sys.executable, "-m", "mixdbg.dap.terminal", str(self.path)],
                # this mixdbg, however it was installed (a checkout on PYTHONPATH too)
                "env": {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}}

    def wait(self, opened: Callable[[], bool | None]) -> IO[bytes] | None:
        """The terminal device, opened for the debuggee; None when the editor refused
        (``opened()`` is False) or no terminal reported within the timeout."""
        self._server.settimeout(0.2)
        deadline = TERMINAL_TIMEOUT / 0.2
        while deadline > 0 and opened() is not False:
            deadline -= 1
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            device = conn.makefile("rb").readline().decode().strip()
            self._held = conn  # the terminal's process waits until this closes
            if not device:  # the command ran, but not in a terminal
                return None
            return open(device, "r+b", buffering=0)
        return None

    def close(self) -> None:
        """The session is over: the terminal's process ends, the shell has its terminal back
        (the debuggee, if it runs on, keeps writing to it)."""
        if self._held is not None:
            self._held.close()
            self._held = None
        self._server.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def main(argv: list[str]) -> int:
    """In the editor's terminal: report this terminal's device, wait until the session is
    over (the terminal stays the debuggee's meanwhile), end quietly."""
    device = os.ttyname(sys.stdin.fileno()) if sys.stdin.isatty() else ""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(argv[0])
        conn.sendall(device.encode() + b"\n")
        conn.recv(1)  # the adapter closes it once the debuggee runs
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
