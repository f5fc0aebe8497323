"""Runs inside gdb's embedded Python: stacks through libraries gdb has not read, unwound
from their stubs and named from their ELF symbol tables (``mixdbg.unwindstub``).

mixdbg tells gdb's helper which libraries it leaves unread (``mixdbg-unwind-only PATH
STUB``: a run that reports its stops and goes on, where reading ``libtorch_cpu.so`` would
cost more than the rest of the run). A stack walk adds their stubs (``add_stubs``) and
removes them when it is done (``remove_stubs``): left in place, a stub would overlap the
library if gdb read it later, and gdb then names none of its frames.
"""

from __future__ import annotations

import os
from typing import Any

import gdb  # type: ignore[import-not-found, import-untyped, unused-ignore]

from mixdbg.pytorch.gdb_requests import console
from mixdbg.unwindstub import SymbolTable, code_address, load_base

#: Library (real path) -> its stub, for the libraries mixdbg leaves unread.
_STUBS: dict[str, str] = {}
_TABLES: dict[str, SymbolTable] = {}
#: The stubs added for the current walk, by library: an address inside each (what removes it).
_ADDED: dict[str, int] = {}


def register(path: str, stub: str) -> None:
    """Library ``path`` is left unread: stacks unwind through it from ``stub``."""
    _STUBS[os.path.realpath(path)] = stub


def unwind_only(path: str) -> bool:
    """Whether library ``path`` is one mixdbg leaves unread (its stub stands for it)."""
    return os.path.realpath(path) in _STUBS


def add_stubs(paths: list[str]) -> list[str]:
    """Add the stubs of ``paths`` (unread libraries of the selected process) for one walk;
    those whose stub could not be added (gdb must read them)."""
    pid = gdb.selected_inferior().pid
    failed = []
    for path in paths:
        real = os.path.realpath(path)
        base = load_base(pid, path)
        if real in _ADDED:  # another thread's walk added it
            continue
        try:
            if base is None:
                raise gdb.error(f"{path} is not mapped")
            gdb.execute(f"add-symbol-file {_STUBS[real]} -o {base:#x}", to_string=True)
            _ADDED[real] = base + code_address(_STUBS[real])
        except (gdb.error, OSError) as err:  # e.g. the stub was removed meanwhile
            gdb.write(f"mixdbg: adding an unwind stub: {err}\n", gdb.STDLOG)
            failed.append(path)
    return failed


def remove_stubs() -> None:
    """Remove the stubs the walk added."""
    while _ADDED:
        _, address = _ADDED.popitem()
        try:
            gdb.execute(f"remove-symbol-file -a {address:#x}", to_string=True)
        except gdb.error as err:
            gdb.write(f"mixdbg: removing an unwind stub: {err}\n", gdb.STDLOG)


def function(pc: int) -> tuple[str, int] | None:
    """The name (demangled, as gdb shows it) and start of the function holding ``pc`` in an
    unread library, from the library's ELF symbol table; None elsewhere."""
    path = gdb.solib_name(pc)
    if path is None or not unwind_only(path):
        return None
    base = load_base(gdb.selected_inferior().pid, path)
    table = _TABLES.setdefault(os.path.realpath(path), SymbolTable(os.path.realpath(path)))
    found = table.function_at(pc - base) if base is not None else None
    if found is None:
        return None
    mangled, start = found
    return _demangled(mangled), base + start if base is not None else 0


def _demangled(name: str) -> str:
    """``name`` as gdb shows a C++ function's (gdb's own demangler)."""
    if not name.startswith("_Z"):
        return name
    try:
        return console(f"demangle -l c++ -- {name}").strip() or name
    except gdb.error:
        return name


def frame_name(frame: Any) -> str | None:
    """gdb's name for ``frame``, else its function's from an unread library's symbol table."""
    name = frame.name()
    if name is not None:
        return str(name)
    found = function(frame.pc())
    return found[0] if found is not None else None


class MixdbgUnwindOnly(gdb.Command):  # type: ignore[misc]
    """mixdbg-unwind-only PATH STUB: library PATH is left unread; stacks use STUB."""

    def __init__(self) -> None:
        super().__init__("mixdbg-unwind-only", gdb.COMMAND_FILES)

    def invoke(self, argument: str, from_tty: bool) -> None:
        path, stub = argument.strip().rsplit(" ", 1)
        register(path, stub)


MixdbgUnwindOnly()
