"""An ELF file's headers, section table and a few dynamic symbols, read with ``struct``:
what mixdbg asks of every library a program loads (``mixdbg.solibs``, while gdb waits at
the load) and of the interpreter at each attach (``mixdbg.pyruntime``). pyelftools answers
the same questions in 4-10 ms per library and 70 ms for an interpreter's dynamic symbols
(its parser builds an object per header and per symbol); ``import torch`` loads 40
libraries under gdb.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

#: e_ident[EI_CLASS] and e_ident[EI_DATA] values.
_CLASS_64, _CLASS_32, _LITTLE, _BIG = 2, 1, 1, 2
SHT_NOBITS = 8
SHT_NOTE = 7
#: sh_flags: the section's bytes are compressed (an ``Elf*_Chdr`` header, then the stream).
SHF_COMPRESSED = 0x800
#: ch_type of a compressed section: zlib (the one Debian's debug files use) and zstd.
ELFCOMPRESS_ZLIB, ELFCOMPRESS_ZSTD = 1, 2
NT_GNU_BUILD_ID = 3
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
    flags: int = 0  # sh_flags (SHF_COMPRESSED: see ``compression``)
    address: int = 0  # sh_addr: where the section is in memory, before the load bias
    align: int = 0  # sh_addralign

    @property
    def has_bytes(self) -> bool:
        """Whether the file holds the section's bytes (a separate debug file keeps the code
        sections as NOBITS placeholders)."""
        return self.type != SHT_NOBITS and self.size > 0


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
    # name type flags addr offset size link info addralign entsize
    entry = struct.Struct(header.order + ("IIQQQQIIQQ" if header.wide else "IIIIIIIIII"))
    raw = _table(stream, header.shoff, header.shentsize, header.shnum, entry)
    if header.shstrndx >= len(raw):
        return {}
    stream.seek(raw[header.shstrndx][4])
    names = stream.read(raw[header.shstrndx][5])
    sections = {}
    for name_offset, kind, flags, address, offset, size, _link, _info, align, _entsize in raw:
        end = names.find(b"\0", name_offset)
        if 0 < name_offset < len(names) and end > name_offset:
            sections[names[name_offset:end].decode("ascii", "replace")] = Section(kind, offset, size, flags,
                                                                                  address, align)
    return sections


def section_bytes(stream: BinaryIO, section: Section, limit: int = 1 << 16) -> bytes:
    """The first ``limit`` bytes of a (small) section as the file holds them."""
    if not section.has_bytes:
        return b""
    stream.seek(section.offset)
    return stream.read(min(section.size, limit))


def build_id(stream: BinaryIO, sections: dict[str, Section] | None = None) -> str | None:
    """The file's GNU build id in hex (its ``.note.gnu.build-id``), or None (``sections``:
    the file's, when already read)."""
    note = (sections if sections is not None else read_sections(stream)).get(".note.gnu.build-id")
    if note is None:
        return None
    data = section_bytes(stream, note)
    order = "<" if _header(stream).order == "<" else ">"
    at = 0
    while at + 12 <= len(data):
        name_size, desc_size, kind = struct.unpack_from(order + "III", data, at)
        name_end = at + 12 + (name_size + 3) // 4 * 4
        if kind == NT_GNU_BUILD_ID and data[at + 12:at + 12 + name_size].rstrip(b"\0") == b"GNU":
            return data[name_end:name_end + desc_size].hex() or None
        at = name_end + (desc_size + 3) // 4 * 4
    return None


def link_name(stream: BinaryIO, sections: dict[str, Section], name: str) -> str | None:
    """The file name a ``.gnu_debuglink`` or ``.gnu_debugaltlink`` section holds, or None."""
    section = sections.get(name)
    if section is None:
        return None
    text = section_bytes(stream, section, 4096).split(b"\0", 1)[0]
    return text.decode("utf-8", "surrogateescape") or None


def compression(stream: BinaryIO, section: Section) -> tuple[int, int]:
    """(ch_type, header size) of a section with SHF_COMPRESSED; (0, 0) for one stored plainly."""
    if not section.flags & SHF_COMPRESSED:
        return 0, 0
    header = _header(stream)
    stream.seek(section.offset)
    kind, = struct.unpack(header.order + "I", stream.read(4))
    return kind, (24 if header.wide else 12)


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


#: How much of a compressed section is inflated at a time while searching it.
_CHUNK = 1 << 20


def section_contains(stream: BinaryIO, section: Section, key: bytes) -> bool | None:
    """Whether ``key`` occurs in the section's bytes, inflated first if it is compressed
    (zlib: ``SHF_COMPRESSED`` or the old ``.zdebug`` form); None when it cannot be told
    (zstd, a damaged stream)."""
    if not section.has_bytes or not key:
        return False
    kind, skip = compression(stream, section)
    if kind == 0 and section.size >= 12:
        stream.seek(section.offset)
        if stream.read(4) == b"ZLIB":  # .zdebug_*: "ZLIB", the size (8 bytes, big-endian), the stream
            kind, skip = ELFCOMPRESS_ZLIB, 12
    if kind == 0:
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(key, section.offset, section.offset + section.size) >= 0
    if kind != ELFCOMPRESS_ZLIB:
        return None
    return _inflated_contains(stream, section.offset + skip, section.size - skip, key)


def _inflated_contains(stream: BinaryIO, offset: int, size: int, key: bytes) -> bool | None:
    inflate = zlib.decompressobj()
    stream.seek(offset)
    tail = b""
    left = size
    try:
        while left > 0:
            chunk = stream.read(min(_CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            data = tail + inflate.decompress(chunk)
            if key in data:
                return True
            tail = data[-(len(key) - 1):] if len(key) > 1 else b""
        return key in tail + inflate.flush()
    except zlib.error:
        return None


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
