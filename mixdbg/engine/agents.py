"""The Python agents of a session (``docs/dap-design.md``): the socket each debugged
interpreter's agent connects to, the configuration it is sent (Python breakpoints,
exception stops, justMyCode), and the agent's memory (its shared block and mailboxes),
which the engine reads and writes while gdb holds the process stopped.

This module owns the socket and the layout of the agent's memory; it never talks MI
itself (writes go through a callback the session gives it).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import struct
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from mixdbg.errors import DebuggerError
from mixdbg.memory import MemoryReadError, ProcMemory
from mixdbg.rundir import runtime_dir

log = logging.getLogger(__name__)

MAGIC = 0x4741474244584D4D
VERSION = 2
SLOT_COUNT = 16
#: Shared block: u64 magic, u32 version, u32 armed, slots {u64 tid, u32 mode, u32 depth},
#: then (see ``attention``) u64 attend, u64 trace_call, u64 attend_call, u32 frame_trace,
#: u32 trace_object.
ARMED_AT = 12
SLOTS_AT = 16
SLOT_SIZE = 16
ATTEND_AT = SLOTS_AT + SLOT_COUNT * SLOT_SIZE
#: Mailbox: u64 magic, u64 shared, u64 tid, u32 out_len, u32 in_len, out[OUT_SIZE], in[IN_SIZE].
MAILBOX_HEADER = 32
OUT_SIZE = 1 << 20
IN_SIZE = 64 << 10
IN_LEN_AT = 28
#: Slot modes: stop at the next line of any new frame / of a frame no deeper than ``depth``.
STEP_IN = 1
STEP_TO_DEPTH = 2
#: The native function the agent calls to stop (its first argument: the mailbox).
TRAP_FUNCTION = "Py_GetCompiler"

WriteMemory = Callable[[int, int, bytes], None]  # (pid, address, data)


@dataclass(frozen=True)
class PythonBreakpoint:
    """A Python line breakpoint as the agent takes it."""

    id: int
    line: int
    condition: str | None = None
    hitCondition: str | None = None
    logMessage: str | None = None


@dataclass
class AgentConfig:
    """Everything the agents are told; sent whole to each agent that connects."""

    breakpoints: dict[str, list[PythonBreakpoint]] = field(default_factory=dict)
    raised: bool = False
    uncaught: bool = False
    user_uncaught: bool = False
    #: Per exception class, as DAP's exceptionOptions (the filters are then ignored):
    #: ``[{"names": ["ValueError", ...], "breakMode": "never" | "always" | "unhandled" | "userUnhandled"}]``.
    exception_options: list[dict[str, Any]] | None = None
    just_my_code: bool = True
    stop_on_entry: bool = False
    show_return_value: bool = True

    def messages(self) -> list[dict[str, Any]]:
        """The configuration as the agent's messages."""
        exceptions: dict[str, Any] = ({"options": self.exception_options} if self.exception_options is not None else
                                      {"raised": self.raised, "uncaught": self.uncaught,
                                       "userUnhandled": self.user_uncaught})
        return [
            {"breakpoints": {path: [_compact(asdict(b)) for b in bps] for path, bps in self.breakpoints.items()}},
            {"exceptions": exceptions},
            {"justMyCode": self.just_my_code},
            {"stopOnEntry": self.stop_on_entry},
            {"showReturnValue": self.show_return_value},
        ]


@dataclass(frozen=True)
class Mailbox:
    """What a trapped thread's mailbox says: its process, address, thread and message."""

    pid: int
    address: int
    shared: int
    tid: int
    message: dict[str, Any]


class AgentHub:
    """The agents' socket and configuration. ``on_message(pid, message)`` receives what
    agents send besides their hello (logpoint output, problems), on a reader thread."""

    def __init__(self, on_message: Callable[[int, dict[str, Any]], None]) -> None:
        self.on_message = on_message
        self.config = AgentConfig()
        self.directory = Path(tempfile.mkdtemp(prefix="agents-", dir=runtime_dir(create=True)))
        self.path = self.directory / "agent.sock"
        self.shared: dict[int, int] = {}  # pid -> shared block address
        #: pid -> the signal its agent stops at after a native Step Out (see the agent's STEP_SIGNAL)
        self.step_signals: dict[int, int] = {}
        #: Called with a new agent's PID before its welcome (the process waits for it): what
        #: the engine must set in a fork child before it runs on (data breakpoints).
        self.before_welcome: Callable[[int], None] = lambda pid: None
        #: pid -> how its agent traces: "monitoring" (3.12+) or "settrace"
        self.tracing: dict[int, str] = {}
        self._connections: dict[int, socket.socket] = {}
        self._lock = threading.Lock()
        self._hello = threading.Condition(self._lock)
        self._released = False
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self._server.listen(16)
        threading.Thread(target=self._accept_loop, name="agents", daemon=True).start()

    def configure(self, **changes: Any) -> None:
        """Change the configuration (fields of ``AgentConfig``) and tell every agent."""
        for name, value in changes.items():
            setattr(self.config, name, value)
        self._broadcast(self.config.messages())

    def release(self) -> None:
        """Let the agents' programs start (the initial configuration is complete)."""
        with self._lock:
            self._released = True
        self._broadcast([{"go": True}])

    @property
    def released(self) -> bool:
        """Whether the programs were let start (agents then read configuration only when
        told to: see ``attention``)."""
        return self._released

    def wait_for(self, pid: int, timeout: float) -> bool:
        """Wait until the agent of ``pid`` said hello; False after ``timeout`` seconds."""
        with self._hello:
            return self._hello.wait_for(lambda: pid in self._connections, timeout)

    def close(self) -> None:
        """Close the socket and every agent connection (agents then run on undisturbed)."""
        self._server.close()
        with self._lock:
            for conn in self._connections.values():
                conn.close()
            self._connections.clear()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _broadcast(self, messages: list[dict[str, Any]]) -> None:
        with self._lock:
            for pid, conn in list(self._connections.items()):
                self._send(pid, conn, messages)

    def _send(self, pid: int, conn: socket.socket, messages: list[dict[str, Any]]) -> None:
        data = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
        try:
            conn.sendall(data)
        except OSError as err:
            log.info("agent of PID %d is gone: %s", pid, err)
            self._connections.pop(pid, None)

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="agent", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        pid: int | None = None
        with conn, conn.makefile("rb") as lines:
            for line in lines:
                try:
                    message = json.loads(line)
                except ValueError:
                    log.warning("agent sent an unreadable line: %r", line[:200])
                    continue
                if "hello" in message:
                    pid = int(message["hello"])
                    self.before_welcome(pid)
                    self._welcome(pid, conn, message)
                elif pid is not None:
                    self.on_message(pid, message)
        if pid is not None:
            with self._lock:
                if self._connections.get(pid) is conn:
                    del self._connections[pid]

    def _welcome(self, pid: int, conn: socket.socket, hello: dict[str, Any]) -> None:
        """A new agent (the debuggee, or a fork child): its configuration, and ``go`` if
        the session already let programs start."""
        with self._hello:
            self._connections[pid] = conn
            if hello.get("shared"):
                self.shared[pid] = int(hello["shared"])
            if hello.get("step_signal"):
                self.step_signals[pid] = int(hello["step_signal"])
            if hello.get("tracing"):
                self.tracing[pid] = str(hello["tracing"])
            messages = self.config.messages() + ([{"go": True}] if self._released else [])
            self._send(pid, conn, messages)
            self._hello.notify_all()


def read_mailbox(pid: int, address: int) -> Mailbox | None:
    """The mailbox at ``address`` in process ``pid`` (the trap's first argument), or None
    when that is no agent's mailbox (someone else called the trap function)."""
    try:
        with ProcMemory(pid) as read:
            magic, shared, tid, out_len, _ = struct.unpack("<QQQII", read(address, MAILBOX_HEADER))
            if magic != MAGIC or out_len > OUT_SIZE:
                return None
            raw = read(address + MAILBOX_HEADER, out_len)
    except MemoryReadError as err:
        log.info("no mailbox at %#x in PID %d: %s", address, pid, err)
        return None
    try:
        message = json.loads(raw)
    except ValueError as err:
        raise DebuggerError(f"the Python agent of PID {pid} wrote an unreadable message") from err
    return Mailbox(pid=pid, address=address, shared=shared, tid=tid, message=message)


def post_to_mailbox(write: WriteMemory, mailbox: Mailbox, message: dict[str, Any]) -> None:
    """Write ``message`` into the mailbox's ``in`` area (the thread reads it when resumed)."""
    data = json.dumps(message).encode()
    if len(data) > IN_SIZE:
        raise DebuggerError(f"a request of {len(data)} bytes does not fit the agent's mailbox")
    write(mailbox.pid, mailbox.address + MAILBOX_HEADER + OUT_SIZE, data)
    write(mailbox.pid, mailbox.address + IN_LEN_AT, struct.pack("<I", len(data)))


def post_while_running(mailbox: Mailbox, message: dict[str, Any]) -> None:
    """Write ``message`` into the mailbox of a thread that runs (serving a request): through
    ``/proc/PID/mem``, not gdb, which is busy running it. The agent checks ``in_len`` at
    each line of the request (a cancel); a write that comes late is overwritten by the
    engine's next message before the thread reads it."""
    data = json.dumps(message).encode()
    try:
        with open(f"/proc/{mailbox.pid}/mem", "r+b", buffering=0) as memory:
            memory.seek(mailbox.address + MAILBOX_HEADER + OUT_SIZE)
            memory.write(data)
            memory.seek(mailbox.address + IN_LEN_AT)
            memory.write(struct.pack("<I", len(data)))
    except OSError as err:
        raise DebuggerError(f"cannot write to the Python agent of PID {mailbox.pid}: {err.strerror}") from err


def arm_slot(write: WriteMemory, pid: int, shared: int, tid: int, mode: int, depth: int = 0) -> None:
    """Ask the agent of process ``pid`` to stop thread ``tid`` at its next Python line
    (``STEP_IN``) or at the next line of a frame no deeper than ``depth``. A slot is free
    when its mode is 0; a thread has at most one."""
    with ProcMemory(pid) as read:
        magic, armed = struct.unpack("<QxxxxI", read(shared, 16))
        if magic != MAGIC:
            raise DebuggerError(f"no Python agent at {shared:#x} in PID {pid}")
        slots = read(shared + SLOTS_AT, SLOT_SIZE * SLOT_COUNT)
    used = [struct.unpack_from("<QI", slots, i * SLOT_SIZE) for i in range(SLOT_COUNT)]
    mine = [i for i, (used_tid, used_mode) in enumerate(used) if used_mode and used_tid == tid]
    free = [i for i, (_, used_mode) in enumerate(used) if not used_mode]
    if not mine and not free:
        raise DebuggerError("every step slot of the Python agent is in use")
    index = mine[0] if mine else free[0]
    write(pid, shared + SLOTS_AT + index * SLOT_SIZE, struct.pack("<QII", tid, mode, depth))
    if not mine:
        write(pid, shared + ARMED_AT, struct.pack("<I", armed + 1))


def clear_slots(write: WriteMemory, pid: int, shared: int) -> None:
    """Disarm every step request in the process's shared block (the agent's own too: a stop
    cancels every pending step)."""
    try:
        with ProcMemory(pid) as read:
            magic, armed = struct.unpack("<QxxxxI", read(shared, 16))
    except MemoryReadError:
        return
    if magic == MAGIC and armed:
        write(pid, shared + SLOTS_AT, bytes(SLOT_SIZE * SLOT_COUNT))
        write(pid, shared + ARMED_AT, struct.pack("<I", 0))


def nudge(write: WriteMemory, pid: int, shared: int) -> bool:
    """After configuration was sent or a step armed at a stop: one more than the slots in use
    in ``armed`` (once), so that the first event that sees it applies it before any line
    runs (see ``attention``). False when no agent is there (any more)."""
    try:
        with ProcMemory(pid) as read:
            magic, armed = struct.unpack("<QxxxxI", read(shared, 16))
            slots = read(shared + SLOTS_AT, SLOT_SIZE * SLOT_COUNT)
    except MemoryReadError:
        return False
    if magic != MAGIC:
        return False
    in_use = sum(1 for i in range(SLOT_COUNT) if struct.unpack_from("<QI", slots, i * SLOT_SIZE)[1])
    if armed <= in_use:
        write(pid, shared + ARMED_AT, struct.pack("<I", in_use + 1))
    return True


@dataclass(frozen=True)
class Attention:
    """How the engine gets a 3.10/3.11 agent's attention (all 0 elsewhere): the addresses of
    its frame tracer, of its global trace function and of the one it takes while something
    is armed; where a frame object keeps ``f_trace``, a thread state its trace object."""

    attend: int
    trace_call: int
    attend_call: int
    frame_trace: int
    trace_object: int


def attention_fields(pid: int, shared: int) -> Attention:
    """What the agent of ``pid`` published for its attention (all 0 when unreadable)."""
    try:
        with ProcMemory(pid) as read:
            return Attention(*struct.unpack("<QQQII", read(shared + ATTEND_AT, 32)))
    except MemoryReadError:
        return Attention(0, 0, 0, 0, 0)


def _compact(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}
