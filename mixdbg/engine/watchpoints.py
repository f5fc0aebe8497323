"""Data breakpoints: gdb watchpoints on a range of memory (an address, a size, the value's
type), write, read or both, hardware where gdb can, in every followed process.

gdb binds a watchpoint to the inferior that was selected when it was set (``info
breakpoints`` shows ``inf 1``), and a fork child gets none of its parent's: the kernel
clears the child's debug registers. So each watch is one gdb watchpoint per process: set in
every live one, and in each process followed later (``add_process``). The watched memory
is named by address (``*(long *) 0x...``), not by expression, so a watch on a local does not
end with its frame, and the same address in a fork child is the child's own copy.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from mixdbg.errors import DebuggerError, UsageError
from mixdbg.gdbmi import GdbCommandError, GdbMi, mi_quote
from mixdbg.proctree import ProcessTree

log = logging.getLogger(__name__)

#: DAP's access types, as gdb's -break-watch options.
ACCESS_OPTIONS = {"write": "", "read": "-r ", "readWrite": "-a "}
#: A type gdb can cast an address to (no anonymous or function types).
_CASTABLE = re.compile(r"^[\w:<>, *&]+$")


@dataclass(frozen=True)
class WatchSpec:
    """What to watch: ``size`` bytes at ``address`` holding a ``type`` value, the access
    that stops, a condition (in the stopped frame's language), and a name for people."""

    address: int
    size: int
    type: str
    access: str = "write"
    condition: str | None = None
    label: str = ""

    def expression(self, typed: bool = True) -> str:
        """The watched lvalue for gdb: the value's type, or its bytes when gdb cannot cast to it."""
        if typed and _CASTABLE.match(self.type) and not self.type.endswith("]"):
            return f"*({self.type} *) {self.address:#x}"
        return f"*(unsigned char (*)[{self.size}]) {self.address:#x}"


@dataclass
class Watch:
    """One watch and the gdb watchpoint behind it in each process (inferior -> number)."""

    spec: WatchSpec
    numbers: dict[str, int] = field(default_factory=dict)
    hardware: bool = True


class Watchpoints:
    """The session's watches; ``owner(number)`` tells which one a gdb watchpoint is."""

    def __init__(self, gdb: GdbMi, tree: ProcessTree) -> None:
        self.gdb = gdb
        self.tree = tree
        self.watches: list[Watch] = []

    def replace(self, specs: list[WatchSpec], selected: int | None) -> list[Watch | str]:
        """Delete every watch, then set ``specs`` in every followed process: each a
        ``Watch`` or the one-line reason it could not be set. ``selected`` is the gdb thread
        to leave selected (the stop's)."""
        for watch in self.watches:
            self._delete(watch)
        self.watches = []
        results: list[Watch | str] = []
        for spec in specs:
            watch = Watch(spec)
            try:
                for inferior, thread in self._processes():
                    self._insert(watch, inferior, thread)
            except UsageError as err:
                self._delete(watch)
                results.append(err.message)
                continue
            self.watches.append(watch)
            results.append(watch)
        self._select(selected)
        return results

    def add_process(self, inferior: str, selected: int | None) -> None:
        """A newly followed process (a fork child, a DataLoader worker): every watch is set
        in it too, before it runs on."""
        if not self.watches:
            return
        thread = next((t for i, t in self._processes() if i == inferior), None)
        if thread is None:
            return
        for watch in self.watches:
            if inferior not in watch.numbers:
                try:
                    self._insert(watch, inferior, thread)
                except UsageError as err:
                    log.warning("watch %s in %s: %s", watch.spec.label, inferior, err.message)
        self._select(selected)

    def owner(self, number: int) -> Watch | None:
        """The watch a gdb watchpoint number belongs to."""
        return next((w for w in self.watches if number in w.numbers.values()), None)

    def _processes(self) -> list[tuple[str, str]]:
        """(inferior, one of its threads) of each live followed process."""
        found = self.tree.one_thread_each()
        if not found:
            raise UsageError("no process to watch in (the program has not started)")
        return found

    def _insert(self, watch: Watch, inferior: str, thread: str) -> None:
        spec = watch.spec
        option = ACCESS_OPTIONS.get(spec.access)
        if option is None:
            raise UsageError(f"access type {spec.access!r}: one of write, read, readWrite")
        self._select(int(thread))
        try:
            result = self._watch(option, spec.expression())
        except GdbCommandError:
            try:
                result = self._watch(option, spec.expression(typed=False))
            except GdbCommandError as err:
                raise UsageError(f"cannot watch {spec.label or hex(spec.address)}: {err.gdb_message}") from err
        raw = result.get("wpt") or result.get("hw-rwpt") or result.get("hw-awpt") or {}
        number = int(raw.get("number", 0))
        watch.numbers[inferior] = number
        watch.hardware = watch.hardware and ("wpt" not in result or self._is_hardware(number))
        if spec.condition:
            try:
                self.gdb.command(f"-break-condition {number} {spec.condition}")
            except GdbCommandError as err:
                raise UsageError(f"condition {spec.condition!r}: {err.gdb_message}") from err

    def _watch(self, option: str, expression: str) -> dict[str, Any]:
        return self.gdb.command(f"-break-watch {option}{mi_quote(expression)}")

    def _is_hardware(self, number: int) -> bool:
        try:
            table = self.gdb.command(f"-break-info {number}").get("BreakpointTable", {})
        except GdbCommandError:
            return True
        body = table.get("body") or [{}]
        first = body[0].get("bkpt", body[0]) if isinstance(body[0], dict) else {}
        return str(first.get("type", "")).startswith(("hw", "acc", "read"))

    def _delete(self, watch: Watch) -> None:
        for number in watch.numbers.values():
            try:
                self.gdb.command(f"-break-delete {number}")
            except GdbCommandError as err:  # its process ended: gone with it
                log.debug("deleting watchpoint %d: %s", number, err.gdb_message)
        watch.numbers.clear()

    def _select(self, thread: int | None) -> None:
        if thread is None:
            return
        try:
            self.gdb.command(f"-thread-select {thread}")
        except GdbCommandError as err:
            raise DebuggerError(f"thread {thread}: {err.gdb_message}") from err
