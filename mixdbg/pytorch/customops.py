"""``op:`` breakpoints on operators outside ``aten``: a user's ``TORCH_LIBRARY`` operators,
torchvision's, torchaudio's, any namespace, registered whenever a library loads.

No file lists them: they exist once a library's initializers have registered them with
the dispatcher. So such a breakpoint stays pending (a catchpoint on every library's load
stands for it: gdb before 14 stops at no load otherwise), and each time a process loads a
library that links torch (``DT_NEEDED``), mixdbg stops it once more where the load returns
(a temporary breakpoint at the caller of ``dlopen``: the library's initializers have run
then), reads the dispatcher's new registrations (``registered.py``), and puts a breakpoint
in each backend kernel of the operators it names: in the kernel function itself when it is
known (the function pointer ``m.impl("op", &fn)`` registered, or the one ``TORCH_FN(fn)``
names), past its prologue when gdb has its debug info; else where the dispatcher enters
the kernel. The schema's argument names name the arguments at the stop. An operator that
never registers is reported at the end, with the registered operators named most like it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from mixdbg import elfsections
from mixdbg.breakpoints import Breakpoint, BreakSpec
from mixdbg.errors import UsageError
from mixdbg.gdbmi import GdbCommandError, GdbMi
from mixdbg.pytorch import ops
from mixdbg.pytorch.mapped import mapped_library
from mixdbg.pytorch.registered import RegisteredOperators
from mixdbg.pytorch.views import ask_gdb

log = logging.getLogger(__name__)

#: Libraries that can register operators need one of these.
_TORCH_LIBRARIES = ("libc10.so", "libtorch_cpu.so", "libtorch.so")
#: The library regex of the breakpoint's catchpoint: every library (the stop that binds it
#: comes at each load; gdb 14 and later stop there anyway: ``solibs``).
_ANY_LIBRARY = '"."'


@dataclass(frozen=True)
class Target:
    """One place an operator breakpoint stops at: a kernel of one overload."""

    overload: str  # "myops::scaled_add"
    keys: tuple[str, ...]  # the backends it computes for
    location: str  # "*0x7f..." (an address in one process)
    function: str  # the C++ function there


class CustomOperators:
    """The session's ``op:`` breakpoints outside ``aten`` (see the module doc)."""

    def __init__(self, gdb: GdbMi, registered: RegisteredOperators) -> None:
        self._gdb = gdb
        self.registered = registered
        self.specs: dict[int, ops.OpSpec] = {}  # user breakpoint -> the operator it names
        self._signatures: dict[str, tuple[list[str] | None, str | None]] = {}  # overload -> names, return type
        self._after_load: dict[int, int] = {}  # temporary gdb breakpoint -> the process it binds in
        self._unplaceable: dict[int, str] = {}  # breakpoint -> why its registered operator has no place
        self._needs_torch: dict[str, bool] = {}  # library path -> whether it links torch

    def add(self, spec: BreakSpec, enabled: bool) -> Breakpoint:
        """A new, pending breakpoint: a catchpoint on every library's load stands for it (its
        number is the breakpoint's), where ``arm`` looks for its operator."""
        operator = ops.parse_op(spec.location)
        try:
            catch = self._gdb.command("-catch-load " + ("" if enabled else "-d ") + _ANY_LIBRARY)
        except GdbCommandError as err:
            raise UsageError(f"breakpoint '{spec.text}': {err.gdb_message}") from err
        breakpoint = Breakpoint(number=int(catch["bkpt"]["number"]), spec=spec)
        self.specs[breakpoint.number] = operator
        return breakpoint

    def targets(self, pid: int, number: int) -> list[Target]:
        """Where breakpoint ``number`` stops in process ``pid``, from the operators registered
        there so far (none: still pending)."""
        spec = self.specs[number]
        if not self.registered.refresh(pid):
            return []
        overloads = self.registered.find(pid, spec)
        described = self.registered.describe(pid, overloads)
        found = []
        for overload in overloads:
            entry = described.get(overload.entry, {})
            for kernel in entry.get("kernels", []):
                if "error" in kernel:
                    self._unplaceable[number] = str(kernel["error"])
                    continue
                self._signatures[overload.full_name] = (entry.get("arguments"), kernel.get("returns"))
                found += [Target(overload.full_name, tuple(kernel["keys"]), location, str(kernel["function"]))
                          for location in kernel["locations"]]
        if overloads and not found:
            self._unplaceable.setdefault(number, "it has no kernel for a backend (yet)")
        return found

    def signature(self, overload: str) -> tuple[list[str] | None, str | None] | None:
        """The argument names (from the schema) and kernel return type of a bound overload."""
        return self._signatures.get(overload)

    def arm(self, pid: int, libraries: list[str]) -> None:
        """At a library-load stop of process ``pid`` (selected in gdb): when a new library
        links torch, stop again once the load returns (its initializers registered its
        operators by then)."""
        if mapped_library(pid, "/libtorch_cpu.so") is None or not any(map(self._links_torch, libraries)):
            return
        answer = ask_gdb(self._gdb, "mixdbg-load-caller", {})
        if "pc" not in answer:
            log.info("no return of the library load found: %s", answer.get("error"))
            return
        try:
            bkpt = self._gdb.command(f"-break-insert -t -p {answer['thread']} *{int(answer['pc']):#x}")["bkpt"]
        except GdbCommandError as err:
            log.info("cannot stop after the library load: %s", err.gdb_message)
            return
        self._after_load[int(bkpt["number"])] = pid

    def _links_torch(self, library: str) -> bool:
        if library not in self._needs_torch:
            try:
                with Path(library).open("rb") as stream:
                    needed = elfsections.needed_libraries(stream)
            except (OSError, elfsections.ElfFormatError):
                needed = []
            self._needs_torch[library] = any(name in _TORCH_LIBRARIES for name in needed) or \
                Path(library).name in _TORCH_LIBRARIES
        return self._needs_torch[library]

    def after_load(self, gdb_number: int) -> int | None:
        """The process a load returned in, when gdb stopped at ``arm``'s breakpoint."""
        return self._after_load.pop(gdb_number, None)

    def never_bound(self, breakpoint: Breakpoint) -> str | None:
        """For a breakpoint that never bound: one line saying why: its operator registered
        without a kernel it can stop in, or never registered (with the registered operators
        named most like it)."""
        spec = self.specs.get(breakpoint.number)
        if spec is None or not breakpoint.pending:
            return None
        if breakpoint.number in self._unplaceable:
            return (f"breakpoint {breakpoint.number} (op:{spec.text}): {spec.text} registered, but "
                    f"{self._unplaceable[breakpoint.number]}")
        close = self.registered.close_matches(spec.text)
        hint = f"; did you mean: {', '.join('op:' + name for name in close)}?" if close else ""
        return f"breakpoint {breakpoint.number} (op:{spec.text}): no library registered {spec.text}" + hint

    def forget(self, number: int) -> None:
        """Breakpoint ``number`` was deleted."""
        self.specs.pop(number, None)
        self._unplaceable.pop(number, None)


def kernel_keys(targets: list[Target]) -> dict[str, list[str]]:
    """The backends each overload's kernels compute for (the ``ops`` of its event)."""
    keys: dict[str, list[str]] = {}
    for target in targets:
        for key in target.keys:
            if key not in keys.setdefault(target.overload, []):
                keys[target.overload].append(key)
    return keys
