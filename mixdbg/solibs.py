"""Which shared libraries gdb reads symbols for: only those that can hold a breakpoint (or,
read by gdb's helper at a stop, appear in a stack being shown).

gdb reads every library's symbols as it loads (``auto-solib-add on``), and after each read
it re-resolves every breakpoint by name in every library. Both costs add up in a program
that loads hundreds of libraries, as ``import torch`` does: reading ``libtorch_cpu.so``
takes 2.3 s; gdb 18.1 re-resolving the 42 kernel names of ``op:aten::add`` at each later
load took ``import torch`` from 10 s to 53-71 s (measured, ``gdb -batch``); with later
libraries left unread, 8-10 s. So the session keeps ``auto-solib-add off`` and stops at
each load (``stop-on-solib-events``); at that stop ``wanted`` picks the new libraries a
breakpoint could be in, from their ELF string tables (a name's last component, e.g.
``randn`` for ``at::native::randn``, must occur there; ``FILE:LINE`` needs DWARF), and
only those are read. A library that is read re-resolves the breakpoints, as before.
"""

from __future__ import annotations

import logging
import mmap
import os
import re
from collections.abc import Iterable
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from mixdbg.breakpoints import BreakSpec
from mixdbg.gdbmi import SLOW_COMMAND_TIMEOUT, GdbCommandError, GdbMi
from mixdbg.gdbtext import library_regex

log = logging.getLogger(__name__)

#: ELF sections whose bytes hold symbol names.
_NAME_SECTIONS = (".dynstr", ".strtab")
#: Sections whose presence means FILE:LINE breakpoints may resolve in the library.
_LINE_SECTIONS = (".debug_line", ".gnu_debuglink", ".gnu_debugaltlink")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def name_key(spec: BreakSpec) -> bytes | None:
    """The bytes a library's symbol names must contain to define ``spec``'s function: the
    last identifier of its name (``randn`` for ``at::native::randn(long)``); None when the
    spec is not a plain function name (a line, an address, an operator)."""
    if spec.is_line or spec.is_op or spec.location.startswith("*"):
        return None
    name = spec.location.split("(", 1)[0].removesuffix("@plt")
    identifiers = _IDENTIFIER.findall(name.rsplit("::", 1)[-1])
    return identifiers[-1].encode() if identifiers else None


class LibraryFacts:
    """What a library's ELF file says, read once per file (by device, inode and mtime)."""

    def __init__(self) -> None:
        self._names: dict[tuple[int, int, int], bytes] = {}
        self._lines: dict[tuple[int, int, int], bool] = {}

    def defines(self, path: str, key: bytes) -> bool:
        """Whether ``key`` occurs in the library's symbol name tables (unreadable: True,
        so that gdb decides)."""
        identity = _identity(path)
        if identity is None:
            return True
        if identity not in self._names:
            self._names[identity] = _name_bytes(path)
        names = self._names[identity]
        return not names or key in names

    def has_lines(self, path: str) -> bool:
        """Whether the library has line tables (or points at separate debug info)."""
        identity = _identity(path)
        if identity is None:
            return True
        if identity not in self._lines:
            self._lines[identity] = _has_sections(path, _LINE_SECTIONS)
        return self._lines[identity]


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino, status.st_mtime_ns


def _name_bytes(path: str) -> bytes:
    """The library's symbol name tables, concatenated (empty if it cannot be read)."""
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            elf = ELFFile(handle)
            chunks = []
            for name in _NAME_SECTIONS:
                section = elf.get_section_by_name(name)
                if section is not None and section["sh_type"] != "SHT_NOBITS":
                    start = section["sh_offset"]
                    chunks.append(data[start:start + section["sh_size"]])
            return b"\0".join(chunks)
    except (OSError, ValueError, ELFError) as err:
        log.info("symbol names of %s: %s", path, err)
        return b""


def _has_sections(path: str, names: Iterable[str]) -> bool:
    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            return any(elf.get_section_by_name(name) is not None for name in names)
    except (OSError, ValueError, ELFError) as err:
        log.info("sections of %s: %s", path, err)
        return True


def added_libraries(payload: dict[str, Any]) -> list[str]:
    """The libraries a ``solib-event`` stop reports loaded (gdb gives paths, or tuples
    with a ``target-name``)."""
    paths = []
    for item in payload.get("added") or []:
        path = item.get("target-name") if isinstance(item, dict) else item
        if isinstance(path, str) and path:
            paths.append(path)
    return paths


def wanted(facts: LibraryFacts, path: str, specs: Iterable[BreakSpec], kernel_library: str | None) -> bool:
    """Whether library ``path`` can hold one of ``specs`` (``kernel_library``: the file name
    of the library operator breakpoints bind in, if any exist)."""
    if kernel_library is not None and os.path.basename(path) == kernel_library:
        return True
    for spec in specs:
        key = name_key(spec)
        if key is not None and facts.defines(path, key):
            return True
        if spec.is_line and facts.has_lines(path):
            return True
        if key is None and not spec.is_line and not spec.is_op:
            return True  # an address or other location: let gdb look everywhere
    return False


class SymbolReader:
    """Reads the symbols of the libraries a session's breakpoints can be in, as they load."""

    def __init__(self, gdb: GdbMi) -> None:
        self._gdb = gdb
        self._facts = LibraryFacts()
        self._forked = False  # auto-solib-add is on for a fork child's creation

    def configure(self) -> None:
        """From now on gdb reads no library's symbols by itself and stops at each load."""
        self._gdb.command("-gdb-set auto-solib-add off")
        self._gdb.command("-gdb-set stop-on-solib-events 1")

    def on_load(self, added: Iterable[str], specs: list[BreakSpec], kernel_library: str | None) -> None:
        """At a library-load stop: read the symbols of the new libraries ``wanted`` picks."""
        if self._forked:
            self._gdb.command("-gdb-set auto-solib-add off")
            self._forked = False
        for path in added:
            if wanted(self._facts, path, specs, kernel_library):
                self.read(path)

    def on_fork(self) -> None:
        """At a fork stop (``catch fork``, set while children are followed): gdb gives a fork
        child only the main program's symbols, and reads its libraries' as it creates the
        child on the next resume, under ``auto-solib-add on`` only (vfork children share the
        parent's). So it is on for that resume, and off again at the next library load."""
        self._gdb.command("-gdb-set auto-solib-add on")
        self._forked = True

    def read(self, path: str) -> None:
        """Read the symbols of loaded library ``path`` in the selected process (a console
        command, not gdb's Python: only then does MI report the breakpoints it resolves)."""
        try:
            self._gdb.console(f"sharedlibrary {library_regex(path)}", SLOW_COMMAND_TIMEOUT)
        except GdbCommandError as err:
            log.info("reading the symbols of %s: %s", path, err.gdb_message)

    def read_unread(self, specs: list[BreakSpec], kernel_library: str | None) -> None:
        """A breakpoint added later: read the loaded libraries it can be in that gdb has
        not read yet."""
        try:
            listed = self._gdb.command("-file-list-shared-libraries").get("shared-libraries", [])
        except GdbCommandError as err:
            log.info("listing libraries: %s", err.gdb_message)
            return
        for library in listed:
            path = str(library.get("target-name", ""))
            if path and library.get("symbols-loaded") == "0" and wanted(self._facts, path, specs, kernel_library):
                self.read(path)
