"""An ELF file's headers, section table and a few dynamic symbols, read with ``struct``:
what mixdbg asks of every library a program loads (``mixdbg.solibs``, while gdb waits at
the load) and of the interpreter at each attach (``mixdbg.pyruntime``). pyelftools answers
the same questions in 4-10 ms per library and 70 ms for an interpreter's dynamic symbols
(its parser builds an object per header and per symbol); ``import torch`` loads 40
libraries under gdb.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

#: e_ident[EI_CLASS] and e_ident[EI_DATA] values.
_CLASS_64, _CLASS_32, _LITTLE, _BIG = 2, 1, 1, 2
SHT_NOBITS = 8
ET_DYN = 3
PT_LOAD = 1


class ElfFormatError(ValueError):
    """The file is not an ELF file this reader understands."""


@dataclass(frozen=True)
class Section:
    """Where one section's bytes are in the file."""

    type: int  # sh_type (SHT_NOBITS: no bytes in the file)
    offset: int
    size: int


@dataclass(frozen=True)
class _Header:
    order: str  # struct byte order: "<" or ">"
    wide: bool  # ELF64
    type: int  # e_type
    phoff: int
    phentsize: int
    phnum: int
    shoff: int
    shentsize: int
    shnum: int
    shstrndx: int


def _header(stream: BinaryIO) -> _Header:
    stream.seek(0)
    ident = stream.read(64)
    if len(ident) < 52 or ident[:4] != b"\x7fELF" or ident[4] not in (_CLASS_32, _CLASS_64) \
            or ident[5] not in (_LITTLE, _BIG):
        raise ElfFormatError("not an ELF file")
    order, wide = ("<" if ident[5] == _LITTLE else ">"), ident[4] == _CLASS_64
    if wide and len(ident) < 64:
        raise ElfFormatError("truncated ELF header")
    e_type, = struct.unpack_from(order + "H", ident, 16)
    if wide:
        phoff, shoff = struct.unpack_from(order + "QQ", ident, 0x20)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from(order + "HHHHH", ident, 0x36)
    else:
        phoff, shoff = struct.unpack_from(order + "II", ident, 0x1C)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from(order + "HHHHH", ident, 0x2A)
    return _Header(order, wide, e_type, phoff, phentsize, phnum, shoff, shentsize, shnum, shstrndx)


def _table(stream: BinaryIO, offset: int, entry_size: int, count: int, entry: struct.Struct) -> list[tuple[int, ...]]:
    if offset == 0 or count == 0 or entry_size < entry.size:
        return []
    stream.seek(offset)
    data = stream.read(entry_size * count)
    if len(data) < entry_size * count:
        raise ElfFormatError("truncated header table")
    return [entry.unpack_from(data, index * entry_size) for index in range(count)]


def read_sections(stream: BinaryIO) -> dict[str, Section]:
    """Every named section of the ELF file open in ``stream`` (binary, seekable), by name."""
    header = _header(stream)
    # name type flags addr offset size (the rest unread)
    entry = struct.Struct(header.order + ("IIQQQQ" if header.wide else "IIIIII"))
    raw = _table(stream, header.shoff, header.shentsize, header.shnum, entry)
    if header.shstrndx >= len(raw):
        return {}
    stream.seek(raw[header.shstrndx][4])
    names = stream.read(raw[header.shstrndx][5])
    sections = {}
    for name_offset, kind, _flags, _addr, offset, size in raw:
        end = names.find(b"\0", name_offset)
        if 0 < name_offset < len(names) and end > name_offset:
            sections[names[name_offset:end].decode("ascii", "replace")] = Section(kind, offset, size)
    return sections


def is_relocated(stream: BinaryIO) -> bool:
    """Whether the file is placed at a base address when loaded (a shared object or a PIE)."""
    return _header(stream).type == ET_DYN


def first_load_bias(stream: BinaryIO) -> int:
    """The lowest ``p_vaddr - p_offset`` of its PT_LOAD segments (0 without any): with where
    the file's first byte is mapped, it gives the base its symbol values are relative to."""
    header = _header(stream)
    # 64-bit: type flags offset vaddr; 32-bit: type offset vaddr
    entry = struct.Struct(header.order + ("IIQQ" if header.wide else "III"))
    loads = [(fields[-1] - fields[-2]) for fields in _table(stream, header.phoff, header.phentsize,
                                                                header.phnum, entry) if fields[0] == PT_LOAD]
    return min(loads) if loads else 0


def dynamic_symbols(stream: BinaryIO, names: Iterable[str]) -> dict[str, int]:
    """The values of the defined dynamic symbols (``.dynsym``) among ``names``."""
    header = _header(stream)
    sections = read_sections(stream)
    table, strings = sections.get(".dynsym"), sections.get(".dynstr")
    if table is None or strings is None:
        return {}
    stream.seek(strings.offset)
    text = stream.read(strings.size)
    wanted: dict[int, str] = {}  # every place the name ends a string: linkers share suffixes
    for name in names:
        key = name.encode() + b"\0"
        start = text.find(key)
        while start >= 0:
            wanted[start] = name
            start = text.find(key, start + 1)
    if not wanted:
        return {}
    # name, value, shndx in the field orders of Elf64_Sym and Elf32_Sym
    symbol = struct.Struct(header.order + ("IBBHQQ" if header.wide else "IIIBBH"))
    stream.seek(table.offset)
    data = stream.read(table.size)
    data = data[:len(data) - len(data) % symbol.size]  # a truncated file: the whole entries
    found = {}
    for fields in symbol.iter_unpack(data):
        name_offset, value, section = (fields[0], fields[4], fields[3]) if header.wide else fields[:2] + (fields[5],)
        if name_offset in wanted and section != 0:
            found[wanted[name_offset]] = value
    return found


#: The note type of a GNU build id (``NT_GNU_BUILD_ID``) and its owner's name.
_NT_GNU_BUILD_ID = 3
_GNU = b"GNU\0"


def build_id(stream: BinaryIO) -> str | None:
    """The GNU build id (hex) of the ELF file open in ``stream``, from its
    ``.note.gnu.build-id`` section; None when it has none."""
    header = _header(stream)
    note = read_sections(stream).get(".note.gnu.build-id")
    if note is None or note.type == SHT_NOBITS:
        return None
    stream.seek(note.offset)
    data = stream.read(note.size)
    offset = 0
    while offset + 12 <= len(data):
        name_size, desc_size, kind = struct.unpack_from(header.order + "III", data, offset)
        name_at = offset + 12
        desc_at = name_at + (name_size + 3) // 4 * 4
        if kind == _NT_GNU_BUILD_ID and data[name_at:name_at + name_size] == _GNU:
            return data[desc_at:desc_at + desc_size].hex()
        offset = desc_at + (desc_size + 3) // 4 * 4
    return None


#: ``DT_NEEDED``: a library the file needs (the value is an offset in ``.dynstr``).
_DT_NEEDED = 1


def needed_libraries(stream: BinaryIO) -> list[str]:
    """The libraries the ELF file open in ``stream`` needs (its ``DT_NEEDED`` entries)."""
    header = _header(stream)
    sections = read_sections(stream)
    dynamic, strings = sections.get(".dynamic"), sections.get(".dynstr")
    if dynamic is None or strings is None or dynamic.type == SHT_NOBITS:
        return []
    stream.seek(strings.offset)
    text = stream.read(strings.size)
    stream.seek(dynamic.offset)
    data = stream.read(dynamic.size)
    entry = struct.Struct(header.order + ("qQ" if header.wide else "iI"))
    needed = []
    for tag, value in entry.iter_unpack(data[:len(data) - len(data) % entry.size]):
        if tag == 0:  # DT_NULL ends the table
            break
        if tag == _DT_NEEDED and value < len(text):
            needed.append(text[value:text.find(b"\0", value)].decode("utf-8", "replace"))
    return needed
