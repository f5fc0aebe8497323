"""Where a running CPython keeps ``_PyRuntime``: found from ``/proc/PID/maps`` and the
``.dynsym`` of the executable or libpython mapped there (every build exports it, stripped
ones included), plus the interpreter's ``3.X`` version as its file names tell it.

This is what the frame reader (``mixdbg.pyframes``) needs to start, computed outside gdb
so that the same code serves stops (the session hands the addresses to gdb's helper),
``mixdbg doctor`` and the tests.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from mixdbg.elfsections import ElfFormatError, dynamic_symbols, first_load_bias, is_relocated
from mixdbg.errors import NotFoundError

_VERSION_IN_NAME = re.compile(r"python(3\.\d+)")


@dataclass(frozen=True)
class PythonRuntime:
    """Addresses in one process: ``_PyRuntime``, ``Py_Version`` (0 before 3.11), the
    object that holds them, and the ``3.X`` version its file names say (None if silent)."""

    runtime: int
    py_version: int
    path: str
    hint: str | None


@dataclass(frozen=True)
class _Mapping:
    start: int
    offset: int
    path: str


def _file_mappings(pid: int) -> list[_Mapping]:
    try:
        text = Path(f"/proc/{pid}/maps").read_text()
    except OSError as err:
        raise NotFoundError(f"cannot read the memory map of PID {pid}: {err.strerror}") from err
    found = []
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            found.append(_Mapping(int(fields[0].split("-")[0], 16), int(fields[2], 16), fields[5]))
    return found


def _symbols(path: str) -> tuple[dict[str, int], int, bool]:
    """``_PyRuntime``/``Py_Version`` values, the lowest PT_LOAD's vaddr - offset, and
    whether the file is relocated when loaded (a shared object or PIE executable)."""
    info = os.stat(path)
    return _file_symbols(path, info.st_dev, info.st_ino, info.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _file_symbols(path: str, device: int, inode: int, mtime: int) -> tuple[dict[str, int], int, bool]:
    """``_symbols`` of one version of a file (cached: every process of a session that runs
    the same interpreter, and every stop in one, shares it)."""
    with open(path, "rb") as handle:
        values = dynamic_symbols(handle, ("_PyRuntime", "Py_Version"))
        return values, first_load_bias(handle), is_relocated(handle)


def exports_runtime(path: str) -> bool:
    """Whether an executable or libpython exports ``_PyRuntime`` (what the frame reader
    starts from)."""
    try:
        return "_PyRuntime" in _symbols(path)[0]
    except (OSError, ElfFormatError):
        return False


def _root(pid: int, path: str) -> str:
    """The mapped file as this process can open it (through the target's root, for
    processes in a chroot or container)."""
    inside = f"/proc/{pid}/root{path}"
    return inside if os.path.exists(inside) else path


def find_runtime(pid: int) -> PythonRuntime:
    """Locate ``_PyRuntime`` in process ``pid``; ``NotFoundError`` if no mapped file of it
    exports one (not a CPython, or a static build without dynamic symbols)."""
    mappings = _file_mappings(pid)
    executable = mappings[0].path if mappings else ""
    paths = list(dict.fromkeys(m.path for m in mappings
                               if m.path == executable or Path(m.path).name.startswith("libpython")))
    for path in paths:
        try:
            values, first_vaddr, relocatable = _symbols(_root(pid, path))
        except (OSError, ElfFormatError):
            continue
        if "_PyRuntime" not in values:
            continue
        base = 0
        if relocatable:
            base = min(m.start - m.offset for m in mappings if m.path == path) - first_vaddr
        runtime = base + values["_PyRuntime"]
        py_version = base + values["Py_Version"] if "Py_Version" in values else 0
        return PythonRuntime(runtime, py_version, path, version_hint(pid))
    raise NotFoundError(f"PID {pid} maps no file that exports _PyRuntime (is it CPython?)")


def version_hint(pid: int) -> str | None:
    """The ``3.X`` version the executable's or libpython's file name says (``python3.10``,
    ``libpython3.10.so.1.0``): 3.10 records its version nowhere in memory."""
    names = [os.path.realpath(f"/proc/{pid}/exe")]
    try:
        names += [m.path for m in _file_mappings(pid) if "libpython" in m.path]
    except NotFoundError:
        pass
    for name in reversed(names):
        match = _VERSION_IN_NAME.search(Path(name).name)
        if match:
            return match.group(1)
    return None
