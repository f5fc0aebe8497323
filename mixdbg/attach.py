"""Finding and launching processes: the debuggee, the debugpy adapter, VS Code's launcher.

``launch`` starts the user's script under debugpy through ``bootstrap.py`` and holds it
before its first line (the gate) until the caller opens the gate. ``resolve_debuggee``
turns a PID the user gave (debuggee, debugpy adapter or VS Code launcher) into the real
debuggee. ``classify`` names the role of any Python process (``mixdbg ps``).

This module never talks GDB/MI.
"""

from __future__ import annotations

import errno
import importlib.util
import ipaddress
import json
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil

from mixdbg import ptrace
from mixdbg.errors import DataError, MixdbgError, NotFoundError, UnavailableError, UsageError

log = logging.getLogger(__name__)

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")
#: Inherited from a parent debugged by debugpy, these silently disable ``--listen``.
SCRUBBED_ENV = ("DEBUGPY_RUNNING", "DEBUGPY_EXTRA_ARGV", "PYTHONINSPECT")
#: debugpy.listen() waits up to 30 s for its adapter; wait a little longer for the report.
STARTUP_TIMEOUT = 45.0

ROLE_DEBUGGEE = "debuggee"
ROLE_ADAPTER = "debugpy adapter"
ROLE_LAUNCHER = "debugpy launcher"
ROLE_OTHER = "other"


@dataclass(frozen=True)
class Target:
    """What to run: a script path or a module name, and its arguments."""

    kind: str  # "script" | "module"
    name: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class LaunchOptions:
    """How to run it: interpreter, debugpy address, who may trace it, where output goes."""

    python: str
    host: str
    port: int
    wait_for_client: bool = False  # also lets debugpy follow child processes (see bootstrap)
    tracer: int | None = None  # None: any process of ours may trace (VS Code's gdb)
    stdout: IO[str] | IO[bytes] | None = None  # None: inherit ours
    stderr: IO[str] | IO[bytes] | None = None
    stdin: IO[bytes] | None = None  # a terminal of the editor's (None: ours, or /dev/null)
    stdin_devnull: bool = False
    #: Children are followed under gdb: the script's ``subprocess`` forks instead of vforking
    #: (see ``NO_VFORK_ENV``).
    no_vfork: bool = False
    #: ``mixdbg dap``: the Python agent's socket (no debugpy then; see ``bootstrap``).
    agent_socket: str | None = None
    cwd: str | None = None
    env: dict[str, str | None] | None = None  # changes to the environment (None: remove)


class StatusPipe:
    """The read end of the bootstrap's status pipe: one JSON report per line."""

    def __init__(self, fd: int, process: subprocess.Popen[bytes]) -> None:
        self.fd: int | None = fd
        self.process = process
        self._buffer = b""

    def read(self) -> dict[str, object]:
        """The next report, or the error it carries, or why it never came."""
        assert self.fd is not None
        deadline = time.monotonic() + STARTUP_TIMEOUT
        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise UnavailableError(
                        f"the debuggee (pid {self.process.pid}) did not start debugpy within "
                        f"{STARTUP_TIMEOUT:.0f} s; it is left running")
                if not selector.select(min(remaining, 1.0)):
                    continue
                chunk = os.read(self.fd, 4096)
                if not chunk:
                    break
                self._buffer += chunk
        if b"\n" not in self._buffer:
            code = self.process.wait()
            # Not a bug of ours (70): the interpreter or its site hooks ended it before our code ran.
            raise UnavailableError(f"the debuggee exited before debugpy started (exit code {code})",
                                   hint="its own error output is above")
        line, self._buffer = self._buffer.split(b"\n", 1)
        return _checked(json.loads(line), self.process)

    def close(self) -> None:
        """Close the pipe (idempotent)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@dataclass
class Debuggee:
    """A debuggee we launched, held at the gate until ``release`` is called.

    ``host``, ``port`` and ``python`` are known once ``wait_for_debugpy`` returned."""

    pid: int
    process: subprocess.Popen[bytes]
    gate_fd: int | None
    status: StatusPipe
    ptracer: bool
    host: str = ""
    port: int = 0
    python: str = ""

    def wait_for_debugpy(self) -> None:
        """Wait until debugpy listens (its adapter is up); learn its address."""
        report = self.status.read()
        self.status.close()
        self.python = str(report["python"])
        if report.get("port") is not None:  # None: no debugpy (mixdbg dap's agent instead)
            self.host, self.port = str(report["host"]), int(str(report["port"]))

    def disown(self) -> None:
        """Stop treating the debuggee as ours to wait for: it runs on after mixdbg, and
        whoever inherits it (init, a subreaper) reaps it and sees its exit status.
        (Without this, Popen's finalizer would reap it if it ended before mixdbg did.)"""
        if self.process.returncode is None:
            self.process.returncode = 0

    def discard(self) -> None:
        """End the debuggee while it is held at the gate (it never ran a line of the
        script): the session it was started for could not start. By its pid: it is ours."""
        if self.gate_fd is None:
            return
        self.process.kill()
        self.process.wait()
        self.status.close()
        os.close(self.gate_fd)
        self.gate_fd = None

    def release(self) -> None:
        """Open the gate: the script starts running (idempotent)."""
        self.status.close()
        if self.gate_fd is None:
            return
        try:
            os.write(self.gate_fd, b"g")
        except OSError as err:  # the debuggee is already gone; its exit is reported elsewhere
            if err.errno != errno.EPIPE:
                raise
        finally:
            os.close(self.gate_fd)
            self.gate_fd = None


def check_target(target: Target, cwd: str | None = None) -> None:
    """Fail early, with a clear message, on a script that cannot be run (a relative path
    is taken from ``cwd``, the debuggee's working directory, when given)."""
    if target.kind == "module":
        if not target.name:
            raise UsageError("empty module name after -m")
        return
    if not target.name:
        raise UsageError("empty script path")
    path = Path(cwd or ".") / target.name
    if not path.exists():
        raise NotFoundError(f"script not found: {target.name}")
    if path.is_dir() and not (path / "__main__.py").exists():
        raise UsageError(f"{target.name} is a directory without __main__.py, not a script")


def check_port_free(host: str, port: int) -> None:
    """Raise ``UnavailableError`` naming the port if something already listens on it."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise UnavailableError(
                    f"port {port} on {host} is already in use",
                    hint="pick another with --port N, or --port 0 for a free one",
                ) from err
            raise UnavailableError(f"cannot listen on {host}:{port}: {err.strerror}") from err


#: Tells the bootstrap where mixdbg's own debugpy is, for interpreters that have none.
DEBUGPY_FALLBACK_ENV = "MIXDBG_DEBUGPY_FALLBACK"


#: Tells the bootstrap to make ``subprocess`` (and so multiprocessing's spawn and
#: forkserver) fork rather than vfork or posix_spawn: a vfork from a multi-threaded process
#: traced with its children can leave gdb waiting on a child it never resumes while the
#: parent waits in the kernel for that child (gdb 13.1 without ``target-non-stop off``: 4
#: hangs in 4; gdb 18, with it: 1 hang in about 8 runs here). fork + exec does the same
#: for the script, never vforked: 0 hangs.
NO_VFORK_ENV = "MIXDBG_NO_VFORK"


def child_environment(no_vfork: bool = False) -> dict[str, str]:
    """The debuggee's environment: ours, minus variables that would break debugpy, plus
    where mixdbg's own debugpy package is. debugpy is pure Python (its compiled speedups
    are optional and skipped where they do not fit), so an interpreter without debugpy
    (``--python`` another version) imports that copy, and only it: the bootstrap loads the
    package by path, without putting mixdbg's site-packages on the script's ``sys.path``."""
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    spec = importlib.util.find_spec("debugpy")
    if spec is not None and spec.origin:
        env[DEBUGPY_FALLBACK_ENV] = os.path.dirname(spec.origin)
    if no_vfork:
        env[NO_VFORK_ENV] = "1"
    return env


def _launch_environment(options: LaunchOptions) -> dict[str, str]:
    """``child_environment`` with the launch's own changes and the agent's socket."""
    env = child_environment(options.no_vfork)
    for name, value in (options.env or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    if options.agent_socket is not None:
        env[AGENT_SOCKET_ENV] = options.agent_socket
    return env


#: Where the bootstrap's agent finds the engine (``mixdbg dap``).
AGENT_SOCKET_ENV = "MIXDBG_AGENT_SOCKET"


def launch(target: Target, options: LaunchOptions) -> Debuggee:
    """Start the target under debugpy, held before its first line; return once its real
    pid is known (debugpy is still starting: see ``Debuggee.wait_for_debugpy``). The caller
    must ``release()`` it."""
    check_target(target, options.cwd)
    if options.agent_socket is None:
        check_port_free(options.host, options.port)
    status_read, status_write = os.pipe()
    gate_read, gate_write = os.pipe()
    tracer = "any" if options.tracer is None else str(options.tracer)
    argv = [
        options.python, "-Xfrozen_modules=off", str(BOOTSTRAP), str(status_write), str(gate_read),
        options.host, str(options.port if options.agent_socket is None else -1),
        "1" if options.wait_for_client else "0", tracer,
        "1" if options.wait_for_client else "0", target.kind, target.name, *target.args,
    ]
    try:
        # Own session: a Ctrl-C at the terminal is mixdbg's to handle, not the script's.
        # stdout/stderr are inherited file descriptors, never a pipe through mixdbg, so the
        # debuggee's output survives mixdbg's death.
        process = subprocess.Popen(
            argv, pass_fds=(status_write, gate_read), env=_launch_environment(options),
            start_new_session=True, stdout=options.stdout, stderr=options.stderr, cwd=options.cwd,
            stdin=options.stdin if options.stdin is not None else subprocess.DEVNULL if options.stdin_devnull else None,
        )
    except OSError as err:
        for fd in (status_read, status_write, gate_read, gate_write):
            os.close(fd)
        if options.cwd is not None and not os.path.isdir(options.cwd):
            raise NotFoundError(f"the working directory {options.cwd} does not exist") from err
        raise NotFoundError(f"cannot start {options.python}: {err.strerror}") from err
    os.close(status_write)
    os.close(gate_read)
    status = StatusPipe(status_read, process)
    try:
        report = status.read()
        pid = _confirm_debuggee(int(str(report["pid"])), process)
    except BaseException:
        status.close()
        os.close(gate_write)
        raise
    return Debuggee(pid=pid, process=process, gate_fd=gate_write, status=status,
                    ptracer=bool(report["ptracer"]))


def run_without_debugger(target: Target, options: LaunchOptions) -> subprocess.Popen[bytes]:
    """Start the target as ``python`` would, with no debugger, no gate and no agent (an
    editor's Run Without Debugging), in a session of its own, its output where ``options``
    send it."""
    check_target(target, options.cwd)
    command = [options.python, *(("-m", target.name) if target.kind == "module" else (target.name,)), *target.args]
    try:
        return subprocess.Popen(command, env=_launch_environment(options), start_new_session=True, cwd=options.cwd,
                                stdout=options.stdout, stderr=options.stderr,
                                stdin=options.stdin if options.stdin is not None else subprocess.DEVNULL)
    except OSError as err:
        raise NotFoundError(f"cannot start {options.python}: {err.strerror}") from err


def _confirm_debuggee(pid: int, process: subprocess.Popen[bytes]) -> int:
    """Check with psutil that the reported PID is the process we started (or, when the
    interpreter is a wrapper such as ``conda run``, one of its descendants), and never the
    debugpy adapter (a daemon that debugpy.listen() spawns)."""
    if pid != process.pid:
        try:
            descendants = {child.pid for child in psutil.Process(process.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            descendants = set()
        if pid not in descendants:
            raise MixdbgError(f"the debuggee reported PID {pid}, which is not a process mixdbg started")
    if _cmdline_role(_process(pid)) == ROLE_ADAPTER:
        raise MixdbgError(f"PID {pid} is a debugpy adapter, not the debuggee")
    return pid


def _checked(report: dict[str, object], process: subprocess.Popen[bytes]) -> dict[str, object]:
    """A bootstrap report, or the error it reports (the debuggee then exits)."""
    syntax = report.get("syntax")
    if isinstance(syntax, dict):
        process.wait()
        where = f", line {syntax['line']}" if syntax.get("line") else ""
        raise DataError(f"{syntax['file']}{where}: {syntax['message']}; the script was not run")
    if "error" in report:
        process.wait()
        message = str(report["error"])
        raise UnavailableError(message if message.startswith("mixdbg") else f"debugpy could not start: {message}")
    return report


# --- Roles of existing processes -------------------------------------------------------

def command_line(pid: int, proc_root: Path = Path("/proc")) -> list[str]:
    """A process's arguments, printable (undecodable bytes replaced); empty if it is gone."""
    try:
        raw = (proc_root / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


#: In a launched debuggee's command line (see ``launch``), the bootstrap's own arguments
#: between its path and the target's kind.
_BOOTSTRAP_ARGUMENTS = 7


def program_line(pid: int) -> list[str]:
    """A process's command line as the user would have written it: for a debuggee mixdbg
    launched (and its fork children, which share the line), ``python SCRIPT ARGS`` or
    ``python -m MODULE ARGS`` instead of the bootstrap's invocation."""
    argv = command_line(pid)
    starts = [i for i, part in enumerate(argv) if Path(part).name == BOOTSTRAP.name and i > 0]
    if not starts or len(argv) < starts[0] + _BOOTSTRAP_ARGUMENTS + 3:
        return argv
    kind_at = starts[0] + 1 + _BOOTSTRAP_ARGUMENTS
    kind, target, args = argv[kind_at], argv[kind_at + 1], argv[kind_at + 2:]
    return [argv[0], *(["-m"] if kind == "module" else []), target, *args]


def _cmdline_role(proc: psutil.Process) -> str:
    """The role a process's command line shows (a debuggee that called debugpy.listen()
    from its own code shows none: see ``_served_debuggees``)."""
    text = " ".join(command_line(proc.pid)).replace("\\", "/")
    if "debugpy/adapter" in text or "debugpy.adapter" in text:
        return ROLE_ADAPTER
    if "debugpy/launcher" in text or "debugpy.launcher" in text:
        return ROLE_LAUNCHER
    if ("debugpy" in text or "pydevd" in text or BOOTSTRAP.name in text) and _is_python(proc):
        return ROLE_DEBUGGEE
    return ROLE_OTHER


def _served_debuggees(adapters: list[psutil.Process]) -> dict[int, int]:
    """Map debuggee PID -> adapter PID: the processes connected to an adapter's listening
    ports (the adapter is a daemon, not the debuggee's parent, so only sockets tell)."""
    ports: dict[int, int] = {}
    for adapter in adapters:
        try:
            for conn in adapter.net_connections("tcp"):
                if conn.status == psutil.CONN_LISTEN:
                    ports[conn.laddr.port] = adapter.pid
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            continue
    served: dict[int, int] = {}
    if not ports:
        return served
    for system_conn in psutil.net_connections("tcp"):
        remote = system_conn.raddr
        if (system_conn.pid and remote and system_conn.status == psutil.CONN_ESTABLISHED
                and remote.port in ports and system_conn.pid != ports[remote.port]):
            served[system_conn.pid] = ports[remote.port]
    return served


def _adapters() -> list[psutil.Process]:
    return [proc for proc in psutil.process_iter() if _cmdline_role(proc) == ROLE_ADAPTER]


def classify(proc: psutil.Process) -> str:
    """Name a process's role in a debugpy session: debuggee, adapter, launcher or other."""
    role = _cmdline_role(proc)
    if role == ROLE_OTHER and _is_python(proc) and proc.pid in _served_debuggees(_adapters()):
        return ROLE_DEBUGGEE
    return role


def _is_python(proc: psutil.Process) -> bool:
    try:
        return "python" in Path(proc.exe()).name
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
        args = command_line(proc.pid)
        return bool(args) and "python" in Path(args[0]).name


def python_processes() -> list[tuple[psutil.Process, str]]:
    """Every Python process we can see, with its role."""
    pythons = [proc for proc in psutil.process_iter() if proc.pid != os.getpid() and _is_python(proc)]
    roles = {proc.pid: _cmdline_role(proc) for proc in pythons}
    served = _served_debuggees([proc for proc in pythons if roles[proc.pid] == ROLE_ADAPTER])
    return [(proc, ROLE_DEBUGGEE if proc.pid in served else roles[proc.pid]) for proc in pythons]


def _process(pid: int) -> psutil.Process:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        raise NotFoundError(f"no process with PID {pid}") from None
    except psutil.AccessDenied:
        raise NotFoundError(f"process {pid} exists but is not visible to you") from None


def resolve_debuggee(pid: int) -> tuple[int, str]:
    """Map a PID the user gave to the real debuggee; return it and a sentence saying why."""
    proc = _process(pid)
    role = classify(proc)
    if role == ROLE_ADAPTER:
        found = [debuggee for debuggee, adapter in _served_debuggees([proc]).items() if adapter == pid]
        if not found:
            raise NotFoundError(f"PID {pid} is a debugpy adapter with no debuggee connected")
        return found[0], f"PID {pid} is the debugpy adapter; its debuggee is PID {found[0]}"
    if role == ROLE_LAUNCHER:
        children = [c for c in proc.children() if _is_python(c)]
        if not children:
            raise NotFoundError(f"PID {pid} is a debugpy launcher with no debuggee yet")
        return children[0].pid, f"PID {pid} is VS Code's debugpy launcher; its debuggee is PID {children[0].pid}"
    if role == ROLE_DEBUGGEE:
        return pid, f"PID {pid} is a debugpy debuggee"
    return pid, f"PID {pid} ({proc.name()}) is not running debugpy; attaching to it as it is"


def debugpy_adapter_of(debuggee_pid: int, port: int) -> int | None:
    """The PID of the debugpy adapter listening on ``port`` for this debuggee, if any."""
    for conn in psutil.net_connections("tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            return int(conn.pid) if conn.pid != debuggee_pid else None
    return None


# --- Liveness and release --------------------------------------------------------------

def process_state(pid: int, proc_root: Path = Path("/proc")) -> dict[str, str]:
    """The ``State`` and ``TracerPid`` lines of /proc/PID/status (empty if it is gone)."""
    fields = ptrace.process_status(pid, proc_root)
    return {k: fields[k] for k in ("State", "TracerPid") if k in fields}


def signal_pending(pid: int, signum: int, proc_root: Path = Path("/proc")) -> bool:
    """Whether ``signum`` is queued for the process (ShdPnd) or one of its threads (SigPnd)
    and a thread that would take it does not block it (SigBlk): a tracee held stopped keeps
    such a signal, and the kernel delivers it as soon as the process runs again."""
    bit = 1 << (signum - 1)
    shared = int(ptrace.process_status(pid, proc_root).get("ShdPnd", "0"), 16) & bit
    tasks = proc_root / str(pid) / "task"
    try:
        threads = [ptrace.process_status(int(task.name), tasks) for task in tasks.iterdir()
                   if task.name.isdigit()]
    except OSError:  # gone
        return False
    for thread in threads:
        if not int(thread.get("SigBlk", "0"), 16) & bit and (
                shared or int(thread.get("SigPnd", "0"), 16) & bit):
            return True
    return False


def wait_for_tracer(pid: int, process: subprocess.Popen[bytes], poll: float = 0.05) -> None:
    """Block until a debugger (e.g. VS Code's gdb) is tracing ``pid`` or the process ended."""
    while process.poll() is None and process_state(pid).get("TracerPid", "0") == "0":
        time.sleep(poll)


def ensure_running(pid: int) -> None:
    """Send SIGCONT so that a stop left pending by a tracer cannot freeze the debuggee
    (not our process to signal, or gone: nothing to do)."""
    try:
        os.kill(pid, signal.SIGCONT)
    except (ProcessLookupError, PermissionError) as err:
        log.debug("SIGCONT to %d: %s", pid, err)


def signal_name(number: int) -> str:
    """``SIGSEGV`` for 11; ``SIG35`` for a signal Python has no name for (real-time ones)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


def signal_number(name: str) -> int | None:
    """The inverse of ``signal_name`` (gdb's names too: ``SIG35``); None if unknown."""
    try:
        return int(signal.Signals[name])
    except KeyError:
        digits = name[3:] if name.startswith("SIG") else ""
        return int(digits) if digits.isdigit() else None


def exit_status(returncode: int) -> tuple[int | None, str | None]:
    """Split a Popen return code into (exit code, signal name)."""
    if returncode < 0:
        return None, signal_name(-returncode)
    return returncode, None


def shell_status(code: int | None, signal_name: str | None) -> int:
    """The exit status a shell would show: the code, or 128+N for signal N."""
    if code is not None:
        return code
    number = signal_number(signal_name or "")
    return 128 + (number if number is not None else 0)


def default_python() -> str:
    """The interpreter mixdbg itself runs on (it has debugpy, a dependency of mixdbg)."""
    return sys.executable


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (safe for debugpy, which runs any code)."""
    if host == "localhost":
        return True
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return False
    return all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)



def fate(child: Debuggee | None, pid: int | None, grace: float) -> str | None:
    """How a debuggee ended ("was killed by SIGTRAP", "exited with code 1", "is gone"), or
    None if it still runs after ``grace`` seconds: a SIGTRAP the kernel queued when its
    tracer died is delivered only once the thread runs. ``child``: one we launched (its
    own status is the authority), else ``pid``."""
    deadline = time.monotonic() + grace
    while True:
        found = _fate_now(child, pid)
        if found is not None or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def after_gdb_died(gdb_pid: int, pid: int | None, fate: str | None, restored: int) -> str:
    """What became of the debuggee when gdb died under mixdbg, in one line: ``fate`` as
    :func:`fate` gives it, and how many breakpoint bytes mixdbg restored in its code."""
    repair = f"{restored} breakpoint byte(s) restored"
    if fate is None:
        return f"gdb (pid {gdb_pid}) died; the debuggee (pid {pid}) runs on ({repair})"
    if "SIGTRAP" in fate:
        repair += "; it was at a breakpoint gdb left when gdb died"
    return f"gdb (pid {gdb_pid}) died, and the debuggee (pid {pid}) {fate} ({repair})"


def _fate_now(child: Debuggee | None, pid: int | None) -> str | None:
    if child is not None:
        returncode = child.process.poll()
        if returncode is None:
            return None
        code, signal_name = exit_status(returncode)
        return f"was killed by {signal_name}" if signal_name else f"exited with code {code}"
    state = process_state(pid) if pid else {}
    return None if state and not state["State"].startswith(("Z", "X")) else "is gone"
