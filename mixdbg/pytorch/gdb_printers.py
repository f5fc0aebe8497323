"""gdb pretty-printers for PyTorch's C++ values, read from memory only (no call into the
debuggee): wherever gdb shows a value whose type its debug info names (a user's operator
built with ``-g``, a ``DEBUG=1`` PyTorch), ``at::Tensor`` reads ``tensor float32 [2, 3]
cpu`` and expands to its dtype, shape, strides, storage offset, device, ``data`` (the
address of its first element) and first values in logical order.

Printed: ``at::Tensor``, ``at::TensorBase``, ``c10::TensorImpl *``, ``at::Tensor *``,
``c10::intrusive_ptr<c10::TensorImpl, ...>``; ``c10::ArrayRef`` (``IntArrayRef``,
``SymIntArrayRef``, ``TensorList``), ``c10::SmallVector``, ``std::vector<at::Tensor>`` (where
libstdc++'s own printers are not loaded); ``std::optional``/``c10::optional`` of these;
``c10::Scalar``, ``c10::Device``, ``c10::ScalarType``, ``c10::SymInt``, ``c10::IValue``.

A ``c10::TensorImpl`` is incomplete in a user's extension (GCC emits the class where its
key function is defined, in ``libc10.so``, which has no DWARF), so tensors are read with
the layout ``layout_probe.py`` measured for the build (``tensors.read_tensor``, with its
checks: what fails them is one line saying why). mixdbg hands the layout to gdb
(``mixdbg-torch-layout``); in a plain gdb the printers find it themselves, in mixdbg's
cache or by running the probe once with the debuggee's own interpreter.

Use in a plain gdb: ``source /path/to/mixdbg/pytorch/gdb_printers.py`` (then ``print t``,
``info locals``); ``info pretty-printer`` lists them as ``mixdbg-torch``.

Standard library and ``gdb`` only; Python 3.9-compatible (gdb's Python is not mixdbg's).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gdb  # type: ignore[import-untyped, import-not-found, unused-ignore]
import gdb.printing  # type: ignore[import-untyped, import-not-found, unused-ignore]

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
if _PACKAGE_PARENT not in sys.path:
    sys.path.append(_PACKAGE_PARENT)
from mixdbg.memory import MemoryReadError, read_u64
from mixdbg.pytorch.gdb_values import (
    LAYOUTS,
    ListPrinter,
    OptionalPrinter,
    TensorPrinter,
    ValuePrinter,
    array_ref,
    device,
    ivalue,
    marked_text,
    read_inferior,
    scalar,
    scalar_type,
    small_vector,
    symint,
    tensor_value,
    vector,
)

#: Exact type names (tags) and the printer each gets.
_BY_NAME: dict[str, Callable[[Any], Any]] = {
    "at::Tensor": tensor_value,
    "at::TensorBase": tensor_value,
    "c10::Scalar": lambda v: ValuePrinter(v, scalar),
    "c10::Device": lambda v: ValuePrinter(v, device),
    "c10::ScalarType": lambda v: ValuePrinter(v, scalar_type),
    "c10::SymInt": lambda v: ValuePrinter(v, lambda s: symint(int(s["data_"]))),
    "c10::IValue": ivalue,
    "std::vector<at::Tensor, std::allocator<at::Tensor> >": vector,
}
#: Template names (up to their ``<``) and the printer each gets.
_BY_TEMPLATE: dict[str, Callable[[Any], Any]] = {
    "c10::intrusive_ptr<c10::TensorImpl": lambda v: TensorPrinter(lambda: int(v["target_"])),
    "c10::ArrayRef<": array_ref,
    "c10::SmallVector<": small_vector,
}
#: What ``std::optional`` wraps for ``OptionalPrinter`` to show it (else libstdc++'s printer does).
_OPTIONALS = ("std::optional<", "c10::optional<")
#: Pointer targets shown as the tensor they point at (or, for an at::Tensor, hold).
_TENSOR_POINTERS = {"c10::TensorImpl": False, "at::Tensor": True, "at::TensorBase": True}
_CACHE: dict[str, Callable[[Any], Any] | None] = {}


def _factory(name: str) -> Callable[[Any], Any] | None:
    """The printer factory for a struct, class or enum named ``name`` (cached by name)."""
    if name not in _CACHE:
        found = _BY_NAME.get(name)
        if found is None:
            found = next((make for prefix, make in _BY_TEMPLATE.items() if name.startswith(prefix)), None)
        if found is None and name.startswith(_OPTIONALS):
            inner = name[name.index("<") + 1:-1].strip()
            if _factory(inner) is not None:
                found = OptionalPrinter
        _CACHE[name] = found
    return _CACHE[name]


def _pointer_printer(value: Any, target: Any) -> TensorPrinter | None:
    holds = _TENSOR_POINTERS.get(target.tag or "")
    if holds is None or int(value) == 0:
        return None
    address = int(value)
    return TensorPrinter(lambda: read_u64(read_inferior, address) if holds else address)


def handles(kind: Any) -> bool:
    """Whether values of gdb type ``kind`` get a printer of ours (references followed)."""
    if kind.code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
        kind = kind.target()
    kind = kind.strip_typedefs().unqualified()
    if kind.code == gdb.TYPE_CODE_PTR:
        return (kind.target().strip_typedefs().unqualified().tag or "") in _TENSOR_POINTERS
    return kind.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_ENUM) and _factory(kind.tag or kind.name or "") is not None


def lookup(value: Any) -> Any:
    """The printer for ``value`` (references followed), or None: not a PyTorch value."""
    kind = value.type
    if kind.code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
        try:
            value = value.referenced_value()
        except gdb.error:
            return None
        kind = value.type
    kind = kind.strip_typedefs().unqualified()
    if kind.code == gdb.TYPE_CODE_PTR:
        target = kind.target().strip_typedefs().unqualified()
        return _pointer_printer(value, target) if target.code == gdb.TYPE_CODE_STRUCT else None
    if kind.code == gdb.TYPE_CODE_ARRAY:
        return marked_text(value, kind)
    if kind.code not in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_ENUM):
        return None
    make = _factory(kind.tag or kind.name or "")
    if make is None:
        return None
    try:
        return make(value)
    except gdb.error:  # a member this build does not have: gdb's own view instead
        return None


def to_json(value: Any) -> dict[str, Any]:
    """A value for mixdbg's events, as its printer reads it: ``{"tensor": {...}}``,
    ``{"tensors": [...], "length": N}``, ``{"value": ...}`` (numbers, lists of integers,
    names, None), or ``{"error": why}``; values without a printer as gdb shows them."""
    printer = lookup(value)
    try:
        if isinstance(printer, TensorPrinter):
            tensor = printer.read()
            if tensor is not None:
                return {"tensor": tensor}
            return {"value": "undefined tensor"} if printer.undefined else {"error": str(printer.error)}
        if isinstance(printer, ListPrinter):
            integers = printer.integers()
            if integers is not None:
                return {"value": integers}
            return {"tensors": [to_json(element) for element in printer.elements()], "length": printer.length}
        if isinstance(printer, OptionalPrinter):
            return to_json(printer.value) if printer.value is not None else {"value": None}
        if isinstance(printer, ValuePrinter):
            decoded = printer.decode(printer.value)
            return {"value": [decoded.real, decoded.imag] if isinstance(decoded, complex) else decoded}
        return {"value": _plain(value)}
    except (gdb.error, MemoryReadError) as err:
        return {"error": f"not decoded: {err}"}


def _plain(value: Any) -> Any:
    """A value no printer of ours shows: numbers as numbers, anything else as gdb prints it."""
    kind = value.type.strip_typedefs()
    if kind.code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
        return _plain(value.referenced_value())
    if kind.code == gdb.TYPE_CODE_BOOL:
        return bool(value)
    if kind.code in (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_CHAR):
        return int(value)
    if kind.code == gdb.TYPE_CODE_FLT:
        return float(value)
    return str(value)[:200]


class TorchPrettyPrinter(gdb.printing.PrettyPrinter):  # type: ignore[misc]
    """The printers as one entry of ``info pretty-printer`` (``mixdbg-torch``)."""

    def __init__(self) -> None:
        super().__init__("mixdbg-torch")

    def __call__(self, value: Any) -> Any:
        return lookup(value)


class MixdbgTorchLayout(gdb.Command):  # type: ignore[misc]
    """mixdbg-torch-layout REQUEST: the layout the printers read tensors with, from the JSON
    file REQUEST: ``{"layout": {...}}`` or ``{"error": why there is none}``."""

    def __init__(self) -> None:
        super().__init__("mixdbg-torch-layout", gdb.COMMAND_DATA)

    def invoke(self, argument: str, from_tty: bool) -> None:
        with open(argument.strip(), encoding="utf-8") as stream:
            request = json.load(stream)
        LAYOUTS.set(request.get("layout"), request.get("error"))


gdb.printing.register_pretty_printer(None, TorchPrettyPrinter(), replace=True)
gdb.events.exited.connect(LAYOUTS.forget_bases)
if hasattr(gdb.events, "executable_changed"):  # gdb 14 and later: an exec
    gdb.events.executable_changed.connect(LAYOUTS.forget_bases)
MixdbgTorchLayout()
