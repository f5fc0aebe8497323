"""The gdb process and the GDB/MI conversation with it.

One reader thread reads gdb's output with ``os.read`` (never ``select`` + ``readline``, which
strands records in Python's buffer), parses each line with pygdbmi's parser, and routes it:
a result record (``^done``/``^error``/...) resolves the command that carried the same numeric
token; every other record (``*stopped``, ``=library-loaded``, stream output, ...) goes to the
``on_record`` callback in arrival order, so no stop is ever lost or mixed into an unrelated
command's answer. Every wait has a timeout that raises our own error.

This module knows nothing about debugpy, VS Code or Python stacks.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pygdbmi.gdbmiparser import parse_response

from mixdbg import gdbpath
from mixdbg.errors import DebuggerError, GdbExitedError, GdbTimeoutError
from mixdbg.rundir import cache_directory

log = logging.getLogger(__name__)

#: Default time to wait for an ordinary command's result.
COMMAND_TIMEOUT = 30.0
#: gdb reads whole symbol tables on attach and when libraries load (libtorch_cpu: seconds).
SLOW_COMMAND_TIMEOUT = 120.0
#: How often an exit wait checks gdb's status when its output has not ended.
EXIT_POLL = 0.05


@dataclass(frozen=True)
class MiRecord:
    """One parsed GDB/MI output record.

    ``kind`` is ``result`` (``^``), ``async`` (``*`` exec and ``=`` notify records, which
    pygdbmi does not tell apart), ``console`` (``~``), ``log`` (``&``), ``target`` (``@``)
    or ``output`` (a non-MI line, e.g. the inferior's own output or gdb's stderr).
    """

    kind: str
    message: str | None
    payload: Any
    token: int | None = None


class GdbCommandError(DebuggerError):
    """gdb answered a command with ``^error``; ``gdb_message`` is its text."""

    def __init__(self, command: str, gdb_message: str) -> None:
        super().__init__(f"gdb refused '{command}': {gdb_message}")
        self.command = command
        self.gdb_message = gdb_message


@dataclass
class _Pending:
    """A command waiting for its result record."""

    done: threading.Event = field(default_factory=threading.Event)
    record: MiRecord | None = None


_KIND_BY_PYGDBMI_TYPE = {
    "result": "result",
    "notify": "async",
    "console": "console",
    "log": "log",
    "target": "target",
    "output": "output",
}


def parse_line(line: str) -> MiRecord | None:
    """Parse one line of gdb output; ``None`` for the ``(gdb)`` prompt and blank lines."""
    if not line.strip() or line.strip() == "(gdb)":
        return None
    parsed = parse_response(line)
    kind = _KIND_BY_PYGDBMI_TYPE.get(parsed.get("type", ""), "output")
    return MiRecord(kind, parsed.get("message"), parsed.get("payload"), parsed.get("token"))


def mi_escape(text: str) -> str:
    """Escape ``text`` for the inside of an MI C string."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def mi_quote(text: str) -> str:
    """Quote ``text`` as one MI argument (a C string), whatever characters it holds."""
    return f'"{mi_escape(text)}"'


def find_gdb(gdb: str | None = None) -> str:
    """The gdb executable to run (see ``gdbpath.choose``: ``gdb``, ``$MIXDBG_GDB``, the
    wheel's, the system's), or fail clearly."""
    return gdbpath.choose(gdb).path


def gdb_environment(debuginfod: bool = False) -> dict[str, str]:
    """The environment for gdb: no PYTHONPATH/PYTHONHOME (gdb embeds its own Python),
    and no debuginfod server (an unreachable one stalls every command for minutes) unless
    the user turned debuginfod on (``debuginfod``: then the servers of ``DEBUGINFOD_URLS``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    if not debuginfod:
        env["DEBUGINFOD_URLS"] = ""
    return env


def index_cache_directory() -> Path:
    """Where gdb keeps its index of each library's DWARF across sessions (by build id):
    in mixdbg's cache, beside the user's other caches, not gdb's own default
    (``$XDG_CACHE_HOME/gdb``), so that ``mixdbg doctor`` can say how big it is."""
    return cache_directory() / "gdb-index"


class GdbMi:
    """A gdb process driven over GDB/MI: send commands, receive async records.

    ``on_record`` is called from the reader thread for every record that is not the result
    of a command, and once with ``None`` when gdb's output ends (gdb exited). It must not
    block for long.
    """

    def __init__(self, on_record: Callable[[MiRecord | None], None], gdb: str | None = None,
                 extra_args: Sequence[str] = (), debuginfod: bool = False) -> None:
        self._on_record = on_record
        self._path = find_gdb(gdb)
        self.debuginfod = debuginfod  # the user's opt-in: gdb may fetch debug info from DEBUGINFOD_URLS
        self._extra_args = list(extra_args)
        self._tokens = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._exited = threading.Event()
        self._major: int | None = None

    @property
    def path(self) -> str:
        """The gdb executable this runs."""
        return self._path

    @property
    def pid(self) -> int:
        """gdb's process id."""
        assert self._proc is not None
        return self._proc.pid

    @property
    def alive(self) -> bool:
        """Whether gdb's output is still open (it has not exited)."""
        return self._proc is not None and not self._exited.is_set()

    def start(self) -> None:
        """Start gdb in MI3 mode and the reader thread."""
        how = gdbpath.launch(self._path)
        args = [
            *how.argv, "--nx", "--quiet", "--interpreter=mi3",
            "-iex", f"set debuginfod enabled {'on' if self.debuginfod else 'off'}",
            # Caches gdb's index of DWARF (libpython, -g extensions, DEBUG=1 builds) across
            # runs: measured 0.53 s -> 0.33 s to attach to python 3.11 here.
            "-iex", f"set index-cache directory {index_cache_directory()}",
            "-iex", "set index-cache enabled on",
            *self._extra_args,
        ]
        # Why the debuggee outlives a SIGKILLed mixdbg (which runs no cleanup at all): gdb's
        # stdin is a pipe only we hold, so our death is an EOF on it, and gdb, in mi-async
        # mode (set first thing by set_modes), reads stdin even while the debuggee
        # runs and quits on EOF, and quitting detaches: its breakpoints are removed and the
        # debuggee runs on. (In sync mode gdb stops reading stdin while the debuggee runs and
        # would stay attached forever.) For that, gdb must outlive us: start_new_session keeps
        # a terminal's Ctrl-C and hangup away from it, and SIGPIPE stays ignored
        # (restore_signals=False; gdb 13 also ignores it itself), so gdb reporting a stop to
        # our dead pipe gets EPIPE instead of dying with its int3 bytes still in the debuggee.
        # tests/reliability/test_fault_mixdbg_dies.py shows it, running and stopped.
        self._proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={**gdb_environment(self.debuginfod), **how.env}, start_new_session=True, restore_signals=False,
        )
        self._reader = threading.Thread(target=self._read_loop, name="gdb-reader", daemon=True)
        self._reader.start()

    def command(self, command: str, timeout: float = COMMAND_TIMEOUT) -> dict[str, Any]:
        """Send one MI command and return its result payload; raise on ``^error``/timeout."""
        record = self._send(command, timeout)
        if record.message == "error":
            payload = record.payload or {}
            raise GdbCommandError(command, str(payload.get("msg", "unknown error")))
        result: dict[str, Any] = record.payload or {}
        return result

    def console(self, command: str, timeout: float = COMMAND_TIMEOUT) -> dict[str, Any]:
        """Run a gdb CLI command through MI (``-interpreter-exec console``)."""
        return self.command(f"-interpreter-exec console {mi_quote(command)}", timeout)

    def set_modes(self) -> None:
        """Put a started gdb in the mode mixdbg relies on. mi-async first: it is what lets
        gdb detach on its own when we die (see ``start``). Python ignores SIGPIPE itself;
        gdb's default would stop on every one. Variable objects use pretty printers (libstdc++'s,
        loaded per library by ``gdb_helper``)."""
        for command in ("-gdb-set mi-async on", "-gdb-set pagination off", "-gdb-set confirm off",
                        "-gdb-set style enabled off", "-gdb-set breakpoint pending on",
                        "-gdb-set print thread-events off", "-enable-pretty-printing",
                        '-interpreter-exec console "handle SIGPIPE nostop noprint pass"'):
            self.command(command)

    def major_version(self) -> int:
        """gdb's major version (0 when it cannot say), asked once: what the session may ask
        of gdb depends on it (selective symbol reading, per-process breakpoints, calls)."""
        if self._major is None:
            try:
                self._major = int(self.command("-data-evaluate-expression $_gdb_major").get("value", "0"))
            except (GdbCommandError, ValueError) as err:
                log.info("gdb's version: %s", err)
                self._major = 0
        return self._major

    def interrupt_command(self) -> bool:
        """Interrupt the command gdb is running, from any thread, as Ctrl-C at its prompt
        (SIGINT: gdb abandons a long evaluation; a function it was calling in the debuggee
        is unwound, see ``calls.guard``); False when no command runs. A SIGINT that comes
        just after the command ended only makes an idle gdb print "Quit"."""
        with self._lock:
            if not self._pending or self._proc is None or self._exited.is_set():
                return False
            os.kill(self._proc.pid, signal.SIGINT)
            return True

    def _send(self, command: str, timeout: float) -> MiRecord:
        if self._proc is None or self._proc.stdin is None:
            raise GdbExitedError("gdb is not running")
        token = next(self._tokens)
        # Arguments and paths that are not UTF-8 reach us as surrogate escapes: give gdb the
        # user's original bytes (a strict encode would fail, and look like gdb had exited).
        line = f"{token}{command}\n".encode("utf-8", "surrogateescape")
        pending = _Pending()
        with self._lock:
            if self._exited.is_set():
                raise GdbExitedError(f"gdb exited before '{command}' could be sent")
            self._pending[token] = pending
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError) as err:
                self._pending.pop(token, None)
                raise GdbExitedError(f"gdb exited before '{command}' could be sent") from err
        sent = time.monotonic()
        if not pending.done.wait(timeout):
            with self._lock:
                self._pending.pop(token, None)
            raise GdbTimeoutError(f"gdb did not answer '{command}' within {timeout:.0f} s")
        if pending.record is None:
            raise GdbExitedError(f"gdb exited while running '{command}'")
        log.debug("%.1f ms: %s", (time.monotonic() - sent) * 1000, command[:200])
        return pending.record

    def _read_loop(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        buffer = b""
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                self._dispatch(raw.decode("utf-8", "replace").rstrip("\r"))
        self._finish()

    def _dispatch(self, line: str) -> None:
        try:
            record = parse_line(line)
        except Exception:  # noqa: BLE001 - one unparseable line must not kill the reader
            log.warning("unparseable gdb output: %r", line)
            record = MiRecord("output", None, line)
        if record is None:
            return
        if record.kind == "result" and record.token is not None:
            with self._lock:
                pending = self._pending.pop(record.token, None)
            if pending is not None:
                pending.record = record
                pending.done.set()
                return
        self._on_record(record)

    def _finish(self) -> None:
        if self._proc is not None and self._proc.stdout is not None:
            self._proc.stdout.close()
        with self._lock:
            self._exited.set()
            waiting = list(self._pending.values())
            self._pending.clear()
        for pending in waiting:
            pending.done.set()
        self._on_record(None)

    def wait_exit(self, timeout: float) -> bool:
        """Wait for gdb to exit; True if it did."""
        if self._proc is None:
            return True
        deadline = time.monotonic() + timeout
        # The end of gdb's output wakes this at once; Popen.wait polls with growing sleeps.
        while not self._exited.wait(EXIT_POLL) and self._proc.poll() is None:
            if time.monotonic() > deadline:
                return False
        try:
            self._proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return False
        self._exited.wait(max(0.0, deadline - time.monotonic()))
        return True

    def quit(self, timeout: float = 10.0) -> bool:
        """End gdb gracefully: ``-gdb-exit`` (gdb detaches what it is attached to), then
        close its stdin (EOF also makes it quit and detach), and only as a last resort,
        when it ignores both, SIGTERM and finally SIGKILL. Returns True if gdb had to be
        signalled: it then may not have removed its breakpoints from the inferior."""
        if self._proc is None or self._proc.poll() is not None:
            return False
        try:
            self._send("-gdb-exit", timeout)
        except DebuggerError as err:
            log.info("gdb did not take -gdb-exit: %s", err)
        if self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
            except OSError as err:
                log.info("closing gdb's stdin: %s", err)
        if self.wait_exit(timeout):
            return False
        log.warning("gdb (pid %d) did not exit; sending SIGTERM", self._proc.pid)
        self._proc.send_signal(signal.SIGTERM)
        if not self.wait_exit(5.0):
            log.warning("gdb (pid %d) ignored SIGTERM; killing it", self._proc.pid)
            self._proc.kill()
            self.wait_exit(5.0)
        return True
