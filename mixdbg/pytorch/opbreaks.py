"""A session's operator breakpoints (``op:aten::add``): gdb breakpoints at every kernel of
the operator, inserted once torch's kernel library is loaded.

One user breakpoint stands for many gdb breakpoints, one per kernel functor. Before torch's
kernel library is loaded, a catchpoint on its load stands for them: gdb stops the process
there, before any of the library's code runs, and ``bind`` inserts the kernels. (Pending
breakpoints by name would need no catchpoint, but gdb binds them on these long template
names at about 0.2 s each when torch loads.)

Each kernel is put at its address in each process, found from the library's symbol table
(``pytorch.catalogue``) and where the process has the library mapped, never from gdb's
symbols: gdb need not read ``libtorch_cpu.so`` (2.3 s) for the kernels, only if a stop
shows one of its frames. With gdb 15 or later the breakpoints are specific to the process's
inferior (``-break-insert -g``): a process that loads torch gets its own, at its own
addresses (an exec'd child, a spawned worker, a torchrun rank); a fork child (a DataLoader
worker) gets copies of its parent's as gdb creates it, and a process that execs loses its
own before the new program runs (gdb's helper: ``mixdbg-kernels`` in ``gdb_commands.py``).
A literal ``*ADDRESS`` without an inferior would be set at the same address in every
process, exec'd ones included: int3 bytes at a random place of their code.

gdb before 15 has no such breakpoints. There each kernel is inserted at its address only
when the session follows no child (``by_address``); otherwise by its C++ name
(``--qualified``), which gdb resolves in every process from that process's own symbols,
at about 0.2 s per kernel when torch loads and again at every later library load
(``import torch`` under ``-b op:aten::add``, 42 kernels: 4.7 s without, 11.3 s with,
measured on gdb 13.1).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Container
from pathlib import Path
from typing import Any, Callable

from mixdbg import attach
from mixdbg.breakpoints import Breakpoint, BreakSpec, locations_from_mi
from mixdbg.errors import MixdbgError, UsageError
from mixdbg.gdbmi import GdbCommandError, GdbMi, mi_quote
from mixdbg.pytorch import catalogue, ops
from mixdbg.pytorch.customops import CustomOperators, kernel_keys
from mixdbg.pytorch.mapped import mapped_library
from mixdbg.pytorch.registered import LayoutOf, RegisteredOperators

log = logging.getLogger(__name__)

#: Inserts a gdb breakpoint for ``spec`` (enabled or not) at an explicit location; returns
#: MI's ``bkpt`` tuple (the session's own ``-break-insert``), in one inferior ("i2") if given.
Insert = Callable[[BreakSpec, bool, str, "str | None"], dict[str, Any]]
#: The C++ names of mangled symbols, in order (gdb's own demangler: the names it knows).
Demangle = Callable[[list[str]], list[str]]
#: The gdb inferior ("i2") of a followed process, by pid.
InferiorOf = Callable[[int], "str | None"]
#: The first gdb with inferior-specific breakpoints (``-break-insert -g``).
PER_PROCESS_GDB = 15
#: Where kernels are bound when gdb has no per-process breakpoints: once, for every process.
ANY_PROCESS = "*"
_COPIED = re.compile(r"^mixdbg-kernels-copied (\d+)((?: \d+:\d+)*)\s*$")


def copied_pairs(text: str) -> list[tuple[str, int, int]]:
    """(inferior, original, copy) for each breakpoint gdb's helper copied to a fork child,
    from its console line ``mixdbg-kernels-copied INFERIOR PARENT:COPY...`` (any other: none)."""
    match = _COPIED.match(text.strip())
    if match is None:
        return []
    home = f"i{match.group(1)}"
    pairs = [pair.split(":") for pair in match.group(2).split()]
    return [(home, int(original), int(copy)) for original, copy in pairs]


class OperatorBreakpoints:
    """The ``op:`` breakpoints of one session and the gdb breakpoints behind them."""

    def __init__(self, gdb: GdbMi, insert: Insert, demangle: Demangle, inferior_of: InferiorOf,
                 python: str | None, by_address: bool, layout_of: LayoutOf) -> None:
        self._gdb = gdb
        self.custom = CustomOperators(gdb, RegisteredOperators(gdb, layout_of))  # outside aten
        self._by_address = by_address  # only one process, ever: no exec'd child can be traced
        self._insert = insert
        self._inferior_of = inferior_of
        self._demangle = demangle
        self._python = python  # the debuggee's interpreter: where to look for its torch
        self._root: Path | None = None  # the debuggee's torch package
        self._catalogue: catalogue.Catalogue | None = None
        self._kernels: dict[int, list[catalogue.Kernel]] = {}  # user breakpoint -> its kernels
        self._owners: dict[int, int] = {}  # gdb number of a kernel breakpoint -> user breakpoint
        self._homes: dict[int, str] = {}  # gdb number of a kernel breakpoint -> its inferior ("i2")
        self._bound: dict[int, set[str]] = {}  # user breakpoint -> inferiors its kernels are in

    def catalogue(self, pid: int | None) -> catalogue.Catalogue:
        """The operators of the debuggee's torch (the one process ``pid`` loaded, else the
        one its interpreter would import); loaded once (see ``pytorch.catalogue``)."""
        if self._catalogue is None:
            self._catalogue = catalogue.load(self._torch_root(pid))
        return self._catalogue

    def _torch_root(self, pid: int | None) -> Path:
        if self._root is None:
            root = catalogue.torch_root_of_process(pid) if pid else None
            self._root = root or catalogue.torch_root_of_interpreter(self._python or attach.default_python())
        return self._root

    def add(self, spec: BreakSpec, enabled: bool, pids: list[int], bind_now: bool) -> Breakpoint:
        """A new operator breakpoint: a catchpoint on the kernel library's load, bound at
        once (``bind_now``: gdb is attached to ``pids``, the debuggee first) in each of
        those processes that already has the library. An operator outside aten is pending
        until a library registers it (``customops``)."""
        if not ops.is_aten(spec.location):
            breakpoint = self.custom.add(spec, enabled)
            self._kernels[breakpoint.number] = []  # its targets come from the dispatcher
            for pid in pids if bind_now else []:
                self._bind_custom(breakpoint, pid, enabled)
            return breakpoint
        found = self.catalogue(pids[0] if pids else None)
        kernels = ops.resolve(found, spec.location)
        library = re.escape(found.library.name)
        try:
            catch = self._gdb.command("-catch-load " + ("" if enabled else "-d ") + mi_quote(library))
        except GdbCommandError as err:
            raise UsageError(f"breakpoint '{spec.text}': {err.gdb_message}") from err
        breakpoint = Breakpoint(number=int(catch["bkpt"]["number"]), spec=spec)
        self._kernels[breakpoint.number] = kernels
        for kernel in kernels:
            keys = breakpoint.kernels.setdefault(kernel.overload, [])
            if kernel.dispatch_key not in keys:
                keys.append(kernel.dispatch_key)
        for pid in pids if bind_now else []:
            self._bind_one(breakpoint, pid, enabled)
        return breakpoint

    def per_process(self) -> bool:
        """Whether kernels are bound per process (gdb 15 and later; see the module doc)."""
        return self._gdb.major_version() >= PER_PROCESS_GDB

    def by_name(self) -> bool:
        """Whether kernels are inserted by name (gdb before 15, following children)."""
        return not self._by_address and not self.per_process()

    def kernel_library(self) -> str | None:
        """The file name of the library whose symbols gdb must read when it loads: the
        kernels', while an operator breakpoint inserts them by name; else None."""
        return catalogue.KERNEL_LIBRARY.name if any(self._kernels.values()) and self.by_name() else None

    def is_catchpoint(self, gdb_number: int) -> bool:
        """Whether ``gdb_number`` is the load catchpoint of an operator breakpoint."""
        return gdb_number in self._kernels

    def bind(self, pid: int, breakpoints: dict[int, Breakpoint]) -> list[Breakpoint]:
        """At a library-load stop of process ``pid`` (selected in gdb): insert the kernels
        of every operator breakpoint not yet bound, if the process now has the kernel
        library; the breakpoints that changed."""
        changed = []
        for number in self._kernels:
            breakpoint = breakpoints.get(number)
            if breakpoint is not None and number not in self.custom.specs and self._bind_one(breakpoint, pid, True):
                changed.append(breakpoint)
        return changed

    def _home(self, pid: int) -> str | None:
        """Where kernels are bound for process ``pid``: its inferior, or every process."""
        return self._inferior_of(pid) if self.per_process() else ANY_PROCESS

    def _bind_one(self, breakpoint: Breakpoint, pid: int, enabled: bool) -> bool:
        loaded = mapped_library(pid, f"/torch/{catalogue.KERNEL_LIBRARY}")
        home = self._home(pid)
        if loaded is None or home is None or home in self._bound.setdefault(breakpoint.number, set()):
            return False
        kernels = self._kernels[breakpoint.number]
        if self.per_process() or self._by_address:
            locations = [f"*{loaded[1] + kernel.address:#x}" for kernel in kernels]
        else:
            locations = [f"'{name}'" for name in self._demangle([kernel.symbol for kernel in kernels])]
        self._insert_targets(breakpoint, home, [kernel.overload for kernel in kernels], locations, enabled)
        return True

    def _insert_targets(self, breakpoint: Breakpoint, home: str, overloads: list[str], locations: list[str],
                        enabled: bool) -> None:
        """Insert one gdb breakpoint per location, each stopping in its overload's kernel."""
        per_process = self.per_process()
        numbers: list[int] = []
        try:
            for overload, location in zip(overloads, locations):
                bkpt = self._insert(breakpoint.spec, enabled, location, home if per_process else None)
                numbers.append(int(bkpt["number"]))
                self._add_target(breakpoint, numbers[-1], overload, home)
                breakpoint.set_locations(numbers[-1], locations_from_mi(bkpt))
        finally:  # those inserted must be dropped at an exec, even if a later one failed
            if per_process and numbers:
                self._gdb.console(f"mixdbg-kernels {home.lstrip('i')} {' '.join(map(str, numbers))}")

    def _bind_custom(self, breakpoint: Breakpoint, pid: int, enabled: bool) -> bool:
        """Bind an operator outside aten in process ``pid``, if it has registered there."""
        home = self._home(pid)
        if home is None or home in self._bound.get(breakpoint.number, set()):
            return False
        targets = self.custom.targets(pid, breakpoint.number)
        if not targets:
            return False
        by_name = not self.per_process() and not self._by_address  # gdb resolves names in each process
        self._insert_targets(breakpoint, home, [target.overload for target in targets],
                             [f"'{target.function}'" if by_name else target.location for target in targets], enabled)
        breakpoint.kernels.update(kernel_keys(targets))
        return True

    def bind_registered(self, pid: int, breakpoints: dict[int, Breakpoint]) -> list[Breakpoint]:
        """Bind the operator breakpoints outside aten whose operators process ``pid`` has
        registered already (it was running before gdb attached); those that changed."""
        return [breakpoint for number in list(self.custom.specs)
                if (breakpoint := breakpoints.get(number)) is not None and self._bind_custom(breakpoint, pid, True)]

    def arm(self, pid: int, libraries: list[str]) -> None:
        """At a library-load stop of process ``pid``: if an operator breakpoint outside aten
        is not bound there yet, look for its operator once the load returns."""
        home = self._home(pid)
        if home is not None and any(home not in self._bound.get(number, set()) for number in self.custom.specs):
            self.custom.arm(pid, libraries)

    def after_load(self, gdb_number: int, breakpoints: dict[int, Breakpoint]) -> list[Breakpoint] | None:
        """gdb stopped where a library load returned (``arm``): bind what registered; the
        breakpoints that changed (None: ``gdb_number`` is no such stop)."""
        pid = self.custom.after_load(gdb_number)
        return self.bind_registered(pid, breakpoints) if pid is not None else None

    def _add_target(self, breakpoint: Breakpoint, gdb_number: int, overload: str, home: str) -> None:
        self._owners[gdb_number] = breakpoint.number
        self._homes[gdb_number] = home
        self._bound.setdefault(breakpoint.number, set()).add(home)
        breakpoint.targets[gdb_number] = overload

    def on_console(self, text: str, breakpoints: dict[int, Breakpoint],
                   foreign: Container[int] = ()) -> list[Breakpoint]:
        """gdb's helper gave a fork child copies of its parent's kernels (its console line
        ``mixdbg-kernels-copied INFERIOR PARENT:COPY...``): record them as the parent's are
        (or delete them: the breakpoint was deleted meanwhile); the breakpoints that changed.
        Copies of ``foreign`` breakpoints (bound by address for function specs) are another's."""
        changed: list[Breakpoint] = []
        orphans: list[int] = []
        for home, original, copy in copied_pairs(text):
            if original in foreign:
                continue
            breakpoint = breakpoints.get(self._owners.get(original, -1))
            if breakpoint is None:
                orphans.append(copy)
                continue
            self._add_target(breakpoint, copy, breakpoint.targets[original], home)
            breakpoint.set_locations(copy, breakpoint.target_locations.get(original, []))
            if all(known is not breakpoint for known in changed):
                changed.append(breakpoint)
        if orphans:
            self._gdb.command("-break-delete " + " ".join(map(str, orphans)))
        return changed

    def dropped(self, gdb_number: int, breakpoints: dict[int, Breakpoint]) -> Breakpoint | None:
        """gdb deleted kernel breakpoint ``gdb_number`` by itself (its process exec'd): forget
        it; the process binds again if its new program loads torch. The breakpoint it was
        part of, if any."""
        breakpoint = breakpoints.get(self._owners.pop(gdb_number, -1))
        home = self._homes.pop(gdb_number, None)
        if breakpoint is None:
            return None
        breakpoint.targets.pop(gdb_number, None)
        breakpoint.set_locations(gdb_number, [])
        breakpoint.target_locations.pop(gdb_number, None)
        if home is not None and home not in (self._homes.get(n) for n in breakpoint.targets):
            self._bound.get(breakpoint.number, set()).discard(home)
        return breakpoint

    def owner(self, gdb_number: int) -> int:
        """The user breakpoint a gdb breakpoint number belongs to (itself if not a kernel's)."""
        return self._owners.get(gdb_number, gdb_number)

    def gdb_numbers(self, breakpoint: Breakpoint) -> list[int]:
        """Every gdb number behind ``breakpoint``: its catchpoint and its kernels'."""
        return [breakpoint.number, *breakpoint.targets]

    def forget(self, breakpoint: Breakpoint) -> None:
        """``breakpoint`` was deleted: drop what stood behind it."""
        self._kernels.pop(breakpoint.number, None)
        self.custom.forget(breakpoint.number)
        self._bound.pop(breakpoint.number, None)
        for gdb_number in breakpoint.targets:
            self._owners.pop(gdb_number, None)
            self._homes.pop(gdb_number, None)

    def argument_names(self, op: str) -> list[str] | None:
        """The parameter names of operator overload ``op`` (from its schema), if known."""
        custom = self.custom.signature(op)
        if custom is not None:
            return custom[0]
        if self._catalogue is None or op not in self._catalogue.schemas:
            return None
        return [argument.name for argument in self._catalogue.schemas[op].arguments]

    def return_type(self, op: str) -> str | None:
        """The C++ return type of the kernel function an operator outside aten stops in."""
        custom = self.custom.signature(op)
        return custom[1] if custom is not None else None

    def native_hint(self, spec: BreakSpec, pid: int | None) -> str | None:
        """For a function spec ``at::native::NAME`` naming an operator: the hint that
        ``op:aten::NAME`` stops in every call (None otherwise, or without torch)."""
        if not spec.location.startswith("at::native::"):
            return None
        try:
            root = self._torch_root(pid)
        except MixdbgError as err:  # no torch for this interpreter: no hint, the spec stands
            log.info("no operator hint for %s: %s", spec.location, err.message)
            return None
        return ops.native_hint(spec.location, lambda name: catalogue.declares_operator(root, name))
