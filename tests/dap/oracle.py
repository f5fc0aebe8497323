"""debugpy as the oracle: one DAP client script run against debugpy's adapter and against
``mixdbg dap``, on the same program and interpreter, so that a test asserts the same
user-visible result from both.

Each adapter is launched as VS Code launches it (``console: internalConsole``,
``justMyCode`` and ``showReturnValue`` on); exception filters are named by what they do
(``raised``, ``uncaught``, ``user-uncaught``), each adapter's own id is looked up here.
debugpy's adapter runs on the tests' interpreter (which has debugpy) and launches the
program with the interpreter under test (``python``), as mixdbg does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .client import DapClient
from .fixtures import DapFactory

ADAPTERS = ("debugpy", "mixdbg")
#: What each adapter calls its Python exception filters.
FILTERS = {
    "debugpy": {"raised": "raised", "uncaught": "uncaught", "user-uncaught": "userUnhandled"},
    "mixdbg": {"raised": "python-raised", "uncaught": "python-uncaught", "user-uncaught": "python-user-uncaught"},
}

T = TypeVar("T")


def launch(factory: DapFactory, adapter: str, program: Path, python: str,
           breakpoints: Mapping[str | Path, Sequence[int | Mapping[str, Any]]] | None = None,
           filters: Sequence[str] = ("uncaught",), command: Sequence[str] | None = None,
           **config: Any) -> DapClient:
    """A client of a new ``adapter`` ("debugpy" or "mixdbg") that launched ``program`` with
    ``python``; ``command`` replaces the adapter's command line (another platform's)."""
    if command is None:
        command = [sys.executable, "-m", "debugpy.adapter"] if adapter == "debugpy" else None
    client = factory(command=command, timeout=60)
    client.initialize(adapterID=adapter)
    launch_config = {"type": adapter, "request": "launch", "program": str(program), "cwd": str(program.parent),
                     "console": "internalConsole", "justMyCode": True, "showReturnValue": True, "python": python,
                     **config}
    client.launch(launch_config, breakpoints=breakpoints,
                  exception_filters=[FILTERS[adapter][name] for name in filters])
    return client


def both(scenario: Callable[[str], T]) -> dict[str, T]:
    """What ``scenario(adapter)`` observed with each adapter, debugpy first."""
    return {adapter: scenario(adapter) for adapter in ADAPTERS}
