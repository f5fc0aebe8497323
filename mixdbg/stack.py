"""The mixed stack: native frames and the Python frames that called them, in one list.

The walk itself happens inside gdb (``gdb_helper.py``, which replaces each frame of
CPython's bytecode loop by the Python frames it runs). This module turns the walker's JSON
into ``Frame`` records, hides mixdbg's own launch frames, finds the interpreter's gdb
script, and renders a stack for people.
"""

from __future__ import annotations

import os
import runpy
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Python frames of mixdbg's launcher and of runpy sit below every user script; hide them.
HIDDEN_PYTHON_FILES = frozenset({
    os.path.realpath(Path(__file__).with_name("bootstrap.py")), os.path.realpath(runpy.__file__),
})


@dataclass(frozen=True)
class Frame:
    """One frame of a mixed stack; ``kind`` is ``native`` or ``python``."""

    kind: str
    function: str
    file: str | None
    line: int | None
    library: str | None

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


def from_helper(data: dict[str, Any]) -> MixedStack:
    """Build a ``MixedStack`` from the JSON the in-gdb walker wrote."""
    frames = tuple(
        Frame(kind=str(raw["kind"]), function=str(raw["function"]), file=raw.get("file"),
              line=raw.get("line"), library=raw.get("library"))
        for raw in data.get("frames", [])
        if not _hidden(raw)
    )
    status = str(data.get("python", "unavailable"))
    if data.get("error"):
        status = f"unavailable: {data['error']}"
    return MixedStack(frames=frames, python_status=status, truncated=bool(data.get("truncated")))


def _hidden(raw: dict[str, Any]) -> bool:
    file = raw.get("file")
    return raw.get("kind") == "python" and bool(file) and os.path.realpath(str(file)) in HIDDEN_PYTHON_FILES


def interpreter_gdb_scripts(executable: str, libraries: Iterable[str] = ()) -> list[Path]:
    """The interpreter's own gdb helper ("libpython") scripts that exist for this process.

    CPython installs it as ``<python>-gdb.py`` next to the interpreter (pyenv, source
    builds) or as ``<libpython>-gdb.py``; distributions put it under gdb's auto-load
    directory (``/usr/share/gdb/auto-load/<real path>-gdb.py``)."""
    candidates: list[Path] = []
    for binary in (executable, *libraries):
        real = Path(os.path.realpath(binary))
        candidates += [Path(f"{real}-gdb.py"), Path(f"/usr/share/gdb/auto-load{real}-gdb.py")]
    seen: list[Path] = []
    for path in candidates:
        if path.is_file() and path not in seen:
            seen.append(path)
    return seen[:1]


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
            lines.extend(_frame_line(frame) for frame in run)
        run.clear()

    for index, frame in enumerate(stack.frames):
        if index > 0 and _is_interpreter_frame(frame):
            run.append(frame)
            continue
        flush()
        lines.append(_frame_line(frame, index))
    flush()
    if stack.truncated:
        lines.append("      ... (more frames not shown)")
    if not stack.python_status.startswith("ok"):
        lines.append(f"  (Python frames {stack.python_status})")
    return lines


def _frame_line(frame: Frame, index: int | None = None) -> str:
    number = f"#{index:<3}" if index is not None else "    "
    if frame.kind == "python":
        return f"  {number} [py] {frame.function}  {frame.file}:{frame.line}"
    where = f"{frame.file}:{frame.line}" if frame.file and frame.line else Path(frame.library or "??").name
    return f"  {number}      {_short(frame.function)}  {where}"


def _short(function: str, limit: int = 100) -> str:
    return function if len(function) <= limit else function[: limit - 3] + "..."
