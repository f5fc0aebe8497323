"""Live sessions end to end: a real `mixdbg run` session, real gdb and debugpy, the tests' C
extension behind gates the test opens, and `mixdbg break/sessions/detach` reaching it."""

from __future__ import annotations

import json
import os
import queue
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import CExtension, raw_exchange

from mixdbg.cli import main

#: Runs its arguments as steps: gate=PATH waits for PATH, touch=PATH creates it, loop=N and
#: spin=SECONDS call the C extension.
GATED = """\
import os, sys, time
import mixdbg_testext as ext

def wait_for(path):
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit("gate never opened: " + path)
        time.sleep(0.01)

for step in sys.argv[1:]:
    kind, _, arg = step.partition("=")
    if kind == "gate":
        wait_for(arg)
    elif kind == "touch":
        open(arg, "w").close()
    elif kind == "loop":
        print("loop", ext.loop(int(arg)), flush=True)
    elif kind == "spin":
        print("spin", ext.spin(float(arg)), flush=True)
"""


class Live:
    """A running `mixdbg run --json` session; events are read on a thread with arrival times."""

    def __init__(self, proc: subprocess.Popen[str], tmp_path: Path) -> None:
        self.proc = proc
        self.tmp_path = tmp_path
        self.seen: list[dict[str, Any]] = []
        self._events: queue.Queue[tuple[float, dict[str, Any]] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.session = self.wait_for("session", timeout=60)
        self.pid: int = self.session["pid"]
        self.socket = tmp_path / "xdg" / "mixdbg" / f"{self.pid}.sock"
        # The session event comes just before the session starts serving its socket.
        deadline = time.monotonic() + 10
        while not self.socket.exists():
            assert time.monotonic() < deadline, "the session never served its control socket"
            time.sleep(0.01)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self._events.put((time.monotonic(), json.loads(line)))
        self._events.put(None)

    def wait_for(self, kind: str, timeout: float = 30, **fields: Any) -> dict[str, Any]:
        """The next event of ``kind`` (with ``fields``); every event read is kept in ``seen``."""
        return self.wait_timed(kind, timeout, **fields)[1]

    def wait_timed(self, kind: str, timeout: float = 30, **fields: Any) -> tuple[float, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            item = self._events.get(timeout=max(0.0, deadline - time.monotonic()))
            assert item is not None, f"mixdbg ended before a {kind} event; saw {self.seen}"
            arrived, event = item
            self.seen.append(event)
            if event["event"] == kind and all(event.get(k) == v for k, v in fields.items()):
                return arrived, event

    def stops(self) -> list[tuple[str, int | None]]:
        return [(e["reason"], e["breakpoint"]) for e in self.seen if e["event"] == "stopped"]

    def gate(self, name: str) -> str:
        return str(self.tmp_path / name)

    def open(self, name: str) -> None:
        (self.tmp_path / name).touch()


@contextmanager
def live_session(cext: CExtension, tmp_path: Path, *steps: str) -> Iterator[Live]:
    """Start a session on the gated script; on the way out make sure that mixdbg, gdb, the
    debuggee and its debugpy adapter are all gone (ending only those, by PID)."""
    script = tmp_path / "gated.py"
    script.write_text(GATED)
    env = {**cext.env(), "XDG_RUNTIME_DIR": str(tmp_path / "xdg")}
    args = [step.replace("=", "=" + str(tmp_path) + "/", 1) if step.startswith(("gate=", "touch="))
            else step for step in steps]
    with open(tmp_path / "mixdbg.stderr", "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0", str(script),
                                 *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                env=env, text=True)
    live: Live | None = None
    try:
        live = Live(proc, tmp_path)
        yield live
    finally:
        _clean_up(proc, live, tmp_path, steps)


def _clean_up(proc: subprocess.Popen[str], live: Live | None, tmp_path: Path, steps: tuple[str, ...]) -> None:
    for step in steps:
        if step.startswith("gate="):
            (tmp_path / step[len("gate="):]).touch()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # mixdbg detaches and exits
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    if live is None:
        return
    for key in ("pid", "gdb_pid", "adapter_pid"):
        pid = live.session.get(key)
        if pid and not _gone(pid, 20):
            if key == "pid" and "gated.py" in " ".join(psutil.Process(pid).cmdline()):
                os.kill(pid, signal.SIGKILL)  # the debuggee this test started
            assert _gone(pid, 10), f"{key} {pid} is still running"


def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def wait_for_file(path: Path, timeout: float = 20) -> None:
    """Wait until the debuggee's script creates ``path`` (a ``touch=`` step)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"the script never reached {path.name}"
        time.sleep(0.01)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    """Run mixdbg in this process; (exit code, stdout parsed as JSON if it is, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.startswith(("{", "[")) else out, err


def mixdbg_process(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run mixdbg as its own process, as a user in another terminal would."""
    return subprocess.run([sys.executable, "-m", "mixdbg", *args], check=False, capture_output=True,
                          text=True, timeout=30, env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "xdg")})


@pytest.mark.timeout(60)
def test_break_from_another_process_gives_exactly_the_expected_stops(
        cext: CExtension, tmp_path: Path, rundir: Path) -> None:
    # Given a session whose script waits at a gate before calling native_step 3 times
    with live_session(cext, tmp_path, "gate=g1", "loop=3") as live:
        # its control socket is private
        assert stat.S_IMODE(rundir.stat().st_mode) == 0o700
        assert stat.S_IMODE(live.socket.stat().st_mode) == 0o600
        # and shrugs off garbage
        for payload, expected in ((b"{not json\n", "not JSON"), (b'{"v": 1, "verb": "format-disk"}\n', "unknown verb"),
                                  (b'{"v": 1, "verb": "list", "x": "' + b"x" * 10_000_000, "larger than")):
            reply = raw_exchange(live.socket, payload)
            assert reply["ok"] is False and expected in reply["error"]["message"]
        # When another process adds a breakpoint on native_step
        added = mixdbg_process(tmp_path, "break", "native_step", "--session", str(live.pid), "--json")
        assert added.returncode == 0, added.stderr
        result = json.loads(added.stdout)
        [breakpoint] = result["breakpoints"]
        assert result["session"] == live.pid and not breakpoint["pending"]
        assert [(loc["function"], loc["line"]) for loc in breakpoint["locations"]] == [
            ("native_step", cext.line("step"))]
        # it appears in the session's own output
        live.wait_for("breakpoint", id=breakpoint["id"])
        # Then, once the gate opens, the session reports exactly the three stops
        live.open("g1")
        exited = live.wait_for("exited")
        assert exited["code"] == 0
        assert live.stops() == [("breakpoint", breakpoint["id"])] * 3
        assert all(e["frames"][0]["function"] == "native_step" for e in live.seen if e["event"] == "stopped")
    assert live.proc.returncode == 0
    assert not live.socket.exists(), "a session that ends removes its socket"


@pytest.mark.timeout(60)
def test_list_and_delete_round_trip(cext: CExtension, tmp_path: Path, rundir: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    # Given a session with two gated phases of two native_step calls each, its script past
    # the extension's import (a regex sees the loaded libraries' functions only)
    with live_session(cext, tmp_path, "touch=imported", "gate=g1", "loop=2", "gate=g2", "loop=2") as live:
        wait_for_file(tmp_path / "imported")
        # A regex over too many functions creates nothing
        code, _, err = cli(capsys, "break", "--regex", "native_", "--max-locations", "2")
        assert code == 64 and "more than 2 locations" in err
        # A typo stays pending and gets suggestions; delete it again
        code, typo, _ = cli(capsys, "break", "native_stpe", "--json")
        assert code == 0 and typo["breakpoints"][0]["pending"]
        assert "native_step" in typo["suggestions"]
        assert cli(capsys, "break", "--delete", str(typo["breakpoints"][0]["id"]))[0] == 0
        code, added, _ = cli(capsys, "break", "native_step", "--json")
        number = added["breakpoints"][0]["id"]
        # When the first phase runs, its two calls stop
        live.open("g1")
        live.wait_for("stopped", breakpoint=number)
        live.wait_for("stopped", breakpoint=number)
        code, listed, _ = cli(capsys, "break", "--list", "--json")
        assert code == 0 and [(b["id"], b["spec"], b["hits"]) for b in listed["breakpoints"]] == [
            (number, "native_step", 2)]
        code, text, _ = cli(capsys, "break", "--list")
        assert "native_step" in text and "1 location(s)" in text
        # and once it is deleted, the second phase runs through without stopping
        assert cli(capsys, "break", "--delete", str(number))[0] == 0
        live.wait_for("breakpoint", id=number, deleted=True)
        assert cli(capsys, "break", "--list", "--json")[1]["breakpoints"] == []
        code, _, err = cli(capsys, "break", "--delete", str(number))
        assert code == 64 and f"no breakpoint {number}" in err
        live.open("g2")
        live.wait_for("exited")
        assert live.stops() == [("breakpoint", number)] * 2


@pytest.mark.timeout(60)
def test_killed_session_leaves_a_stale_socket_that_is_removed(cext: CExtension, tmp_path: Path,
                                                              rundir: Path) -> None:
    # Given no session at all: one line, exit 66, no traceback
    alone = mixdbg_process(tmp_path, "break", "foo")
    assert alone.returncode == 66
    assert alone.stderr.splitlines() == [
        "mixdbg: no live mixdbg session (start one with 'mixdbg run' or 'mixdbg attach')"]
    # Given a session that is SIGKILLed
    with live_session(cext, tmp_path, "gate=g1") as live:
        live.proc.kill()
        live.proc.wait(10)
        assert live.socket.exists()
        # When the next command targets it, the stale socket is detected and removed
        stale = mixdbg_process(tmp_path, "break", "native_step", "--session", str(live.pid))
        assert stale.returncode == 66 and "Traceback" not in stale.stderr
        assert stale.stderr.splitlines()[0] == (
            f"mixdbg: no live mixdbg session for PID {live.pid} (removed its stale socket)")
        assert not live.socket.exists()
        assert mixdbg_process(tmp_path, "sessions", "--json").stdout.strip() == "[]"


@pytest.mark.timeout(60)
def test_busy_debuggee_breakpoint_latency_then_detach(cext: CExtension, tmp_path: Path, rundir: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with live_session(cext, tmp_path, "gate=g1", "touch=spinning", "spin=4") as live:
        code, sessions, _ = cli(capsys, "sessions", "--json")
        assert code == 0 and [(s["pid"], s["port"], s["breakpoints"]) for s in sessions] == [
            (live.pid, live.session["port"], 0)]
        assert "gated.py" in sessions[0]["target"]
        # Given the debuggee busy in a tight native loop
        live.open("g1")
        wait_for_file(tmp_path / "spinning")
        time.sleep(0.3)
        # When a breakpoint on the loop's callee is added (no --session: the only live one)
        started = time.monotonic()
        code, added, err = cli(capsys, "break", "native_step", "--json")
        replied = time.monotonic()
        assert code == 0, err
        # Then it takes effect within a second
        hit, _ = live.wait_timed("stopped", timeout=10, breakpoint=added["breakpoints"][0]["id"])
        with capsys.disabled():
            print(f"\nbusy-debuggee latency: reply {1000 * (replied - started):.0f} ms, "
                  f"first stop {1000 * (hit - started):.0f} ms after the request")
        assert hit - started < 1.0
        # And 'detach' ends the session while the debuggee runs on, untraced
        code, detached, _ = cli(capsys, "detach", "--json")
        assert code == 0 and detached == {"session": live.pid, "detached": live.pid}
        live.wait_for("detached")
        assert live.proc.wait(15) == 0
        status = Path(f"/proc/{live.pid}/status").read_text()
        assert "TracerPid:\t0\n" in status and "State:\tt" not in status
        assert not live.socket.exists()
