"""Read a tensor from a stopped process's memory: no function call, no DWARF.

``read_tensor`` follows ``c10::TensorImpl`` with the offsets ``layout_probe.py`` measured
for this torch build (see ``layout.py``). Every value shown has passed checks: the object's
vtable is ``c10::TensorImpl``'s (a plain dense tensor), ndim, sizes and strides are sane,
``numel`` is the product of the sizes, the storage's vtable is ``c10::StorageImpl``'s and
the storage holds every element the strides reach. What fails a check raises
``TensorUnreadable`` and is reported as "not decoded", never shown as data. Values are read
for CPU tensors only, in logical (row-major) order whatever the strides.

Standard library only, Python 3.9-compatible: gdb's embedded Python runs this too.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Union

from mixdbg.memory import MemoryReadError, ReadMemory, read_i64, read_u64

MAX_DIMS = 64
DEFAULT_VALUES = 16
#: Bytes read at once for the first values (else one read per value).
MAX_SPAN = 4096
CPU = 0
#: ``c10::DeviceType`` numbers, named as ``torch.device`` names them.
DEVICE_NAMES = {0: "cpu", 1: "cuda", 2: "mkldnn", 3: "opengl", 4: "opencl", 5: "ideep", 6: "hip", 7: "fpga",
                8: "maia", 9: "xla", 10: "vulkan", 11: "metal", 12: "xpu", 13: "mps", 14: "meta", 15: "hpu",
                16: "ve", 17: "lazy", 18: "ipu", 19: "mtia", 20: "privateuseone"}
#: ``c10::ScalarType`` enumerators whose torch dtype name is not their own lower-cased.
DTYPE_NAMES = {"Byte": "uint8", "Char": "int8", "Short": "int16", "Int": "int32", "Long": "int64",
               "Half": "float16", "Float": "float32", "Double": "float64", "ComplexHalf": "complex32",
               "ComplexFloat": "complex64", "ComplexDouble": "complex128", "UInt16": "uint16",
               "UInt32": "uint32", "UInt64": "uint64"}
#: The fields a tensor expands to, in order.
FIELDS = ("dtype", "shape", "strides", "storage_offset", "device", "data", "values")
#: struct formats of the element types whose values are shown.
_FORMATS = {"uint8": "<B", "int8": "<b", "int16": "<h", "int32": "<i", "int64": "<q", "uint16": "<H",
            "uint32": "<I", "uint64": "<Q", "float16": "<e", "float32": "<f", "float64": "<d", "bool": "<?",
            "complex64": "<2f", "complex128": "<2d"}

Value = Union[float, int, bool, str, list[float]]
Layout = dict[str, Any]


class TensorUnreadable(Exception):
    """The memory at an address is not a tensor this reader can show (the message says why)."""


class TensorUndefined(TensorUnreadable):
    """The tensor is undefined (``at::Tensor()``: it points at ``UndefinedTensorImpl``)."""


def _element(raw: bytes, dtype: str) -> Value:
    if dtype == "bfloat16":  # the upper half of a float32
        return _json_float(struct.unpack("<f", b"\0\0" + raw)[0])
    values = struct.unpack(_FORMATS[dtype], raw)
    if len(values) == 2:
        return [_json_float(v) for v in values]  # type: ignore[misc]
    value = values[0]
    return _json_float(value) if isinstance(value, float) else value


def _json_float(value: float) -> float | str:
    """A float JSON can carry: NaN and infinities as strings, like PyTorch prints them."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _logical_offsets(shape: list[int], strides: list[int], count: int) -> list[int]:
    """Element offsets (in elements) of the first ``count`` elements in row-major order."""
    offsets: list[int] = []
    index = [0] * len(shape)
    while len(offsets) < count:
        offsets.append(sum(i * s for i, s in zip(index, strides)))
        for dim in reversed(range(len(shape))):
            index[dim] += 1
            if index[dim] < shape[dim]:
                break
            index[dim] = 0
        else:
            break
    return offsets


def _check(condition: bool, reason: str) -> None:
    if not condition:
        raise TensorUnreadable(reason)


def _metadata(read: ReadMemory, impl: int, layout: Layout) -> dict[str, Any]:
    fields = layout["fields"]
    if "undefined_tensor" in layout and impl == layout["c10_base"] + layout["undefined_tensor"]:
        raise TensorUndefined("an undefined tensor (at::Tensor())")
    vptr = read_u64(read, impl)
    _check(vptr == layout["c10_base"] + layout["tensor_vtable"],
           f"not a plain c10::TensorImpl at {impl:#x} (sparse, quantized, nested, a subclass, or freed)")
    ndim = read_i64(read, impl + fields["ndim"])
    _check(0 <= ndim <= MAX_DIMS, f"implausible ndim {ndim}")
    sizes_at, strides_at = impl + fields["sizes"], impl + fields["strides"]
    if ndim > fields["inline_dims"]:  # out of line: a heap array of sizes, then strides
        sizes_at = read_u64(read, sizes_at)
        strides_at = sizes_at + 8 * ndim
    shape = [read_i64(read, sizes_at + 8 * i) for i in range(ndim)]
    strides = [read_i64(read, strides_at + 8 * i) for i in range(ndim)]
    numel = read_i64(read, impl + fields["numel"])
    _check(all(s >= 0 for s in shape) and numel == math.prod(shape),
           f"sizes {shape} do not multiply to numel {numel} (symbolic sizes, or not a tensor)")
    dtype_number = struct.unpack("<H", read(impl + fields["dtype"], 2))[0]
    _check(str(dtype_number) in layout["dtypes"], f"unknown dtype number {dtype_number}")
    device_type, device_index, engaged = struct.unpack("<bbB", read(impl + fields["device"], 3))
    _check(engaged in (0, 1), f"implausible device flag {engaged}")
    dtype, itemsize = layout["dtypes"][str(dtype_number)]
    return {"dtype": dtype, "shape": shape, "strides": strides,
            "storage_offset": read_i64(read, impl + fields["storage_offset"]),
            "device": device_name(device_type, device_index),
            "_itemsize": itemsize, "_device_type": device_type, "_numel": numel}


def _data(read: ReadMemory, impl: int, layout: Layout, meta: dict[str, Any]) -> int:
    """The address of the tensor's first element in host memory, once the storage is
    checked to hold every element the strides reach."""
    fields = layout["fields"]
    _check(meta["_device_type"] == CPU, f"values of a {meta['device']} tensor are not in host memory")
    storage = read_u64(read, impl + fields["storage"])
    _check(storage != 0, "the tensor has no storage")
    _check(read_u64(read, storage) == layout["c10_base"] + layout["storage_vtable"], "its storage is not a StorageImpl")
    data = read_u64(read, storage + fields["storage_data"])
    nbytes = read_i64(read, storage + fields["storage_nbytes"])
    extent = meta["storage_offset"] + sum((n - 1) * s for n, s in zip(meta["shape"], meta["strides"]))
    _check(meta["storage_offset"] >= 0 and all(s >= 0 for s in meta["strides"])
           and (meta["_numel"] == 0 or (extent + 1) * meta["_itemsize"] <= nbytes),
           f"the strides reach beyond the storage's {nbytes} bytes")
    return int(data + meta["storage_offset"] * meta["_itemsize"])


def _values(read: ReadMemory, base: int, meta: dict[str, Any], limit: int) -> tuple[list[Value], bool]:
    """The first ``limit`` values, in logical order, from the first element at ``base``."""
    _check(meta["dtype"] in _FORMATS or meta["dtype"] == "bfloat16", f"values of {meta['dtype']} are not decoded")
    numel, itemsize = meta["_numel"], meta["_itemsize"]
    if numel == 0:
        return [], False
    offsets = _logical_offsets(meta["shape"], meta["strides"], min(numel, limit))
    span = (max(offsets) + 1) * itemsize
    if span <= MAX_SPAN:  # one read for all of them (a contiguous tensor's first values)
        raw = read(base, span)
        values = [_element(raw[o * itemsize:(o + 1) * itemsize], meta["dtype"]) for o in offsets]
    else:
        values = [_element(read(base + offset * itemsize, itemsize), meta["dtype"]) for offset in offsets]
    return values, numel > len(values)


def read_tensor(read: ReadMemory, impl: int, layout: Layout, limit: int = DEFAULT_VALUES) -> dict[str, Any]:
    """The summary of the ``TensorImpl`` at ``impl``: dtype, shape, strides, storage offset,
    device, ``data`` (where its first element is, in hex: CPU only) and its first ``limit``
    values (CPU only; else ``values_error`` says why)."""
    try:
        meta = _metadata(read, impl, layout)
        summary = {key: value for key, value in meta.items() if not key.startswith("_")}
        try:
            base = _data(read, impl, layout, meta)
            summary["data"] = f"{base:#x}"
            summary["values"], summary["truncated"] = _values(read, base, meta, limit)
        except TensorUnreadable as err:
            summary["values"], summary["truncated"], summary["values_error"] = None, False, str(err)
        return summary
    except MemoryReadError as err:
        raise TensorUnreadable(f"memory unreadable: {err}") from err


def read_at_tensor(read: ReadMemory, address: int, layout: Layout, limit: int = DEFAULT_VALUES) -> dict[str, Any]:
    """``read_tensor`` for the ``at::Tensor`` object at ``address`` (one ``TensorImpl*``)."""
    try:
        impl = read_u64(read, address)
    except MemoryReadError as err:
        raise TensorUnreadable(f"memory unreadable: {err}") from err
    _check(impl != 0, "a null at::Tensor")
    return read_tensor(read, impl, layout, limit)


def summarize_python_tensor(read: ReadMemory, pyobject: int, layout: Layout,
                            limit: int = DEFAULT_VALUES) -> dict[str, Any]:
    """The summary of a Python ``torch.Tensor`` from its ``PyObject*`` (THPVariable, whose
    ``cdata`` is an ``at::Tensor``). The reverse link (the TensorImpl's PyObject slot
    pointing back at ``pyobject``) is checked, so a non-tensor object is not decoded."""
    try:
        impl = read_u64(read, pyobject + layout["fields"]["thp_cdata"])
        _check(impl != 0, "not a tensor (null cdata)")
        _check(read_u64(read, impl + layout["fields"]["pyobject"]) == pyobject,
               f"the object at {pyobject:#x} is not the Python tensor of its TensorImpl")
    except MemoryReadError as err:
        raise TensorUnreadable(f"memory unreadable: {err}") from err
    return read_tensor(read, impl, layout, limit)


def _number(value: Value, integral: bool) -> str:
    """One element as PyTorch prints floats: ``2.`` when every value is integral, else ``2.0000``."""
    if isinstance(value, float):
        return f"{value:.0f}." if integral else f"{value:.4f}"
    if isinstance(value, list):
        return f"{_number(value[0], integral)}{float(value[1]):+g}j"
    return str(value)


def format_values(tensor: dict[str, Any]) -> str:
    """The values as PyTorch prints them (``[[0., 1.], [2., 3.]]``), flat with ``...`` when
    truncated."""
    values = tensor.get("values")
    if values is None:
        return f"<{tensor.get('values_error', 'values not read')}>"
    integral = all(v.is_integer() and abs(v) < 1e8 for v in values if isinstance(v, float))
    texts = [_number(v, integral) for v in values]
    if tensor.get("truncated") or not tensor["shape"]:
        return texts[0] if not tensor["shape"] and texts else "[" + ", ".join(texts) + ", ...]"
    return _nest(texts, tensor["shape"])


def _nest(texts: list[str], shape: list[int]) -> str:
    if len(shape) <= 1:
        return "[" + ", ".join(texts) + "]"
    step = len(texts) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nest(texts[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


def device_name(kind: int, index: int) -> str:
    """A ``c10::Device`` as ``torch.device`` prints it: ``cpu``, ``cuda:0``."""
    name = DEVICE_NAMES.get(kind, f"device type {kind}")
    return name if index < 0 else f"{name}:{index}"


def dtype_name(enumerator: str) -> str:
    """The torch dtype of a ``c10::ScalarType`` enumerator (``Float``: ``float32``)."""
    return DTYPE_NAMES.get(enumerator, enumerator.lower())


def summary_line(tensor: dict[str, Any]) -> str:
    """A tensor in one line: ``tensor float32 [2, 3] cpu``."""
    return f"tensor {tensor['dtype']} {tensor['shape']} {tensor['device']}"


def fields(tensor: dict[str, Any]) -> list[tuple[str, str]]:
    """What a tensor expands to, as texts: dtype, shape, strides, storage offset, device,
    data (where the first element is) and the first values as PyTorch prints them."""
    shown = []
    for name in FIELDS:
        if name == "values":
            shown.append((name, format_values(tensor)))
        elif name in tensor:
            shown.append((name, str(tensor[name])))
    return shown


def describe(tensor: dict[str, Any]) -> str:
    """One line for people: ``float32[2, 3] cpu strides [3, 1] = [[0., 1., 2.], [3., 4., 5.]]``."""
    extra = f" strides {tensor['strides']}"
    if tensor["storage_offset"]:
        extra += f" offset {tensor['storage_offset']}"
    return f"{tensor['dtype']}{tensor['shape']} {tensor['device']}{extra} = {format_values(tensor)}"
