"""`mixdbg attach`: join a process that is already running, whatever PID the user has."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CExtension, run_mixdbg

from mixdbg.attach import ROLE_ADAPTER, ROLE_DEBUGGEE, classify, debugpy_adapter_of

pytestmark = pytest.mark.timeout(90)

# Listens with debugpy, reports pid and port, waits for a file, then calls into C twice.
TARGET = """\
import json, os, sys, time
import debugpy, mixdbg_testext as ext
host, port = debugpy.listen(("127.0.0.1", 0))
print(json.dumps({"pid": os.getpid(), "port": port}), flush=True)
gate = sys.argv[1]
while not os.path.exists(gate):
    time.sleep(0.05)
ext.loop(2)
"""


@pytest.fixture
def running_target(cext: CExtension, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, int], Path]]:
    script = tmp_path / "target.py"
    script.write_text(TARGET)
    gate = tmp_path / "gate"
    proc = subprocess.Popen([sys.executable, str(script), str(gate)], env=cext.env(),
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        yield proc, info, gate
    finally:
        gate.touch()
        try:
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def attach_in_background(pid: int, cext: CExtension, gate: Path) -> dict[str, object]:
    """Attach with a breakpoint, open the gate once attached, collect the run."""
    proc = subprocess.Popen([sys.executable, "-m", "mixdbg", "attach", "--json", "-b", "native_step", str(pid)],
                            env=cext.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    events = []
    try:
        for line in proc.stdout:
            event = json.loads(line)
            events.append(event)
            if event["event"] == "session":
                gate.touch()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)
    return {"code": proc.returncode, "events": events}


def test_attach_to_the_debuggee(cext: CExtension, running_target: tuple[subprocess.Popen[str], dict[str, int], Path]) -> None:
    _, info, gate = running_target
    run = attach_in_background(info["pid"], cext, gate)
    events = run["events"]
    assert isinstance(events, list)
    assert [e["event"] for e in events if e["event"] == "stopped"] == ["stopped", "stopped"]
    assert events[-1] == {"event": "exited", "code": 0, "signal": None}
    assert run["code"] == 0


def test_attach_through_the_adapter_pid(cext: CExtension, running_target: tuple[subprocess.Popen[str], dict[str, int], Path]) -> None:
    # Given the PID of the debugpy adapter, not of the debuggee
    _, info, gate = running_target
    adapter = None
    for _ in range(50):
        adapter = debugpy_adapter_of(info["pid"], info["port"])
        if adapter:
            break
        time.sleep(0.1)
    assert adapter is not None
    import psutil
    assert classify(psutil.Process(adapter)) == ROLE_ADAPTER
    assert classify(psutil.Process(info["pid"])) == ROLE_DEBUGGEE
    # When mixdbg attaches to it, it picks the debuggee and says so
    run = attach_in_background(adapter, cext, gate)
    events = run["events"]
    assert isinstance(events, list)
    session = next(e for e in events if e["event"] == "session")
    assert session["pid"] == info["pid"]
    assert "adapter" in session["how"]
    assert len([e for e in events if e["event"] == "stopped"]) == 2


def test_ps_lists_roles(running_target: tuple[subprocess.Popen[str], dict[str, int], Path]) -> None:
    _, info, _ = running_target
    result = run_mixdbg(["ps", "--json"])
    rows = json.loads(result.stdout)
    roles = {row["pid"]: row["role"] for row in rows}
    assert roles[info["pid"]] == ROLE_DEBUGGEE
    debuggee = next(row for row in rows if row["pid"] == info["pid"])
    assert debuggee["program"] and all(isinstance(row["program"], str) for row in rows)
    assert ROLE_ADAPTER in roles.values()
