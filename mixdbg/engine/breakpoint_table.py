"""A session's breakpoints: creating them in gdb (operators through ``pytorch.opbreaks``),
keeping their locations as gdb re-resolves them in every followed process, deleting them,
and the ``breakpoint`` events that report each change.

The session owns gdb and the run loop; this table owns what the user asked to stop at,
the same for every front end (``-b``, the prompt's ``b``, ``mixdbg break``, the editor's
breakpoints through ``mixdbg dap``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from mixdbg.breakpoints import Breakpoint, BreakSpec, Location, locations_from_mi, parse_spec
from mixdbg.engine.address_breaks import AddressBreakpoints, library_at
from mixdbg.errors import UsageError
from mixdbg.events import BreakpointChanged, Event, Notice
from mixdbg.gdbmi import SLOW_COMMAND_TIMEOUT, GdbCommandError, GdbMi
from mixdbg.proctree import ProcessTree
from mixdbg.pytorch.catalogue import KERNEL_LIBRARY
from mixdbg.pytorch.opbreaks import OperatorBreakpoints, copied_pairs
from mixdbg.pytorch.registered import LayoutOf
from mixdbg.solibs import ABSENT, BOUND, UNKNOWN, Binder, SymbolReader


class BreakpointTable:
    """The breakpoints by number (``items``); ``attached()`` says whether gdb is attached
    to a process yet (breakpoints bind at once then), ``pid()`` which process is the root."""

    def __init__(self, gdb: GdbMi, emit: Callable[[Event], None], tree: ProcessTree, solibs: SymbolReader,
                 demangle: Callable[[list[str]], list[str]], python: str | None, by_address: bool,
                 attached: Callable[[], bool], pid: Callable[[], int | None], layout_of: LayoutOf) -> None:
        self.gdb = gdb
        self.emit = emit
        self.tree = tree
        self.solibs = solibs
        self.attached = attached
        self.pid = pid
        self.items: dict[int, Breakpoint] = {}
        self.throw_catch: int | None = None  # gdb's C++ throw catchpoint, when asked for
        self._reported: dict[int, tuple[object, list[int]]] = {}  # each breakpoint's last event: state, pids
        self._trap_specs: list[BreakSpec] = []
        self.ops = OperatorBreakpoints(gdb, self._insert, demangle, tree.inferior_of, python, by_address=by_address,
                                       layout_of=layout_of)
        self.addresses = AddressBreakpoints(gdb, self._insert, tree.inferior_of, by_address, solibs.identity)
        self._renamed: dict[int, int] = {}  # gdb number of a name made again -> its breakpoint
        solibs.resolving = self.restore

    def add(self, spec: BreakSpec, announce: bool = True, enabled: bool = True) -> Breakpoint:
        """Create a breakpoint (pending until a library defines it) and report it, now or
        (``announce=False``, before the session is known) with ``announce_all``.
        ``enabled=False`` keeps it from stopping until ``enable_all``: a launched debuggee
        runs its debugger's start-up under gdb, and that code is not the user's."""
        attached = self.attached()
        if attached:  # the loaded libraries it can be in that gdb has not read
            self.solibs.read_unread([spec], KERNEL_LIBRARY.name if spec.is_op and self.ops.by_name() else None)
        if spec.is_op:  # bound at once only where gdb is attached and has the symbols
            root = self.pid()
            pids = list(dict.fromkeys(([root] if root is not None else []) + self.tree.live_pids()))
            breakpoint = self.ops.add(spec, enabled, pids, bind_now=attached)
        else:
            bkpt = self._insert(spec, enabled)
            breakpoint = Breakpoint(number=int(bkpt["number"]), spec=spec, locations=locations_from_mi(bkpt))
            self._give_hint(breakpoint)
        self.items[breakpoint.number] = breakpoint
        if announce:
            self.report(breakpoint)
        return breakpoint

    def insert_trap(self, function: str) -> int:
        """Insert the Python agents' trap (every Python stop is its hit); its gdb number.
        Its library's symbols are read as a breakpoint's are."""
        self._trap_specs.append(parse_spec(function))
        return int(self.gdb.command(f"-break-insert -f {function}")["bkpt"]["number"])

    def read_libraries(self) -> None:
        """Have gdb read the symbols of the loaded libraries a breakpoint (or the trap) can
        be in, and of no other."""
        self.solibs.read_unread([b.spec for b in self.items.values()] + self._trap_specs, self.ops.kernel_library())

    def _insert(self, spec: BreakSpec, enabled: bool, location: str | None = None,
                inferior: str | None = None) -> dict[str, Any]:
        try:
            result = self.gdb.command(spec.mi_insert(enabled, location, inferior), SLOW_COMMAND_TIMEOUT)
        except GdbCommandError as err:
            raise UsageError(f"breakpoint '{spec.text}': {err.gdb_message}") from err
        bkpt: dict[str, Any] = result["bkpt"]
        return bkpt

    def binder(self, pid: int) -> Binder:
        """Function breakpoints bound at the addresses gdb found before, in process ``pid``
        (stopped at a library's load; ``engine.address_breaks``)."""
        return _ProcessBinder(self, pid)

    def function_breakpoints(self, specs: list[BreakSpec]) -> list[Breakpoint]:
        """The session's breakpoints on function names among ``specs``."""
        return [b for b in self.items.values() if not b.spec.is_op and b.spec in specs]

    def ignore(self, number: int, count: int) -> None:
        """Let breakpoint ``number`` pass its first ``count`` hits (an editor's hit
        condition). gdb counts per gdb breakpoint, so such a breakpoint is never bound by
        address (``engine.address_breaks``): the name's own breakpoint counts every hit."""
        breakpoint = self.items[number]
        self.restore([breakpoint.spec])
        self.gdb.command(f"-break-after {breakpoint.name_number} {count}")
        breakpoint.ignore_count = count

    def withhold(self, breakpoint: Breakpoint) -> None:
        """``breakpoint`` was just bound by address where gdb put it before, and its name's
        own gdb breakpoint has no place: delete that one until gdb must resolve the name in
        a library whose places are not known (``restore``). gdb resolves every breakpoint's
        name again in each library it reads, and the stop waits for it: for
        ``ceph::common::CephContext::CephContext`` in libceph-common, six compilation units
        expanded (OSDMap.cc alone 4.8 s), the read taking 14.7 s instead of 7.9 s."""
        number = breakpoint.name_number
        if number is None or breakpoint.spec.is_op or breakpoint.ignore_count or breakpoint.spec.condition \
                or any(loc.address and not loc.is_plt for loc in breakpoint.by_name):
            return
        self.gdb.command(f"-break-delete {number}")
        self._renamed.pop(number, None)
        breakpoint.withhold_name()

    def restore(self, specs: list[BreakSpec]) -> None:
        """gdb is about to read libraries where it must resolve ``specs``' names itself (the
        places there are not known, or the process is not the debuggee): the withheld names
        among them get their gdb breakpoints again."""
        for breakpoint in self.items.values():
            if breakpoint.withheld and breakpoint.spec in specs:
                bkpt = self._insert(breakpoint.spec, True)
                breakpoint.withheld, breakpoint.renamed = False, int(bkpt["number"])
                self._renamed[breakpoint.renamed] = breakpoint.number
                breakpoint.set_locations(breakpoint.renamed, locations_from_mi(bkpt))
                self.report(breakpoint)

    def bind_operators(self, pid: int, libraries: list[str]) -> None:
        """In process ``pid``, stopped where ``libraries`` loaded: bind the operator
        breakpoints there (those outside aten once the load returns: ``after_load``)."""
        for breakpoint in self.ops.bind(pid, self.items):
            self.report(breakpoint)
        self.ops.arm(pid, libraries)

    def bind_registered(self, pid: int) -> None:
        """Attached to process ``pid``: bind the operators outside aten it registered already."""
        for breakpoint in self.ops.bind_registered(pid, self.items):
            self.report(breakpoint)

    def after_load(self, gdb_number: int) -> bool:
        """Whether gdb stopped where a library load returned (``bind_operators``); the
        operators it registered are bound then."""
        changed = self.ops.after_load(gdb_number, self.items)
        for breakpoint in changed or []:
            self.report(breakpoint)
        return changed is not None

    def on_console(self, text: str) -> None:
        """A line of gdb's console stream: gdb's helper may have copied operator kernels
        and address breakpoints to a fork child."""
        changed = self.ops.on_console(text, self.items, foreign=self.addresses.owned())
        for home, original, copy in copied_pairs(text):
            adopted = self.addresses.adopt(original, copy, home, self.items)
            if adopted is not None and all(known is not adopted for known in changed):
                changed.append(adopted)
        for breakpoint in changed:
            self.report(breakpoint)

    def enable_all(self) -> None:
        """Enable every breakpoint (inserted disabled while the debuggee started up)."""
        numbers = [n for breakpoint in self.items.values() for n in self._gdb_numbers(breakpoint)]
        if numbers:
            self.gdb.command("-break-enable " + " ".join(map(str, numbers)))

    def announce_all(self) -> None:
        """Report every breakpoint's current state."""
        for breakpoint in self.items.values():
            self.report(breakpoint, again=True)

    def report(self, breakpoint: Breakpoint, deleted: bool = False, again: bool = False) -> bool:
        """Send ``breakpoint``'s event if what it stops at changed since the last one
        (``Breakpoint.what_matters``), or only the processes it is in (the event is then not
        news: ``--json`` shows it, people and editors are not told), or it was deleted, or
        ``again``; True if what it stops at changed."""
        self._give_hint(breakpoint)
        event = self.event(breakpoint, deleted)
        state = breakpoint.what_matters()
        last = self._reported.get(breakpoint.number)
        news = deleted or again or last is None or last[0] != state
        if deleted:
            self._reported.pop(breakpoint.number, None)
        elif not news and last is not None and last[1] == event.body["pids"]:
            return False
        else:
            self._reported[breakpoint.number] = (state, event.body["pids"])
        self.emit(BreakpointChanged(event.body, deleted, news))
        return news

    def delete(self, number: int) -> None:
        """Delete one of the session's breakpoints."""
        breakpoint = self.items.pop(number, None)
        if breakpoint is None:
            raise UsageError(f"no breakpoint {number}")
        numbers = self._gdb_numbers(breakpoint)
        if numbers:
            self.gdb.command("-break-delete " + " ".join(map(str, numbers)))
        self._renamed.pop(breakpoint.renamed or 0, None)
        self.ops.forget(breakpoint)
        self.addresses.forget(breakpoint)
        self.report(breakpoint, deleted=True)

    def catch_throw(self, enabled: bool) -> None:
        """Stop wherever C++ code throws (reported as an ``exception``), or no longer."""
        if enabled and self.throw_catch is None:
            self.throw_catch = int(self.gdb.command("-catch-throw")["bkpt"]["number"])
        elif not enabled and self.throw_catch is not None:
            self.gdb.command(f"-break-delete {self.throw_catch}")
            self.throw_catch = None

    def owner(self, gdb_number: int) -> Breakpoint | None:
        """The breakpoint a gdb breakpoint number belongs to (an operator has many, a
        function one per process it was bound in by address)."""
        by_address = self.addresses.owner(gdb_number)
        if by_address is None:
            by_address = self._renamed.get(gdb_number)
        return self.items.get(by_address if by_address is not None else self.ops.owner(gdb_number))

    def _gdb_numbers(self, breakpoint: Breakpoint) -> list[int]:
        """Every gdb breakpoint standing for ``breakpoint``."""
        if breakpoint.spec.is_op:
            return self.ops.gdb_numbers(breakpoint)
        return [n for n in (breakpoint.name_number,) if n is not None] + self.addresses.gdb_numbers(breakpoint)

    def event(self, breakpoint: Breakpoint, deleted: bool = False) -> BreakpointChanged:
        """A breakpoint's event, with the pids of the processes it has a location in."""
        inferiors = {inferior for loc in breakpoint.real_locations for inferior in loc.inferiors}
        pids = self.tree.pids_of(inferiors)
        body = breakpoint.to_json()
        for location in body["locations"]:  # gdb names no function there: say which library it is in
            if not location["function"] and location["address"]:
                location["library"] = library_at(pids[0] if pids else self.pid(), int(location["address"], 16))
        return BreakpointChanged({**body, "pids": pids}, deleted)

    def on_changed(self, message: str, payload: dict[str, Any]) -> None:
        """gdb's ``=breakpoint-modified`` (it re-resolved a breakpoint: a library loaded, a
        process came or went) or ``=breakpoint-deleted`` (it deleted one by itself: the
        kernels of a process that exec'd)."""
        if message == "breakpoint-deleted":
            number = int(payload["id"])
            dropped = self.ops.dropped(number, self.items) or self.addresses.dropped(number, self.items)
            if dropped is not None:
                self.report(dropped)
            return
        bkpt = payload["bkpt"]
        number = int(bkpt["number"])
        breakpoint = self.owner(number)
        if breakpoint is None or self.ops.is_catchpoint(number):  # an operator's load catch: no place
            return
        breakpoint.set_locations(number, keep_names(locations_from_mi(bkpt), breakpoint.addressed.get(number, [])))
        if self.report(breakpoint) and breakpoint.invalid_condition:
            self.emit(Notice("warning", f"breakpoint {breakpoint.number}: gdb cannot evaluate "
                                        f"'{breakpoint.spec.condition}' at some locations; "
                                        "they are disabled"))

    def _give_hint(self, breakpoint: Breakpoint) -> None:
        """Once resolved: the hint for an ``at::native::`` function that is an operator. Not
        before: the torch the debuggee loaded says it for free, where asking its
        interpreter where torch is would start a process (40 ms) before the program."""
        if breakpoint.hint is None and not breakpoint.pending and not breakpoint.targets:
            breakpoint.hint = self.ops.native_hint(breakpoint.spec, self.pid()) or ""  # "": none

    def warn_unresolved(self) -> None:
        """Tell the user about breakpoints no loaded library ever defined (likely typos)."""
        for breakpoint in self.items.values():
            if breakpoint.pending:
                self.emit(Notice("warning", self.ops.custom.never_bound(breakpoint)
                                 or f"breakpoint {breakpoint.number} ({breakpoint.spec.text}) "
                                    "never resolved: no loaded library defines it"))


def keep_names(locations: list[Location], before: list[Location]) -> list[Location]:
    """An address breakpoint's new locations, each keeping the function name (and file and
    line) it had where gdb (not having read the library) gives none: the name's own
    breakpoint, which would show gdb's, may be withheld (``BreakpointTable.withhold``)."""
    known = {location.address: location for location in before}
    kept = []
    for location in locations:
        old = known.get(location.address)
        if old is not None and not location.file and (old.function or old.file):
            location = replace(location, function=location.function or old.function, file=old.file, line=old.line)
        kept.append(location)
    return kept


class _ProcessBinder:
    """A ``solibs.Binder`` for one process: the table's breakpoints there."""

    def __init__(self, table: BreakpointTable, pid: int) -> None:
        self._table = table
        self._pid = pid

    def bind(self, library: str, specs: list[BreakSpec]) -> str:
        """Put ``specs`` where gdb put them in ``library`` before (see ``solibs.Binder``)."""
        places = self._table.addresses.known(library, specs)
        # a condition names the function's locals, which gdb cannot parse at a bare address
        # before it reads the library; a hit count is gdb's per breakpoint: both stay gdb's
        if places is None or any(b.ignore_count or b.spec.condition for b in self._table.function_breakpoints(specs)):
            return UNKNOWN
        if not any(places.values()):
            return ABSENT
        for breakpoint in self._table.addresses.bind(self._pid, library, places,
                                                     self._table.function_breakpoints(specs)):
            self._table.withhold(breakpoint)
            self._table.report(breakpoint)
        return BOUND

    def learn(self, libraries: list[str], specs: list[BreakSpec]) -> None:
        """Keep where gdb put ``specs`` in ``libraries``; drop address breakpoints gdb's places no longer include."""
        stale = self._table.addresses.learn(self._pid, libraries, self._table.function_breakpoints(specs))
        if stale:
            self._table.gdb.command("-break-delete " + " ".join(map(str, stale)))
            for number in stale:
                dropped = self._table.addresses.dropped(number, self._table.items)
                if dropped is not None:
                    self._table.report(dropped)
