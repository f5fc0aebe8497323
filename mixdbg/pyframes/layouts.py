"""Where CPython keeps what the frame reader needs: one ``Layout`` per minor version.

3.10, 3.11 and 3.12 publish nothing, so their offsets are tables of our own, measured
with gdb (``gdb.Type.fields()`` bit positions) on the DWARF of pyenv's 3.10.13, 3.11.7
and 3.12.1 ``libpython3.X.so.1.0`` (x86-64, default build; the same numbers were read
by py-spy's bindgen structs and pystack's ``cpython/*.h``). They also hold for Debian's
stripped 3.11.2. 3.13 and 3.14 publish ``_Py_DebugOffsets`` at the start of
``_PyRuntime`` (``Include/internal/pycore_runtime.h`` 3.13,
``pycore_debug_offsets.h`` 3.14), and offsets changed inside the 3.14.x series, so for
them every struct offset is taken from that table and nothing is hard-coded but the
position of each field inside the table, which is fixed per minor.

Standard library only, Python 3.9 syntax: gdb's own Python imports this.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

DEBUG_COOKIE = b"xdebugpy"


@dataclass(frozen=True)
class Layout:
    """Offsets (bytes) of the fields the reader uses, and the version's frame rules.

    ``ts_frame`` is where a thread state points at its innermost frame: ``frame`` (a
    ``PyFrameObject``) on 3.10, ``cframe`` (whose ``current_frame`` is the frame) on
    3.11/3.12, ``current_frame`` from 3.13. ``code_names`` is ``co_varnames`` on 3.10 and
    ``co_localsplusnames`` later."""

    minor: int
    method: str  # "known layout" | "debug offsets"
    interpreters_head: int
    interp_next: int
    interp_threads_head: int
    ts_next: int
    ts_interp: int
    ts_frame: int
    ts_thread_id: int
    ts_native_thread_id: int | None
    ts_root_cframe: int | None
    ts_cframe: int | None
    cframe_current_frame: int
    cframe_previous: int
    frame_size: int
    frame_previous: int
    frame_code: int
    frame_instr: int
    frame_owner: int | None
    frame_is_entry: int | None
    frame_localsplus: int
    code_size: int
    code_filename: int
    code_name: int
    code_firstlineno: int
    code_linetable: int
    code_adaptive: int | None
    code_nlocals: int | None
    code_names: int
    code_kinds: int | None
    ob_type: int = 8
    tp_name: int = 24
    var_size: int = 16
    tuple_items: int = 24
    dict_used: int = 16
    set_used: int = 24
    float_value: int = 16
    long_tag: int = 16
    long_digits: int = 24
    bytes_data: int = 32
    cell_ref: int = 16
    unicode_length: int = 16
    unicode_state: int = 32
    unicode_ascii_size: int = 48
    unicode_compact_size: int = 72
    #: Bits of a tagged ``_PyStackRef`` (3.14) to clear before dereferencing.
    tag_bits: int = 0
    # Dicts and instances (the same in every default build 3.10-3.14: measured with gdb on
    # pyenv's DWARF for 3.10-3.13, with offsetof() against forky's 3.14 headers).
    tp_flags: int = 168
    tp_basicsize: int = 32
    tp_dictoffset: int = 288
    dict_keys: int = 32
    dict_values: int = 40

    @property
    def frame_locals(self) -> int:
        """Where an interpreter frame points at its locals mapping (a module's: its globals)."""
        return {10: 56, 11: 24}.get(self.minor, 40)

    @property
    def keys_nentries(self) -> int:
        """``dk_nentries``: how many entries a dict's keys object has used."""
        return 32 if self.minor == 10 else 24

    @property
    def keys_indices(self) -> int:
        """Where a dict's keys object's index table starts (3.10 has ``dk_lookup`` before it)."""
        return 40 if self.minor == 10 else 32

    @property
    def heap_cached_keys(self) -> int:
        """``PyHeapTypeObject.ht_cached_keys``: the keys an instance's values are stored by."""
        return 872 if self.minor <= 11 else 880

    @property
    def values_items(self) -> int:
        """Where ``PyDictValues``' pointers start (3.13 put capacity, size, embedded, valid
        bytes before them)."""
        return 8 if self.minor >= 13 else 0

    @property
    def compact_long(self) -> bool:
        """3.12 and later encode an int's sign and size in ``lv_tag``, not ``ob_size``."""
        return self.minor >= 12

    def is_shim(self, owner: int) -> bool:
        """An entry frame an eval loop keeps on its C stack (3.12+: owner ``CSTACK``,
        3.14: also ``INTERPRETER``, both >= 3); never a frame of the user's code."""
        return self.minor >= 12 and owner >= 3


_COMMON_311 = {
    "method": "known layout", "interpreters_head": 40, "interp_next": 0, "ts_next": 8, "ts_interp": 16,
    "frame_size": 80, "frame_localsplus": 72, "code_filename": 112, "code_name": 120, "code_linetable": 136,
    "code_nlocals": None, "code_names": 96, "code_kinds": 104,
}

#: 3.10.13: ``PyFrameObject`` chain, one eval loop per Python frame, ``CFrame`` on the C stack.
PY310 = Layout(
    minor=10, method="known layout", interpreters_head=32, interp_next=0, interp_threads_head=8,
    ts_next=8, ts_interp=16, ts_frame=24, ts_thread_id=176, ts_native_thread_id=None, ts_root_cframe=264, ts_cframe=48,
    cframe_current_frame=0, cframe_previous=8, frame_size=112, frame_previous=24, frame_code=32,
    frame_instr=96, frame_owner=None, frame_is_entry=None, frame_localsplus=352, code_size=128,
    code_filename=104, code_name=112, code_firstlineno=40, code_linetable=120, code_adaptive=None,
    code_nlocals=28, code_names=72, code_kinds=None,
)

#: 3.11.7 (and Debian 3.11.2): ``_PyCFrame`` chain, ``is_entry`` ends each eval loop's run.
PY311 = Layout(
    minor=11, interp_threads_head=16, ts_frame=56, ts_thread_id=152, ts_native_thread_id=160,
    ts_root_cframe=336, ts_cframe=56, cframe_current_frame=8, cframe_previous=16, frame_previous=48, frame_code=32,
    frame_instr=56, frame_owner=69, frame_is_entry=68, code_size=192, code_firstlineno=72,
    code_adaptive=184, **_COMMON_311,  # type: ignore[arg-type]
)

#: 3.12.1: as 3.11, but each eval loop pushes a shim frame (owner 3) on its C stack.
PY312 = Layout(
    minor=12, interp_threads_head=72, ts_frame=56, ts_thread_id=136, ts_native_thread_id=144,
    ts_root_cframe=272, ts_cframe=56, cframe_current_frame=0, cframe_previous=8, frame_previous=8, frame_code=0,
    frame_instr=56, frame_owner=70, frame_is_entry=None, code_size=200, code_firstlineno=68,
    code_adaptive=192, unicode_ascii_size=40, unicode_compact_size=56, **_COMMON_311,  # type: ignore[arg-type]
)

KNOWN = {10: PY310, 11: PY311, 12: PY312}

#: Word index (uint64) in ``_Py_DebugOffsets`` of each field we use, per minor (3.13: the
#: installed 3.13.0 ``pycore_runtime.h``; 3.14: ``pycore_debug_offsets.h`` of v3.14.0).
_DEBUG_FIELDS = {
    13: {"free_threaded": 2, "interpreters_head": 5, "interp_next": 8, "interp_threads_head": 9,
         "ts_next": 21, "ts_interp": 22, "ts_frame": 23, "ts_thread_id": 24, "ts_native_thread_id": 25,
         "frame_size": 28, "frame_previous": 29, "frame_code": 30, "frame_instr": 31, "frame_localsplus": 32,
         "frame_owner": 33, "code_size": 34, "code_filename": 35, "code_name": 36, "code_linetable": 38,
         "code_firstlineno": 39, "code_names": 41, "code_kinds": 42, "code_adaptive": 43, "ob_type": 45,
         "tp_name": 47, "tuple_items": 51, "float_value": 60, "long_tag": 62, "long_digits": 63,
         "bytes_data": 66, "unicode_state": 68, "unicode_length": 69, "unicode_ascii_size": 70, "words": 73},
    14: {"free_threaded": 2, "interpreters_head": 5, "interp_next": 8, "interp_threads_head": 9,
         "ts_next": 24, "ts_interp": 25, "ts_frame": 26, "ts_thread_id": 27, "ts_native_thread_id": 28,
         "frame_size": 31, "frame_previous": 32, "frame_code": 33, "frame_instr": 34, "frame_localsplus": 35,
         "frame_owner": 36, "code_size": 39, "code_filename": 40, "code_name": 41, "code_linetable": 43,
         "code_firstlineno": 44, "code_names": 46, "code_kinds": 47, "code_adaptive": 48, "ob_type": 51,
         "tp_name": 53, "tuple_items": 57, "set_used": 63, "float_value": 70, "long_tag": 72,
         "long_digits": 73, "bytes_data": 76, "unicode_state": 78, "unicode_length": 79, "unicode_ascii_size": 80,
         "words": 95},
}
_NOT_OFFSETS = ("free_threaded", "words")
#: No sane offset inside one of these structs is this large (pystack clamps the same way).
_MAX_OFFSET = 1 << 20


class LayoutError(Exception):
    """The interpreter's layout is unknown or its published offsets are not believable."""


def debug_offsets_size(minor: int) -> int:
    """How many bytes of ``_Py_DebugOffsets`` to read for ``minor`` (0 if it has none)."""
    fields = _DEBUG_FIELDS.get(minor)
    return 8 * fields["words"] if fields else 0


def from_debug_offsets(minor: int, table: bytes) -> Layout:
    """The layout of a 3.13/3.14 interpreter from its own ``_Py_DebugOffsets`` bytes."""
    fields = _DEBUG_FIELDS.get(minor)
    if fields is None or len(table) < 8 * fields["words"]:
        raise LayoutError(f"no debug-offsets layout for 3.{minor}")
    words = struct.unpack_from(f"<{fields['words']}Q", table)
    if table[:8] != DEBUG_COOKIE:
        raise LayoutError("the debug offsets have no 'xdebugpy' cookie")
    if words[fields["free_threaded"]]:
        raise LayoutError("free-threaded builds are not supported")
    values = {name: words[index] for name, index in fields.items() if name not in _NOT_OFFSETS}
    insane = sorted(name for name, value in values.items() if value >= _MAX_OFFSET)
    if insane:
        raise LayoutError(f"implausible debug offsets ({', '.join(insane)})")
    ascii_size = values["unicode_ascii_size"]
    base = replace(
        PY312, minor=minor, method="debug offsets", ts_root_cframe=None, ts_cframe=None, frame_is_entry=None,
        # PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (not published before 3.15).
        unicode_compact_size=ascii_size + 16, tag_bits=3 if minor >= 14 else 0,
    )
    layout = replace(base, **values)
    if layout.frame_size > 4096 or layout.frame_previous + 8 > layout.frame_size:
        raise LayoutError("implausible debug offsets (interpreter frame)")
    return layout
