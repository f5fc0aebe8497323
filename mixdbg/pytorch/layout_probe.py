"""Run by the debuggee's own interpreter (``python layout_probe.py``): find where one torch
build keeps a tensor's fields, by creating tensors of known metadata and looking for the
known values in their memory. Prints one JSON document on stdout.

Why measure instead of reading headers or hard-coding: the layout of ``c10::TensorImpl``
moved between releases (``PyObjectSlot`` shrank from 16 to 8 bytes in 2.x, THPVariable's
``cdata`` moved from +24 to +16 in 2.10) and release wheels have no DWARF. Every field is
located by values that cannot occur by chance twice (e.g. sizes ``[3, 11, 13, 17]`` next
to ``ndim``) and must be found exactly once, in two tensors, at the same offset; anything
ambiguous makes the probe fail rather than guess. Memory is read through
``/proc/self/mem`` so that a wrong pointer is an error, not a crash.

Standard library and torch only. It runs in a separate process, never in the debuggee.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import sys

import torch

WORD = 8
#: dtypes whose ScalarType number, item size and name are recorded (those this torch has).
DTYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
          "complex128", "bool", "bfloat16", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2")


class ProbeError(Exception):
    """A field could not be located unambiguously."""


_MEM = os.open("/proc/self/mem", os.O_RDONLY)
_LIBC = ctypes.CDLL(None)
_LIBC.malloc_usable_size.restype = ctypes.c_size_t
_LIBC.malloc_usable_size.argtypes = [ctypes.c_void_p]


def read(address: int, size: int) -> bytes:
    """``size`` bytes at ``address`` of this process (an OSError if unmapped)."""
    return os.pread(_MEM, size, address)


def words(address: int, count: int) -> list[int]:
    """``count`` signed 64-bit words at ``address``."""
    return list(struct.unpack(f"<{count}q", read(address, count * WORD)))


def impl_of(tensor: torch.Tensor) -> int:
    """The tensor's ``TensorImpl*`` (``_cdata``)."""
    return int(tensor._cdata)


def impl_words(tensor: torch.Tensor) -> list[int]:
    """The words of the tensor's TensorImpl, up to its allocation's end (never a neighbour's)."""
    impl = impl_of(tensor)
    return words(impl, int(_LIBC.malloc_usable_size(impl)) // WORD)


def find_sequence(haystack: list[int], needle: list[int]) -> list[int]:
    """Word offsets (in bytes) where ``needle`` occurs in ``haystack``."""
    return [i * WORD for i in range(len(haystack) - len(needle) + 1) if haystack[i:i + len(needle)] == needle]


def unique(found: list[int], what: str) -> int:
    """The one offset in ``found``; a ProbeError unless there is exactly one."""
    if len(found) != 1:
        raise ProbeError(f"{what}: {len(found)} candidates {found}")
    return found[0]


def common(first: list[int], second: list[int], what: str) -> int:
    """The one offset found in both tensors."""
    return unique(sorted(set(first) & set(second)), what)


def sizes_and_strides(a: torch.Tensor, b: torch.Tensor) -> dict[str, int]:
    """Offsets of ndim, sizes, strides, storage offset and numel (two strided views)."""
    wa, wb = impl_words(a), impl_words(b)
    ndim = common(find_sequence(wa, [a.dim(), *map(int, a.shape)]), find_sequence(wb, [b.dim(), *map(int, b.shape)]),
                  "ndim+sizes")
    strides = common(find_sequence(wa, list(a.stride())), find_sequence(wb, list(b.stride())), "strides")
    return {
        "ndim": ndim, "sizes": ndim + WORD, "strides": strides,
        "inline_dims": (strides - ndim - WORD) // WORD,
        "storage_offset": common(find_sequence(wa, [int(a.storage_offset())]), find_sequence(wb, [int(b.storage_offset())]),
                                 "storage_offset"),
        "numel": common(find_sequence(wa, [a.numel()]), find_sequence(wb, [b.numel()]), "numel"),
    }


def storage_fields(tensor: torch.Tensor) -> dict[str, int]:
    """Offsets of the StorageImpl pointer in TensorImpl, and of data and nbytes in StorageImpl."""
    storage = tensor.untyped_storage()
    data, nbytes = storage.data_ptr(), storage.nbytes()
    found = []
    for offset, word in enumerate(impl_words(tensor)):
        try:
            target = words(word, 8)
        except (OSError, OverflowError, ValueError):
            continue
        if target.count(data) == 1 and target.count(nbytes) == 1:
            found.append((offset * WORD, target.index(data) * WORD, target.index(nbytes) * WORD))
    if len(found) != 1:
        raise ProbeError(f"storage: {len(found)} candidates")
    storage_at, data_at, nbytes_at = found[0]
    return {"storage": storage_at, "storage_data": data_at, "storage_nbytes": nbytes_at}


def dtype_field() -> tuple[int, dict[str, list[object]]]:
    """The u16 offset of the dtype, and ``{number: [name, itemsize]}`` for each dtype."""
    tensors = {name: torch.zeros(3, dtype=getattr(torch, name)) for name in DTYPES if hasattr(torch, name)}
    raw = {name: read(impl_of(t), int(_LIBC.malloc_usable_size(impl_of(t)))) for name, t in tensors.items()}
    again = read(impl_of(torch.ones(5, dtype=torch.float32)), len(raw["float32"]))
    length = min(len(r) for r in raw.values())
    candidates = []
    for offset in range(0, length - 1, 2):
        values = [struct.unpack_from("<H", r, offset)[0] for r in raw.values()]
        if len(set(values)) == len(values) and values[list(raw).index("float32")] == \
                struct.unpack_from("<H", again, offset)[0]:
            candidates.append(offset)
    offset = unique(candidates, "dtype")
    table = {str(struct.unpack_from("<H", raw[name], offset)[0]): [name, tensors[name].element_size()]
             for name in raw}
    return offset, table


def device_field() -> int:
    """The byte offset of the device type: 0 for cpu, 14 for meta (c10::DeviceType)."""
    cpu, meta = torch.zeros(3), torch.zeros(3, device="meta")
    size = min(int(_LIBC.malloc_usable_size(impl_of(t))) for t in (cpu, meta))
    raw_cpu, raw_meta = read(impl_of(cpu), size), read(impl_of(meta), size)
    found = [i for i in range(size - 2) if raw_cpu[i] == 0 and raw_meta[i] == 14
             and raw_cpu[i + 1] == raw_meta[i + 1] == 0xFF and raw_cpu[i + 2] == raw_meta[i + 2] == 1]
    return unique(found, "device")


def undefined_tensor(path: str, c10_base: int) -> int:
    """Where ``c10::UndefinedTensorImpl``'s singleton (what an undefined tensor points at)
    is, relative to libc10's load address."""
    singleton = ctypes.c_char.in_dll(ctypes.CDLL(path), "_ZN3c1019UndefinedTensorImpl10_singletonE")
    return ctypes.addressof(singleton) - c10_base


#: The dispatch keys whose kernel of an operator computes it for one backend: ``op:``
#: breakpoints stop in these (what a CompositeImplicitAutograd kernel fills too).
BACKEND_KEYS = ("CPU", "CUDA", "XPU", "MPS", "HIP", "Meta", "PrivateUse1")
#: Where a ``std::list`` node's element starts (after its next and previous pointers).
LIST_NODE = 16
#: Nodes walked at most in the dispatcher's operator list.
MAX_OPERATORS = 200000


def std_string(address: int) -> str:
    """The libstdc++ ``std::string`` at ``address`` (data pointer, then length)."""
    data, length = words(address, 2)
    if not 0 <= length <= 4096:
        raise OSError(f"implausible string length {length}")
    return read(data, length).decode("utf-8", "replace")


def library(suffix: str) -> tuple[str, int]:
    """The path of a library this process loaded, and its load address."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5].endswith(suffix) and int(fields[2], 16) == 0:
                return fields[5], int(fields[0].split("-")[0], 16)
    raise ProbeError(f"{suffix} is not mapped")


def operator_entries(dispatcher: int) -> dict[tuple[str, str], int]:
    """Every registered operator's ``OperatorEntry`` by (name, overload): the dispatcher's
    ``operators_`` list is its first member; an entry begins with its ``OperatorName``
    (two ``std::string``s)."""
    entries: dict[tuple[str, str], int] = {}
    node = words(dispatcher, 1)[0]
    while node != dispatcher and len(entries) < MAX_OPERATORS:
        entry = node + LIST_NODE
        entries[(std_string(entry), std_string(entry + 32))] = entry
        node = words(node, 1)[0]
    return entries


def schema_arguments(entries: dict[tuple[str, str], int]) -> tuple[int, int]:
    """Where an entry's schema keeps its arguments (a ``std::vector<c10::Argument>``), and
    the size of one ``Argument`` (its name, a ``std::string``, first): found with
    ``aten::add.Tensor(self, other, alpha)``, checked with ``aten::mm(self, mat2)``."""
    found = []
    add, mm = entries[("aten::add", "Tensor")], entries[("aten::mm", "")]
    for offset in range(64, 1024, WORD):
        begin, end = words(add + offset, 2)
        size = (end - begin) // 3
        if begin <= 0 or end - begin != 3 * size or not 32 <= size <= 1024 or size % WORD:
            continue
        try:
            names = [std_string(begin + i * size) for i in range(3)]
            mm_begin = words(mm + offset, 1)[0]
            checked = [std_string(mm_begin + i * size) for i in range(2)]
        except (OSError, OverflowError, ValueError):
            continue
        if names == ["self", "other", "alpha"] and checked == ["self", "mat2"]:
            found.append((offset, size))
    if len(found) != 1:
        raise ProbeError(f"schema arguments: {len(found)} candidates")
    return found[0]


def kernel_slots(dispatcher: int) -> dict[str, int]:
    """Where each backend key's kernel is in an entry's dispatch table: operators of our
    own, each with a kernel for one key only, tell the slots apart (a slot holds the
    kernel's functor, its boxed function, then its unboxed one; a Python kernel has none)."""
    probe_library = torch.library.Library("mixdbg_probe", "DEF")  # type: ignore[no-untyped-call]
    probe_library.define("none(Tensor x) -> Tensor")  # type: ignore[no-untyped-call]
    for key in BACKEND_KEYS:
        probe_library.define(f"only_{key.lower()}(Tensor x) -> Tensor")  # type: ignore[no-untyped-call]
        probe_library.impl(f"only_{key.lower()}", lambda x: x, key)  # type: ignore[no-untyped-call]
    entries = operator_entries(dispatcher)
    keyed = {key: entries[(f"mixdbg_probe::only_{key.lower()}", "")] for key in BACKEND_KEYS}
    none = entries[("mixdbg_probe::none", "")]
    size = min(int(_LIBC.malloc_usable_size(entry - LIST_NODE)) for entry in [none, *keyed.values()]) - LIST_NODE
    memory = {key: words(entry, size // WORD) for key, entry in keyed.items()}
    empty = words(none, size // WORD)
    slots = {}
    for key, own in memory.items():
        others = [other for name, other in memory.items() if name != key]
        slots[key] = unique([i * WORD for i in range(len(own) - 2) if own[i] and own[i + 1] and not own[i + 2]
                             and not empty[i] and all(not other[i] for other in others)], f"{key} kernel slot")
    return slots


def dispatcher_layout() -> dict[str, object]:
    """Where the dispatcher is (relative to libtorch_cpu.so's load address) and how to read
    its operators: names, schema argument names, and each backend's kernel."""
    path, base = library("/libtorch_cpu.so")
    singleton = ctypes.CDLL(path)._ZN3c1010Dispatcher13realSingletonEv
    singleton.restype = ctypes.c_void_p
    dispatcher = int(singleton())
    arguments, argument_size = schema_arguments(operator_entries(dispatcher))
    return {"library": path, "dispatcher": dispatcher - base, "entry": LIST_NODE, "arguments": arguments,
            "argument_size": argument_size, "slots": kernel_slots(dispatcher)}


def probe() -> dict[str, object]:
    """Every offset mixdbg's tensor reader needs, with the libc10 they hold for."""
    base = torch.zeros(40000)
    a = base.as_strided((11, 13, 17), (1009, 73, 3), storage_offset=12345)
    b = base.as_strided((19, 23), (29, 2), storage_offset=777)
    fields = sizes_and_strides(a, b)
    buffer = torch.frombuffer(bytearray(64), dtype=torch.uint8)  # data != deleter context
    fields.update(storage_fields(buffer))
    fields["dtype"], dtypes = dtype_field()
    fields["device"] = device_field()
    fields["pyobject"] = common(find_sequence(impl_words(a), [id(a)]), find_sequence(impl_words(b), [id(b)]),
                                "pyobject")
    fields["thp_cdata"] = unique(find_sequence(words(id(a), 6), [impl_of(a)]), "THPVariable.cdata")
    path, c10_base = library("/libc10.so")
    storage = words(impl_of(a), 8)[fields["storage"] // WORD]
    return {"torch": torch.__version__, "c10": path, "fields": fields, "dtypes": dtypes,
            "tensor_vtable": words(impl_of(a), 1)[0] - c10_base, "storage_vtable": words(storage, 1)[0] - c10_base,
            "undefined_tensor": undefined_tensor(path, c10_base), "dispatcher": _dispatcher_or_why()}


def _dispatcher_or_why() -> dict[str, object]:
    """The dispatcher's layout, or why it was not found (tensors are shown all the same)."""
    try:
        return dispatcher_layout()
    except (ProbeError, OSError, KeyError, AttributeError) as err:
        return {"error": f"{type(err).__name__}: {err}"}


if __name__ == "__main__":
    try:
        print(json.dumps(probe()))
    except ProbeError as err:
        print(f"layout probe: {err}", file=sys.stderr)
        sys.exit(3)
