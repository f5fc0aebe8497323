"""Which DataLoader worker a process is, from its Python frames.

A forked DataLoader worker has no argument or environment variable naming its index: it
exists only as the local ``worker_id`` of torch's ``_worker_loop`` Python frame (measured,
``torch/utils/data/_utils/worker.py``). The session reads frames and locals from the
stopped process's memory (``mixdbg.pyframes``); this module picks the frame and the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Callable, Optional

#: The file and function of torch's worker main loop.
WORKER_LOOP_FILE = "torch/utils/data/_utils/worker.py"
WORKER_LOOP_FUNCTION = "_worker_loop"
_INTEGER = re.compile(r"^-?\d+$")


@dataclass(frozen=True)
class PythonFrame:
    """One Python frame of a stopped thread: where it is, and its address for locals."""

    function: str
    file: str
    address: str


#: Given the pid of a stopped process, the Python frames of its stopped thread.
FrameReader = Callable[[int], Sequence[PythonFrame]]
#: The locals of the frame at an address, as short texts (``mixdbg.pyframes``' summaries).
LocalsReader = Callable[[str], Mapping[str, str]]
#: Given the pid of a stopped DataLoader worker, its worker id (None if it cannot tell).
WorkerIdReader = Callable[[int], Optional[int]]


def worker_id_from_frames(frames: Sequence[PythonFrame], locals_of: LocalsReader) -> int | None:
    """The ``worker_id`` local of torch's ``_worker_loop`` frame, if one is among ``frames``
    (only that frame's locals are read)."""
    for frame in frames:
        if frame.function == WORKER_LOOP_FUNCTION and frame.file.replace("\\", "/").endswith(WORKER_LOOP_FILE):
            value = locals_of(frame.address).get("worker_id", "")
            return int(value) if _INTEGER.match(value) else None
    return None


def worker_id_reader(frames: FrameReader, locals_of: LocalsReader) -> WorkerIdReader:
    """A worker-id reader built on a frame reader and a locals reader (what the tree is given)."""
    return lambda pid: worker_id_from_frames(frames(pid), locals_of)
