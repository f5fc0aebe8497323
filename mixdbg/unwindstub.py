"""A library's stack, unwound and named without gdb reading its symbols.

gdb's read of a library's symbols is, for a library with a large symbol table and no
DWARF, almost all minimal symbols: ``libtorch_cpu.so`` has 530,000 of them (76 MB of names)
and gdb's read costs 4-5 s of CPU, about half of the whole seed run under ``gdb -batch``.
A stop's stack needs only two things from the library: its unwind tables (``.eh_frame``,
17 MB) and the names of the few functions its frames are in.

So, for such a library (``heavy``), ``write_stub`` writes a small ELF file holding just the
library's unwind tables at their addresses (``.text`` as a placeholder without bytes): gdb
unwinds through the library from it after ``add-symbol-file STUB -o BASE`` (0.2 s instead
of 4-5 s, the same frames), and ``SymbolTable`` names each frame from the library's ELF
symbol table (the function whose range holds the address; gdb's ``demangle`` turns it into
the name gdb shows). gdb's helper adds the stub for one stack walk and removes it at once
(``mixdbg.gdb_helper``): gdb misnames frames when a library it reads later overlaps a stub.
Only the standard library: this runs in gdb's Python too.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

from mixdbg.elfsections import ElfFormatError, Section, first_load_bias, read_sections

#: A library is heavy when its symbol table is at least this large and it has no DWARF:
#: gdb's read of it is then mostly minimal symbols (libtorch_cpu: 12 MB of .symtab).
HEAVY_SYMTAB_BYTES = 4 << 20
#: How many stubs are kept (the newest).
KEPT_STUBS = 8
#: The sections a stub keeps: the code's range (no bytes), and the unwind tables.
_CODE, _UNWIND = ".text", (".eh_frame", ".eh_frame_hdr")
_DWARF = (".debug_info", ".zdebug_info", ".gnu_debuglink")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_STT_FUNC, _STT_GNU_IFUNC = 2, 10
SHT_NOBITS, SHT_STRTAB = 8, 3


def heavy(path: str) -> bool:
    """Whether gdb's read of the library at ``path`` would be mostly its minimal symbols:
    a large ``.symtab``, no DWARF and no link to a separate debug file, and unwind tables a
    stub can carry (a 64-bit little-endian file)."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(6)
            sections = read_sections(stream)
    except (OSError, ElfFormatError):
        return False
    symtab = sections.get(".symtab")
    return (head[4:6] == b"\x02\x01" and symtab is not None and symtab.size >= HEAVY_SYMTAB_BYTES
            and not any(name in sections for name in _DWARF)
            and all(name in sections and sections[name].has_bytes for name in _UNWIND) and _CODE in sections)


def write_stub(path: str, target: Path) -> Path:
    """The stub of the library at ``path`` (see the module doc) as ``target``, written once."""
    if target.exists():
        return target
    with open(path, "rb") as stream:
        ident = stream.read(64)
        sections = read_sections(stream)
        kept = {name: sections[name] for name in (_CODE, *_UNWIND)}
        contents = {}
        for name in _UNWIND:
            stream.seek(kept[name].offset)
            contents[name] = stream.read(kept[name].size)
    names = b"\0" + b"".join(name.encode() + b"\0" for name in (*kept, ".shstrtab"))
    body = bytearray(64)
    offsets = {}
    for name, data in contents.items():
        body += b"\0" * (-len(body) % 8)
        offsets[name] = len(body)
        body += data
    names_at = len(body)
    body += names
    body += b"\0" * (-len(body) % 8)
    table_at = len(body)
    body += bytes(_SECTION.size)  # the null section
    for name, section in kept.items():
        body += _SECTION.pack(names.index(name.encode() + b"\0"), SHT_NOBITS if name == _CODE else section.type,
                              section.flags, section.address, offsets.get(name, 64), section.size, 0, 0,
                              section.align, 0)
    body += _SECTION.pack(names.index(b".shstrtab\0"), SHT_STRTAB, 0, 0, names_at, len(names), 0, 0, 1, 0)
    # ELF header: the library's ident; type, machine, version, entry, phoff, shoff, flags,
    # ehsize, phentsize, phnum, shentsize, shnum, shstrndx
    body[0:64] = ident[:16] + struct.pack("<HHIQQQIHHHHHH", 3, struct.unpack_from("<H", ident, 18)[0], 1, 0, 0,
                                          table_at, 0, 64, 0, 0, _SECTION.size, len(kept) + 2, len(kept) + 1)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.part")
    partial.write_bytes(body)
    os.replace(partial, target)
    _prune(target.parent)
    return target


def _prune(directory: Path) -> None:
    """Keep the ``KEPT_STUBS`` newest stubs in ``directory`` (one per library build: 21 MB
    for libtorch_cpu's)."""
    stubs = sorted(directory.glob("*.unwind"), key=lambda stub: stub.stat().st_mtime_ns, reverse=True)
    for old in stubs[KEPT_STUBS:]:
        old.unlink(missing_ok=True)


def code_address(stub: Path | str) -> int:
    """The address of a stub's code placeholder (before the library's load base): an
    address inside it names the stub to ``remove-symbol-file -a``."""
    with open(stub, "rb") as stream:
        return read_sections(stream)[_CODE].address


def load_base(pid: int, path: str) -> int | None:
    """The address process ``pid``'s symbol values of the library at ``path`` are relative to
    (where its first byte is mapped, less its first segment's bias); None if not mapped."""
    real = os.path.realpath(path)
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
        with open(real, "rb") as stream:
            bias = first_load_bias(stream)
    except (OSError, ElfFormatError):
        return None
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5] == real and int(fields[2], 16) == 0:
            return int(fields[0].split("-")[0], 16) - bias
    return None


class SymbolTable:
    """The functions of a library's ELF symbol table, by address (read once, on first use):
    which function holds an address, as gdb's minimal symbols would say."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._starts: array[int] | None = None
        self._ends = array("Q")
        self._names = array("Q")
        self._strings: Section | None = None

    def _load(self) -> None:
        with open(self._path, "rb") as stream:
            sections = read_sections(stream)
            symtab, self._strings = sections[".symtab"], sections[".strtab"]
            stream.seek(symtab.offset)
            raw = stream.read(symtab.size)
        functions = sorted((value, value + size, name) for name, info, _, index, value, size
                           in _SYMBOL.iter_unpack(raw[:len(raw) - len(raw) % _SYMBOL.size])
                           if (info & 0xF) in (_STT_FUNC, _STT_GNU_IFUNC) and index != 0 and value)
        self._starts = array("Q", (start for start, _, _ in functions))
        self._ends = array("Q", (end for _, end, _ in functions))
        self._names = array("Q", (name for _, _, name in functions))

    def function_at(self, offset: int) -> tuple[str, int] | None:
        """The (mangled) name and start of the function whose range holds ``offset`` (an
        address less the library's load base), or None."""
        if self._starts is None:
            self._load()
        assert self._starts is not None and self._strings is not None
        last = bisect.bisect_right(self._starts, offset) - 1
        if last < 0:
            return None
        index = last
        # functions may share a start (aliases, sizes of 0 for hand-written code)
        while index >= 0 and self._starts[index] == self._starts[last]:
            if offset < self._ends[index] or offset == self._starts[index]:
                break
            index -= 1
        else:
            return None
        with open(self._path, "rb") as stream:
            stream.seek(self._strings.offset + self._names[index])
            name = stream.read(4096).split(b"\0", 1)[0]
        return (name.decode("utf-8", "replace"), self._starts[index]) if name else None
