"""Runs inside gdb's embedded Python (imported by ``gdb_commands.py``): where ``op:``
breakpoints on operators outside aten stop (``customops.py``).

``mixdbg-torch-operators REQUEST``: the operators the dispatcher registered since the last
walk (``dispatcher.py``). ``mixdbg-torch-kernels REQUEST``: per operator entry, its schema's
argument names and where to stop in each backend kernel. ``mixdbg-load-caller REQUEST``: at
a library-load stop, where the load returns (the library's initializers have registered
its operators there). None calls a function in the debuggee: they read memory, registers
and gdb's symbols.

Standard library and ``gdb`` only; Python 3.9-compatible (gdb's Python is not mixdbg's).
"""

from __future__ import annotations

import re
from typing import Any

import gdb  # type: ignore[import-untyped, import-not-found, unused-ignore]

from mixdbg.gdbtext import library_regex
from mixdbg.memory import MemoryReadError, read_u64
from mixdbg.pytorch import arguments, dispatcher
from mixdbg.pytorch.gdb_requests import JsonCommand, console
from mixdbg.pytorch.gdb_values import read_inferior as _read

#: A runtime function pointer kernel's functor (``m.impl("op", &fn)``): the function it calls
#: is its one member, after ``c10::OperatorKernel``'s vtable and reference counts.
RUNTIME_FUNCTOR_FUNCTION = 16
_RUNTIME_FUNCTOR = re.compile(r"WrapFunctionIntoRuntimeFunctor_<(?P<returns>.+?) ?\(\*\)\(")
_COMPILE_TIME = re.compile(r"CompileTimeFunctionPointer<(?P<returns>[^(]+?) ?\(.*?\), &\(?(?P<function>[^<>]+?)\)?>")
_SYMBOL = re.compile(r"^(?P<name>.+?)(?: \+ (?P<offset>\d+))? in section ")


def symbol_at(address: int) -> tuple[str, int] | None:
    """The C++ name of the symbol ``address`` is in, and the offset in it (gdb reads the
    symbols of its library first: mixdbg keeps ``auto-solib-add off``)."""
    library = gdb.solib_name(address)
    if library and not _has_symbols(library):
        gdb.execute("sharedlibrary " + library_regex(library), to_string=True)
    match = _SYMBOL.match(console(f"info symbol {address:#x}").strip())
    return (match.group("name"), int(match.group("offset") or 0)) if match else None


def _function_target(address: int, name: str, returns: str | None) -> dict[str, Any]:
    """Where to stop in the kernel function at ``address`` (named ``name``): where gdb
    breaks on it by name when it has its debug info (past the prologue: its arguments are
    readable there, and at any line after), else at its first instruction (its arguments
    are in registers there)."""
    block = gdb.block_for_pc(address)
    while block is not None and block.function is None:
        block = block.superblock
    if block is not None and block.function is not None:
        return {"locations": [f"'{block.function.name}'"], "function": block.function.name, "returns": returns}
    return {"locations": [f"*{address:#x}"], "function": name, "returns": returns}


def kernel_target(kernel: dict[str, Any]) -> dict[str, Any]:
    """Where an ``op:`` breakpoint stops for one kernel: in the kernel function itself when
    it is known (a function pointer the functor holds, or the one its type names), else
    where the dispatcher enters the kernel (its unboxed and boxed functor calls)."""
    unboxed, functor, boxed = kernel["unboxed"], kernel["functor"], kernel["boxed"]
    if unboxed == 0:
        return {"error": "its kernel is a Python function (or boxed only): break in its code"}
    found = symbol_at(unboxed)
    name = found[0] if found else ""
    runtime = _RUNTIME_FUNCTOR.search(name)
    if runtime is not None:
        function = read_u64(_read, functor + RUNTIME_FUNCTOR_FUNCTION)
        named = symbol_at(function)
        if named is not None and named[1] == 0:
            return {**kernel, **_function_target(function, named[0], runtime.group("returns"))}
    compile_time = _COMPILE_TIME.search(name)
    if compile_time is not None:
        parsed = arguments.signature(compile_time.group("function"))
        function_name = parsed[0] if parsed else compile_time.group("function")
        symbol = gdb.lookup_global_symbol(function_name) or gdb.lookup_static_symbol(function_name)
        if symbol is not None and symbol.is_function:
            return {**kernel, **_function_target(int(symbol.value().address), symbol.name,
                                                 compile_time.group("returns"))}
    return {**kernel, "locations": [f"*{unboxed:#x}"] + ([f"*{boxed:#x}"] if boxed else []), "function": name,
            "returns": None}


class MixdbgTorchOperators(JsonCommand):
    """mixdbg-torch-operators REQUEST: the operators the dispatcher registered since the
    last walk. REQUEST: ``{"dispatcher": address, "layout": ..., "after": node or null,
    "count": the list's size then}``; a smaller list now means some were removed: all of
    them are walked again."""

    def answer(self, words: list[str], request: Any) -> Any:
        address, layout = int(request["dispatcher"]), request["layout"]
        try:
            count = dispatcher.operator_count(_read, address)
            after = request.get("after") if count >= int(request.get("count") or 0) else None
            found, last = dispatcher.walk(_read, address, layout, after)
        except (dispatcher.DispatcherUnreadable, MemoryReadError) as err:
            return {"error": f"the dispatcher's operators are not readable: {err}"}
        return {"operators": found, "last": last, "count": count, "restarted": after is None}


class MixdbgTorchKernels(JsonCommand):
    """mixdbg-torch-kernels REQUEST: for each operator entry of ``{"layout": ...,
    "entries": [address...]}``, its schema's argument names and where to stop in each of
    its backend kernels."""

    def answer(self, words: list[str], request: Any) -> Any:
        layout = request["layout"]
        described = {}
        for entry in request["entries"]:
            found = dispatcher.kernels(_read, int(entry), layout)
            described[str(entry)] = {"arguments": dispatcher.argument_names(_read, int(entry), layout),
                                     "kernels": [kernel_target(kernel) for kernel in found]}
        return {"entries": described}


#: Rounds of reading the loader's symbols (each lets gdb unwind further).
_SYMBOL_ROUNDS = 3
#: The dynamic loader's and libc's libraries: the frames of a library load.
_LOADER = re.compile(r"/(ld-linux[^/]*|ld64[^/]*|libc\.so[^/]*|libdl\.so[^/]*)$")


def load_caller() -> dict[str, Any]:
    """At a library-load stop: where the selected thread resumes once the load (and the
    library's initializers) returned: the first frame outward that is neither the dynamic
    loader's nor libc's. gdb unwinds through those with their symbols: read as they show up."""
    for _ in range(_SYMBOL_ROUNDS):
        unread = {library for library in map(gdb.solib_name, _frame_pcs())
                  if library and _LOADER.search(library) and not _has_symbols(library)}
        if not unread:
            break
        for library in unread:
            gdb.execute("sharedlibrary " + library_regex(library), to_string=True)
        gdb.invalidate_cached_frames()
    for pc in _frame_pcs():
        if not _LOADER.search(gdb.solib_name(pc) or ""):
            return {"pc": pc, "thread": gdb.selected_thread().global_num}
    return {"error": "no frame outside the dynamic loader and libc"}


def _frame_pcs() -> list[int]:
    """The program counters of the selected thread's frames, as far as gdb unwinds."""
    pcs: list[int] = []
    frame = gdb.newest_frame()
    while frame is not None and len(pcs) < 64:
        pcs.append(frame.pc())
        try:
            frame = frame.older()
        except gdb.error:
            break
    return pcs


def _has_symbols(library: str) -> bool:
    try:
        gdb.lookup_objfile(library)
    except ValueError:
        return False
    return True


class MixdbgLoadCaller(JsonCommand):
    """mixdbg-load-caller REQUEST: ``{"pc": ..., "thread": N}``, where the library load the
    selected thread stopped in returns to (see ``load_caller``), or ``{"error": why}``."""

    def answer(self, words: list[str], request: Any) -> Any:
        return load_caller()


MixdbgTorchOperators("mixdbg-torch-operators")
MixdbgTorchKernels("mixdbg-torch-kernels")
MixdbgLoadCaller("mixdbg-load-caller")
