"""The operators registered in each debuggee process's PyTorch dispatcher, any namespace
(a user's ``TORCH_LIBRARY``, torchvision's, torchaudio's), read from its memory through
gdb's helpers (``mixdbg-torch-operators``, ``mixdbg-torch-kernels``: ``dispatcher.py``).

Where the dispatcher is and how its entries read comes from the layout probe of the
process's torch build (``layout.py``, its ``dispatcher`` section). Each process is walked
on from where its last walk ended (new operators are appended); every name ever seen is
kept, for the close matches of an operator that never registers.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mixdbg.gdbmi import GdbMi
from mixdbg.pytorch.mapped import mapped_library
from mixdbg.pytorch.ops import OpSpec
from mixdbg.pytorch.views import ask_gdb

log = logging.getLogger(__name__)

#: The tensor layout (with its ``dispatcher`` section) of the torch process ``pid`` runs.
LayoutOf = Callable[[int], "dict[str, Any] | None"]


@dataclass(frozen=True)
class Overload:
    """One registered operator overload: ``myops::scaled_add`` (overload ""), its entry."""

    name: str
    overload: str
    entry: int

    @property
    def full_name(self) -> str:
        """``myops::scaled_add`` or ``myops::scaled_add.out``."""
        return self.name + (f".{self.overload}" if self.overload else "")


@dataclass
class _Walked:
    """One process's operators so far, and where its next walk goes on from."""

    by_name: dict[str, list[Overload]]
    last: int | None = None
    count: int = 0


class RegisteredOperators:
    """The registered operators of the session's processes (see the module doc)."""

    def __init__(self, gdb: GdbMi, layout_of: LayoutOf) -> None:
        self._gdb = gdb
        self._layout_of = layout_of
        self._walked: dict[int, _Walked] = {}
        self.seen: set[str] = set()  # every operator name seen, overloads included

    def _dispatcher(self, pid: int) -> tuple[int, dict[str, Any]] | None:
        """The address of process ``pid``'s dispatcher and how to read it, once torch is loaded."""
        found = self._layout_of(pid)
        section = (found or {}).get("dispatcher") or {}
        loaded = mapped_library(pid, "/libtorch_cpu.so")
        if loaded is None or "slots" not in section:
            if section.get("error"):
                log.info("no operator registrations readable: %s", section["error"])
            return None
        return loaded[1] + int(section["dispatcher"]), section

    def refresh(self, pid: int) -> bool:
        """Walk process ``pid``'s operators registered since the last walk; whether they
        can be read there (torch loaded, the layout known)."""
        where = self._dispatcher(pid)
        if where is None:
            return False
        address, section = where
        walked = self._walked.setdefault(pid, _Walked({}))
        answer = ask_gdb(self._gdb, "mixdbg-torch-operators", {"dispatcher": address, "layout": section,
                                                               "after": walked.last, "count": walked.count})
        if "error" in answer:
            log.info("operators of PID %d: %s", pid, answer["error"])
            return False
        if answer["restarted"]:
            walked.by_name.clear()
        for name, overload, entry in answer["operators"]:
            walked.by_name.setdefault(name, []).append(Overload(name, overload, int(entry)))
            self.seen.update((name, Overload(name, overload, 0).full_name))
        walked.last, walked.count = answer["last"], int(answer["count"])
        return True

    def find(self, pid: int, spec: OpSpec) -> list[Overload]:
        """The registered overloads ``spec`` names in process ``pid`` (as of its last walk)."""
        walked = self._walked.get(pid)
        overloads = walked.by_name.get(f"{spec.namespace}::{spec.name}", []) if walked else []
        return [found for found in overloads if spec.overload in (None, found.overload)]

    def describe(self, pid: int, overloads: list[Overload]) -> dict[int, dict[str, Any]]:
        """Each overload's schema argument names and where to stop in its kernels, by entry."""
        where = self._dispatcher(pid)
        if where is None or not overloads:
            return {}
        answer = ask_gdb(self._gdb, "mixdbg-torch-kernels", {"layout": where[1],
                                                             "entries": [found.entry for found in overloads]})
        return {int(entry): described for entry, described in answer.get("entries", {}).items()}

    def close_matches(self, wanted: str) -> list[str]:
        """The registered operators named most like ``wanted`` (``myops::scaled_ad``)."""
        return difflib.get_close_matches(wanted, sorted(self.seen), n=3, cutoff=0.6)
