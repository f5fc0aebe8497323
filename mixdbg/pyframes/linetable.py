"""Line numbers from a code object's line table, as the interpreter computes them.

Two formats: 3.10's ``co_linetable`` of (byte delta, line delta) pairs
(``Objects/lnotab_notes.txt`` in 3.10) and the location table of 3.11 and later
(``Objects/locations.md``; ``InternalDocs/code_objects.md``). Both decoders matched
CPython's own ``co_lines()`` / ``co_positions()`` on every instruction offset of 120
stdlib modules per version (see the research notes). Standard library only.
"""

from __future__ import annotations

#: 3.10: a line delta of -128 marks a range with no line number.
_NO_LINE_310 = -128
#: 3.11+: location-entry codes.
_ONE_LINE_FIRST, _NO_COLUMNS, _LONG, _NONE = 10, 13, 14, 15


def line_310(table: bytes, first_line: int, offset: int) -> int | None:
    """The line of the instruction at byte ``offset`` (3.10 ``co_linetable``)."""
    line, address = first_line, 0
    for index in range(0, len(table) - 1, 2):
        end = address + table[index]
        delta = table[index + 1] - 256 if table[index + 1] > 127 else table[index + 1]
        range_line: int | None = None
        if delta != _NO_LINE_310:
            line += delta
            range_line = line
        if address <= offset < end:
            return range_line
        address = end
    return None


def _varint(table: bytes, index: int) -> tuple[int, int]:
    """An unsigned varint (6-bit chunks, least significant first, bit 6 = more)."""
    byte = table[index]
    value, shift, index = byte & 63, 0, index + 1
    while byte & 64:
        byte = table[index]
        shift += 6
        value |= (byte & 63) << shift
        index += 1
    return value, index


def _svarint(table: bytes, index: int) -> tuple[int, int]:
    value, index = _varint(table, index)
    return (-(value >> 1) if value & 1 else value >> 1), index


def line_location_table(table: bytes, first_line: int, unit: int) -> int | None:
    """The line of the instruction at code unit ``unit`` (3.11+ location table).

    None where the table says the instruction has no line, or if the table ends first
    (also in the middle of an entry: a torn read)."""
    try:
        return _location_line(table, first_line, unit)
    except IndexError:
        return None


def _location_line(table: bytes, first_line: int, unit: int) -> int | None:
    line, address, index = first_line, 0, 0
    while index < len(table):
        head = table[index]
        if not head & 0x80:
            return None  # not the start of an entry: a torn or foreign table
        code, length, index = (head >> 3) & 15, (head & 7) + 1, index + 1
        range_line: int | None = line
        if code == _NONE:
            range_line = None
        elif code in (_NO_COLUMNS, _LONG):
            delta, index = _svarint(table, index)
            line += delta
            range_line = line
            if code == _LONG:
                for _ in range(3):  # end line delta, column + 1, end column + 1
                    _, index = _varint(table, index)
        elif code >= _ONE_LINE_FIRST:
            line += code - _ONE_LINE_FIRST
            range_line = line
            index += 2
        else:
            index += 1
        if address <= unit < address + length:
            return range_line
        address += length
    return None
