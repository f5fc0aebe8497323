"""Facts about one process read from /proc: parent, name, arguments, environment, exit.

These are what tags a followed process (role, rank) and what tells a process gdb lost
track of from a live one. Nothing here needs the process stopped or traced: /proc files of
a process of our own uid are readable while it runs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PROC = Path("/proc")
#: ``python``, ``python3``, ``python3.11``, ``python3.13t``, ``python3.11d`` ...
_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?[a-z]*$")


def parent_pid(pid: int, proc_root: Path = PROC) -> int | None:
    """The process's parent pid, or None if it is gone."""
    fields = _stat_fields(pid, proc_root)
    return int(fields[1]) if fields else None


def comm(pid: int, proc_root: Path = PROC) -> str:
    """The process's name (its main thread's name: torch renames DataLoader workers)."""
    try:
        return (proc_root / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def environ_vars(pid: int, names: tuple[str, ...], proc_root: Path = PROC) -> dict[str, str]:
    """The variables ``names`` of the process's environment as it was at its last exec."""
    try:
        raw = (proc_root / str(pid) / "environ").read_bytes()
    except OSError:
        return {}
    found = {}
    for entry in raw.split(b"\0"):
        key, sep, value = entry.partition(b"=")
        name = key.decode(errors="replace")
        if sep and name in names:
            found[name] = value.decode(errors="replace")
    return found


def exit_status(pid: int, proc_root: Path = PROC) -> tuple[bool, int | None, str | None]:
    """(ended, code, signal number as text or None) for a process gdb may have lost track of:
    a zombie still carries its status (/proc/PID/stat field 52); a reaped one is gone, its
    status unknown."""
    fields = _stat_fields(pid, proc_root)
    if fields is None:
        return True, None, None
    if fields[0] not in ("Z", "X"):
        return False, None, None
    status = int(fields[49]) if len(fields) > 49 and fields[49].isdigit() else 0
    if status & 0x7F:
        return True, None, str(status & 0x7F)
    return True, (status >> 8) & 0xFF, None


def image_layout(pid: int, proc_root: Path = PROC) -> tuple[str, ...] | None:
    """Where the process's program image lies (/proc/PID/stat's startcode, endcode and
    startstack): the same until it execs (then new, unless address randomisation is off,
    when the new image lies where the old one did). None if the process is gone."""
    fields = _stat_fields(pid, proc_root)
    return tuple(fields[23:26]) if fields is not None and len(fields) > 25 else None


def _stat_fields(pid: int, proc_root: Path) -> list[str] | None:
    """The fields of /proc/PID/stat after the ``(comm)`` one: state first."""
    try:
        text = (proc_root / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def trace_stopped(pid: int, proc_root: Path = PROC) -> bool:
    """Whether some thread of the process sits in a ptrace stop (state ``t``)."""
    try:
        tasks = list((proc_root / str(pid) / "task").iterdir())
    except OSError:
        return False
    return any((fields := _stat_fields(int(task.name), proc_root / str(pid) / "task")) is not None
               and fields[0] == "t" for task in tasks if task.name.isdigit())


def is_python_executable(path: str) -> bool:
    """Whether a program is a CPython interpreter: named like one (``python3.11``), or an
    executable linked against libpython (an embedding launcher such as uwsgi is not: its
    name says so and it does not run ``python -c``/``-m`` code the way children do)."""
    candidates = {os.path.basename(path), os.path.basename(os.path.realpath(path))}
    if any(_PYTHON_NAME.match(name) for name in candidates):
        return True
    return any(needed.startswith("libpython") for needed in _needed_libraries(path))


def _needed_libraries(path: str) -> list[str]:
    # pyelftools here, not at the top: its import cost mixdbg dap's start 35 ms of CPU
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            return [str(getattr(tag, "needed", "")) for section in elf.iter_sections()
                    if isinstance(section, DynamicSection)
                    for tag in section.iter_tags() if tag.entry.d_tag == "DT_NEEDED"]
    except (OSError, ELFError):
        return []
