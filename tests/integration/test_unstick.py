"""The session's cure for a process gdb left in a ptrace stop while it runs the others (CI:
after a DataLoader worker's crash, the main process stayed stopped and the session hung).

The cure is an interrupt and a continue of them all. gdb's ``-exec-interrupt`` (all-stop,
native) sends SIGINT to the process of its first running thread only, the root's; a process
whose threads all sit in a ptrace stop never takes it, so nothing stops. Here gdb, the
processes and the interrupt are real; what cannot be made on purpose is gdb forgetting a
stop, so the root is *said* stuck (its /proc state) and made unable to take the SIGINT as a
stuck one is: it blocks SIGINT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from mixdbg.events import Event, Stopped
from mixdbg.proctree import procfs
from mixdbg.session import Session

pytestmark = pytest.mark.timeout(90)

#: Blocks SIGINT until the file "unblock" exists (its forked child does not), forks one
#: child once the file "gate" exists, then both wait for the file "end".
TREE = """\
import os, signal, sys, time
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
def wait_for(name):
    while not os.path.exists(name):
        time.sleep(0.02)
wait_for("gate")
if os.fork() == 0:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
else:
    wait_for("unblock")
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
wait_for("end")
"""


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    (tmp_path / "tree.py").write_text(TREE)
    root = subprocess.Popen([sys.executable, "tree.py"], cwd=tmp_path)
    try:
        yield root
    finally:
        (tmp_path / "end").touch()
        for child in psutil.Process(root.pid).children():
            os.kill(child.pid, signal.SIGKILL)
        root.kill()
        root.wait(10)


def _unstick_twice(session: Session) -> None:
    session._unstick()
    session._unstick()


@pytest.mark.parametrize("stop_unseen", [_unstick_twice, Session._kick], ids=["recovery", "agents-kick"])
def test_a_root_left_stopped_is_got_going_through_a_process_that_takes_the_interrupt(
        tree: subprocess.Popen[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        stop_unseen: Callable[[Session], None]) -> None:
    # Given a session following the root and its forked child, both running
    events: list[Event] = []
    session = Session(events.append, auto_continue=True)
    try:
        session.start_gdb()
        session.attach(tree.pid)
        session.resume()
        (tmp_path / "gate").touch()
        session._pump_until(lambda: len(session.tree.live_pids()) == 2, 30, "the fork", reporting=True)
        # When the root is in a ptrace stop (for /proc) while gdb runs it, twice in a row
        monkeypatch.setattr(procfs, "trace_stopped", lambda pid, *rest: pid == tree.pid)
        # and the session stops the tree unseen: to cure that, or for the agents (configure_agents,
        # watch_new_process: they used gdb's interrupt, which only the root would take)
        stop_unseen(session)
        # Then an interrupt reaches a process that takes it, gdb stops, and everything runs again
        assert session._kicking
        session._pump_until(lambda: not session._kicking, 30, "the interrupt's stop", reporting=True)
        assert session.state == "running"
        assert not [event for event in events if isinstance(event, Stopped)]  # not the user's stop
    finally:
        (tmp_path / "unblock").touch()  # the root takes the interrupt of the detach
        session.close()
