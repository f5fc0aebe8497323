"""The mixed stack: native frames and the Python frames that called them, in one list.

The walk itself happens inside gdb (``gdb_helper.py``, which replaces each frame of
CPython's bytecode loop by the Python frames it runs, read from the interpreter's memory by
``mixdbg.pyframes``). This module turns the walker's JSON into ``Frame`` records, hides
mixdbg's own launch frames, and renders a stack for people.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

#: mixdbg's launcher sits below every user script it runs: its Python frames are hidden,
#: and so are the debuggee's ``runpy`` frames the launcher called (whatever its Python).
BOOTSTRAP = os.path.realpath(Path(__file__).with_name("bootstrap.py"))
#: The Python agent's code (``mixdbg.pyagent``): at a Python stop, the innermost frames are
#: its own and the trap's, and they are hidden.
AGENT_DIR = os.path.realpath(Path(__file__).with_name("pyagent"))


@dataclass(frozen=True)
class Frame:
    """One frame of a mixed stack; ``kind`` is ``native`` or ``python``."""

    kind: str
    function: str
    file: str | None
    line: int | None
    library: str | None
    #: A Python frame's interpreter frame (``0x...``): what ``locals`` reads.
    address: str | None = None
    #: A native frame's gdb frame level and program counter (``0x...``).
    level: int | None = None
    pc: str | None = None
    #: A Python frame's depth: Python frames from the thread's outermost one to it.
    depth: int | None = None
    #: A native frame inlined into the frame outside it (it has no return of its own).
    inline: bool = False

    def to_json(self) -> dict[str, Any]:
        """The frame as it appears in ``stopped`` events."""
        return {"kind": self.kind, "function": self.function, "file": self.file,
                "line": self.line, "library": self.library}


@dataclass(frozen=True)
class MixedStack:
    """A thread's frames innermost first, and whether its Python frames could be read."""

    frames: tuple[Frame, ...]
    python_status: str
    truncated: bool
    #: Every thread's stack, when asked for (``bt all``, ``--threads``); else empty.
    threads: tuple[ThreadStack, ...] = ()


@dataclass(frozen=True)
class ThreadStack:
    """One thread of the process: gdb's thread number, its LWP and name, its stack."""

    thread: int
    lwp: int
    name: str | None
    stack: MixedStack

    def to_json(self) -> dict[str, Any]:
        """The thread as it appears in the ``threads`` of ``stopped`` events."""
        return {"thread": self.thread, "lwp": self.lwp, "name": self.name,
                "frames": [frame.to_json() for frame in self.stack.frames],
                "python_frames": self.stack.python_status}


def from_helper(data: dict[str, Any]) -> MixedStack:
    """Build a ``MixedStack`` from the JSON the in-gdb walker wrote."""
    frames = tuple(_frame(raw) for raw in _without_agent(_without_launcher(data.get("frames", []))))
    status = str(data.get("python", "unavailable"))
    if data.get("error"):
        status = f"unavailable: {data['error']}"
    threads = tuple(ThreadStack(thread=int(raw["thread"]), lwp=int(raw["lwp"]), name=raw.get("name"),
                                stack=from_helper(raw))
                    for raw in data.get("threads", []))
    return MixedStack(frames=frames, python_status=status, truncated=bool(data.get("truncated")),
                      threads=threads)


def _frame(raw: dict[str, Any]) -> Frame:
    python = raw.get("kind") == "python"
    return Frame(kind=str(raw["kind"]), function=str(raw["function"]), file=raw.get("file"),
                 line=raw.get("line"), library=raw.get("library"),
                 address=raw.get("address") if python else None,
                 level=None if python else raw.get("level"),
                 pc=None if python else raw.get("address"),
                 depth=raw.get("depth") if python else None, inline=bool(raw.get("inline")))


@lru_cache(maxsize=4096)
def _real(path: str) -> str:
    """A frame's file with its links resolved (asked for every Python frame of every stack:
    the same few hundred files, so kept)."""
    return os.path.realpath(path)


def is_agent_file(file: str | None) -> bool:
    """Whether ``file`` is the Python agent's own code (never shown, never stepped into)."""
    return bool(file) and _real(str(file)).startswith(AGENT_DIR + os.sep)


def _without_agent(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The frames without the trap: when the innermost Python frames are the agent's (a
    Python stop), they go, and so does every native frame inside the user's frame below
    them (the trap, the interpreter's tracing machinery)."""
    seen_agent = False
    for index, raw in enumerate(frames):
        if raw.get("kind") != "python":
            continue
        if is_agent_file(raw.get("file")):
            seen_agent = True
            continue
        return frames[index:] if seen_agent else frames
    return frames


def _without_launcher(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The frames without the launcher's Python frames and the runpy frames between it and
    the user's code (runpy is found by file name: the debuggee's Python is not ours)."""
    kept: list[dict[str, Any]] = []
    below_launcher = False
    for raw in reversed(frames):  # outermost first
        python = raw.get("kind") == "python"
        file = str(raw.get("file") or "")
        if python and _real(file) == BOOTSTRAP:
            below_launcher = True
            continue
        if python and below_launcher and Path(file).name == "runpy.py":
            continue
        below_launcher = below_launcher and not python
        kept.append(raw)
    return kept[::-1]


def _is_interpreter_frame(frame: Frame) -> bool:
    library = Path(frame.library or "").name
    return frame.kind == "native" and library.startswith(("libpython", "python"))


def format_stack(stack: MixedStack, collapse_interpreter: bool = True) -> list[str]:
    """Render a stack for a terminal, innermost first. Runs of CPython-internal native
    frames between the interesting ones are collapsed to one line when asked."""
    lines: list[str] = []
    run: list[Frame] = []

    def flush() -> None:
        if len(run) > 2 and collapse_interpreter:
            lines.append(f"      ... {len(run)} interpreter frames ({Path(run[0].library or '?').name})")
        else:
            lines.extend(frame_line(frame) for frame in run)
        run.clear()

    for index, frame in enumerate(stack.frames):
        if index > 0 and _is_interpreter_frame(frame):
            run.append(frame)
            continue
        flush()
        lines.append(frame_line(frame, index))
    flush()
    if stack.truncated:
        lines.append("      ... (more frames not shown)")
    if not stack.python_status.startswith("ok"):
        lines.append(f"  (Python frames {stack.python_status})")
    return lines


def frame_line(frame: Frame, index: int | None = None) -> str:
    """One frame as a line for people: ``#3 [py] main  script.py:12``."""
    number = f"#{index:<3}" if index is not None else "    "
    if frame.kind == "python":
        return f"  {number} [py] {frame.function}  {frame.file}:{frame.line}"
    where = f"{frame.file}:{frame.line}" if frame.file and frame.line else Path(frame.library or "??").name
    return f"  {number}      {_short(frame.function)}  {where}"


def _short(function: str, limit: int = 100) -> str:
    return function if len(function) <= limit else function[: limit - 3] + "..."


def format_threads(stack: MixedStack, besides: int | None = None) -> list[str]:
    """Render every thread's full stack (``bt all``, ``--threads``), but thread ``besides``
    (the stopped one, already shown)."""
    lines: list[str] = []
    for thread in stack.threads:
        if thread.thread == besides:
            continue
        name = f" {thread.name}" if thread.name else ""
        lines.append(f"thread {thread.thread} (LWP {thread.lwp}){name}:")
        lines.extend(format_stack(thread.stack, collapse_interpreter=False))
    return lines
