"""A session's operator breakpoints (``op:aten::add``): gdb breakpoints at every kernel of
the operator, inserted once torch's kernel library is loaded.

One user breakpoint stands for many gdb breakpoints, one per kernel functor. Before torch's
kernel library is loaded, a catchpoint on its load stands for them: gdb stops the process
there, before any of the library's code runs, and ``bind`` inserts the kernels. (Pending
breakpoints by name would need no catchpoint, but gdb binds them on these long template
names at about 0.2 s each when torch loads.)

Each kernel is inserted by its C++ name (``--qualified``), which gdb resolves again in
every process it holds, from that process's own symbols: fork children (DataLoader
workers) and processes that exec a new interpreter (spawn, torchrun ranks, with their own
address-space layout) get the kernels where their torch has them, as it loads. Measured
with gdb 13.1: 8 kernels inserted in 0.08 s once the library is loaded. Two other forms
fail: a literal ``*ADDRESS`` is re-set at the same address in every process (int3 bytes
at a random place of an exec'd child: "Cannot insert breakpoint", or worse), and
``*&'MANGLED'`` is disabled by gdb at the first process where the symbol is missing
("Error in re-setting breakpoint"). gdb 15's inferior-specific breakpoints are not there
to help. Names cost more: gdb resolves them again at every later library load (``import
torch`` under ``-b op:aten::add``, 42 kernels: 4.7 s without, 11.3 s with, measured), so a
session that follows no child (``by_address``) puts them at their addresses instead
(0.4 s for the same 42).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Callable

from mixdbg import attach
from mixdbg.breakpoints import Breakpoint, BreakSpec, locations_from_mi
from mixdbg.errors import MixdbgError, UsageError
from mixdbg.gdbmi import GdbCommandError, GdbMi, mi_quote
from mixdbg.pytorch import catalogue, ops

log = logging.getLogger(__name__)

#: Inserts a gdb breakpoint for ``spec`` (enabled or not) at an explicit location; returns
#: MI's ``bkpt`` tuple (the session's own ``-break-insert``).
Insert = Callable[[BreakSpec, bool, str], dict[str, Any]]
#: The C++ names of mangled symbols, in order (gdb's own demangler: the names it knows).
Demangle = Callable[[list[str]], list[str]]


class OperatorBreakpoints:
    """The ``op:`` breakpoints of one session and the gdb breakpoints behind them."""

    def __init__(self, gdb: GdbMi, insert: Insert, demangle: Demangle, python: str | None,
                 by_address: bool) -> None:
        self._gdb = gdb
        self._by_address = by_address  # only one process, ever: no exec'd child can be traced
        self._insert = insert
        self._demangle = demangle
        self._python = python  # the debuggee's interpreter: where to look for its torch
        self._catalogue: catalogue.Catalogue | None = None
        self._kernels: dict[int, list[catalogue.Kernel]] = {}  # user breakpoint -> its kernels
        self._owners: dict[int, int] = {}  # gdb number of a kernel breakpoint -> user breakpoint

    def catalogue(self, pid: int | None) -> catalogue.Catalogue:
        """The operators of the debuggee's torch (the one process ``pid`` loaded, else the
        one its interpreter would import); loaded once (see ``pytorch.catalogue``)."""
        if self._catalogue is None:
            root = catalogue.torch_root_of_process(pid) if pid else None
            if root is None:
                root = catalogue.torch_root_of_interpreter(self._python or attach.default_python())
            self._catalogue = catalogue.load(root)
        return self._catalogue

    def add(self, spec: BreakSpec, enabled: bool, pid: int | None, bind_now: bool) -> Breakpoint:
        """A new operator breakpoint: a catchpoint on the kernel library's load, bound at
        once (``bind_now``: gdb is attached to ``pid``) when that process already has the
        library."""
        found = self.catalogue(pid)
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
        if pid is not None and bind_now:
            self._bind_one(breakpoint, pid, enabled)
        return breakpoint

    def kernel_library(self) -> str | None:
        """The file name of the library the kernels are in, while an operator breakpoint
        exists (its symbols must be read when it loads), else None."""
        return catalogue.KERNEL_LIBRARY.name if self._kernels else None

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
            if breakpoint is not None and self._bind_one(breakpoint, pid, True):
                changed.append(breakpoint)
        return changed

    def _bind_one(self, breakpoint: Breakpoint, pid: int, enabled: bool) -> bool:
        loaded = catalogue.mapped_library(pid, f"/torch/{catalogue.KERNEL_LIBRARY}")
        if breakpoint.targets or loaded is None:
            return False
        kernels = self._kernels[breakpoint.number]
        if self._by_address:
            locations = [f"*{loaded[1] + kernel.address:#x}" for kernel in kernels]
        else:
            locations = [f"'{name}'" for name in self._demangle([kernel.symbol for kernel in kernels])]
        for kernel, location in zip(kernels, locations):
            bkpt = self._insert(breakpoint.spec, enabled, location)
            gdb_number = int(bkpt["number"])
            self._owners[gdb_number] = breakpoint.number
            breakpoint.targets[gdb_number] = kernel.overload
            breakpoint.set_locations(gdb_number, locations_from_mi(bkpt))
        return True

    def owner(self, gdb_number: int) -> int:
        """The user breakpoint a gdb breakpoint number belongs to (itself if not a kernel's)."""
        return self._owners.get(gdb_number, gdb_number)

    def gdb_numbers(self, breakpoint: Breakpoint) -> list[int]:
        """Every gdb number behind ``breakpoint``: its catchpoint and its kernels'."""
        return [breakpoint.number, *breakpoint.targets]

    def forget(self, breakpoint: Breakpoint) -> None:
        """``breakpoint`` was deleted: drop what stood behind it."""
        self._kernels.pop(breakpoint.number, None)
        for gdb_number in breakpoint.targets:
            self._owners.pop(gdb_number, None)

    def argument_names(self, op: str) -> list[str] | None:
        """The parameter names of operator overload ``op`` (from its schema), if known."""
        if self._catalogue is None or op not in self._catalogue.schemas:
            return None
        return [argument.name for argument in self._catalogue.schemas[op].arguments]

    def native_hint(self, spec: BreakSpec, pid: int | None) -> str | None:
        """For a function spec ``at::native::NAME`` naming an operator: the hint that
        ``op:aten::NAME`` stops in every call (None otherwise, or without torch)."""
        if not spec.location.startswith("at::native::"):
            return None
        try:
            return ops.native_hint(self.catalogue(pid), spec.location)
        except MixdbgError as err:  # no torch for this interpreter: no hint, the spec stands
            log.info("no operator hint for %s: %s", spec.location, err.message)
            return None
