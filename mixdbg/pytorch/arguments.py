"""A native function's arguments at its entry, from registers and memory only (x86-64 SysV).

Release wheels have no DWARF, but gdb knows each function's demangled signature. At the
entry of frame #0 (before the callee touched them) the integer arguments are in rdi, rsi,
rdx, rcx, r8, r9, then on the stack from the CFA; a function returning a class by value
(``at::Tensor``, a tuple, a vector, ``c10::Scalar``) takes a hidden result pointer in rdi
first; class types with a non-trivial copy or destructor (``at::Tensor``, ``c10::Scalar``,
``std::optional<at::Tensor>``) are passed by invisible reference; ``c10::ArrayRef<T>`` is
two registers (data, length); small ``std::optional``s one register, value byte first
(all measured at real stops: ``research/tensor-views.md`` §3). Decoding stops at the first
parameter whose passing it does not know: every later place would be a guess.

Standard library only, Python 3.9-compatible: gdb's embedded Python runs this.
"""

from __future__ import annotations

import re
import struct
from typing import Any, Callable, Optional

from mixdbg.memory import MemoryReadError, ReadMemory, read_i64, read_u64
from mixdbg.pytorch.tensors import Layout, TensorUnreadable, device_name, read_at_tensor

INTEGER_REGISTERS = ("rdi", "rsi", "rdx", "rcx", "r8", "r9")
#: Floating-point arguments take these, counted apart (their low 64 bits).
SSE_REGISTERS = tuple(f"xmm{i}" for i in range(8))
_FLOATS = {"double": "<d", "float": "<f"}
MAX_LIST = 64
MAX_TENSORS = 8
_FUNCTOR = re.compile(r"CompileTimeFunctionPointer<(?P<ret>.+?) \(")
#: Return types passed back in registers (no hidden result pointer).
_REGISTER_RETURNS = re.compile(r"^(void|bool|long|int|double|float|unsigned long|c10::ScalarType|.*[&*])$")
#: Class types passed by value in memory the caller owns (hidden reference), Itanium ABI.
_BY_REFERENCE = re.compile(r"^(at::Tensor|c10::Scalar|c10::SymInt|at::Generator|std::optional<at::Tensor>|"
                           r"std::optional<at::Generator>|std::optional<c10::Scalar>|std::optional<c10::SymInt>|"
                           r"std::vector<.*>|std::__cxx11::basic_string<.*>)$")
_SMALL = ("long", "int", "bool", "unsigned long", "c10::ScalarType", "c10::Layout",
          "c10::MemoryFormat", "c10::DispatchKeySet", "c10::Device")
_LAYOUTS = {0: "strided", 1: "sparse", 2: "sparse_csr", 3: "mkldnn"}

Registers = dict[str, int]
Decoded = dict[str, Any]
#: (integer registers it takes, words on the stack if passed in memory, decoder or None)
Passing = tuple[int, int, Optional[Callable[[list[int], ReadMemory, Layout], Decoded]]]


def split_parameters(text: str) -> list[str]:
    """Split a demangled parameter list at its top-level commas."""
    parts: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(text):
        depth += {"<": 1, "(": 1, ">": -1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def signature(function: str) -> tuple[str, list[str]] | None:
    """``(qualified name, parameter types)`` of a demangled ``name(params)``, or None."""
    text = function.removesuffix(" const")
    if not text.endswith(")"):
        return None
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[index], 0)
        if depth == 0:
            return text[:index], split_parameters(text[index + 1:-1])
    return None


def functor_return(function: str) -> str | None:
    """The kernel's return type in a dispatcher functor's ``call`` (the template says it)."""
    match = _FUNCTOR.search(function)
    return match.group("ret") if match else None


def has_result_pointer(return_type: str) -> bool | None:
    """Whether a function returning ``return_type`` takes the hidden result pointer; None
    when that depends on more than this module knows (a tuple of references may come
    back in registers)."""
    text = return_type.strip()
    if text.startswith(("std::tuple<", "::std::tuple<")) and "&" in text:
        return None
    return not _REGISTER_RETURNS.match(text)


def _tensor(address: int, read: ReadMemory, layout: Layout) -> Decoded:
    try:
        return {"tensor": read_at_tensor(read, address, layout)}
    except TensorUnreadable as err:
        return {"error": f"not decoded: {err}"}


def _optional_tensor(address: int, read: ReadMemory, layout: Layout) -> Decoded:
    if read(address + 8, 1) == b"\0":
        return {"value": None}
    return _tensor(address, read, layout)


def _int_list(data: int, length: int, read: ReadMemory, symbolic_ints: bool) -> Decoded:
    if not 0 <= length <= MAX_LIST:
        return {"error": f"not decoded: implausible length {length}"}
    values: list[Any] = [read_i64(read, data + 8 * i) for i in range(length)]
    if symbolic_ints:  # c10::SymInt: a heap pointer when (data & MASK) == IS_SYM
        mask, is_sym = 0b111 << 61, 0b101 << 61
        values = ["symbolic" if (v & ((1 << 64) - 1)) & mask == is_sym else v for v in values]
    return {"value": values}


def _tensor_list(data: int, length: int, read: ReadMemory, layout: Layout) -> Decoded:
    if not 0 <= length <= 4096:
        return {"error": f"not decoded: implausible length {length}"}
    return {"tensors": [_tensor(data + 8 * i, read, layout) for i in range(min(length, MAX_TENSORS))],
            "length": length}


def _scalar(address: int, read: ReadMemory) -> Decoded:
    tag = struct.unpack("<i", read(address, 4))[0]
    raw = read(address + 16, 8)
    decoders = {0: "<d", 1: "<q", 2: "<Q", 4: "<q"}
    if tag in decoders:
        value = struct.unpack(decoders[tag], raw)[0]
        return {"value": bool(value) if tag == 4 else value}
    if tag == 3:
        real, imag = struct.unpack("<2d", read(address + 16, 16))
        return {"value": [real, imag]}
    return {"value": "symbolic" if tag in (5, 6, 7) else f"<Scalar tag {tag}>"}


def _small_optional(word: int, decode: Callable[[int], Any], size: int = 1) -> Decoded:
    """A ``std::optional`` of a ``size``-byte value in a register: value bytes, then the
    engaged flag; the register's upper bytes are garbage."""
    raw = word.to_bytes(8, "little")
    return {"value": decode(int.from_bytes(raw[:size], "little")) if raw[size] else None}


def _device(packed: int) -> str:
    """``c10::Device``: the type byte, then the index byte (-1: none)."""
    return device_name(packed & 0xFF, struct.unpack("<b", bytes([(packed >> 8) & 0xFF]))[0])


def _dtype(number: int, layout: Layout) -> Any:
    return layout["dtypes"].get(str(number), [f"ScalarType {number}"])[0]


def passing(cpp_type: str) -> Passing | None:
    """How a parameter of ``cpp_type`` is passed and how to show it; None when unknown."""
    t = cpp_type.strip()
    tensor_ref = t in ("at::Tensor const&", "at::Tensor&", "at::Tensor")
    if tensor_ref:
        return 1, 0, lambda w, r, lay: _tensor(w[0], r, lay)
    if t in ("std::optional<at::Tensor> const&", "std::optional<at::Tensor>"):
        return 1, 0, lambda w, r, lay: _optional_tensor(w[0], r, lay)
    if t in ("c10::Scalar const&", "c10::Scalar"):
        return 1, 0, lambda w, r, lay: _scalar(w[0], r)
    if t in ("c10::ArrayRef<long>", "c10::ArrayRef<c10::SymInt>"):
        symbolic = "SymInt" in t
        return 2, 0, lambda w, r, lay: _int_list(w[0], w[1], r, symbolic)
    if t in ("c10::ArrayRef<at::Tensor>", "c10::ArrayRef<at::Tensor> const&"):
        return 2, 0, lambda w, r, lay: _tensor_list(w[0], w[1], r, lay)
    if t in ("long", "int"):
        bits = 64 if t == "long" else 32
        return 1, 0, lambda w, r, lay: {"value": (w[0] & ((1 << bits) - 1)) - ((w[0] >> (bits - 1) & 1) << bits)}
    if t == "bool":
        return 1, 0, lambda w, r, lay: {"value": bool(w[0] & 0xFF)}
    if t == "c10::ScalarType":
        return 1, 0, lambda w, r, lay: {"value": _dtype(w[0] & 0xFF, lay)}
    if t == "std::optional<c10::ScalarType>":
        return 1, 0, lambda w, r, lay: _small_optional(w[0], lambda n: _dtype(n, lay))
    if t == "std::optional<bool>":
        return 1, 0, lambda w, r, lay: _small_optional(w[0], bool)
    if t == "std::optional<c10::Layout>":
        return 1, 0, lambda w, r, lay: _small_optional(w[0], lambda n: _LAYOUTS.get(n, n))
    if t == "std::optional<c10::Device>":
        return 1, 0, lambda w, r, lay: _small_optional(w[0], _device, 2)
    if t.endswith(("&", "*")) or _BY_REFERENCE.match(t) or t.startswith("std::optional<c10::") and t.endswith(
            ("ScalarType>", "Layout>", "MemoryFormat>", "Device>", "bool>")) or t in _SMALL:
        return 1, 0, None  # one register; shown by type only
    if t.startswith(("c10::ArrayRef<", "std::basic_string_view<", "c10::basic_string_view<")):
        return 2, 0, None
    if t.startswith(("c10::OptionalArrayRef<", "std::optional<c10::ArrayRef<")):
        return 0, 3, None  # a 24-byte trivially copyable aggregate: in memory, on the stack
    return None


def _floating(cpp_type: str, sse: list[str], registers: Registers, stack: int, read: ReadMemory,
              ) -> tuple[float, int]:
    """A ``double`` or ``float`` argument: the next SSE register's low bytes, else the next
    stack word; and where the stack's next argument is then."""
    if sse:
        word, after = registers[sse.pop(0)], stack
    else:
        word, after = read_u64(read, stack), stack + 8
    kind = _FLOATS[cpp_type]
    return float(struct.unpack(kind, word.to_bytes(8, "little")[:struct.calcsize(kind)])[0]), after


def decode(params: list[str], names: list[str] | None, result_pointer: bool, registers: Registers,
           cfa: int, read: ReadMemory, layout: Layout, hidden: int = 0) -> list[Decoded]:
    """Each parameter's place and value at the function's entry; the first ``hidden``
    parameters (a functor's kernel pointer and dispatch key set) are placed, not shown."""
    free = list(INTEGER_REGISTERS[1:] if result_pointer else INTEGER_REGISTERS)
    sse = list(SSE_REGISTERS)
    stack = cfa  # the first stack-passed argument is at the CFA (the caller's rsp before the call)
    shown: list[Decoded] = []
    for index, cpp_type in enumerate(params):
        position = index - hidden
        entry: Decoded = {"position": position, "type": cpp_type}
        if names is not None and 0 <= position < len(names):
            entry["name"] = names[position]
        if cpp_type in _FLOATS:
            try:
                value, stack = _floating(cpp_type, sse, registers, stack, read)
                shown.append({**entry, "value": value})
            except (MemoryReadError, KeyError) as err:
                shown.append({**entry, "error": f"not decoded: {err}"})
            continue
        how = passing(cpp_type)
        if how is None:
            if position >= 0:
                shown.append({**entry, "error": f"not decoded: how {cpp_type} is passed is not known here"})
            shown += [{"position": i - hidden, "type": t, "error": "not decoded: follows an unknown parameter"}
                      for i, t in enumerate(params[index + 1:], start=index + 1)]
            break
        count, words_in_memory, decoder = how
        try:
            if count and len(free) >= count:
                values = [registers[free.pop(0)] for _ in range(count)]
            else:  # no registers left (or a memory-class aggregate): all of it on the stack
                size = count or words_in_memory
                values = [read_u64(read, stack + 8 * i) for i in range(size)]
                stack += 8 * size
            if position >= 0:
                shown.append({**entry, **(decoder(values, read, layout) if decoder else {})})
        except (MemoryReadError, TensorUnreadable, KeyError) as err:
            if position >= 0:
                shown.append({**entry, "error": f"not decoded: {err}"})
    return shown
