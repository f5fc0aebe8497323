"""A Python stop the session lets go on purpose (its breakpoints were removed while the
tree was stopped) is never a real hit (issue 25): an editor gives every breakpoint of a
file a new id when one of them changes, so a hit of a breakpoint replaced by one at the
same line must still stop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mixdbg.engine.agents import AgentHub, PythonBreakpoint
from mixdbg.engine.pystops import PythonStops


def test_a_hit_of_a_replaced_breakpoint_is_reported_and_of_a_removed_one_not(rundir: Path) -> None:
    # Given a session's agents with a breakpoint at line 3 of a script, hit by a thread
    # that trapped while the tree was stopped
    hub = AgentHub(lambda pid, message: None)
    try:
        check_withdrawn(PythonStops(gdb=None, hub=hub, inspect=None, live_pids=set))  # type: ignore[arg-type]
    finally:
        hub.close()


def check_withdrawn(stops: PythonStops) -> None:
    stops.configure(breakpoints={"/work/s.py": [PythonBreakpoint(1, 3)]})
    hit: dict[str, Any] = {"reason": "breakpoint", "breakpoints": [1]}
    assert not stops.withdrawn(hit)
    # When the editor adds a breakpoint to the file (each of the file's gets a new id)
    stops.configure(breakpoints={"/work/s.py": [PythonBreakpoint(2, 3), PythonBreakpoint(3, 9)]})
    # Then the hit is the new line-3 breakpoint's: reported
    assert not stops.withdrawn(hit)
    # and once line 3 has none, it is withdrawn (the thread runs on), as gdb drops such stops
    stops.configure(breakpoints={"/work/s.py": [PythonBreakpoint(4, 9)]})
    assert stops.withdrawn(hit)
    # other stops are never withdrawn
    assert not stops.withdrawn({"reason": "step", "breakpoints": []})
