"""The followed processes of one session, keyed by gdb inferior and by pid, with their tags.

gdb names processes by inferior ("thread group", ``i2``) and stops by global thread id; the
user knows them by pid and by what they are. This table maps the three, and tags each
process from /proc: its role (``main``, ``dataloader-worker``, ``rank``, ``child``), and for
torchrun ranks ``RANK``/``LOCAL_RANK``/``WORLD_SIZE`` from the environment the rank was
exec'd with (measured: torchrun's elastic agent sets them only in the exec'd child's
environment, so a fork child of a rank inherits them without being a rank itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mixdbg.attach import program_line
from mixdbg.proctree import procfs

MAIN, DATALOADER_WORKER, RANK, CHILD = "main", "dataloader-worker", "rank", "child"
#: torch names a DataLoader worker's main thread (hence the process) this way in _worker_loop.
DATALOADER_WORKER_COMM = "pt_data_worker"
RANK_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE")


@dataclass
class Process:
    """One process gdb follows (or followed) in this session."""

    inferior: str
    pid: int
    ppid: int | None
    argv: list[str]
    execed: bool = False
    role: str = CHILD
    worker_id: int | None = None
    rank: dict[str, int] = field(default_factory=dict)
    announced: bool = False
    ended: bool = False
    quiet: bool = False  # not the user's (a non-Python program and its non-Python children)
    crash_signal: str | None = None  # the fatal signal already reported as a stop

    def label(self) -> str:
        """How people are told which process: ``rank 1, pid 4242``."""
        if self.role == DATALOADER_WORKER:
            who = "DataLoader worker" + (f" {self.worker_id}" if self.worker_id is not None else "")
        elif self.role == RANK and "RANK" in self.rank:
            who = f"rank {self.rank['RANK']}"
        else:
            who = self.role
        return f"{who}, pid {self.pid}"

    def to_json(self) -> dict[str, Any]:
        """The ``process`` event's fields."""
        return {"pid": self.pid, "ppid": self.ppid, "argv": self.argv, "role": self.role,
                "worker_id": self.worker_id, "rank": self.rank.get("RANK"),
                "local_rank": self.rank.get("LOCAL_RANK"), "world_size": self.rank.get("WORLD_SIZE")}


class ProcessTable:
    """Processes by inferior id and pid, and gdb's thread ids by inferior."""

    def __init__(self) -> None:
        self.by_inferior: dict[str, Process] = {}
        self.root: Process | None = None
        self._thread_inferior: dict[str, str] = {}

    def started(self, inferior: str, pid: int) -> Process:
        """A process appeared in gdb (attached, forked, or re-started in an inferior)."""
        process = Process(inferior=inferior, pid=pid, ppid=procfs.parent_pid(pid), argv=program_line(pid))
        if self.root is None:
            process.role = MAIN
            self.root = process
        parent = next((p for p in self.by_inferior.values() if p.pid == process.ppid and not p.ended), None)
        process.quiet = parent is not None and parent.quiet
        self.by_inferior[inferior] = process
        return process

    def thread_created(self, thread: str, inferior: str) -> None:
        """Remember which inferior a gdb thread id belongs to (``*stopped`` names only threads)."""
        self._thread_inferior[thread] = inferior

    def thread_exited(self, thread: str) -> None:
        """Forget a thread."""
        self._thread_inferior.pop(thread, None)

    def of_thread(self, thread: str | None) -> Process | None:
        """The process a gdb thread id belongs to."""
        inferior = self._thread_inferior.get(thread or "")
        return self.by_inferior.get(inferior) if inferior else None

    def live(self) -> list[Process]:
        """Processes still followed, the root first."""
        return [p for p in self.by_inferior.values() if not p.ended]

    def live_threads(self) -> list[str]:
        """gdb thread ids of live processes, any of which can be selected to resume."""
        live = {p.inferior for p in self.live()}
        return [thread for thread, inferior in self._thread_inferior.items() if inferior in live]

    def threads_by_inferior(self) -> dict[str, list[str]]:
        """gdb thread ids of each inferior, oldest first (a process's first is its main thread)."""
        found: dict[str, list[str]] = {}
        for thread, inferior in self._thread_inferior.items():
            found.setdefault(inferior, []).append(thread)
        return found

    def ended(self, process: Process) -> None:
        """The process exited or was let go: drop its threads."""
        process.ended = True
        self._thread_inferior = {t: i for t, i in self._thread_inferior.items() if i != process.inferior}


def tag(process: Process) -> None:
    """Set the process's role and rank from /proc (call when it is stopped or just exec'd:
    a DataLoader worker is renamed once ``_worker_loop`` runs)."""
    if process.role == MAIN:
        return
    process.argv = program_line(process.pid) or process.argv
    variables = procfs.environ_vars(process.pid, RANK_VARIABLES)
    process.rank = {name: int(value) for name, value in variables.items() if value.isdigit()}
    if procfs.comm(process.pid) == DATALOADER_WORKER_COMM:
        process.role = DATALOADER_WORKER
    elif process.execed and "RANK" in process.rank:
        process.role = RANK
    else:
        process.role = CHILD
