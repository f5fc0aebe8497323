"""The engine's side of the agent tests: the config socket and the test trap's socket.

A :class:`FakeEngine` plays what ``mixdbg dap``'s engine does with the agent: it accepts
each agent's hello, sends the configuration and ``go``, and answers each trap (a stop or a
reply) with the JSON the engine would write into the mailbox. :func:`run_debuggee` starts
``pyagent_harness.py`` under a given interpreter (or in the forky chroot).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
AGENT_DIR = REPO / "mixdbg" / "pyagent"
HARNESS = Path(__file__).with_name("pyagent_harness.py")
FORKY_SCRIPT = REPO.parent / "shared" / "envs" / "forky"
WAIT = 10.0
#: The agent's attention signal (its STEP_SIGNAL).
AGENT_SIGNAL = int(signal.SIGRTMAX) - 5


def line_of(source: str, marker: str) -> int:
    """The 1-based line of ``source`` that carries ``# @marker``."""
    for number, text in enumerate(source.splitlines(), start=1):
        if text.rstrip().endswith(f"# @{marker}"):
            return number
    raise KeyError(marker)


@dataclass
class Trap:
    """One trap as the engine sees it: the agent's ``out`` and the Python frames in memory."""

    out: dict[str, Any]
    frames: list[list[Any]]
    tid: int
    pid: int
    armed: int
    thread: str
    conn: socket.socket = field(repr=False)

    @property
    def line(self) -> int:
        """The line of the stopped frame (K = 0)."""
        return int(self.frames[0][2])

    @property
    def function(self) -> str:
        """The function of the stopped frame (K = 0)."""
        return str(self.frames[0][0])


class FakeEngine:
    """Config socket and trap socket in ``directory``; every wait has a timeout."""

    def __init__(self, directory: Path, script: str, config: list[dict[str, Any]]) -> None:
        self.directory = directory
        self.script = script
        self.config = [self._resolve(message) for message in config]
        self.hellos: queue.Queue[dict[str, Any]] = queue.Queue()
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.traps: queue.Queue[Trap] = queue.Queue()
        self.config_conns: list[socket.socket] = []
        self.pids: list[int] = []  # of the agents that said hello
        self.command: list[str] = []  # the debuggee's command line (inside the chroot for forky)
        self.listeners = [self._listen("cfg.sock", self._serve_config), self._listen("trap.sock", self._serve_trap)]

    def _listen(self, name: str, serve: Any) -> socket.socket:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.directory / name))
        server.listen(8)

        def accept() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return  # closed at the end of the test
                threading.Thread(target=serve, args=(conn,), daemon=True).start()
        threading.Thread(target=accept, daemon=True).start()
        return server

    def _serve_config(self, conn: socket.socket) -> None:
        self.config_conns.append(conn)
        reader = conn.makefile("rb")
        hello = json.loads(reader.readline())
        for message in self.config:
            self.send(conn, message)
        self.send(conn, {"go": True})
        self.pids.append(int(hello["hello"]))
        self.hellos.put(hello)
        for line in reader:
            self.messages.put(json.loads(line))

    def _serve_trap(self, conn: socket.socket) -> None:
        for line in conn.makefile("rb"):
            data = json.loads(line)
            self.traps.put(Trap(conn=conn, **data))

    def _resolve(self, message: dict[str, Any]) -> dict[str, Any]:
        """``SCRIPT`` in a breakpoints message is the script's path as the debuggee sees it."""
        if "breakpoints" in message:
            files = message["breakpoints"]
            message = {"breakpoints": {self.script if name == "SCRIPT" else name: bps for name, bps in files.items()}}
        return message

    @staticmethod
    def send(conn: socket.socket, message: dict[str, Any]) -> None:
        """One line of JSON to an agent."""
        conn.sendall(json.dumps(message).encode() + b"\n")

    def configure(self, message: dict[str, Any]) -> None:
        """A configuration message to every connected agent, while the program is stopped
        (a thread leaving a stop applies it)."""
        for conn in self.config_conns:
            self.send(conn, self._resolve(message))

    def configure_running(self, message: dict[str, Any]) -> None:
        """A configuration message while the program runs: sent, then the agent's attention
        signal to each process (the agent has no thread of its own reading the socket)."""
        self.configure(message)
        for pid in self.pids:
            os.kill(pid, AGENT_SIGNAL)

    def trap(self) -> Trap:
        """The next trap (a stop or a reply)."""
        return self.traps.get(timeout=WAIT)

    def stop(self, reason: str | None = None) -> Trap:
        """The next trap, which must be a stop (with ``reason`` if given)."""
        trap = self.trap()
        assert trap.out["event"] == "stopped", trap.out
        if reason is not None:
            assert trap.out["reason"] == reason, trap.out
        return trap

    def resume(self, trap: Trap, command: dict[str, Any] | None, arm: list[dict[str, int]] | None = None) -> None:
        """Answer a trap: the ``in`` JSON (None: leave ``in_len`` at 0) and slots to arm."""
        self.send(trap.conn, {"in": command, "arm": arm or []})

    def ask(self, trap: Trap, command: dict[str, Any]) -> tuple[Trap, dict[str, Any]]:
        """A request at a stop: the trap that carries the reply, and the reply."""
        self.resume(trap, command)
        reply = self.trap()
        assert reply.out["event"] == "reply" and reply.out["id"] == command["id"], reply.out
        return reply, reply.out

    def message(self) -> dict[str, Any]:
        """The next line an agent wrote on the config socket (output, problem)."""
        return self.messages.get(timeout=WAIT)

    def close(self) -> None:
        """Close every socket."""
        for sock in [*self.listeners, *self.config_conns]:
            sock.close()


@dataclass
class Debuggee:
    """A finished debuggee run."""

    returncode: int
    stdout: str
    stderr: str


@contextmanager
def debuggee(source: str, python: str, config: list[dict[str, Any]], timeout: float = 60, native: bool = False,
             ) -> Iterator[tuple[FakeEngine, Any]]:
    """Run ``source`` as a script under the harness; yields (engine, wait) where ``wait()``
    returns the finished :class:`Debuggee` (continuing from any stop not yet taken).
    ``python`` is an interpreter path or "forky". With ``native`` the agent keeps the real
    trap and nothing is started: the caller runs ``engine.command`` under gdb (in the
    chroot for forky: ``engine.directory`` is its /project)."""
    directory = Path(tempfile.mkdtemp(prefix="pyagent-", dir="/tmp"))
    (directory / "mixdbg").mkdir()
    shutil.copytree(AGENT_DIR, directory / "mixdbg" / "pyagent", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(HARNESS, directory / "harness.py")
    (directory / "script.py").write_text(source)
    root = "/project" if python == "forky" else str(directory)
    engine = FakeEngine(directory, f"{root}/script.py", config)
    command = [f"{root}/harness.py", f"{root}/mixdbg/pyagent/agent.py", f"{root}/cfg.sock",
               "native" if native else f"{root}/trap.sock", f"{root}/script.py"]
    engine.command = ["python3.14" if python == "forky" else python, *command]
    argv = [str(FORKY_SCRIPT), "run", str(directory), *engine.command] if python == "forky" else engine.command
    if native:
        try:
            yield engine, None
        finally:
            engine.close()
            shutil.rmtree(directory, ignore_errors=True)
        return
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               stdin=subprocess.DEVNULL)

    def wait() -> Debuggee:
        """The finished run; any stop on the way is answered with continue."""
        while True:
            try:
                out, err = process.communicate(timeout=0.2)
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    raise
                try:
                    engine.resume(engine.traps.get_nowait(), {"command": "continue"})
                except queue.Empty:
                    continue
            else:
                return Debuggee(process.returncode, out, err)
    deadline = time.monotonic() + timeout
    try:
        yield engine, wait
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)
        engine.close()
        shutil.rmtree(directory, ignore_errors=True)
