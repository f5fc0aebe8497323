"""How much gdb will know about a library: DWARF, a full symbol table, or only dynamic symbols.

That decides what the user can do with it: break at ``file:line`` and see locals (DWARF),
break on any function by name (``.symtab``), or only on exported functions (``.dynsym``).
Only ELF section headers and two tiny notes are read (``debugfiles``), never the DWARF or
the symbols themselves, so even torch's 434 MB ``libtorch_cpu.so`` takes milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mixdbg import debugfiles
from mixdbg.elfsections import ElfFormatError
from mixdbg.errors import DataError, NotFoundError

DWARF = "dwarf"
SYMTAB = "symtab"
DYNSYM = "dynsym"
NONE = "none"

DEFAULT_DEBUG_ROOT = debugfiles.DEFAULT_DEBUG_ROOT


@dataclass(frozen=True)
class DebugInfo:
    """What one ELF file (plus any separate debug file found for it) gives gdb."""

    path: Path
    level: str  # DWARF, SYMTAB, DYNSYM or NONE
    dwarf_file: Path | None  # where the DWARF is: ``path`` itself or a separate debug file
    build_id: str | None
    debuglink: str | None  # the file name in .gnu_debuglink, if any

    @property
    def file_line_breakpoints(self) -> bool:
        """Whether ``break file.c:123`` can resolve (needs the DWARF line table)."""
        return self.level == DWARF

    @property
    def locals_visible(self) -> bool:
        """Whether gdb can show arguments and local variables (needs DWARF)."""
        return self.level == DWARF

    @property
    def any_function_by_name(self) -> bool:
        """Whether every function, static ones included, can be broken on by name."""
        return self.level in (DWARF, SYMTAB)

    @property
    def exported_functions_by_name(self) -> bool:
        """Whether at least exported (dynamic) functions can be broken on by name."""
        return self.level != NONE


def classify(path: Path, debug_root: Path | None = None, search: debugfiles.Search | None = None) -> DebugInfo:
    """Classify ``path``: DWARF (its own or a separate debug file, found as gdb finds it:
    see ``debugfiles``), a full symbol table (its own or the debug file's), or ``.dynsym`` only.
    ``debug_root`` replaces gdb's debug directory (tests), ``search`` gives them all.

    Raises NotFoundError when the file does not exist and DataError when it is not ELF.
    """
    if search is None:
        search = debugfiles.Search((debug_root,)) if debug_root is not None else debugfiles.Search()
    try:
        files = debugfiles.symbol_files(path, search)
    except FileNotFoundError:
        raise NotFoundError(f"no such library: {path}") from None
    except (ElfFormatError, OSError) as err:
        raise DataError(f"{path} is not a readable ELF file: {err}") from None
    own = files[0][1]
    dwarf_file = next((file for file, facts in files[:2] if facts.dwarf), None)
    if dwarf_file is not None:
        level = DWARF
    elif any(facts.symtab for _, facts in files[:2]):
        level = SYMTAB
    elif own.sections.get(".dynsym") is not None and own.sections[".dynsym"].has_bytes:
        level = DYNSYM
    else:
        level = NONE
    return DebugInfo(path=path, level=level, dwarf_file=dwarf_file, build_id=own.build_id,
                     debuglink=own.debuglink)
