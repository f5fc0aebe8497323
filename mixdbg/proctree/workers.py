"""Which DataLoader worker a process is: the seam between process tagging and frame reading.

A forked DataLoader worker has no argument or environment variable naming its index: it
exists only as the local ``worker_id`` of torch's ``_worker_loop`` Python frame (measured,
``torch/utils/data/_utils/worker.py``). Reading it needs a memory-only reader of Python
frames and their locals; mixdbg's (``mixdbg/pyframes``) is built separately. This module
holds the pure part and the type of the reader the session is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Callable, Optional

#: The file and function of torch's worker main loop.
WORKER_LOOP_FILE = "torch/utils/data/_utils/worker.py"
WORKER_LOOP_FUNCTION = "_worker_loop"


@dataclass(frozen=True)
class FrameLocals:
    """One Python frame with the locals a frame reader could decode (others left out)."""

    function: str
    file: str
    locals: Mapping[str, object]


#: Given the pid of a stopped process, its Python frames (any order) with their locals.
FrameReader = Callable[[int], Sequence[FrameLocals]]
#: Given the pid of a stopped DataLoader worker, its worker id (None if it cannot tell).
WorkerIdReader = Callable[[int], Optional[int]]


def worker_id_from_frames(frames: Sequence[FrameLocals]) -> int | None:
    """The ``worker_id`` local of torch's ``_worker_loop`` frame, if one is among ``frames``."""
    for frame in frames:
        if frame.function == WORKER_LOOP_FUNCTION and frame.file.replace("\\", "/").endswith(WORKER_LOOP_FILE):
            value = frame.locals.get("worker_id")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def worker_id_reader(frames: FrameReader) -> WorkerIdReader:
    """A worker-id reader built on a frame reader (what the session is given)."""
    return lambda pid: worker_id_from_frames(frames(pid))
