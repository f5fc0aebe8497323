"""Progress of slow symbol reads: while gdb reads a library's symbols (seconds for
``libtorch_cpu.so``'s tables, minutes for a DEBUG=1 build's DWARF), the session's thread
waits for gdb; a watcher thread reports the read once it has lasted ``DELAY`` (anything
over a second is announced), every ``INTERVAL`` after, and at its end, as ``Progress``
events: the front ends show them (``mixdbg dap``: progressStart/Update/End, which VS Code
shows as a notification; the terminal: one line that updates; ``--json``: events).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from mixdbg.events import Event, Progress

#: A read shorter than this is not announced.
DELAY = 1.0
#: How often a read still going on is reported again.
INTERVAL = 1.0
TITLE = "gdb reads symbols"


def describe(sizes: dict[str, tuple[int, bool]]) -> str:
    """``libceph-common.so.2 (95 MB of debug info), librados.so.2 (15 MB)``: the biggest two
    libraries (what their size is of: DWARF, or symbol tables only), and how many more."""
    ordered = sorted(sizes.items(), key=lambda item: -item[1][0])
    shown = []
    for index, (path, (size, dwarf)) in enumerate(ordered[:2]):
        what = (" of debug info" if dwarf else " of symbols") if index == 0 else ""
        shown.append(f"{os.path.basename(path)} ({size / 1e6:.0f} MB{what})" if size else os.path.basename(path))
    more = f" and {len(ordered) - 2} more" if len(ordered) > 2 else ""
    return ", ".join(shown) + more if shown else "the loaded libraries"


class ProgressWatch:
    """Reports the slow steps of one session to ``emit`` (from its own thread, so the
    front end's ``emit`` must take events from any thread). ``measure`` says how many
    bytes of symbols a library has (0 when it cannot tell) and whether it has DWARF
    (asked only once a read has lasted ``delay``)."""

    def __init__(self, emit: Callable[[Event], None], measure: Callable[[str], tuple[int, bool]],
                 delay: float = DELAY, interval: float = INTERVAL) -> None:
        self._emit = emit
        self._measure = measure
        self._delay = delay
        self._interval = interval
        self._ids = itertools.count(1)

    @contextmanager
    def reading(self, libraries: Sequence[str]) -> Iterator[None]:
        """Around gdb reading the symbols of ``libraries`` (all loaded ones, when empty)."""
        done = threading.Event()
        started = time.monotonic()
        ident = f"symbols-{next(self._ids)}"
        reported: list[Progress] = []  # the start, once announced
        watcher = threading.Thread(target=self._watch, args=(ident, list(libraries), started, done, reported),
                                   name="mixdbg-progress", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()
            if reported:
                first = reported[0]
                self._emit(Progress(ident, "end", first.title, f"{first.message}: read in "
                                    f"{time.monotonic() - started:.1f} s", first.libraries, first.size,
                                    time.monotonic() - started))

    def _watch(self, ident: str, libraries: list[str], started: float, done: threading.Event,
               reported: list[Progress]) -> None:
        if done.wait(self._delay):
            return
        sizes = {library: self._measure(library) for library in libraries}
        size = sum(found for found, _ in sizes.values())
        message = describe(sizes)
        start = Progress(ident, "start", TITLE, message, tuple(libraries), size, time.monotonic() - started)
        reported.append(start)
        self._emit(start)
        while not done.wait(self._interval):
            elapsed = time.monotonic() - started
            self._emit(Progress(ident, "update", TITLE, f"{message} ({elapsed:.0f} s)", tuple(libraries), size,
                                elapsed))
