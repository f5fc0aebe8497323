"""How much gdb will know about a library: DWARF, a full symbol table, or only dynamic symbols.

That decides what the user can do with it: break at ``file:line`` and see locals (DWARF),
break on any function by name (``.symtab``), or only on exported functions (``.dynsym``).
Only ELF section headers and two tiny notes are read (with pyelftools), never the DWARF or the
symbols themselves, so even torch's 434 MB ``libtorch_cpu.so`` takes milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mixdbg.errors import DataError, NotFoundError

DWARF = "dwarf"
SYMTAB = "symtab"
DYNSYM = "dynsym"
NONE = "none"

DEFAULT_DEBUG_ROOT = Path("/usr/lib/debug")


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


@dataclass(frozen=True)
class _Sections:
    """The few facts read from one file's section headers."""

    dwarf: bool
    symtab: bool
    dynsym: bool
    build_id: str | None
    debuglink: str | None


def _read_sections(path: Path) -> _Sections:
    """Read the section headers of ``path`` (and the build-id note and debuglink name)."""
    # pyelftools here, not at the top: its import cost mixdbg dap's start 35 ms of CPU
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import NoteSection
    try:
        with path.open("rb") as stream:
            elf = ELFFile(stream)
            present = {}
            for section in elf.iter_sections():
                # NOBITS: a placeholder, e.g. the code sections in a separate debug file.
                if section["sh_type"] != "SHT_NOBITS" and section["sh_size"] > 0:
                    present[section.name] = section
            build_id = None
            note = present.get(".note.gnu.build-id")
            if isinstance(note, NoteSection):
                build_id = next((n["n_desc"] for n in note.iter_notes() if n["n_type"] == "NT_GNU_BUILD_ID"),
                                None)
            link = present.get(".gnu_debuglink")
            debuglink = link.data().split(b"\0", 1)[0].decode(errors="replace") if link is not None else None
            return _Sections(
                dwarf=".debug_info" in present or ".zdebug_info" in present,
                symtab=".symtab" in present,
                dynsym=".dynsym" in present,
                build_id=build_id,
                debuglink=debuglink or None,
            )
    except FileNotFoundError:
        raise NotFoundError(f"no such library: {path}") from None
    except (ELFError, OSError) as err:
        raise DataError(f"{path} is not a readable ELF file: {err}") from None


def separate_debug_candidates(path: Path, build_id: str | None, debuglink: str | None,
                              debug_root: Path = DEFAULT_DEBUG_ROOT) -> list[Path]:
    """Where gdb looks for a separate debug file: by build-id, then by debuglink name.

    Mirrors gdb's "Separate Debug Files" rules: ``<root>/.build-id/ab/cdef….debug``, then
    ``<dir>/<link>``, ``<dir>/.debug/<link>`` and ``<root>/<dir>/<link>``.
    """
    candidates = []
    if build_id and len(build_id) > 2:
        candidates.append(debug_root / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug")
    if debuglink:
        directory = path.resolve().parent
        candidates += [directory / debuglink, directory / ".debug" / debuglink,
                       debug_root / directory.relative_to(directory.anchor) / debuglink]
    return candidates


def classify(path: Path, debug_root: Path = DEFAULT_DEBUG_ROOT) -> DebugInfo:
    """Classify ``path``: DWARF (its own or a separate debug file), ``.symtab`` only, or ``.dynsym`` only.

    Raises NotFoundError when the file does not exist and DataError when it is not ELF.
    """
    own = _read_sections(path)
    dwarf_file = path if own.dwarf else None
    if dwarf_file is None:
        for candidate in separate_debug_candidates(path, own.build_id, own.debuglink, debug_root):
            if candidate.is_file() and candidate.resolve() != path.resolve() and _has_dwarf(candidate):
                dwarf_file = candidate
                break
    if dwarf_file is not None:
        level = DWARF
    elif own.symtab:
        level = SYMTAB
    elif own.dynsym:
        level = DYNSYM
    else:
        level = NONE
    return DebugInfo(path=path, level=level, dwarf_file=dwarf_file, build_id=own.build_id,
                     debuglink=own.debuglink)


def _has_dwarf(candidate: Path) -> bool:
    """Whether a separate debug file really carries DWARF (a broken one is simply not used)."""
    try:
        return _read_sections(candidate).dwarf
    except (DataError, NotFoundError):
        return False
