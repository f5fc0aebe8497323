"""Breakpoint specs and their locations, as the user writes them and as gdb reports them.

A spec is ``FUNCTION``, ``FILE:LINE``, ``op:NAMESPACE::NAME[.OVERLOAD]`` (a PyTorch
operator: see ``mixdbg.pytorch.ops``), or any of them followed by `` if CONDITION``. Function
names are matched exactly (``--qualified``: ``randn`` does not match ``at::native::randn``)
and every overload is included. Breakpoints are always created pending-capable (``-f``)
so that they resolve when the library that defines them loads.

A function called through the PLT has a ``name@plt`` stub that gdb also matches while the
library defining the function is not read; a stop there would be a second stop for one
call, so the session lets such a stop go on (``Breakpoint.is_plt_hit``). The stub is never
disabled in gdb: when gdb re-binds a breakpoint it carries a disabled location's state over
to a new location of the same function name, and the function's own location, found once
its library is read, would be disabled with it (measured: librados's ``rados_create2``, a
stub in the Cython ``rados`` module read first, bound and never stopped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mixdbg.errors import UsageError
from mixdbg.gdbmi import mi_quote
from mixdbg.pytorch.ops import parse_op

OP_PREFIX = "op:"

_CONDITION = re.compile(r"^(?P<location>.*?)\s+if\s+(?P<condition>.+)$", re.DOTALL)
_FILE_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+)$")


@dataclass(frozen=True)
class BreakSpec:
    """A parsed breakpoint spec."""

    text: str
    location: str
    condition: str | None
    is_line: bool
    is_op: bool = False  # ``location`` is an operator (``aten::add``), not a C++ name

    def mi_insert(self, enabled: bool = True, location: str | None = None, inferior: str | None = None) -> str:
        """The ``-break-insert`` command that creates this breakpoint (pending if needed);
        ``location``: there instead (an operator spec's kernel: its quoted C++ name or
        ``*ADDRESS``); ``inferior`` ("i2"): in that process only (gdb 15 and later)."""
        parts = ["-break-insert", "-f"] + ([] if enabled else ["-d"]) + (["-g", inferior] if inferior else [])
        if not self.is_line and not (location or "").startswith("*"):
            parts.append("--qualified")
        if self.condition:
            parts += ["-c", mi_quote(self.condition)]
        parts.append(mi_quote(location or self.location))
        return " ".join(parts)


def parse_spec(text: str) -> BreakSpec:
    """Parse ``FUNCTION``, ``FILE:LINE``, ``op:NS::NAME[.OVERLOAD]``, any with `` if CONDITION``."""
    stripped = text.strip()
    if not stripped:
        raise UsageError("empty breakpoint spec")
    if "\n" in stripped or "\0" in stripped:
        raise UsageError(f"breakpoint spec must be one line: {text!r}")
    location, condition = stripped, None
    match = _CONDITION.match(stripped)
    if match:
        location, condition = match.group("location").strip(), match.group("condition").strip()
    if not location or location.startswith("if "):
        raise UsageError(f"breakpoint spec has a condition but no location: {text!r}")
    if location == "if" or location.endswith((" if", "\tif")):
        raise UsageError(f"breakpoint spec has 'if' but no condition: {text!r}")
    if location.startswith(OP_PREFIX):
        operator = parse_op(location[len(OP_PREFIX):]).text
        return BreakSpec(text=stripped, location=operator, condition=condition, is_line=False, is_op=True)
    line_match = _FILE_LINE.match(location)
    if line_match and int(line_match.group("line")) == 0:
        raise UsageError(f"line numbers start at 1: {text!r}")
    return BreakSpec(text=stripped, location=location, condition=condition, is_line=bool(line_match))


@dataclass(frozen=True)
class Location:
    """One place a breakpoint resolved to."""

    number: str
    address: str | None
    function: str | None
    file: str | None
    line: int | None
    enabled: bool
    condition_invalid: bool = False
    inferiors: tuple[str, ...] = ()  # gdb's thread groups (processes) the location is in

    @property
    def is_plt(self) -> bool:
        """Whether this is a PLT stub (``name@plt``), not a function body."""
        return bool(self.function and "@plt" in self.function)

    def to_json(self) -> dict[str, Any]:
        """The location as it appears in ``breakpoint`` events."""
        return {"address": self.address, "function": self.function, "file": self.file, "line": self.line}


@dataclass
class Breakpoint:
    """A breakpoint the session owns: its spec, gdb's number, its current locations."""

    number: int
    spec: BreakSpec
    locations: list[Location] = field(default_factory=list)
    hits: int = 0
    #: Operator specs: every gdb breakpoint number behind this one (``number`` included)
    #: and the operator overload it stops in; its locations are the union of theirs.
    targets: dict[int, str] = field(default_factory=dict)
    target_locations: dict[int, list[Location]] = field(default_factory=dict)
    kernels: dict[str, list[str]] = field(default_factory=dict)  # overload -> dispatch keys
    hint: str | None = None  # None: not worked out yet (see BreakpointTable._give_hint); "": none
    #: Function specs: gdb's own locations of the name, and the gdb breakpoints put at the
    #: function's addresses where gdb had not read the library (``engine.address_breaks``),
    #: each with its location; ``locations`` shows them together, once per address and process.
    by_name: list[Location] = field(default_factory=list)
    addressed: dict[int, list[Location]] = field(default_factory=dict)
    ignore_count: int = 0  # hits gdb lets pass before it stops (an editor's hit condition)
    #: Function specs: the name's gdb breakpoint is deleted for now (bound by address where
    #: gdb put it before), and the one made again when gdb had to resolve the name after all.
    withheld: bool = False
    renamed: int | None = None

    @property
    def name_number(self) -> int | None:
        """The gdb breakpoint of the spec's name: ``number``, or the one made again after it
        was withheld; None while withheld (``engine.breakpoint_table``)."""
        return None if self.withheld else self.renamed or self.number

    @property
    def resolution(self) -> tuple[bool, bool, bool]:
        """(pending, every target bound, some condition invalid): what an operator
        breakpoint's reports follow."""
        bound = all(self.target_locations.get(number) for number in self.targets)
        return self.pending, bound, self.invalid_condition

    def what_matters(self) -> object:
        """What a change must alter to be reported: pending or bound, the places it stops
        at (function, file and line: the same place in one more process is no news), an
        invalid condition, the hint. An operator's kernels re-bind one by one when torch
        loads: it is reported when it binds first and when all are bound."""
        if self.targets:
            return self.resolution
        places = frozenset((loc.function, loc.file, loc.line) for loc in self.real_locations)
        return self.pending, places, self.invalid_condition, self.hint

    def set_locations(self, gdb_number: int, locations: list[Location]) -> None:
        """Record where gdb breakpoint ``gdb_number`` (this one or a target's) resolved."""
        if not self.targets:
            if gdb_number in (self.number, self.renamed):
                if gdb_number != self.name_number:
                    return  # a late record of the name's breakpoint deleted since
                self.by_name = locations
            else:
                self.addressed[gdb_number] = locations
            self._combine()
            return
        self.target_locations[gdb_number] = locations
        self.locations = [loc for number in self.targets for loc in self.target_locations.get(number, [])]

    def forget_address(self, gdb_number: int) -> None:
        """Address breakpoint ``gdb_number`` is gone (its process exec'd, or it was deleted)."""
        if self.addressed.pop(gdb_number, None) is not None:
            self._combine()

    def withhold_name(self) -> None:
        """The name's gdb breakpoint was deleted for now: it has no locations of its own."""
        self.withheld, self.by_name = True, []
        self._combine()

    def _combine(self) -> None:
        self.locations = self.by_name + [loc for found in self.addressed.values() for loc in found
                                         if not any(_same_place(loc, known) for known in self.by_name)]

    @property
    def real_locations(self) -> list[Location]:
        """Locations that are function bodies or lines: not PLT stubs, nor the entries gdb
        lists, without an address, for a process where it has not placed the breakpoint."""
        return [loc for loc in self.locations if not loc.is_plt and loc.address]

    @property
    def pending(self) -> bool:
        """True until some loaded library defines the location."""
        return not self.real_locations

    @property
    def invalid_condition(self) -> bool:
        """True when gdb disabled some location because the condition is invalid there."""
        return any(loc.condition_invalid for loc in self.locations)

    def is_plt_hit(self, locno: str | None, function: str | None) -> bool:
        """Whether a stop at ``locno`` (or in ``function``) is a PLT stub of this breakpoint."""
        if function and "@plt" in function:
            return True
        return any(loc.is_plt and loc.number == f"{self.name_number}.{locno}" for loc in self.locations)

    def to_json(self) -> dict[str, Any]:
        """The ``breakpoint`` event body."""
        body: dict[str, Any] = {
            "id": self.number, "spec": self.spec.text, "condition": self.spec.condition,
            "pending": self.pending,
            # a fork child's copy of a location is the same place: listed once
            "locations": list({json_key(loc): loc.to_json() for loc in self.real_locations}.values()),
        }
        if self.kernels:
            body["ops"] = self.kernels
        if self.hint:
            body["hint"] = self.hint
        return body


def json_key(location: Location) -> tuple[str | None, str | None, str | None, int | None]:
    """A location as ``breakpoint`` events show it (its process aside)."""
    return location.address, location.function, location.file, location.line


def _same_place(one: Location, other: Location) -> bool:
    """Whether two locations are at one address of one process (no processes known: any)."""
    return one.address == other.address and (not one.inferiors or not other.inferiors
                                             or bool(set(one.inferiors) & set(other.inferiors)))


def _function_of(raw: dict[str, Any]) -> str | None:
    """gdb names a location by ``func`` (with debug info) or ``at="<name+off>"`` (without)."""
    if raw.get("func"):
        return str(raw["func"])
    at = raw.get("at")
    if at:
        return str(at).strip("<>")
    return None


def _location(raw: dict[str, Any], number: str) -> Location:
    line = raw.get("line")
    address = raw.get("addr")
    return Location(
        number=number,
        address=None if address in (None, "<PENDING>", "<MULTIPLE>") else str(address),
        function=_function_of(raw),
        file=raw.get("fullname") or raw.get("file"),
        line=int(line) if line and str(line).isdigit() else None,
        enabled=raw.get("enabled", "y") == "y",
        # gdb >= 11 disables a location whose condition does not compile there: "N".
        condition_invalid=raw.get("enabled") in ("N", "N*"),
        inferiors=tuple(str(group) for group in raw.get("thread-groups") or ()),
    )


def locations_from_mi(bkpt: dict[str, Any]) -> list[Location]:
    """All locations of an MI3 ``bkpt`` record (single, multiple, or none when pending)."""
    if bkpt.get("pending") or bkpt.get("addr") == "<PENDING>":
        return []
    raw_locations = bkpt.get("locations")
    if raw_locations:
        return [_location(raw, str(raw.get("number"))) for raw in raw_locations]
    return [_location(bkpt, f"{bkpt['number']}.1")]
