"""Where a process has a library mapped, from ``/proc/PID/maps``.

Standard library only, Python 3.9-compatible: gdb's Python imports it too (the tensor
printers find ``libc10.so`` in each process they show a tensor of).
"""

from __future__ import annotations

from pathlib import Path


def mapped_library(pid: int, suffix: str) -> tuple[Path, int] | None:
    """The library of process ``pid`` whose path ends with ``suffix``, and the address it
    is loaded at (its mapping of file offset 0), if it is loaded."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].endswith(suffix) and int(fields[2], 16) == 0:
            return Path(fields[5]), int(fields[0].split("-")[0], 16)
    return None
