"""Walking a stopped interpreter: its thread states, each thread's frame chain, the
runs of frames each eval loop executes, and a frame's locals.

Every struct is read in one piece and checked before it is trusted (a thread state
points back at its interpreter, a frame's code object has type ``code``, strings are
compact and short); chains are capped and cycle-checked, and a chain that cannot be
followed ends there with the reason kept, so a torn read gives fewer frames, never
invented ones. Standard library only.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from mixdbg.memory import MemoryReadError, ReadMemory
from mixdbg.pyframes import linetable
from mixdbg.pyframes.layouts import Layout
from mixdbg.pyframes.objects import ObjectError, Objects, int32, signed, word

MAX_INTERPRETERS = 64
MAX_THREADS = 4096
#: More frames than any recursion limit allows by default; the rest is cut, and said.
MAX_FRAMES = 4096
MAX_LINETABLE = 1 << 20
MAX_LOCALS = 1024
#: ``co_localspluskinds`` bits (``Include/internal/pycore_code.h`` 3.11-3.14).
KIND_HIDDEN, KIND_CELL, KIND_FREE = 0x10, 0x40, 0x80
#: ``_PyInterpreterFrame.owner`` of a running generator's frame.
OWNED_BY_GENERATOR = 1


@dataclass(frozen=True)
class PyFrame:
    """One Python frame: what runs, where, and the interpreter frame's address (for locals)."""

    function: str
    file: str
    line: int | None
    address: int


@dataclass(frozen=True)
class Run:
    """The Python frames one eval-loop invocation runs, innermost first, and the address
    of that invocation's entry marker on the C stack (None when it is not known)."""

    frames: tuple[PyFrame, ...]
    marker: int | None


@dataclass(frozen=True)
class PyThread:
    """A thread state: ids to match it with an OS thread, its runs innermost first, and
    why its chain ended early (None when it was read to the end)."""

    thread_id: int
    native_id: int | None
    runs: tuple[Run, ...]
    problem: str | None
    #: The thread state's address.
    state: int = 0

    @property
    def frames(self) -> tuple[PyFrame, ...]:
        """Every Python frame of the thread, innermost first."""
        return tuple(frame for run in self.runs for frame in run.frames)


@dataclass(frozen=True)
class Code:
    """What a code object tells about its frames."""

    name: str
    file: str
    first_line: int
    table: bytes
    units_start: int  # address of the first code unit (3.11+), else 0
    units: int  # number of code units (3.11+), else 0


class Truncated(Exception):
    """A chain could not be followed further (the message says why)."""


class Walker:
    """Reads thread states, frames and locals of one interpreter with one layout."""

    def __init__(self, read: ReadMemory, layout: Layout, runtime: int) -> None:
        self.read = read
        self.layout = layout
        self.runtime = runtime
        self.objects = Objects(read, layout)
        self._codes: dict[int, Code] = {}
        lay = layout
        self._ts_span = 8 + max(lay.ts_next, lay.ts_interp, lay.ts_frame, lay.ts_thread_id,
                                lay.ts_native_thread_id or 0)

    # --- threads ----------------------------------------------------------------------

    def threads(self) -> list[PyThread]:
        """Every thread state of every interpreter, with its frames."""
        lay = self.layout
        found: list[PyThread] = []
        interp = word(self.read(self.runtime + lay.interpreters_head, 8), 0)
        seen: set[int] = set()
        while interp and interp not in seen and len(seen) < MAX_INTERPRETERS:
            seen.add(interp)
            found += self._interpreter_threads(interp)
            interp = word(self.read(interp + lay.interp_next, 8), 0)
        return found

    def _interpreter_threads(self, interp: int) -> list[PyThread]:
        lay = self.layout
        threads: list[PyThread] = []
        tstate = word(self.read(interp + lay.interp_threads_head, 8), 0)
        seen: set[int] = set()
        while tstate and tstate not in seen and len(seen) < MAX_THREADS:
            seen.add(tstate)
            head = self.read(tstate, self._ts_span)
            if word(head, lay.ts_interp) != interp:
                raise ObjectError(f"thread state {tstate:#x} does not belong to its interpreter")
            threads.append(self._thread(tstate, head))
            tstate = word(head, lay.ts_next)
        return threads

    def _thread(self, tstate: int, head: bytes) -> PyThread:
        lay = self.layout
        native = word(head, lay.ts_native_thread_id) if lay.ts_native_thread_id is not None else None
        runs: list[Run] = []
        problem = None
        try:
            if lay.minor == 10:
                self._runs_310(tstate, word(head, lay.ts_frame), runs)
            elif lay.minor == 11:
                self._runs_311(tstate, word(head, lay.ts_frame), runs)
            else:
                start = word(head, lay.ts_frame)
                if lay.minor == 12:  # through the _PyCFrame
                    start = self._pointer(start + lay.cframe_current_frame) if start else 0
                self._runs_by_shim(start, runs)
        except Truncated as err:
            problem = str(err)
        return PyThread(thread_id=word(head, lay.ts_thread_id), native_id=native, runs=tuple(runs),
                        problem=problem, state=tstate)

    # --- frame chains -----------------------------------------------------------------

    def _pointer(self, address: int) -> int:
        """A pointer on a thread's chain; unreadable ends the chain, not the whole read."""
        try:
            return word(self.read(address, 8), 0)
        except MemoryReadError as err:
            raise Truncated(f"unreadable frame link: {err}") from err

    def _chain(self, start: int, next_offset: int, seen: set[int]) -> Iterator[tuple[int, bytes]]:
        """Yield ``(address, header)`` along a linked list of frames."""
        address = start
        while address:
            if address in seen:
                raise Truncated(f"a frame chain loops at {address:#x}")
            if len(seen) >= MAX_FRAMES:
                raise Truncated(f"more than {MAX_FRAMES} frames")
            if address % 8:
                raise Truncated(f"misaligned frame address {address:#x}")
            seen.add(address)
            try:
                header = self.read(address, self.layout.frame_size)
            except MemoryReadError as err:
                raise Truncated(f"unreadable frame: {err}") from err
            yield address, header
            address = word(header, next_offset)

    def _runs_310(self, tstate: int, first: int, runs: list[Run]) -> None:
        """3.10: one eval loop per frame; the k-th ``CFrame`` (C stack) is the k-th frame's."""
        lay = self.layout
        frames: list[PyFrame] = []
        for address, header in self._chain(first, lay.frame_previous, set()):
            frame = self._frame(address, header)
            if frame is not None:
                frames.append(frame)
        try:
            markers = self._cframes(tstate)
        except Truncated:
            markers = []
        if len(markers) != len(frames):
            markers = [None] * len(frames)  # type: ignore[list-item]
        runs.extend(Run((frame,), marker) for frame, marker in zip(frames, markers))

    def _cframes(self, tstate: int) -> list[int]:
        """The ``CFrame`` chain, innermost first, without the thread state's root one
        (whose ``previous`` is garbage on 3.10)."""
        lay = self.layout
        root = tstate + (lay.ts_root_cframe or 0)
        found: list[int] = []
        cframe = self._pointer(tstate + (lay.ts_cframe or 0))
        while cframe and cframe != root and len(found) < MAX_FRAMES:
            if cframe in found:
                raise Truncated(f"the CFrame chain loops at {cframe:#x}")
            found.append(cframe)
            cframe = self._pointer(cframe + lay.cframe_previous)
        return found

    def _runs_311(self, tstate: int, cframe: int, runs: list[Run]) -> None:
        """3.11: each ``_PyCFrame`` (C stack) runs its ``current_frame`` down to the
        first frame marked ``is_entry``."""
        lay = self.layout
        root = tstate + (lay.ts_root_cframe or 0)
        seen: set[int] = set()
        cframes = 0
        while cframe and cframe != root:
            cframes += 1
            if cframes > MAX_FRAMES:
                raise Truncated("the CFrame chain does not end")
            current = self._pointer(cframe + lay.cframe_current_frame)
            frames: list[PyFrame] = []
            for address, header in self._chain(current, lay.frame_previous, seen):
                frame = self._frame(address, header)
                if frame is not None:
                    frames.append(frame)
                if header[lay.frame_is_entry or 0]:
                    break
            runs.append(Run(tuple(frames), cframe))
            cframe = self._pointer(cframe + lay.cframe_previous)

    def _runs_by_shim(self, start: int, runs: list[Run]) -> None:
        """3.12+: a shim frame on the C stack ends the run of each eval loop."""
        lay = self.layout
        frames: list[PyFrame] = []
        for address, header in self._chain(start, lay.frame_previous, set()):
            if lay.is_shim(header[lay.frame_owner or 0]):
                runs.append(Run(tuple(frames), address))
                frames = []
                continue
            frame = self._frame(address, header)
            if frame is not None:
                frames.append(frame)
        if frames:
            runs.append(Run(tuple(frames), None))

    # --- one frame --------------------------------------------------------------------

    def _frame(self, address: int, header: bytes) -> PyFrame | None:
        """The frame at ``address``, or None for frames that are not the user's (3.14's
        base sentinel with no code; 3.13's ``__init__`` cleanup trampoline)."""
        lay = self.layout
        code_address = word(header, lay.frame_code) & ~lay.tag_bits
        if not code_address:
            return None
        try:
            code = self.code(code_address)
        except (MemoryReadError, ObjectError, struct.error) as err:
            raise Truncated(f"frame {address:#x}: {err}") from err
        line = self._line(code, header)
        owner = header[lay.frame_owner] if lay.frame_owner is not None else 0
        if line is None and owner == 0 and code.name == code.file == "__init__":
            return None
        return PyFrame(function=code.name, file=code.file, line=line, address=address)

    def _line(self, code: Code, header: bytes) -> int | None:
        lay = self.layout
        if lay.minor == 10:
            lasti = int32(header, lay.frame_instr)
            return code.first_line if lasti < 0 else linetable.line_310(code.table, code.first_line, 2 * lasti)
        unit = (signed(header, lay.frame_instr) - code.units_start) // 2
        if unit < 0:  # 3.11/3.12 before the first instruction ran
            return code.first_line
        if unit >= code.units:
            return None
        return linetable.line_location_table(code.table, code.first_line, unit)

    def code(self, address: int) -> Code:
        """A code object's names, first line and line table (cached: code does not move
        while the process is stopped)."""
        cached = self._codes.get(address)
        if cached is not None:
            return cached
        lay = self.layout
        if self.objects.type_name(address) != "code":
            raise ObjectError(f"{address:#x} is not a code object")
        head = self.read(address, lay.code_size)
        table = self.objects.bytes_value(word(head, lay.code_linetable), MAX_LINETABLE)
        if lay.code_adaptive is not None:
            start, units = address + lay.code_adaptive, signed(head, lay.var_size)
        else:
            start, units = 0, 0
        code = Code(name=self.objects.string(word(head, lay.code_name)),
                    file=self.objects.string(word(head, lay.code_filename)),
                    first_line=int32(head, lay.code_firstlineno), table=table, units_start=start, units=units)
        self._codes[address] = code
        return code

    # --- locals -----------------------------------------------------------------------

    def locals(self, frame: int) -> list[tuple[str, str]]:
        """``(name, summary)`` of a frame's local variables, in definition order; a module's
        frame (whose locals are its globals, as debugpy shows them) its globals but the
        ``__special__`` ones."""
        lay = self.layout
        header = self.read(frame, lay.frame_size)
        code_address = word(header, lay.frame_code) & ~lay.tag_bits
        if self.objects.type_name(code_address) != "code":
            raise ObjectError(f"{frame:#x} is not a Python frame")
        if self.code(code_address).name == "<module>":
            return self._module_globals(word(self.read(frame + lay.frame_locals, 8), 0))
        head = self.read(code_address, lay.code_size)
        names = self._tuple(word(head, lay.code_names))
        if lay.code_kinds is not None:
            kinds = self.objects.bytes_value(word(head, lay.code_kinds), len(names))
        else:  # 3.10: co_varnames are the first co_nlocals slots, all plain locals
            names = names[:int32(head, lay.code_nlocals or 0)]
            kinds = bytes(len(names))
        values = struct.unpack(f"<{len(names)}Q", self.read(frame + lay.frame_localsplus, 8 * len(names)))
        shown: list[tuple[str, str]] = []
        for name_address, kind, value in zip(names, kinds, values):
            if kind & KIND_HIDDEN:
                continue
            value &= ~lay.tag_bits
            if kind & (KIND_CELL | KIND_FREE) and value and self.objects.type_name(value) == "cell":
                value = word(self.read(value + lay.cell_ref, 8), 0)
            shown.append((self.objects.string(name_address), self.objects.summary(value)))
        return shown

    def _module_globals(self, mapping: int) -> list[tuple[str, str]]:
        """The names a module frame's locals mapping (its globals dict) binds."""
        if not mapping or self.objects.type_name(mapping) != "dict":
            return []
        shown = []
        for key, value in self.objects.dict_entries(mapping, MAX_LOCALS):
            if self.objects.type_name(key) != "str":
                continue
            name = self.objects.string(key)
            if not (name.startswith("__") and name.endswith("__")):
                shown.append((name, self.objects.summary(value)))
        return shown

    def _tuple(self, address: int) -> tuple[int, ...]:
        if self.objects.type_name(address) != "tuple":
            raise ObjectError(f"{address:#x} is not a tuple")
        size = self.objects.size(address, self.layout.var_size)
        if not 0 <= size <= MAX_LOCALS:
            raise ObjectError(f"implausible tuple size {size}")
        data = self.read(address + self.layout.tuple_items, 8 * size) if size else b""
        return struct.unpack(f"<{size}Q", data)
