"""What gdb's tensor printers (``gdb_printers.py``) show: one printer class per kind of
PyTorch value, reading the debuggee's memory (never calling into it) with the layout of
its torch build (``Layouts``: handed over by mixdbg, or found in a plain gdb).

Runs inside gdb's embedded Python. Standard library and ``gdb`` only; Python
3.9-compatible (gdb's Python is not mixdbg's).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gdb  # type: ignore[import-untyped, import-not-found, unused-ignore]

from mixdbg.memory import BlockCache, MemoryReadError, read_i64, read_u64
from mixdbg.pytorch import layout as torch_layout
from mixdbg.pytorch import tensors
from mixdbg.pytorch.mapped import mapped_library

#: How many elements of a list are shown in its one line, and listed as children.
MAX_LIST = 64
MAX_CHILDREN = 1000
#: Marks a text child (see ``_text``).
_TEXT_MARK = "\x01\x1fmixdbg:"
#: ``c10::Scalar::Tag``: HAS_d, HAS_i, HAS_u, HAS_z, HAS_b, then symbolic ones.
_SCALAR_SYMBOLIC = (5, 6, 7)
#: ``c10::SymInt``: a heap pointer is encoded as ``(data & MASK) == IS_SYM``.
_SYM_MASK, _IS_SYM = 0b111 << 61, 0b101 << 61
#: gdb's C type of each dtype's element, for the typed ``data`` pointer.
_ELEMENT_TYPES = {"float32": "float", "float64": "double", "int64": "long", "int32": "int", "int16": "short",
                  "int8": "signed char", "uint8": "unsigned char", "bool": "bool", "float16": "unsigned short",
                  "bfloat16": "unsigned short", "uint16": "unsigned short", "uint32": "unsigned int",
                  "uint64": "unsigned long"}


def read_inferior(address: int, size: int) -> bytes:
    """``ReadMemory`` over gdb's view of the selected inferior (nothing to read: no bytes;
    gdb refuses a read of 0 bytes)."""
    if size == 0:
        return b""
    try:
        return bytes(gdb.selected_inferior().read_memory(address, size))
    except (gdb.MemoryError, gdb.error, OverflowError, ValueError) as err:
        raise MemoryReadError(f"cannot read {size} bytes at {address:#x}: {err}") from err


class Layouts:
    """The tensor layout the printers read with: the build's (from mixdbg, or found here
    in a plain gdb), with each process's ``libc10.so`` load address (looked up once per
    process and program: one that execs keeps its pid, not its addresses)."""

    def __init__(self) -> None:
        self.build: dict[str, Any] | None = None
        self.problem: str | None = None
        self.managed = False  # mixdbg hands the layout over: never run the probe inside gdb
        self._bases: dict[int, tuple[Path, int] | None] = {}

    def set(self, found: dict[str, Any] | None, problem: str | None) -> None:
        """mixdbg's layout (or why there is none)."""
        self.managed = True
        self.build, self.problem = found, problem

    def forget_bases(self, event: Any = None) -> None:
        """A process ended or ran another program: where its libc10.so is is looked up again
        (a process keeps a loaded library where it is; reading ``/proc/PID/maps`` of a torch
        process takes milliseconds)."""
        self._bases.clear()

    def current(self) -> dict[str, Any]:
        """The layout for the selected process; a ``TensorUnreadable`` saying why not."""
        pid = gdb.selected_inferior().pid
        if pid not in self._bases:
            self._bases[pid] = mapped_library(pid, "/libc10.so")
        loaded = self._bases[pid]
        if loaded is None:
            raise tensors.TensorUnreadable("torch (libc10.so) is not loaded in this process")
        if self.build is None and not self.managed and self.problem is None:
            self._discover(loaded[0], pid)
        if self.build is None:
            raise tensors.TensorUnreadable(self.problem or "the tensor layout of this torch build is not known yet")
        return {**self.build, "c10_base": loaded[1]}

    def _discover(self, library: Path, pid: int) -> None:
        """In a plain gdb: the layout from mixdbg's cache, or measured once by the probe
        run with the debuggee's own interpreter (a few seconds, then cached)."""
        gdb.write("mixdbg: reading the tensor layout of this torch build (measured once, then cached)\n")
        try:
            self.build = torch_layout.layout_for(library, os.path.realpath(f"/proc/{pid}/exe"))
        except torch_layout.LayoutUnknown as err:
            self.problem = err.message


LAYOUTS = Layouts()


def _text(text: str) -> Any:
    """A child that shows ``text`` as it is: gdb shows a Python string child as a quoted
    char array, expandable into characters; a marked one is printed by ``TextPrinter``."""
    return gdb.Value(_TEXT_MARK + text)


class TextPrinter:
    """A text child (see ``_text``): the text, unquoted, with no members."""

    def __init__(self, text: str) -> None:
        self.text = text

    def to_string(self) -> str:
        """The text."""
        return self.text


class TensorPrinter:
    """A tensor, from the address of its ``c10::TensorImpl`` (computed when first shown)."""

    def __init__(self, impl: Callable[[], int]) -> None:
        self._impl = impl
        self._tensor: dict[str, Any] | None = None
        self.undefined = False
        self.error: str | None = None  # why it is not shown

    def read(self) -> dict[str, Any] | None:
        """The tensor (``tensors.read_tensor``), or None: undefined, or ``error`` says why."""
        if self._tensor is None and self.error is None and not self.undefined:
            try:
                self._tensor = tensors.read_tensor(BlockCache(read_inferior), self._impl(), LAYOUTS.current())
            except tensors.TensorUndefined:
                self.undefined = True
            except tensors.TensorUnreadable as err:
                self.error = f"not decoded: {err}"
            except (MemoryReadError, gdb.error) as err:
                self.error = f"not decoded: memory unreadable: {err}"
        return self._tensor

    def to_string(self) -> str:
        """``tensor float32 [2, 3] cpu``, or why it cannot be shown."""
        tensor = self.read()
        if tensor is not None:
            return tensors.summary_line(tensor)
        return "tensor undefined" if self.undefined else f"tensor <{self.error}>"

    def children(self) -> Iterator[tuple[str, Any]]:
        """dtype, shape, strides, storage offset, device, data, values."""
        tensor = self.read()
        if tensor is None:
            return
        for name, text in tensors.fields(tensor):
            if name == "storage_offset":
                yield name, int(tensor[name])
            elif name == "data":
                element = gdb.lookup_type(_ELEMENT_TYPES.get(tensor["dtype"], "unsigned char"))
                yield name, gdb.Value(int(tensor[name], 16)).cast(element.pointer())
            else:
                yield name, _text(text)


class ListPrinter:
    """A list of ``length`` elements of ``element`` type at ``data`` (ArrayRef, SmallVector,
    std::vector): integers in one line, ``[2, 3]``; other elements as ``[N items]``."""

    def __init__(self, data: int, length: int, element: Any) -> None:
        self.data, self.length, self.element = data, length, element.strip_typedefs().unqualified()

    def integers(self) -> list[int | str] | None:
        """The first elements of a list of 64-bit integers (``symbolic`` for a symbolic
        SymInt); None for other elements."""
        name = self.element.tag or self.element.name or ""
        if not (self.element.code == gdb.TYPE_CODE_INT and self.element.sizeof == 8 or name == "c10::SymInt"):
            return None
        count = min(self.length, MAX_LIST)
        values = struct.unpack(f"<{count}q", read_inferior(self.data, 8 * count))
        return [symint(value) if name == "c10::SymInt" else value for value in values]

    def elements(self) -> Iterator[Any]:
        """The elements as gdb values (at most ``MAX_CHILDREN``)."""
        first = gdb.Value(self.data).cast(self.element.pointer())
        for index in range(min(self.length, MAX_CHILDREN)):
            yield (first + index).dereference()

    def to_string(self) -> str:
        """``[2, 3]`` for integers, ``[2 tensors]`` or ``[2 items]`` otherwise."""
        if not 0 <= self.length <= 1 << 32:
            return f"<not decoded: implausible length {self.length}>"
        try:
            integers = self.integers()
        except MemoryReadError as err:
            return f"<not decoded: {err}>"
        if integers is not None:
            return "[" + ", ".join(map(str, integers)) + (", ...]" if self.length > len(integers) else "]")
        kind = "tensors" if (self.element.tag or "") in ("at::Tensor", "at::TensorBase") else "items"
        return f"[{self.length} {kind}]"

    def children(self) -> Iterator[tuple[str, Any]]:
        """The elements, ``[0]``, ``[1]``..."""
        if 0 <= self.length <= 1 << 32:
            for index, element in enumerate(self.elements()):
                yield f"[{index}]", element

    def display_hint(self) -> str:
        """Shown as an array."""
        return "array"


class OptionalPrinter:
    """``std::optional<T>`` (``c10::optional``) of a PyTorch type: ``nullopt``, or the value
    as T's printer shows it."""

    def __init__(self, value: Any) -> None:
        payload = value["_M_payload"]
        self.value = payload["_M_payload"]["_M_value"] if bool(payload["_M_engaged"]) else None
        self.inner = gdb.default_visualizer(self.value) if self.value is not None else None

    def to_string(self) -> Any:
        """``nullopt`` or the value's own line."""
        return self.inner.to_string() if self.inner is not None else "nullopt"

    def children(self) -> Iterator[tuple[str, Any]]:
        """The value's members, if it has any."""
        if self.inner is not None and hasattr(self.inner, "children"):
            yield from self.inner.children()

    def display_hint(self) -> str | None:
        """The value's own hint."""
        hint = getattr(self.inner, "display_hint", None)
        return hint() if hint is not None else None


class ValuePrinter:
    """A value shown in one line, as Python prints what ``decode`` makes of the gdb value
    (a number, a bool, a name, None)."""

    def __init__(self, value: Any, decode: Callable[[Any], Any]) -> None:
        self.value, self.decode = value, decode

    def to_string(self) -> str:
        """The value as Python would print it."""
        try:
            decoded = self.decode(self.value)
        except (gdb.error, MemoryReadError) as err:
            return f"<not decoded: {err}>"
        return repr(decoded) if isinstance(decoded, (float, complex)) else str(decoded)


def symint(data: int) -> int | str:
    """A ``c10::SymInt``'s value, or ``symbolic`` when it encodes a pointer."""
    return "symbolic" if (data & ((1 << 64) - 1)) & _SYM_MASK == _IS_SYM else data


def scalar(value: Any) -> Any:
    """A ``c10::Scalar`` as Python holds it: a float, int, complex or bool."""
    tag = int(value["tag"])
    union = value["v"]
    if tag == 0:
        return float(union["d"])
    if tag in (1, 2):
        return int(union["i"] if tag == 1 else union["u"])
    if tag == 3:
        return complex(float(union["z"]["real_"]), float(union["z"]["imag_"]))
    if tag == 4:
        return bool(int(union["i"]) & 0xFF)
    return "symbolic" if tag in _SCALAR_SYMBOLIC else f"<Scalar tag {tag}>"


def device(value: Any) -> str:
    """A ``c10::Device`` as ``torch.device`` prints it."""
    return tensors.device_name(int(value["type_"]) & 0xFF, int(value["index_"]))


def scalar_type(value: Any) -> str:
    """A ``c10::ScalarType`` as a torch dtype name: ``float32``."""
    return tensors.dtype_name(_enumerator(value))


def _enumerator(value: Any) -> str:
    """The name of an enum value's enumerator (raw: ``str`` would ask the printers again)."""
    return str(value.format_string(raw=True)).rsplit("::", 1)[-1]


def _std_string(address: int) -> str:
    """A libstdc++ ``std::string`` at ``address`` (data pointer, then length)."""
    data, length = read_u64(read_inferior, address), read_i64(read_inferior, address + 8)
    if not 0 <= length <= 1 << 20:
        raise MemoryReadError(f"implausible string length {length}")
    return read_inferior(data, min(length, 200)).decode("utf-8", "replace")


#: c10::IValue tags shown from the payload alone.
_IVALUE_PAYLOADS: dict[str, Callable[[Any], Any]] = {
    "Double": lambda u: float(u["as_double"]), "Int": lambda u: int(u["as_int"]),
    "UInt": lambda u: int(u["as_uint"]), "Bool": lambda u: bool(u["as_bool"]), "None": lambda u: None,
    "Device": lambda u: tensors.device_name(int(u["as_device"]["type"]) & 0xFF, int(u["as_device"]["index"])),
    # ConstantString: an intrusive_ptr_target (vptr, refcounts), then its std::string
    "String": lambda u: repr(_std_string(int(u["as_int"]) + 16)),
}


def ivalue(value: Any) -> Any:
    """A ``c10::IValue``'s printer: a tensor's, or its number, string or kind."""
    tag = _enumerator(value["tag"])
    payload = value["payload"]
    if tag == "Tensor":
        return TensorPrinter(lambda: int(payload["u"]["as_int"]) & ((1 << 64) - 1))
    if tag in _IVALUE_PAYLOADS:
        return ValuePrinter(payload["u"], _IVALUE_PAYLOADS[tag])
    return ValuePrinter(value, lambda v: f"IValue({tag})")


def tensor_value(value: Any) -> TensorPrinter:
    """``at::Tensor``/``at::TensorBase``: one ``intrusive_ptr<TensorImpl>``, a pointer."""
    def impl() -> int:
        if value.address is not None:
            return read_u64(read_inferior, int(value.address))
        return int(value["impl_"]["target_"])
    return TensorPrinter(impl)


def array_ref(value: Any) -> ListPrinter:
    """``c10::ArrayRef<T>``: its ``Data`` pointer and ``Length``."""
    return ListPrinter(int(value["Data"]), int(value["Length"]), value.type.strip_typedefs().template_argument(0))


def small_vector(value: Any) -> ListPrinter:
    """``c10::SmallVector<T, N>``: its ``BeginX`` pointer and ``Size``."""
    return ListPrinter(int(value["BeginX"]), int(value["Size"]), value.type.strip_typedefs().template_argument(0))


def vector(value: Any) -> ListPrinter:
    """``std::vector<T>`` (libstdc++): from its start to its finish."""
    impl = value["_M_impl"]
    start, finish = int(impl["_M_start"]), int(impl["_M_finish"])
    element = value.type.strip_typedefs().template_argument(0)
    return ListPrinter(start, (finish - start) // max(element.sizeof, 1), element)


def marked_text(value: Any, kind: Any) -> TextPrinter | None:
    """The printer of a text child (see ``_text``), or None: not one."""
    element = kind.target()
    if element.sizeof != 1 or kind.sizeof <= len(_TEXT_MARK) or element.code != gdb.TYPE_CODE_INT:
        return None
    try:
        if value.string(length=len(_TEXT_MARK)) != _TEXT_MARK:
            return None
        return TextPrinter(value.string()[len(_TEXT_MARK):])
    except (gdb.error, UnicodeDecodeError):
        return None
