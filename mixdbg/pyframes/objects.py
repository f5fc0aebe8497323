"""Reading Python objects out of a stopped interpreter's memory: strings, bytes, type
names, dicts and instances' attributes, and the one-line value summaries ``locals`` prints.

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
#: How many of an instance's attributes its summary shows.
FIELDS_SHOWN = 6
#: More entries than any dict of locals or attributes has; more means a torn read.
MAX_ENTRIES = 1 << 20
#: Type flags (``Include/object.h``): the instance's dict pointer precedes the object
#: (3.11+), its values follow it inline (3.13+).
MANAGED_DICT, INLINE_VALUES = 1 << 4, 1 << 2


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

    # --- dicts and instances ------------------------------------------------------------

    def dict_entries(self, address: int, limit: int) -> list[tuple[int, int]]:
        """``(key, value)`` object addresses of the dict at ``address``, in entry order, at
        most ``limit`` of them (a split dict's values are its own, its keys shared)."""
        lay = self.layout
        head = self.read(address, lay.dict_values + 8)
        values = word(head, lay.dict_values)
        return self._entries(word(head, lay.dict_keys), values + lay.values_items if values else 0, limit)

    def _entries(self, keys: int, values: int, limit: int) -> list[tuple[int, int]]:
        """The live entries of a keys object; their values from ``values`` (an array of
        pointers) when the table is split, else from the entries themselves."""
        lay = self.layout
        head = self.read(keys, lay.keys_indices)
        count = signed(head, lay.keys_nentries)
        if not 0 <= count <= MAX_ENTRIES:
            raise ObjectError(f"not a dict's keys at {keys:#x}")
        if lay.minor == 10:  # 3.10: dk_size indices of 1, 2, 4 or 8 bytes, then 24-byte entries
            size = signed(head, 8)
            width = 1 if size <= 0xFF else 2 if size <= 0xFFFF else 4 if size <= 0xFFFFFFFF else 8
            start, entry, key_at = keys + lay.keys_indices + size * width, 24, 8
        else:  # 2**dk_log2_index_bytes bytes of indices; general entries (hash, key, value), else (key, value)
            start = keys + lay.keys_indices + (1 << head[9])
            entry, key_at = (24, 8) if head[10] == 0 else (16, 0)
        if values and lay.minor >= 13:  # the values' own insertion order, after them
            return self._ordered_values(start, entry, key_at, values, limit)
        found: list[tuple[int, int]] = []
        for first in range(0, count, 256):  # a few entries at a time: the first ones are what is shown
            chunk = min(256, count - first)
            data = self.read(start + first * entry, chunk * entry)
            split = self.read(values + 8 * first, 8 * chunk) if values else b""
            for index in range(chunk):
                key = word(data, index * entry + key_at)
                value = word(split, 8 * index) if values else word(data, index * entry + key_at + 8)
                if key and value:
                    found.append((key & ~lay.tag_bits, value & ~lay.tag_bits))
                    if len(found) >= limit:
                        return found
        return found

    def _ordered_values(self, start: int, entry: int, key_at: int, values: int, limit: int) -> list[tuple[int, int]]:
        """3.13+: split values in their insertion order (``PyDictValues``: capacity and size
        bytes before the pointers, one byte per value giving its entry after them)."""
        capacity, size = self.read(values - self.layout.values_items, 2)
        order = self.read(values + 8 * capacity, size) if size else b""
        found: list[tuple[int, int]] = []
        for index in order[:limit]:
            key = word(self.read(start + index * entry + key_at, 8), 0)
            value = word(self.read(values + 8 * index, 8), 0)
            if key and value:
                found.append((key, value))
        return found

    def instance_entries(self, address: int, limit: int) -> list[tuple[int, int]] | None:
        """The attributes of an instance with a ``__dict__`` (or, 3.11+, values the
        interpreter keeps without one), at most ``limit``; None when its type has none."""
        lay = self.layout
        type_address = word(self.read(address + lay.ob_type, 8), 0)
        head = self.read(type_address, lay.tp_dictoffset + 8)
        flags = word(head, lay.tp_flags)
        if lay.minor >= 11 and flags & MANAGED_DICT:
            found_dict, values = self._managed(address, flags, signed(head, lay.tp_basicsize))
            if found_dict:
                return self.dict_entries(found_dict, limit)
            if not values:
                return []
            keys = word(self.read(type_address + lay.heap_cached_keys, 8), 0)
            return self._entries(keys, values + lay.values_items, limit) if keys else []
        offset = signed(head, lay.tp_dictoffset)
        if offset <= 0:
            return None
        found_dict = word(self.read(address + offset, 8), 0)
        return self.dict_entries(found_dict, limit) if found_dict else []

    def _managed(self, address: int, flags: int, basic_size: int) -> tuple[int, int]:
        """An instance's dict and values pointers (either may be 0) where the interpreter
        manages them: 3.11 keeps both before the object, 3.12 one tagged pointer (the values
        stored as their address - 1: the low bit says values), 3.13+ the dict before it and
        the values inline after it (with a valid flag)."""
        minor = self.layout.minor
        if minor == 11:
            values, found_dict = struct.unpack("<QQ", self.read(address - 32, 16))
            return int(found_dict), int(values)
        tagged = word(self.read(address - 24, 8), 0)
        if minor == 12:
            return (0, tagged + 1) if tagged & 1 else (tagged, 0)
        if tagged or not flags & INLINE_VALUES:
            return tagged, 0
        inline = address + basic_size
        return (0, inline) if self.read(inline + 3, 1)[0] else (0, 0)

    # --- summaries ----------------------------------------------------------------------

    def summary(self, address: int, nested: bool = False) -> str:
        """A short text for a local's value: the value for small built-ins, the type and
        length for containers, a registered summary, a module's name, an instance's type
        and first attributes (``nested``: an attribute's own value, its type only), else
        the type name."""
        if not address:
            return "<unset>"
        try:
            name = self.type_name(address)
            return self._summary(name, address, nested)
        except (MemoryReadError, ObjectError, struct.error, UnicodeDecodeError) as err:
            return f"<unreadable: {err}>"

    def _summary(self, name: str, address: int, nested: bool = False) -> str:
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
        if name == "module":
            return self._module(address)
        if name == "type":  # a class: its own name
            return f"<class {c_string(self.read, word(self.read(address + lay.tp_name, 8), 0))!r}>"
        return name if nested else self._instance(name, address)

    def _module(self, address: int) -> str:
        """``<module 'name'>``, its ``__name__`` read from its dict."""
        for key, value in self.dict_entries(word(self.read(address + 16, 8), 0), 64):  # PyModuleObject.md_dict
            if self.type_name(key) == "str" and self.string(key) == "__name__" and self.type_name(value) == "str":
                return f"<module {self.string(value)!r}>"
        return "module"

    def _instance(self, name: str, address: int) -> str:
        """``Type(a=1, b='x', ...)`` for an instance with attributes, else the type name."""
        entries = self.instance_entries(address, FIELDS_SHOWN + 1)
        if not entries:
            return name
        shown = [f"{self.string(key)}={self.summary(value, nested=True)}" for key, value in entries[:FIELDS_SHOWN]
                 if self.type_name(key) == "str"]
        return f"{name}({', '.join(shown)}{', ...' if len(entries) > FIELDS_SHOWN else ''})"
