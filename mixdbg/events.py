"""The events a session reports, one record type each; ``--json`` prints ``to_json()``.

The JSON format (one object per line on stdout) is documented in the README; every event
has an ``event`` key naming its kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from mixdbg.stack import MixedStack


@dataclass(frozen=True)
class SessionStarted:
    """The debuggee is known and gdb is attached to it."""

    pid: int
    host: str | None
    port: int | None
    adapter_pid: int | None
    python: str
    target: str
    gdb_pid: int | None  # None: mixdbg runs no gdb (VS Code's attaches)
    how: str  # "launched" or a sentence saying how an attach target was resolved
    ptracer: bool | None  # whether the debuggee declared its tracer (Yama); None: not launched by us
    function_calls: bool | None = None  # whether gdb may call functions in it (None: no gdb of ours)

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"event": "session", "pid": self.pid, "host": self.host, "port": self.port,
                "adapter_pid": self.adapter_pid, "python": self.python, "target": self.target,
                "gdb_pid": self.gdb_pid, "how": self.how,
                "ptracer_declared": self.ptracer, "function_calls": self.function_calls}


@dataclass(frozen=True)
class BreakpointChanged:
    """A breakpoint was set, resolved, re-bound or deleted (``body`` from Breakpoint.to_json).
    ``news``: what it stops at changed (``Breakpoint.what_matters``); otherwise only the
    processes it is in did (``pids``), which people and editors are not told again."""

    body: dict[str, Any]
    deleted: bool = False
    news: bool = True

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        extra = {"deleted": True} if self.deleted else {}
        return {"event": "breakpoint", **self.body, **extra}


@dataclass(frozen=True)
class Stopped:
    """The debuggee stopped: at a breakpoint, on a signal, or because it was interrupted."""

    reason: str  # "breakpoint" | "signal" | "interrupt" | "step"
    breakpoint: int | None
    signal: str | None
    thread: int | None
    stack: MixedStack
    op: str | None = None  # the operator overload an ``op:`` breakpoint stopped in
    arguments: list[dict[str, Any]] | None = None  # the innermost frame's, when decoded
    pid: int | None = None
    process: str | None = None  # who, for people: "rank 1, pid 4242"
    #: At a Python stop, what the agent said (reason, description, exception).
    python: dict[str, Any] | None = None
    #: At a data breakpoint's stop, the watched value as gdb gives it: ``old`` and ``new``
    #: (a write), ``value`` (a read).
    value: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON form (``threads`` only when every thread's stack was asked for)."""
        body: dict[str, Any] = {"event": "stopped", "reason": self.reason, "breakpoint": self.breakpoint,
                "signal": self.signal, "thread": self.thread,
                "frames": [frame.to_json() for frame in self.stack.frames],
                "python_frames": self.stack.python_status, "pid": self.pid, "process": self.process}
        if self.stack.threads:
            body["threads"] = [thread.to_json() for thread in self.stack.threads]
        if self.op is not None:
            body["op"] = self.op
        if self.value is not None:
            body["value"] = self.value
        if self.arguments is not None:
            body["arguments"] = self.arguments
        if self.python is not None:
            body["python"] = self.python
        return body


@dataclass(frozen=True)
class Exited:
    """A process ended; ``code`` is its exit code, or ``signal`` the signal that ended it.
    ``pid`` and ``process`` (who, for people) are set for a followed child; the debuggee's
    own ``exited`` has neither (its pid is the session's), as before children were followed."""

    code: int | None
    signal: str | None
    pid: int | None = None
    process: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        child = {"pid": self.pid, "process": self.process} if self.pid is not None else {}
        return {"event": "exited", "code": self.code, "signal": self.signal, **child}


@dataclass(frozen=True)
class ProcessFollowed:
    """gdb follows a process of the debuggee's tree (``body``: pid, ppid, argv, role,
    worker_id, rank, local_rank, world_size); ``label`` names it for people."""

    body: dict[str, Any]
    label: str

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"event": "process", **self.body}


@dataclass(frozen=True)
class Detached:
    """mixdbg let go of the debuggee, which runs on."""

    pid: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"event": "detached", "pid": self.pid, "reason": self.reason}


@dataclass(frozen=True)
class Notice:
    """Something the user should know that is not an error (``level``: info or warning)."""

    level: str
    message: str

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"event": self.level, "message": self.message}


@dataclass(frozen=True)
class ProgramOutput:
    """Text the program's debugging produced for the user (a logpoint's message)."""

    text: str
    pid: int | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"event": "output", "text": self.text, "pid": self.pid}


@dataclass(frozen=True)
class Progress:
    """A slow step that has taken over a second (gdb reading libraries' symbols), reported
    as it starts, every second while it lasts, and when it ends (``phase``); ``id`` ties the
    three together. ``libraries`` are read, ``size`` is their debug info and symbol tables
    in bytes, ``seconds`` how long it has taken so far."""

    id: str
    phase: str  # "start" | "update" | "end"
    title: str
    message: str
    libraries: tuple[str, ...] = ()
    size: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"event": "progress", "id": self.id, "phase": self.phase, "title": self.title,
                "message": self.message, "libraries": list(self.libraries), "bytes": self.size,
                "seconds": round(self.seconds, 1)}


Event = Union[SessionStarted, BreakpointChanged, Stopped, Exited, Detached, Notice, ProcessFollowed,
              ProgramOutput, Progress]
