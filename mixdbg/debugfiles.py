"""Where a library's debug info is, found as gdb finds it: in the library itself, or in a
separate debug file (Debian ``-dbg``/``-dbgsym``, Fedora ``-debuginfo``, conda's, one a
user split off with ``objcopy --only-keep-debug``).

gdb's rules ("Separate Debug Files" in its manual): by build id, ``DIR/.build-id/xx/rest.debug``
in each of its debug directories (``show debug-file-directory``: ``/usr/lib/debug``), where
the file's own build id must match; then by the ``.gnu_debuglink`` name, beside the library,
in its ``.debug`` folder and under each debug directory. With debuginfod on (an opt-in of
mixdbg's: ``--debuginfod``), also its client's cache, ``BUILDID/debuginfo``. Every decision
mixdbg takes from symbols (which libraries gdb reads, ``mixdbg doctor``) asks this module,
so that they agree with each other and with gdb.

Only ELF headers and two small sections are read (``elfsections``, struct only): a library
load must not wait for pyelftools.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from mixdbg.elfsections import ElfFormatError, Section, build_id, link_name, read_sections

log = logging.getLogger(__name__)

#: gdb's debug directory unless it was built with another (``show debug-file-directory``).
DEFAULT_DEBUG_ROOT = Path("/usr/lib/debug")
#: Sections that carry DWARF (``.zdebug_info``: the old, GNU-style compressed one).
DWARF_SECTIONS = (".debug_info", ".zdebug_info")


@dataclass(frozen=True)
class Search:
    """Where separate debug files are looked for: gdb's debug directories, and the
    debuginfod client's cache when debuginfod is on."""

    directories: tuple[Path, ...] = (DEFAULT_DEBUG_ROOT,)
    debuginfod_cache: Path | None = None

    @classmethod
    def of_gdb(cls, debug_file_directory: str, debuginfod: bool) -> Search:
        """From gdb's ``debug-file-directory`` (colon-separated) and whether debuginfod is on."""
        directories = tuple(Path(part) for part in debug_file_directory.split(os.pathsep) if part)
        return cls(directories or (DEFAULT_DEBUG_ROOT,), debuginfod_client_cache() if debuginfod else None)


def debuginfod_client_cache() -> Path:
    """Where the debuginfod client keeps what it downloaded (libdebuginfod's rules)."""
    if os.environ.get("DEBUGINFOD_CACHE_PATH"):
        return Path(os.environ["DEBUGINFOD_CACHE_PATH"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "debuginfod_client"


@dataclass(frozen=True)
class ElfFacts:
    """The few facts of one ELF file that say where its debug info is."""

    sections: dict[str, Section]
    build_id: str | None
    debuglink: str | None
    debugaltlink: str | None

    @property
    def dwarf(self) -> bool:
        """Whether the file itself carries DWARF."""
        return any((found := self.sections.get(name)) is not None and found.has_bytes for name in DWARF_SECTIONS)

    @property
    def symtab(self) -> bool:
        """Whether the file has a full symbol table (static functions included)."""
        found = self.sections.get(".symtab")
        return found is not None and found.has_bytes


def read_facts(path: Path) -> ElfFacts:
    """Read ``path``'s section table, build id and debug links; raise OSError or ElfFormatError."""
    with path.open("rb") as stream:
        sections = read_sections(stream)
        return ElfFacts(sections, build_id(stream, sections), link_name(stream, sections, ".gnu_debuglink"),
                        link_name(stream, sections, ".gnu_debugaltlink"))


def candidates(path: Path, build: str | None, debuglink: str | None, search: Search = Search()) -> list[Path]:
    """Where gdb looks for ``path``'s separate debug file, in its order: by build id in each
    debug directory (then the debuginfod cache), then by debuglink name beside the library,
    in its ``.debug`` folder, and under each debug directory."""
    found = []
    if build and len(build) > 2:
        found += [root / ".build-id" / build[:2] / f"{build[2:]}.debug" for root in search.directories]
        if search.debuginfod_cache is not None:
            found.append(search.debuginfod_cache / build / "debuginfo")
    if debuglink:
        directory = path.resolve().parent
        found += [directory / debuglink, directory / ".debug" / debuglink]
        found += [root / directory.relative_to(directory.anchor) / debuglink for root in search.directories]
    return found


def separate_debug_file(path: Path, facts: ElfFacts, search: Search = Search()) -> tuple[Path, ElfFacts] | None:
    """The separate debug file gdb would load for ``path`` (described by ``facts``) and its
    facts, or None. gdb looks for one only when the library has no DWARF of its own. A file
    found by build id must carry that build id (gdb checks it too); one that holds neither
    DWARF nor a symbol table is no use and is passed over."""
    if facts.dwarf:
        return None
    own = path.resolve()
    by_build_id = len(candidates(path, facts.build_id, None, search))
    for index, candidate in enumerate(candidates(path, facts.build_id, facts.debuglink, search)):
        if not candidate.is_file() or candidate.resolve() == own:
            continue
        try:
            other = read_facts(candidate)
        except (OSError, ElfFormatError) as err:
            log.info("debug file %s: %s", candidate, err)
            continue
        if index < by_build_id and other.build_id != facts.build_id:
            continue
        if other.dwarf or other.symtab:
            return candidate, other
    return None


def alt_file(debug_file: Path, facts: ElfFacts) -> Path | None:
    """The dwz file a debug file shares strings and types with (``.gnu_debugaltlink``: an
    absolute path, or one relative to the debug file's folder), if it exists."""
    if not facts.debugaltlink:
        return None
    alt = debug_file.parent / facts.debugaltlink
    return alt if alt.is_file() else None


def symbol_files(path: Path, search: Search = Search()) -> list[tuple[Path, ElfFacts]]:
    """``path`` and each file gdb reads its symbols and DWARF from besides it: the separate
    debug file, and the dwz file of whichever holds the DWARF, where they exist (each with
    its facts). Raises OSError or ElfFormatError for ``path`` itself only."""
    facts = read_facts(path)
    files = [(path, facts)]
    separate = separate_debug_file(path, facts, search)
    if separate is not None:
        files.append(separate)
    holder, holder_facts = files[-1]
    alt = alt_file(holder, holder_facts)
    if alt is not None:
        try:
            files.append((alt, read_facts(alt)))
        except (OSError, ElfFormatError) as err:
            log.info("dwz file %s: %s", alt, err)
    return files


#: Sections gdb reads to know a library's functions and lines.
_SYMBOL_SECTIONS = (".symtab", ".strtab", ".dynsym", ".dynstr")


def symbol_bytes(path: Path, search: Search = Search()) -> tuple[int, bool]:
    """How many bytes of DWARF and symbol tables gdb reads for ``path`` (as the files hold
    them: compressed DWARF counts compressed), and whether there is DWARF among them;
    (0, False) when it cannot be read."""
    try:
        files = symbol_files(path, search)
    except (OSError, ElfFormatError):
        return 0, False
    size = sum(section.size for _, facts in files for name, section in facts.sections.items()
               if section.has_bytes and (name.startswith((".debug_", ".zdebug_")) or name in _SYMBOL_SECTIONS))
    return size, any(facts.dwarf for _, facts in files)
