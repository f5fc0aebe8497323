"""Bringing a gdb to the state every session starts from: mixdbg's modes and gdb's helpers
(``gdb_helper.py``, ``pytorch/gdb_commands.py``) loaded. A session does it as it starts
(``prepare``), or takes a gdb that was brought there ahead of it (``GdbAhead``): an editor
starts ``mixdbg dap`` and says ``initialize`` before it asks for a launch, and gdb's own
start-up and the helpers (0.3-0.5 s, measured on 2 loaded cores) are then paid before the
launch arrives, not on the way to the first stop.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable

from mixdbg.errors import DebuggerError
from mixdbg.gdbmi import GdbMi, MiRecord, find_gdb
from mixdbg.rundir import cache_directory

HELPER_SCRIPT = Path(__file__).parents[1] / "gdb_helper.py"
TORCH_GDB_COMMANDS = Path(__file__).parents[1] / "pytorch" / "gdb_commands.py"
#: Where gdb's Python keeps the bytecode it compiles, in mixdbg's cache.
PYCACHE = "gdb-pycache"


def prepare(gdb: GdbMi) -> None:
    """Put a started gdb in the mode mixdbg relies on, with its helper commands loaded.
    gdb's Python keeps what it compiles in mixdbg's cache (``PYCACHE``): libstdc++'s
    printers, loaded at each session that maps it, took 75-86 ms to import compiled from
    source (their directory is the system's, not writable, and has no ``__pycache__``),
    18 ms from the cache."""
    gdb.set_modes()
    gdb.console(f"python import sys; sys.pycache_prefix = {str(cache_directory() / PYCACHE)!r}; "
                "sys.dont_write_bytecode = False")
    gdb.console(f"source {HELPER_SCRIPT}")
    gdb.console(f"source {TORCH_GDB_COMMANDS}")


class GdbAhead:
    """A gdb started, and prepared on a thread of its own, before its session exists.
    ``take`` hands it to the session that asks for the same gdb, which waits for it to be
    ready (``ready``) only once it has started its debuggee; ``discard`` ends it when no
    session takes it."""

    def __init__(self, on_record: Callable[[MiRecord | None], None]) -> None:
        self.gdb = GdbMi(on_record)
        self._failed: DebuggerError | None = None
        self._taken = False
        self.gdb.start()
        self._thread = threading.Thread(target=self._prepare, name="gdb-ahead", daemon=True)
        self._thread.start()

    def _prepare(self) -> None:
        try:
            prepare(self.gdb)
        except DebuggerError as err:  # said when its session waits for it
            self._failed = err

    def take(self, gdb: str | None, debuginfod: bool = False) -> GdbAhead | None:
        """This gdb, for a session that asks for ``gdb`` (a path or name, None for mixdbg's
        choice: see ``gdbpath``); None when that is another gdb, or the session turns
        debuginfod on (set as gdb starts; this one started without it): this one is ended."""
        if self._taken:
            return None
        self._taken = True
        if not debuginfod and os.path.realpath(find_gdb(gdb)) == os.path.realpath(self.gdb.path):
            return self
        self._end()
        return None

    def ready(self) -> GdbMi:
        """The gdb once it is prepared; raises what went wrong if it could not be."""
        self._thread.join()
        if self._failed is not None:
            raise self._failed
        return self.gdb

    def discard(self) -> None:
        """No session took it: end it."""
        if not self._taken:
            self._taken = True
            self._end()

    def _end(self) -> None:
        self._thread.join()
        self.gdb.quit()
