"""Runs inside gdb's embedded Python (``source``d by mixdbg): PyTorch helper commands.

``mixdbg-torch-args REQUEST``: the arguments of the innermost frame: where gdb has the
function's debug info, its arguments as the tensor printers read them (``gdb_printers``);
else decoded from registers and memory at its entry (``arguments.py``). REQUEST:
``{"layout": ... or null, "names": [...] or null, "returns": "at::Tensor" or null}``.
``mixdbg-tensor ADDRESS REQUEST``: the tensor at ADDRESS (a ``TensorImpl`` or an
``at::Tensor``). ``mixdbg-torch-summaries REQUEST``: from now on, ``locals`` (gdb_helper.py)
shows ``torch.Tensor`` values with the same summary. ``mixdbg-demangle REQUEST``: the
C++ names of a list of mangled symbols, as gdb itself demangles them. None calls a function in the
debuggee: they read memory and registers.

``mixdbg-kernels INFERIOR NUMBER...`` (gdb 15 and later): gdb breakpoints NUMBER... are
operator kernels bound by address in inferior INFERIOR only. From then on, a fork child of
that process gets copies of them for itself as gdb creates it, before it runs (same
addresses: a fork keeps the layout); gdb names each copy in its console stream as
``mixdbg-kernels-copied INFERIOR PARENT_NUMBER:COPY_NUMBER...``, so that mixdbg knows whose
they are. A process that execs loses them before the new program runs: gdb would set them
again at the same addresses in a program that has other code there.

Importing ``gdb_printers`` registers the tensor pretty-printers; mixdbg hands them the
layout (``mixdbg-torch-layout``) before it shows native variables. Importing
``gdb_operators`` registers the commands that find operators' kernels for ``op:``.

Each command reads a JSON request file and writes ``answer.json`` beside it (JsonCommand).

Standard library and ``gdb`` only; Python 3.9-compatible (gdb's Python is not mixdbg's).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import gdb  # type: ignore[import-untyped, import-not-found, unused-ignore]

# mixdbg's own stdlib-only readers (gdb_helper.py, sourced first, already puts them on the path).
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
if _PACKAGE_PARENT not in sys.path:
    sys.path.append(_PACKAGE_PARENT)
from mixdbg import gdb_unwind
from mixdbg.pyframes.objects import register_summary
from mixdbg.pytorch import (
    arguments,
    gdb_operators,  # noqa: F401 - imported for the commands it registers
    gdb_printers,
    tensors,
)
from mixdbg.pytorch.gdb_requests import JsonCommand, console
from mixdbg.pytorch.gdb_values import LAYOUTS
from mixdbg.pytorch.gdb_values import read_inferior as _read

_OFFSET = re.compile(r" \+ (\d+) in section ")
#: Prologues gdb steps over on a function without line info (amd64_analyze_prologue):
#: ``push %rbp; mov %rsp,%rbp`` and ``endbr64``; the argument registers are untouched.
_PROLOGUES = (b"\x55\x48\x89\xe5", b"\xf3\x0f\x1e\xfa", b"\xf3\x0f\x1e\xfa\x55\x48\x89\xe5")


def _at_entry(frame: Any) -> bool:
    """Whether ``frame`` is at its function's first instruction, or just after a prologue
    that leaves the argument registers alone (where gdb puts a breakpoint on a function
    that has no line info)."""
    pc = frame.pc()
    unread = gdb_unwind.function(pc)  # in a library mixdbg leaves unread
    if unread is not None:
        offset = pc - unread[1]
    else:
        match = _OFFSET.search(console(f"info symbol {pc:#x}"))
        offset = int(match.group(1)) if match else 0
    return offset == 0 or (offset in (4, 8) and _read(pc - offset, offset) in _PROLOGUES)


def _function_block(frame: Any) -> Any:
    """The outermost block of the function ``frame`` runs, when gdb has its debug info and
    the frame is past the function's first instruction (before it, an argument kept in the
    frame's memory may not be stored yet: registers hold them there)."""
    try:
        block = frame.block()
    except RuntimeError:  # no debug info for this pc
        return None
    while block is not None and block.function is None:
        block = block.superblock
    if block is None or block.function is None or block.start == frame.pc():
        return None
    return block


def debug_info_arguments(frame: Any, names: list[str] | None) -> dict[str, Any] | None:
    """The arguments of a frame whose function gdb has debug info for, read as the tensor
    printers read them, named from the operator's schema when ``names`` has one per
    argument; None without debug info. ``{"arguments": None}`` when none has a PyTorch
    type (nothing to add to what gdb shows)."""
    block = _function_block(frame)
    if block is None:
        return None
    symbols = [symbol for symbol in block if symbol.is_argument]
    if not any(gdb_printers.handles(symbol.type) for symbol in symbols):
        return {"arguments": None}
    if names is not None and len(names) != len(symbols):
        names = None
    found = []
    for position, symbol in enumerate(symbols):
        entry = {"position": position, "name": names[position] if names else symbol.name, "type": str(symbol.type)}
        try:
            found.append({**entry, **gdb_printers.to_json(symbol.value(frame))})
        except gdb.error as err:  # optimized out, or not readable here
            found.append({**entry, "error": f"not decoded: {err}"})
    return {"arguments": found}


def frame_arguments(request: dict[str, Any]) -> dict[str, Any]:
    """The innermost frame's arguments as ``{"arguments": [...]}`` or ``{"error": why}``:
    from its debug info where gdb has it, else from registers and memory at its entry."""
    frame = gdb.newest_frame()
    from_debug_info = debug_info_arguments(frame, request.get("names"))
    if from_debug_info is not None:
        return from_debug_info
    if request.get("layout") is None:
        return {"error": "not decoded: no debug info for this function"}
    function = frame.function()  # with debug info, its name has the parameter types
    parsed = arguments.signature(function.name if function is not None else gdb_unwind.frame_name(frame) or "")
    if parsed is None:
        return {"error": "no signature for this function"}
    if not _at_entry(frame):
        return {"error": "not at the function's entry: the argument registers may have changed"}
    name, params = parsed
    if name.startswith("c10::impl::make_boxed_from_unboxed_functor<"):
        return {"error": "a boxed call: its arguments are on the interpreter's IValue stack"}
    returns = arguments.functor_return(name)
    hidden = 2 if returns is not None and name.endswith("::call") else 0
    returns = returns if hidden else request.get("returns")
    if returns is None:
        return {"error": "the return type is unknown (is there a hidden result pointer?)"}
    result_pointer = arguments.has_result_pointer(returns)
    if result_pointer is None:
        return {"error": f"whether {returns} comes back through a hidden pointer is not known here"}
    registers = {r: int(frame.read_register(r)) & ((1 << 64) - 1) for r in arguments.INTEGER_REGISTERS}
    registers.update({r: int(frame.read_register(r)["v2_int64"][0]) & ((1 << 64) - 1) for r in arguments.SSE_REGISTERS})
    older = frame.older()
    cfa = int(older.read_register("rsp")) if older is not None else 0
    return {"arguments": arguments.decode(params, request.get("names"), result_pointer, registers, cfa, _read,
                                          request["layout"], hidden)}


def tensor_at(address: int, layout: dict[str, Any]) -> dict[str, Any]:
    """The tensor at ``address``: a TensorImpl, else an at::Tensor pointing at one."""
    try:
        return {"tensor": tensors.read_tensor(_read, address, layout)}
    except tensors.TensorUnreadable as first:
        try:
            return {"tensor": tensors.read_at_tensor(_read, address, layout)}
        except tensors.TensorUnreadable:
            return {"error": f"not decoded: {first}"}


class MixdbgTorchArgs(JsonCommand):
    """mixdbg-torch-args REQUEST: the innermost frame's arguments."""

    def answer(self, words: list[str], request: Any) -> Any:
        return frame_arguments(request)


class MixdbgTensor(JsonCommand):
    """mixdbg-tensor ADDRESS REQUEST: the tensor at ADDRESS."""

    words = 1

    def answer(self, words: list[str], request: Any) -> Any:
        return tensor_at(int(words[0], 0), request["layout"])


class MixdbgTorchSummaries(JsonCommand):
    """mixdbg-torch-summaries REQUEST: summarise torch tensors among Python locals."""

    def answer(self, words: list[str], request: Any) -> Any:
        layout = request["layout"]

        def summary(read: Any, address: int) -> str:
            try:
                return "tensor " + tensors.describe(tensors.summarize_python_tensor(read, address, layout))
            except tensors.TensorUnreadable as err:
                return f"Tensor <not decoded: {err}>"

        for type_name in ("Tensor", "Parameter"):  # torch.Tensor's and nn.Parameter's tp_name
            register_summary(type_name, summary)
        return {"registered": True}


class MixdbgDemangle(JsonCommand):
    """mixdbg-demangle REQUEST: ``{"names": [C++ name, ...]}`` for ``{"symbols": [...]}``."""

    def answer(self, words: list[str], request: Any) -> Any:
        return {"names": [console(f"demangle -l c++ -- {symbol}").strip()
                          for symbol in request["symbols"]]}


#: Per inferior number: the gdb breakpoints of the operator kernels bound in it alone.
_KERNELS: dict[int, list[int]] = {}
#: Inferiors whose first thread has been seen: only a process seen first after its parent
#: bound kernels is a fork of that parent with them (an exec'd program's threads come later).
_SEEN: set[int] = set()
#: How gdb's console stream names a fork child's copies (see the module doc).
COPIED = "mixdbg-kernels-copied"


def _parent_inferior(pid: int) -> Any:
    """The inferior of process ``pid``'s parent, if gdb holds it."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as status:
            ppid = next((int(line.split()[1]) for line in status if line.startswith("PPid:")), 0)
    except (OSError, ValueError):
        return None
    return next((inferior for inferior in gdb.inferiors() if ppid and inferior.pid == ppid), None)


def _copy_kernels_to_fork_child(event: Any) -> None:
    """A new thread: if it is the first of a new process forked from one with kernels
    (not a vfork child, which shares its parent's memory until it execs), give it copies."""
    inferior = event.inferior_thread.inferior
    if inferior.num in _SEEN:
        return
    _SEEN.add(inferior.num)
    parent = _parent_inferior(inferior.pid)
    if parent is None or not _KERNELS.get(parent.num) or parent.progspace == inferior.progspace:
        return
    existing = {breakpoint.number: breakpoint for breakpoint in gdb.breakpoints()}
    pairs: list[tuple[int, int]] = []
    _KERNELS[inferior.num] = []
    try:
        for number in _KERNELS[parent.num]:
            original = existing.get(number)
            if original is None:
                continue  # deleted since
            command = ["-break-insert", "-g", f"i{inferior.num}"] + ([] if original.enabled else ["-d"])
            if original.condition:
                command += ["-c", original.condition]
            created = int(gdb.execute_mi(*command, original.location)["bkpt"]["number"])
            _KERNELS[inferior.num].append(created)  # dropped at an exec even if a later one fails
            pairs.append((number, created))
    finally:
        gdb.write(f"{COPIED} {inferior.num} " + " ".join(f"{number}:{copy}" for number, copy in pairs) + "\n")


def _drop_kernels_at_exec(event: Any) -> None:
    """A process runs a new program: delete the kernels bound in its old one."""
    existing = {breakpoint.number: breakpoint for breakpoint in gdb.breakpoints()}
    for inferior in gdb.inferiors():
        if inferior.progspace == event.progspace and inferior.num in _KERNELS:
            for number in _KERNELS.pop(inferior.num):
                if number in existing:
                    existing[number].delete()


class MixdbgKernels(gdb.Command):  # type: ignore[misc]
    """mixdbg-kernels INFERIOR NUMBER...: kernels bound in INFERIOR (see the module doc)."""

    def __init__(self) -> None:
        super().__init__("mixdbg-kernels", gdb.COMMAND_BREAKPOINTS)
        self.connected = False

    def invoke(self, argument: str, from_tty: bool) -> None:
        inferior, *numbers = argument.split()
        _KERNELS.setdefault(int(inferior), []).extend(int(number) for number in numbers)
        if not self.connected:
            _SEEN.update(known.num for known in gdb.inferiors())  # none of them is a new fork
            gdb.events.new_thread.connect(_copy_kernels_to_fork_child)
            gdb.events.executable_changed.connect(_drop_kernels_at_exec)
            self.connected = True


LAYOUTS.managed = True  # mixdbg hands the printers the layout (views.TorchViews)
MixdbgKernels()
MixdbgTorchArgs("mixdbg-torch-args")
MixdbgDemangle("mixdbg-demangle")
MixdbgTorchSummaries("mixdbg-torch-summaries")
MixdbgTensor("mixdbg-tensor")
