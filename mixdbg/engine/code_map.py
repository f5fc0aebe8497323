"""Where the debuggee's native code is: the lines of a source file gdb can break on, and
the libraries each followed process has loaded (whether gdb read their symbols, whether
they have DWARF). Asked by the front ends (DAP's ``breakpointLocations`` and ``modules``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from mixdbg.debuginfo import classify
from mixdbg.errors import MixdbgError
from mixdbg.gdbmi import GdbCommandError, GdbMi, mi_quote

log = logging.getLogger(__name__)


def breakable_lines(gdb: GdbMi, path: str, first: int, last: int) -> list[int]:
    """The lines from ``first`` to ``last`` of source ``path`` that have code gdb can break
    on (in the libraries gdb has read; none for a source no loaded library was built from)."""
    try:
        found = gdb.command(f"-symbol-list-lines {mi_quote(path)}").get("lines", [])
    except GdbCommandError as err:  # not in any library gdb has read (yet)
        log.debug("lines of %s: %s", path, err.gdb_message)
        return []
    return sorted({int(entry["line"]) for entry in found if first <= int(entry.get("line", 0)) <= last})


@dataclass(frozen=True)
class Library:
    """A shared library (or the executable) a process has mapped."""

    path: str
    #: Whether gdb has read its symbols (mixdbg has gdb read only what breakpoints need).
    symbols_read: bool
    #: Where it is mapped (its text), as gdb says, e.g. "0x7f12-0x7f34".
    address_range: str
    #: Its debug info in words: "DWARF", "DWARF in /usr/lib/debug/...", "no DWARF (symtab only)".
    debug_info: str


def libraries(gdb: GdbMi, inferior: str | None = None) -> list[Library]:
    """The libraries of one followed process (gdb's inferior ``i2``; the selected one if None)."""
    group = f" --thread-group {inferior}" if inferior else ""
    try:
        found = gdb.command("-file-list-shared-libraries" + group).get("shared-libraries", [])
    except GdbCommandError as err:
        log.info("the libraries of %s: %s", inferior or "the selected process", err.gdb_message)
        return []
    result = []
    for raw in found:
        path = str(raw.get("from") or raw.get("id") or "")
        ranges = raw.get("ranges") or []
        span = f"{ranges[0].get('from')}-{ranges[0].get('to')}" if ranges else ""
        result.append(Library(path, str(raw.get("symbols-loaded")) == "1", span, debug_info(path)))
    return result


def debug_info(path: str) -> str:
    """Where ``path``'s DWARF is, in words (see ``Library.debug_info``)."""
    try:
        stat = Path(path).stat()
    except OSError:
        return ""
    return _debug_info(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4096)
def _debug_info(path: str, mtime: int, size: int) -> str:
    """Cached per file version: a process maps hundreds of libraries, the same in every fork."""
    try:
        facts = classify(Path(path))
    except MixdbgError:  # not ELF (vdso, a deleted file)
        return ""
    if facts.dwarf_file is None:
        return f"no DWARF ({facts.level} only)"
    if facts.dwarf_file == facts.path:
        return "DWARF"
    return f"DWARF in {facts.dwarf_file}"


def sources(gdb: GdbMi) -> list[str]:
    """The source files of the libraries whose debug info gdb has read, that exist here."""
    try:
        found = gdb.command("-file-list-exec-source-files").get("files", [])
    except GdbCommandError as err:
        log.info("the sources gdb knows: %s", err.gdb_message)
        return []
    paths = dict.fromkeys(str(raw.get("fullname") or "") for raw in found)
    return [path for path in paths if path and Path(path).is_file()]
