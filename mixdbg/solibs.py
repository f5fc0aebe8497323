"""Which shared libraries gdb reads symbols for: only those that can hold a breakpoint (or,
read by gdb's helper at a stop, appear in a stack being shown).

gdb reads every library's symbols as it loads (``auto-solib-add on``), and after each read
it re-resolves every breakpoint by name in every library. Both costs add up in a program
that loads hundreds of libraries, as ``import torch`` does: reading ``libtorch_cpu.so``
takes 2.3 s; gdb 18.1 re-resolving the 42 kernel names of ``op:aten::add`` at each later
load took ``import torch`` from 10 s to 53-71 s (measured, ``gdb -batch``); with later
libraries left unread, 8-10 s. So the session keeps ``auto-solib-add off`` and stops at
each load (``stop-on-solib-events``); at that stop ``wanted`` picks the new libraries a
breakpoint could be in, from their ELF string tables (a name's last component, e.g.
``randn`` for ``at::native::randn``, must occur there; ``FILE:LINE`` needs DWARF), and
only those are read. A library that is read re-resolves the breakpoints, as before.

A launched program's libraries loaded before its first line (the interpreter's) are read
the same way before the gate opens, and all the others once the session loop starts, while
the program runs (``read_all``): a stack or a step may need them, no breakpoint can. Which
names a library holds is kept across sessions (``LibraryFacts``), keyed by the file's
identity. Where nobody waits at a stop (``--json``, ``--no-prompt``), a library bound by
address whose symbols are only a large ELF symbol table is never read: stacks go through
it with a stub of its unwind tables (``unwindstub``).

A fork child is the exception: gdb looks for its libraries once, as it creates it, and
reads them only under ``auto-solib-add on``; gdb's helper turns that on as the inferior is
added (``mixdbg-fork-symbols``), and ``on_load`` turns it off again. gdb 13 keeps reading
every library (``configure``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from mixdbg import debugfiles, indexcache, unwindstub
from mixdbg.breakpoints import BreakSpec
from mixdbg.elfsections import ElfFormatError, section_contains
from mixdbg.engine.progress import ProgressWatch
from mixdbg.events import Event
from mixdbg.gdbmi import SLOW_COMMAND_TIMEOUT, GdbCommandError, GdbMi, mi_quote
from mixdbg.gdbtext import library_regex
from mixdbg.rundir import cache_directory, keep_cached, read_cached

log = logging.getLogger(__name__)

#: The first gdb that reads only the symbols breakpoints need (see ``SymbolReader.configure``).
SELECTIVE_GDB = 14
#: ELF sections whose bytes hold symbol names, and those that hold DWARF's names (searched
#: second: they may be compressed, and a function's name is most often in the first).
_NAME_SECTIONS = (".dynstr", ".strtab")
_DWARF_NAME_SECTIONS = (".debug_str", ".zdebug_str")
#: Sections whose presence (in the library or its debug file) means FILE:LINE breakpoints
#: may resolve in the library.
_LINE_SECTIONS = (".debug_line", ".zdebug_line")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
#: The cache of which names libraries hold (see ``LibraryFacts``), and its bound.
NAMES_CACHE = "library-names-v2.json"
CACHE_ENTRIES = 20000


def name_key(spec: BreakSpec) -> bytes | None:
    """The bytes a library's symbol names must contain to define ``spec``'s function: the
    last identifier of its name (``randn`` for ``at::native::randn(long)``); None when the
    spec is not a plain function name (a line, an address, an operator)."""
    if spec.is_line or spec.is_op or spec.location.startswith("*"):
        return None
    name = spec.location.split("(", 1)[0].removesuffix("@plt")
    identifiers = _IDENTIFIER.findall(name.rsplit("::", 1)[-1])
    return identifiers[-1].encode() if identifiers else None


class LibraryFacts:
    """What a library's ELF files say (the library and the debug files gdb reads with it:
    see ``debugfiles``), read once per file (by device, inode, mtime and size) and name
    asked about: the answers, not the files' bytes. Whether a name occurs is kept across
    sessions in mixdbg's cache as ``cache``: in ``libtorch_cpu.so``'s 76 MB of names, each
    name that is not there costs a 16-35 ms scan at every run. ``search`` says where
    separate debug files are (gdb's debug directories; see ``SymbolReader.configure``)."""

    def __init__(self, cache: str | None = None, search: debugfiles.Search | None = None) -> None:
        self._cache = cache  # its name in mixdbg's cache, if kept there
        self.search = search or debugfiles.Search()
        self._defines: dict[str, bool] | None = None  # "identity key" -> answer, loaded lazily
        self._dirty = False
        self._lines: dict[str, bool] = {}
        self._files: dict[str, tuple[str, list[tuple[Path, debugfiles.ElfFacts]]] | None] = {}

    def defines(self, path: str, key: bytes) -> bool:
        """Whether ``key`` occurs in the names of the library's symbols or DWARF (those of
        its separate debug file included: a stripped library's static functions and real
        names are only there). Unreadable: True, so that gdb decides."""
        found = self._symbol_files(path)
        if found is None:
            return True
        identity, files = found
        known = self._known()
        entry = f"{identity} {key.decode('ascii', 'replace')}"
        if entry not in known:
            known[entry] = _names_hold(files, key)
            self._dirty = True
        return known[entry]

    def _known(self) -> dict[str, bool]:
        if self._defines is None:
            loaded = read_cached(self._cache) if self._cache is not None else None
            self._defines = {str(k): bool(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
        return self._defines

    def save(self) -> None:
        """Keep the answers found since the last save for later sessions."""
        if self._cache is None or not self._dirty or self._defines is None:
            return
        self._dirty = False
        if len(self._defines) > CACHE_ENTRIES:  # old libraries' answers go; later runs ask again
            self._defines.clear()
        keep_cached(self._cache, self._defines)

    def has_lines(self, path: str) -> bool:
        """Whether the library has line tables, its own or a separate debug file's (or
        debuginfod may bring them: it is on, and the library has a build id)."""
        found = self._symbol_files(path)
        if found is None:
            return True
        identity, files = found
        if identity not in self._lines:
            self._lines[identity] = any(
                (section := facts.sections.get(name)) is not None and section.has_bytes
                for _, facts in files for name in _LINE_SECTIONS) or self._may_download(files)
        return self._lines[identity]

    def identity(self, path: str) -> str | None:
        """The library as gdb would read it now: its file's identity and its debug files'
        (and whether debuginfod may bring some); None when it cannot be read."""
        found = self._symbol_files(path)
        return found[0] if found is not None else None

    def _may_download(self, files: list[tuple[Path, debugfiles.ElfFacts]]) -> bool:
        """Whether debuginfod could bring the library's debug info (none found here)."""
        return self.search.debuginfod_cache is not None and len(files) == 1 and files[0][1].build_id is not None

    def _symbol_files(self, path: str) -> tuple[str, list[tuple[Path, debugfiles.ElfFacts]]] | None:
        """The library's identity (with its debug files') and the files gdb reads for it;
        None when the library cannot be read."""
        library = _identity(path)
        if library is None:
            return None
        if library not in self._files:
            try:
                files = debugfiles.symbol_files(Path(path), self.search)
            except (OSError, ElfFormatError) as err:
                log.info("symbol files of %s: %s", path, err)
                self._files[library] = None
            else:
                identities = [_identity(str(file)) or str(file) for file, _ in files[1:]]
                if self._may_download(files):
                    identities.append("debuginfod")
                self._files[library] = (" ".join([library, *identities]), files)
        return self._files[library]


def _identity(path: str) -> str | None:
    """The file as it is now: a change of content changes its mtime or size."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return f"{os.path.realpath(path)}:{status.st_dev}:{status.st_ino}:{status.st_mtime_ns}:{status.st_size}"


def _names_hold(files: list[tuple[Path, debugfiles.ElfFacts]], key: bytes) -> bool:
    """Whether ``key`` occurs in the name sections of ``files`` (the symbol tables first,
    DWARF's strings only if they do not have it). True if one cannot be read or searched:
    gdb then decides; so is a library without any name section."""
    sections = [(file, facts.sections[name]) for pass_names in (_NAME_SECTIONS, _DWARF_NAME_SECTIONS)
                for file, facts in files for name in pass_names
                if name in facts.sections and facts.sections[name].has_bytes]
    if not sections:
        return True
    for file, section in sections:
        try:
            with open(file, "rb") as handle:
                found = section_contains(handle, section, key)
        except (OSError, ValueError) as err:
            log.info("symbol names of %s: %s", file, err)
            return True
        if found is None or found:
            return True
    return False


def added_libraries(payload: dict[str, Any]) -> list[str]:
    """The libraries a ``solib-event`` stop reports loaded (gdb gives paths, or tuples
    with a ``target-name``)."""
    paths = []
    for item in payload.get("added") or []:
        path = item.get("target-name") if isinstance(item, dict) else item
        if isinstance(path, str) and path:
            paths.append(path)
    return paths


def wanted(facts: LibraryFacts, path: str, specs: Iterable[BreakSpec], kernel_library: str | None) -> bool:
    """Whether library ``path`` can hold one of ``specs`` (``kernel_library``: the file name
    of the library operator breakpoints bind in, if any exist)."""
    functions, other = reasons(facts, path, specs, kernel_library)
    return other or bool(functions)


def reasons(facts: LibraryFacts, path: str, specs: Iterable[BreakSpec],
            kernel_library: str | None) -> tuple[list[BreakSpec], bool]:
    """Why gdb should read library ``path``: the function specs whose names it holds, and
    whether anything else needs it (a FILE:LINE with its line tables, an address, the
    kernel library of operator breakpoints by name)."""
    functions, other = [], kernel_library is not None and os.path.basename(path) == kernel_library
    for spec in specs:
        key = name_key(spec)
        if key is not None and facts.defines(path, key):
            functions.append(spec)
        elif spec.is_line and facts.has_lines(path):
            other = True
        elif key is None and not spec.is_line and not spec.is_op:
            other = True  # an address or other location: let gdb look everywhere
    return functions, other


#: What a ``Binder`` did with a library's breakpoints.
BOUND, ABSENT, UNKNOWN = "bound", "absent", "unknown"


class Binder(Protocol):
    """Function breakpoints bound by address at a library's load, in the stopped process
    (``engine.address_breaks``), instead of gdb reading the library then."""

    def bind(self, library: str, specs: list[BreakSpec]) -> str:
        """Bind ``specs`` in ``library`` where gdb put them before: ``bound``, ``absent``
        (gdb found none of them there), or ``unknown`` (gdb must read the library)."""

    def learn(self, libraries: list[str], specs: list[BreakSpec]) -> None:
        """gdb has just read ``libraries``: keep where it put ``specs`` there."""


class SymbolReader:
    """Reads the symbols of the libraries a session's breakpoints can be in, as they load."""

    def __init__(self, gdb: GdbMi, emit: Callable[[Event], None] | None = None) -> None:
        self._gdb = gdb
        self._facts = LibraryFacts(NAMES_CACHE)
        self.selective = True  # False: gdb reads every library (gdb before SELECTIVE_GDB)
        self._progress = ProgressWatch(emit or (lambda event: None), self.symbol_bytes)
        self.deferred: list[str] = []  # libraries to read once the program runs again
        #: Per gdb inferior ("i1"): the libraries the session has seen loaded there, and the
        #: inferiors where gdb may have taken some into its list unseen (``read_running``).
        self._seen: dict[str, set[str]] = {}
        self._swept: set[str] = set()
        #: Libraries read with DWARF that gdb's index cache has no entry for (``indexcache``).
        self.unindexed: set[str] = set()
        #: Leave heavy libraries bound by address unread (``unwindstub``): set where nobody
        #: waits at a stop (a run that reports its stops and goes on).
        self.unwind_only = False
        #: Called before gdb reads libraries where it must resolve these function specs'
        #: names itself (the breakpoint table gives back the names it withheld).
        self.resolving: Callable[[list[BreakSpec]], None] = lambda specs: None

    def search(self) -> debugfiles.Search:
        """Where this gdb finds separate debug files."""
        return self._facts.search

    def identity(self, path: str) -> str | None:
        """Library ``path`` with the files gdb reads its symbols from, as they are now
        (``LibraryFacts.identity``)."""
        return self._facts.identity(path)

    def symbol_bytes(self, path: str) -> tuple[int, bool]:
        """Bytes of DWARF and symbol tables gdb reads for library ``path`` (its debug files'
        too), and whether it has DWARF."""
        return debugfiles.symbol_bytes(Path(path), self._facts.search)

    def start(self) -> None:
        """Look for separate debug files where this gdb does (its ``debug-file-directory``;
        the debuginfod client's cache if the user turned debuginfod on)."""
        try:
            directories = str(self._gdb.command("-gdb-show debug-file-directory").get("value", ""))
        except GdbCommandError as err:
            log.info("gdb's debug directories: %s", err.gdb_message)
            directories = ""
        self._facts.search = debugfiles.Search.of_gdb(directories, self._gdb.debuginfod)

    def configure(self) -> None:
        """From now on gdb reads no library's symbols by itself and stops at each load,
        except for a fork child's libraries (gdb's helper: ``mixdbg-fork-symbols``). On
        gdb before 14 gdb reads every library, as it always did: gdb 13.1 died in 7 of 50
        pool runs with the extra stops, 5 of 100 without (docs/reliability.md)."""
        self.selective = self._gdb.major_version() >= SELECTIVE_GDB
        if not self.selective:
            self._gdb.command("-gdb-set auto-solib-add on")
            return
        self._gdb.console("mixdbg-fork-symbols")
        self._gdb.command("-gdb-set auto-solib-add off")
        self._gdb.command("-gdb-set stop-on-solib-events 1")
        # what the debuggee has now (held at its gate, or stopped by the attach): seen
        self._seen.setdefault("i1", set(self.listed()))

    def on_load(self, added: Iterable[str], specs: list[BreakSpec], kernel_library: str | None,
                binder: Binder | None = None) -> None:
        """At a library-load stop: read the symbols of the new libraries ``wanted`` picks,
        but those whose breakpoints ``binder`` binds where gdb put them before
        (``read_deferred`` reads them); ``binder`` learns where gdb puts them in the others."""
        if not self.selective:
            return
        self._gdb.command("-gdb-set auto-solib-add off")  # on again if a fork child was created
        now, named, absent = [], [], []
        for path in added:
            functions, other = reasons(self._facts, path, specs, kernel_library)
            bound = binder.bind(path, functions) if functions and not other and binder is not None else UNKNOWN
            if bound == BOUND:
                self.deferred.append(path)  # bound by address; gdb reads it while the program runs
            elif bound == ABSENT:
                absent.append(path)
            elif functions or other:
                now.append(path)
                named += [spec for spec in functions if spec not in named]
        if self.deferred:
            # read with them: a library that names a function it does not define is most
            # often its caller, in the stack of its stop, and gdb resolves the names once for
            # both (librados read after libceph-common alone: 11 s more at the stop)
            self.deferred += absent
        if now and named:
            self.resolving(named)
        self.read(*now)
        if binder is not None and named:
            binder.learn(now, named)
        self._facts.save()

    def read_deferred(self, binder: Binder | None, specs: list[BreakSpec], inferior: str) -> None:
        """Read the libraries whose breakpoints were bound by address at their load (the
        program runs meanwhile: a stop in one waits for gdb to finish, then shows its
        frames); ``binder`` checks its places against gdb's."""
        deferred, self.deferred = self.deferred, []
        if self.unwind_only:
            deferred = [path for path in deferred if not self._leave_unread(path)]
        if deferred:
            self.read_running(inferior, *deferred)
        if binder is not None and deferred:
            binder.learn(deferred, [spec for spec in specs if name_key(spec) is not None])

    def _leave_unread(self, path: str) -> bool:
        """Whether gdb's read of ``path`` would be mostly minimal symbols (``unwindstub.heavy``:
        libtorch_cpu's 530,000, 4-5 s of gdb's CPU, half of the seed run under gdb -batch):
        then gdb's helper unwinds a stack through it from a stub of its unwind tables and
        names its frames from its ELF symbol table, and gdb does not read it."""
        if self._gdb.debuginfod or not unwindstub.heavy(path) or self.symbol_bytes(path)[1]:
            return False  # DWARF (a separate debug file's, or debuginfod's): gdb reads it
        identity = _identity(path) or path  # a stub per file as it is now
        name = f"{os.path.basename(path)}-{hashlib.sha1(identity.encode()).hexdigest()[:16]}.unwind"
        try:
            stub = unwindstub.write_stub(path, cache_directory() / "unwind-stubs" / name)
        except (OSError, ElfFormatError) as err:
            log.info("unwind stub of %s: %s", path, err)
            return False
        self._gdb.console(f"mixdbg-unwind-only {path} {stub}")
        return True

    def read_running(self, inferior: str, *paths: str) -> None:
        """Read ``paths`` (every loaded library: none given) while the program runs in
        ``inferior``. gdb re-reads the program's list of libraries for such a command (and
        for a listing): one the program maps meanwhile is in gdb's list when its load stop
        comes, and that stop reports no new library (measured: libtorch_python.so and
        libtorch_cpu.so, loaded while gdb read _C.so, were never examined, and their
        breakpoints never bound; so was, 4 runs in 6, a library loaded while gdb read every
        library after the start). ``unseen`` finds them at the next stop there."""
        self._swept.add(inferior)
        if paths:  # in that process: gdb has selected whichever stopped last, meanwhile
            self.read(*paths, inferior=inferior)
            return
        self._sharedlibrary(self.unread(), "sharedlibrary", inferior)

    def swept(self, inferior: str) -> bool:
        """Whether gdb may have taken libraries of ``inferior`` into its list unseen."""
        return inferior in self._swept

    def unseen(self, inferior: str, added: list[str]) -> list[str]:
        """At a stop in ``inferior`` (the process stopped there): ``added`` and the loaded
        libraries the session has not seen there, which gdb took in during a read while the
        program ran. The first stop in a process only notes what it has."""
        if inferior not in self._seen:
            self._seen[inferior] = set(self.listed()) - set(added)
        elif inferior in self._swept:
            added = added + [path for path in self.listed() if path not in self._seen[inferior] and path not in added]
        self._swept.discard(inferior)
        self._seen[inferior].update(added)
        return added

    def read(self, *paths: str, inferior: str | None = None) -> None:
        """Read the symbols of loaded libraries ``paths`` in process ``inferior`` (default:
        the selected one), in one command: gdb re-resolves the breakpoints once after it,
        not once per library (for a C++ constructor's name in librados and libceph-common,
        read one by one, gdb expanded 6218 compilation units; read together, 2685). A
        console command, not gdb's Python: only then does MI report the breakpoints it resolves."""
        if not paths:
            return
        self._sharedlibrary(list(paths), "sharedlibrary " + r"\|".join(map(library_regex, paths)), inferior)

    def _sharedlibrary(self, paths: list[str], command: str, inferior: str | None) -> None:
        """Run ``command`` (a ``sharedlibrary``) reading ``paths`` in ``inferior``, with gdb's
        index cache read but, for libraries not in it yet, not written (``indexcache``)."""
        uncached = [path for path in paths if indexcache.uncached(path, self._facts.search)]
        where = f" --thread-group {inferior}" if inferior else ""
        try:
            if uncached:
                self._gdb.command("-gdb-set index-cache enabled off")
                self.unindexed.update(uncached)
            with self._progress.reading(paths):
                self._gdb.command(f"-interpreter-exec{where} console {mi_quote(command)}", SLOW_COMMAND_TIMEOUT)
        except GdbCommandError as err:
            log.info("reading the symbols of %s: %s", ", ".join(paths), err.gdb_message)
        finally:
            if uncached:
                self._gdb.command("-gdb-set index-cache enabled on")

    def read_all(self, inferior: str) -> None:
        """Read the symbols of every loaded library not read yet, while the program runs in
        ``inferior`` (a stack or a step may go through any of them; see ``read_running``)."""
        self.read_running(inferior)

    def listed(self) -> dict[str, bool]:
        """The libraries gdb knows the selected process has loaded, and whether it has read
        their symbols."""
        try:
            listed = self._gdb.command("-file-list-shared-libraries").get("shared-libraries", [])
        except GdbCommandError as err:
            log.info("listing libraries: %s", err.gdb_message)
            return {}
        return {str(library["target-name"]): library.get("symbols-loaded") != "0" for library in listed
                if library.get("target-name")}

    def unread(self) -> list[str]:
        """The loaded libraries whose symbols gdb has not read (in the selected process)."""
        return [path for path, loaded in self.listed().items() if not loaded]

    def read_unread(self, specs: list[BreakSpec], kernel_library: str | None) -> None:
        """A breakpoint added later: read the loaded libraries it can be in that gdb has
        not read yet."""
        paths = [path for path in self.unread() if wanted(self._facts, path, specs, kernel_library)]
        if paths:
            self.resolving(specs)
        self.read(*paths)
        self._facts.save()
