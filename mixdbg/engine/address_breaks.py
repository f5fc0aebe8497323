"""Function breakpoints put where gdb put them before, so that the program need not wait at
a library's load while gdb reads the library.

``break NAME`` makes gdb read a library's symbols when it loads, with the program stopped:
2.3 s to 7 s for ``libtorch_cpu.so``, seconds for a big C++ library's DWARF. Where a name's
locations are in a library is a fact of that file and that gdb: after gdb read the library
and placed the breakpoint, the session keeps them (``Places``: each location's offset in the
library and gdb's own text for it, by the identity of the file and of its debug files, gdb's
version and the name). At a later load of the same file, the session puts one gdb breakpoint
at each known address, in that process only, and lets the program run; gdb then reads the
library while the program runs (``SymbolReader``'s deferred reads), its own locations of the
name join these at the same addresses, and a known place gdb no longer finds is dropped (and
forgotten). Where the name's own gdb breakpoint has no place yet, the breakpoint table
withholds it meanwhile, so that gdb does not resolve the name again in the library
(``BreakpointTable.withhold``).

This needs breakpoints of one process (gdb 15 and later: the same address in another
process is other code), unless the session follows no child. Per process, as operator
kernels are (``pytorch.opbreaks``, gdb's helper ``mixdbg-kernels``): a fork child gets
copies of its parent's before it runs, and a process that execs loses its own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mixdbg.breakpoints import Breakpoint, BreakSpec, Location, locations_from_mi
from mixdbg.elfsections import ElfFormatError, first_load_bias
from mixdbg.gdbmi import GdbCommandError, GdbMi
from mixdbg.rundir import keep_cached, read_cached

log = logging.getLogger(__name__)

#: Inserts a gdb breakpoint for a spec at ``*ADDRESS`` in one inferior ("i2"); its MI ``bkpt``.
Insert = Callable[[BreakSpec, bool, str, "str | None"], dict[str, Any]]
#: The first gdb with breakpoints of one inferior (``-break-insert -g``).
PER_PROCESS_GDB = 15
#: The cache of places, and its bound.
CACHE = "breakpoint-places-v2.json"
CACHE_ENTRIES = 5000


@dataclass(frozen=True)
class Place:
    """Where gdb put a location of a name in a library: its offset from the library's load
    address, and gdb's text for it."""

    offset: int
    function: str | None
    file: str | None
    line: int | None


@dataclass(frozen=True)
class LibraryMapping:
    """Where a process has a library: the address its symbol values are relative to, and
    the range its mappings cover."""

    base: int
    start: int
    end: int


class AddressBreakpoints:
    """The function breakpoints of one session bound at known places, process by process."""

    def __init__(self, gdb: GdbMi, insert: Insert, inferior_of: Callable[[int], str | None],
                 by_address: bool, identity: Callable[[str], str | None], cache: str | None = CACHE) -> None:
        self._gdb = gdb
        self._identity = identity  # a library's, with its debug files' (SymbolReader.identity)
        self._insert = insert
        self._inferior_of = inferior_of
        self._by_address = by_address  # the session follows no child: one process, ever
        self._cache = cache
        self._places: dict[str, list[list[Any]]] | None = None  # key -> [[offset, function, file, line]]
        self._dirty = False
        self._version: str | None = None
        self._owners: dict[int, int] = {}  # gdb number of an address breakpoint -> user breakpoint
        self._homes: dict[int, str] = {}  # its inferior ("i2"; "*": any, following no child)
        self._libraries: dict[int, str] = {}  # the library it is in (real path)
        self._bound: set[tuple[int, str, str]] = set()  # (user breakpoint, inferior, library) done

    def usable(self) -> bool:
        """Whether addresses can stand for names in this session (see the module doc)."""
        return self._by_address or self._gdb.major_version() >= PER_PROCESS_GDB

    # --- what gdb found before ----------------------------------------------------------

    def known(self, library: str, specs: list[BreakSpec]) -> dict[str, list[Place]] | None:
        """Where gdb put each of ``specs`` in ``library`` before (maybe nowhere), or None
        when one of them is not known: gdb must read the library."""
        if not self.usable():
            return None
        found = {}
        for spec in specs:
            entry = self._load().get(self._key(library, spec.location))
            if entry is None:
                return None
            found[spec.location] = [Place(int(offset), function, file, line) for offset, function, file, line in entry]
        return found

    def learn(self, pid: int, libraries: list[str], breakpoints: list[Breakpoint]) -> list[int]:
        """gdb has just read ``libraries`` in process ``pid``: keep where it put each of
        ``breakpoints`` in them (asked of gdb: its records of the change are not handled
        yet); the address breakpoints there that gdb's own places no longer include, to delete."""
        if not self.usable():
            return []
        inferior = self._inferior_of(pid)
        read = self._read_in(inferior)  # a library gdb has not read there holds no location yet
        mappings = {os.path.realpath(library): mapping_of(pid, library) for library in libraries
                    if os.path.realpath(library) in read}
        stale = []
        for breakpoint in breakpoints:
            if breakpoint.name_number is None:
                continue  # its name is withheld (breakpoint_table): gdb has no places of its own
            try:
                table = self._gdb.command(f"-break-info {breakpoint.name_number}").get("BreakpointTable", {})
            except GdbCommandError as err:
                log.info("breakpoint %d: %s", breakpoint.number, err.gdb_message)
                continue
            locations = [location for bkpt in table.get("body", []) for location in locations_from_mi(bkpt)
                         if not location.is_plt and location.address
                         and (not location.inferiors or inferior is None or inferior in location.inferiors)]
            for library, mapping in mappings.items():
                if mapping is not None:
                    self._remember(library, breakpoint.spec, mapping, locations)
            addresses = {location.address for location in locations}
            stale += [number for number, placed in breakpoint.addressed.items()
                      if self._libraries.get(number) in mappings and self._homes.get(number) in (inferior, "*")
                      and not any(location.address in addresses for location in placed)]
        self.save()
        return stale

    def _read_in(self, inferior: str | None) -> set[str]:
        """The libraries whose symbols gdb has read in process ``inferior`` (real paths)."""
        where = f" --thread-group {inferior}" if inferior else ""
        try:
            listed = self._gdb.command(f"-file-list-shared-libraries{where}").get("shared-libraries", [])
        except GdbCommandError as err:
            log.info("listing libraries: %s", err.gdb_message)
            return set()
        return {os.path.realpath(str(library["target-name"])) for library in listed
                if library.get("symbols-loaded") == "1" and library.get("target-name")}

    def _remember(self, library: str, spec: BreakSpec, mapping: LibraryMapping, locations: list[Location]) -> None:
        inside = sorted({(int(str(loc.address), 16) - mapping.base, loc.function, loc.file, loc.line)
                         for loc in locations if mapping.start <= int(str(loc.address), 16) < mapping.end},
                        key=lambda place: place[0])
        key = self._key(library, spec.location)
        entry = [list(place) for place in inside]
        if self._load().get(key) != entry:
            self._load()[key] = entry
            self._dirty = True

    def _key(self, library: str, name: str) -> str:
        if self._version is None:
            try:
                minor = self._gdb.command("-data-evaluate-expression $_gdb_minor").get("value", "0")
            except GdbCommandError:
                minor = "?"
            self._version = f"{self._gdb.major_version()}.{minor}"
        # with its debug files: where gdb puts a breakpoint depends on them (after the
        # prologue by the line table, or by its own analysis without one), and a withheld
        # name (breakpoint_table) leaves gdb no place of its own to check a known one against
        identity = self._identity(library)
        return f"{identity or library + ' gone'} gdb {self._version} {name}"

    def _load(self) -> dict[str, list[list[Any]]]:
        if self._places is None:
            loaded = read_cached(self._cache) if self._cache is not None else None
            self._places = loaded if isinstance(loaded, dict) else {}
        return self._places

    def save(self) -> None:
        """Keep the places learned since the last save for later sessions."""
        if self._cache is None or not self._dirty or self._places is None:
            return
        self._dirty = False
        if len(self._places) > CACHE_ENTRIES:
            self._places.clear()
        keep_cached(self._cache, self._places)

    # --- breakpoints at those places ----------------------------------------------------

    def bind(self, pid: int, library: str, places: dict[str, list[Place]],
             breakpoints: list[Breakpoint]) -> list[Breakpoint]:
        """In process ``pid``, stopped at ``library``'s load: a gdb breakpoint at each
        known place of every user breakpoint; those that changed."""
        home = self._inferior_of(pid) if not self._by_address else None
        mapping = mapping_of(pid, library)
        if mapping is None or (home is None and not self._by_address):
            return []
        real = os.path.realpath(library)
        changed = []
        for breakpoint in breakpoints:
            known = places.get(breakpoint.spec.location, [])
            key = (breakpoint.number, home or "*", real)
            if not known or key in self._bound:
                continue
            self._bound.add(key)
            numbers = []
            try:
                for place in known:
                    bkpt = self._insert(breakpoint.spec, True, f"*{mapping.base + place.offset:#x}", home)
                    numbers.append(int(bkpt["number"]))
                    self._owners[numbers[-1]], self._homes[numbers[-1]] = breakpoint.number, home or "*"
                    self._libraries[numbers[-1]] = real
                    breakpoint.set_locations(numbers[-1], [_as_placed(location, place)
                                                           for location in locations_from_mi(bkpt)])
            finally:  # those inserted must be dropped at an exec even if a later one failed
                if home is not None and numbers:
                    self._gdb.console(f"mixdbg-kernels {home.lstrip('i')} {' '.join(map(str, numbers))}")
            changed.append(breakpoint)
        return changed

    def owner(self, gdb_number: int) -> int | None:
        """The user breakpoint an address breakpoint stands for, if it is one."""
        return self._owners.get(gdb_number)

    def owned(self) -> Container[int]:
        """The gdb numbers of every address breakpoint (gdb's helper copies them to forks)."""
        return self._owners

    def gdb_numbers(self, breakpoint: Breakpoint) -> list[int]:
        """The address breakpoints standing for ``breakpoint``."""
        return list(breakpoint.addressed)

    def adopt(self, original: int, copy: int, home: str, breakpoints: dict[int, Breakpoint]) -> Breakpoint | None:
        """gdb's helper gave a fork child (inferior ``home``) ``copy`` of address breakpoint
        ``original``: it stands for the same user breakpoint (None: not one of these, or its
        user breakpoint was deleted meanwhile)."""
        breakpoint = breakpoints.get(self._owners.get(original, -1))
        if breakpoint is None:
            return None
        library = self._libraries.get(original, "")
        self._owners[copy], self._homes[copy], self._libraries[copy] = breakpoint.number, home, library
        self._bound.add((breakpoint.number, home, library))
        breakpoint.set_locations(copy, list(breakpoint.addressed.get(original, [])))
        return breakpoint

    def dropped(self, gdb_number: int, breakpoints: dict[int, Breakpoint]) -> Breakpoint | None:
        """gdb deleted address breakpoint ``gdb_number`` (its process exec'd, or it was
        stale): the user breakpoint it stood for, which no longer has that location; the
        process binds again if its new program loads the library."""
        breakpoint = breakpoints.get(self._owners.pop(gdb_number, -1))
        home, library = self._homes.pop(gdb_number, None), self._libraries.pop(gdb_number, "")
        if breakpoint is None:
            return None
        breakpoint.forget_address(gdb_number)
        self._bound.discard((breakpoint.number, home or "*", library))
        return breakpoint

    def forget(self, breakpoint: Breakpoint) -> None:
        """``breakpoint`` was deleted (its address breakpoints with it)."""
        for number in breakpoint.addressed:
            self._owners.pop(number, None)
            self._homes.pop(number, None)
            self._libraries.pop(number, None)
        self._bound = {key for key in self._bound if key[0] != breakpoint.number}


def _as_placed(location: Location, place: Place) -> Location:
    """A location of an address breakpoint with gdb's text for the place (gdb, not having
    read the library yet, has none)."""
    return Location(location.number, location.address, location.function or place.function,
                    location.file or place.file, location.line or place.line, location.enabled,
                    location.condition_invalid, location.inferiors)


def mapping_of(pid: int, library: str) -> LibraryMapping | None:
    """Where process ``pid`` has ``library`` (by its real path) mapped, if it does."""
    real = os.path.realpath(library)
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return None
    ranges, base = [], None
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5] == real:
            start, end = (int(part, 16) for part in fields[0].split("-"))
            ranges.append((start, end))
            if int(fields[2], 16) == 0 and base is None:
                base = start
    if base is None:
        return None
    try:
        with open(real, "rb") as stream:
            bias = first_load_bias(stream)
    except (OSError, ElfFormatError):
        return None
    return LibraryMapping(base - bias, min(start for start, _ in ranges), max(end for _, end in ranges))


def library_at(pid: int | None, address: int) -> str | None:
    """The file name of what process ``pid`` has mapped at ``address`` (None: nothing, or unknown)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text() if pid is not None else ""
    except OSError:
        return None
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        start, end = (int(part, 16) for part in fields[0].split("-"))
        if start <= address < end:
            return os.path.basename(fields[5]) if len(fields) == 6 else None
    return None
