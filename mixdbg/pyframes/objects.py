"""Reading Python objects out of a stopped interpreter's memory: strings, bytes, type
names, and the one-line value summaries ``locals`` prints.

Strings in code objects are compact (``PyUnicode_New`` or interned), so only compact
strings are decoded; anything else is refused rather than guessed. The ``state`` bit
field (``Include/cpython/unicodeobject.h``, default builds 3.10-3.14) is
``interned:2, kind:3, compact:1, ascii:1``. Standard library only.
"""

from __future__ import annotations

import struct
from typing import Callable, Optional

from mixdbg.memory import MemoryReadError, ReadMemory
from mixdbg.pyframes.layouts import Layout

#: ``formatter(read, address) -> summary or None`` for objects of one type name.
Summary = Callable[[ReadMemory, int], Optional[str]]

#: Summaries for types the reader does not know itself, by ``tp_name`` (e.g. ``"Tensor"``).
SUMMARIES: dict[str, Summary] = {}

#: Longest name or file name accepted from a code object; longer means a torn read.
MAX_NAME = 4096
#: How much of a str or bytes value ``locals`` shows.
SHOWN = 60


class ObjectError(Exception):
    """The memory at an address is not the object it should be."""


def register_summary(type_name: str, summary: Summary) -> None:
    """Let ``locals`` summarise objects whose type's ``tp_name`` is ``type_name``
    (e.g. a tensor reader registers ``"Tensor"``); it wins over the generic type name."""
    SUMMARIES[type_name] = summary


def word(data: bytes, offset: int) -> int:
    """The unsigned 64-bit word at ``offset`` of ``data``."""
    return int(struct.unpack_from("<Q", data, offset)[0])


def signed(data: bytes, offset: int) -> int:
    """The signed 64-bit word at ``offset`` of ``data``."""
    return int(struct.unpack_from("<q", data, offset)[0])


def int32(data: bytes, offset: int) -> int:
    """The signed 32-bit int at ``offset`` of ``data``."""
    return int(struct.unpack_from("<i", data, offset)[0])


def c_string(read: ReadMemory, address: int, limit: int = 256) -> str:
    """A NUL-terminated ASCII string (a type's ``tp_name``), read in small pieces so a
    string near the end of a mapping does not fail the read."""
    data = b""
    while len(data) < limit:
        chunk = read(address + len(data), 32)
        end = chunk.find(b"\0")
        if end >= 0:
            return (data + chunk[:end]).decode("ascii", "replace")
        data += chunk
    raise ObjectError(f"no string end within {limit} bytes at {address:#x}")


class Objects:
    """Decodes objects of one interpreter; caches type names (types do not move)."""

    def __init__(self, read: ReadMemory, layout: Layout) -> None:
        self.read = read
        self.layout = layout
        self._type_names: dict[int, str] = {}

    def type_name(self, address: int) -> str:
        """``tp_name`` of the object's type."""
        if not address or address % 8:
            raise ObjectError(f"not an object address: {address:#x}")
        type_address = word(self.read(address + self.layout.ob_type, 8), 0)
        name = self._type_names.get(type_address)
        if name is None:
            if not type_address or type_address % 8:
                raise ObjectError(f"object {address:#x} has no type")
            name = c_string(self.read, word(self.read(type_address + self.layout.tp_name, 8), 0))
            self._type_names[type_address] = name
        return name

    def string(self, address: int, limit: int = MAX_NAME, truncate: bool = False) -> str:
        """A compact ``str`` object's text; a longer one is refused, or with ``truncate``
        cut to ``limit`` characters."""
        lay = self.layout
        head = self.read(address, lay.unicode_compact_size)
        length = signed(head, lay.unicode_length)
        state = struct.unpack_from("<I", head, lay.unicode_state)[0]
        kind, compact, is_ascii = (state >> 2) & 7, (state >> 5) & 1, (state >> 6) & 1
        if not compact or kind not in (1, 2, 4) or length < 0 or (length > limit and not truncate):
            raise ObjectError(f"not a compact str at {address:#x}")
        shown = min(length, limit)
        if is_ascii:
            return self.read(address + lay.unicode_ascii_size, shown).decode("ascii", "replace") if shown else ""
        data = self.read(address + lay.unicode_compact_size, shown * kind) if shown else b""
        return data.decode({1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind], "replace")

    def bytes_value(self, address: int, limit: int) -> bytes:
        """A ``bytes`` object's content, at most ``limit`` bytes."""
        size = signed(self.read(address + self.layout.var_size, 8), 0)
        if size < 0 or size > 1 << 31:
            raise ObjectError(f"not a bytes object at {address:#x}")
        count = min(size, limit)
        return self.read(address + self.layout.bytes_data, count) if count else b""

    def size(self, address: int, offset: int) -> int:
        """A length field (``ob_size``, ``ma_used``, ``used``) of a container."""
        return signed(self.read(address + offset, 8), 0)

    def integer(self, address: int) -> int | None:
        """An ``int``'s value if it has at most 3 digits (90 bits), else None."""
        lay = self.layout
        tag = signed(self.read(address + lay.long_tag, 8), 0)
        if lay.compact_long:  # lv_tag: digit count << 3 | sign (0 +, 1 zero, 2 -)
            count, sign = tag >> 3, 1 - (tag & 3)
        else:  # ob_size: digit count with the number's sign
            count, sign = abs(tag), (tag > 0) - (tag < 0)
        if count > 3:
            return None
        digits = struct.unpack(f"<{count}I", self.read(address + lay.long_digits, 4 * count)) if count else ()
        return sign * sum(int(digit) << (30 * index) for index, digit in enumerate(digits))

    def summary(self, address: int) -> str:
        """A short text for a local's value: the value for small built-ins, the type and
        length for containers, a registered summary, else the type name."""
        if not address:
            return "<unset>"
        try:
            name = self.type_name(address)
            return self._summary(name, address)
        except (MemoryReadError, ObjectError, struct.error, UnicodeDecodeError) as err:
            return f"<unreadable: {err}>"

    def _summary(self, name: str, address: int) -> str:
        lay = self.layout
        plugin = SUMMARIES.get(name)
        if plugin is not None:
            text = plugin(self.read, address)
            if text is not None:
                return text
        if name == "NoneType":
            return "None"
        if name in ("int", "bool"):
            value = self.integer(address)
            if name == "bool":
                return str(bool(value))
            return "int (large)" if value is None else str(value)
        if name == "float":
            return repr(struct.unpack("<d", self.read(address + lay.float_value, 8))[0])
        if name == "str":
            text = self.string(address, SHOWN + 1, truncate=True)
            return repr(text[:SHOWN]) + ("..." if len(text) > SHOWN else "")
        if name == "bytes":
            data = self.bytes_value(address, SHOWN + 1)
            return repr(data[:SHOWN]) + ("..." if len(data) > SHOWN else "")
        lengths = {"tuple": lay.var_size, "list": lay.var_size, "dict": lay.dict_used,
                   "set": lay.set_used, "frozenset": lay.set_used}
        if name in lengths:
            return f"{name} (len {self.size(address, lengths[name])})"
        return name
