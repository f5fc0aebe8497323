"""Undo breakpoint instructions that a dead gdb left in a running debuggee.

Measured: gdb killed with SIGKILL while the debuggee runs leaves its ``int3`` bytes in
place, and the debuggee later dies of SIGTRAP at the next one it executes. gdb's internal
breakpoints (the shared-library event hook in ld.so, longjmp and exception hooks) are
among them, and MI never reports their addresses, so a list of "our" locations is not
enough. Instead this module finds every code page gdb wrote to: writing to a read-only
file mapping (ptrace or /proc/PID/mem) copies the page, so such a page shows in
/proc/PID/pagemap as present but no longer file-backed. Each ``0xCC`` byte in such a page
whose byte in the mapped file differs is restored from the file.

Needs only the same permission gdb had (ptrace access), and no tracer: /proc/PID/mem is
written directly. A thread that executes a breakpoint between gdb's death and this repair
still dies; that window is the time from gdb's exit to mixdbg noticing EOF (milliseconds).
"""

from __future__ import annotations

import logging
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger(__name__)

PAGE = mmap.PAGESIZE
INT3 = 0xCC
_PRESENT, _SWAPPED, _FILE_OR_SHARED = 1 << 63, 1 << 62, 1 << 61


@dataclass(frozen=True)
class CodeMapping:
    """An executable mapping of a file: ``[start, end)`` at ``offset`` in ``path``."""

    start: int
    end: int
    offset: int
    path: str


def code_mappings(pid: int, proc_root: Path = Path("/proc")) -> list[CodeMapping]:
    """Executable, file-backed, private mappings of the process."""
    found = []
    for line in (proc_root / str(pid) / "maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or "x" not in fields[1] or "p" not in fields[1]:
            continue
        path = fields[5].strip()
        if not path.startswith("/") or path.endswith("(deleted)"):
            continue
        start, end = (int(part, 16) for part in fields[0].split("-"))
        found.append(CodeMapping(start, end, int(fields[2], 16), path))
    return found


def copied_pages(pid: int, mapping: CodeMapping, proc_root: Path = Path("/proc")) -> list[int]:
    """Addresses of the mapping's pages that are private copies (written to by a tracer)."""
    count = (mapping.end - mapping.start) // PAGE
    with open(proc_root / str(pid) / "pagemap", "rb") as pagemap:
        pagemap.seek(mapping.start // PAGE * 8)
        entries = struct.unpack(f"<{count}Q", pagemap.read(count * 8))
    return [
        mapping.start + index * PAGE
        for index, entry in enumerate(entries)
        if entry & (_PRESENT | _SWAPPED) and not entry & _FILE_OR_SHARED
    ]


def restore_breakpoint_bytes(pid: int, proc_root: Path = Path("/proc")) -> int:
    """Restore every breakpoint byte left in the process's code; return how many.

    Never raises: a repair that cannot run is logged, and 0 returned."""
    restored = 0
    try:
        mappings = code_mappings(pid, proc_root)
        with open(proc_root / str(pid) / "mem", "r+b", buffering=0) as memory:
            for mapping in mappings:
                restored += _restore_mapping(pid, mapping, memory, proc_root)
    except ProcessLookupError:
        log.info("pid %d is gone: no breakpoints to repair", pid)
    except OSError as err:
        log.warning("could not repair breakpoints in pid %d: %s", pid, err)
    return restored


def _restore_mapping(pid: int, mapping: CodeMapping, memory: BinaryIO, proc_root: Path) -> int:
    pages = copied_pages(pid, mapping, proc_root)
    if not pages:
        return 0
    restored = 0
    with open(mapping.path, "rb") as original:
        for page in pages:
            memory.seek(page)
            current = memory.read(PAGE) or b""
            original.seek(mapping.offset + page - mapping.start)
            pristine = original.read(len(current))
            for index, byte in enumerate(current[: len(pristine)]):
                if byte == INT3 and pristine[index] != INT3:
                    memory.seek(page + index)
                    memory.write(pristine[index:index + 1])
                    restored += 1
    return restored

