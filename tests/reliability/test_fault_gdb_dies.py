"""gdb dies mid-session: mixdbg says so in one line, exits 75, and the debuggee runs on.

Measured here (and shown by ``test_without_repair_the_debuggee_dies_of_sigtrap``): a gdb
killed with SIGKILL leaves its int3 bytes in the debuggee, which dies of SIGTRAP at the next
one it executes. mixdbg restores them from the mapped files (breakpoint_repair) as soon as
it sees gdb's output end. The window that remains: a thread stopped at, or executing, a
breakpoint between gdb's death and the repair is sent SIGTRAP by the kernel; mixdbg then
says the debuggee died instead of claiming it runs on.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CExtension
from faultkit import (
    Fate,
    Scenario,
    close_interactive,
    end_by_pid,
    json_run_args,
    proc_status,
    stderr_lines,
    wait_for,
    write_script,
)

from mixdbg.breakpoint_repair import restore_breakpoint_bytes
from mixdbg.gdbmi import SLOW_COMMAND_TIMEOUT, GdbMi

pytestmark = pytest.mark.timeout(120)

# Imports the extension (so the breakpoint resolves), waits for a gate file, then calls the
# breakpointed function and loads more libraries (passing gdb's own hook in ld.so).
GATED = """\
import os, sys, time, mixdbg_testext as ext
print("ready", flush=True)
while not os.path.exists("gate"):
    time.sleep(0.02)
print("total", ext.loop(1000), flush=True)
import ctypes, decimal, _json, sqlite3
print("loaded", flush=True)
sys.exit(3)
"""

DIED = re.compile(r"^mixdbg: gdb \(pid (\d+)\) died; the debuggee \(pid (\d+)\) runs on "
                  r"\((\d+) breakpoint byte\(s\) restored\)$")


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_gdb_killed_while_the_debuggee_runs(cext: CExtension, tmp_path: Path, signum: int) -> None:
    # Given a session with a resolved breakpoint (never hit yet: the debuggee waits at a gate)
    write_script(tmp_path, GATED)
    scenario = Scenario(json_run_args("native_step if i < 0") + ["script.py"], cext.env(), tmp_path)
    try:
        session = scenario.wait_event("session")
        wait_for(lambda: "ready" in scenario.stderr(), 60, "the script to start")
        # When gdb is killed
        os.kill(session["gdb_pid"], signum)
        wait_for(lambda: "died" in scenario.stderr(), 60, "mixdbg to notice")
        # Then (only now) the debuggee calls the breakpointed code and loads libraries
        (tmp_path / "gate").touch()
        fates = scenario.finish(90)
    finally:
        scenario.close()
    lines = stderr_lines(scenario.stderr())
    assert len(lines) == 1, lines
    match = DIED.match(lines[0])
    assert match, lines
    assert int(match.group(1)) == session["gdb_pid"] and int(match.group(2)) == session["pid"]
    if signum == signal.SIGKILL:
        # native_step's breakpoint and gdb's hook in ld.so were left in memory, and restored
        assert int(match.group(3)) >= 2
    assert fates[scenario.mixdbg_pid] == Fate(75, None)
    assert fates[session["pid"]] == Fate(3, None), scenario.stderr()
    assert "total 999000" in scenario.stderr() and "loaded" in scenario.stderr()
    assert "Traceback" not in scenario.stderr()


def test_without_repair_the_debuggee_dies_of_sigtrap(cext: CExtension, tmp_path: Path) -> None:
    """The measured fault, and the repair, with gdb driven directly (no mixdbg)."""
    results = {}
    for repair in (False, True):
        script = write_script(tmp_path, GATED)
        (tmp_path / "gate").unlink(missing_ok=True)
        debuggee = subprocess.Popen([sys.executable, str(script)], env=cext.env(), cwd=tmp_path,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        gdb = GdbMi(on_record=lambda record: None)
        try:
            assert debuggee.stdout is not None and debuggee.stdout.readline() == "ready\n"
            gdb.start()
            gdb.command("-gdb-set mi-async on")
            gdb.command(f"-target-attach {debuggee.pid}", SLOW_COMMAND_TIMEOUT)
            gdb.command("-break-insert -f native_step")
            gdb.command("-exec-continue")
            wait_for(lambda pid=debuggee.pid: proc_status(pid).get("State", "").startswith(("S", "R")), 30, "the debuggee to run")
            os.kill(gdb.pid, signal.SIGKILL)
            gdb.wait_exit(30)
            restored = restore_breakpoint_bytes(debuggee.pid) if repair else 0
            os.kill(debuggee.pid, signal.SIGCONT)
            (tmp_path / "gate").touch()
            debuggee.wait(60)
            results[repair] = (debuggee.returncode, restored)
        finally:
            if debuggee.poll() is None:
                end_by_pid([debuggee.pid])
                debuggee.wait()
            gdb.quit(5)
    assert results[False] == (-signal.SIGTRAP, 0)
    assert results[True][0] == 3 and results[True][1] >= 2


SPINNER = """\
import sys, pathlib, mixdbg_testext as ext
pathlib.Path("spinning").touch()
ext.spin(3)
print("spun", flush=True)
sys.exit(7)
"""


@pytest.mark.parametrize("spec", ["native_step if i < 0", "native_step"], ids=["condition", "reported-stops"])
def test_gdb_killed_while_a_hot_breakpoint_is_hit(cext: CExtension, tmp_path: Path, spec: str) -> None:
    """The remaining window: the debuggee is almost always stopped at the breakpoint, with the
    kernel's SIGTRAP pending, when gdb dies. mixdbg must report the outcome truthfully, also
    when gdb dies in the middle of a command (reporting a stop), not between commands."""
    write_script(tmp_path, SPINNER)
    scenario = Scenario(json_run_args(spec) + ["script.py"], cext.env(), tmp_path)
    try:
        session = scenario.wait_event("session")
        wait_for((tmp_path / "spinning").exists, 60, "the debuggee to spin")
        os.kill(session["gdb_pid"], signal.SIGKILL)
        fates = scenario.finish(90)
    finally:
        scenario.close()
    lines = stderr_lines(scenario.stderr())
    assert len(lines) == 1 and lines[0].startswith(f"mixdbg: gdb (pid {session['gdb_pid']}) died"), lines
    assert fates[scenario.mixdbg_pid] == Fate(75, None)
    # A debuggee that survives is reaped by the harness after mixdbg exits; one that died
    # was reaped by mixdbg (its parent) when it looked at its fate.
    if session["pid"] in fates:
        assert fates[session["pid"]] == Fate(7, None) and "runs on" in lines[0]
    else:
        # mostly SIGTRAP (an int3 executed after gdb's death); SIGSEGV/SIGILL when gdb died
        # after the trap but before it moved the PC back onto the breakpoint's address, so
        # the thread resumed one byte into the original instruction
        assert re.search(rf"the debuggee \(pid {session['pid']}\) was killed by SIG(TRAP|SEGV|ILL|BUS)",
                         lines[0]), lines[0]
    print(f"hot breakpoint, gdb SIGKILLed; mixdbg said: {lines[0]}")


def test_gdb_killed_while_the_debuggee_is_stopped_at_the_prompt(cext: CExtension, tmp_path: Path) -> None:
    # gdb removes its breakpoints from memory while everything is stopped (all-stop mode),
    # so this is the safe moment; the debuggee must run on once gdb is gone.
    import pexpect
    from test_fault_mixdbg_dies import STOPPER, fates_of, spawn_interactive
    write_script(tmp_path, STOPPER)
    child = spawn_interactive(cext, tmp_path, "run", "--port", "0", "-b", "native_step", "script.py")
    pid = 0
    try:
        child.expect(r"debugging PID (\d+):.*gdb PID (\d+)")
        pid, gdb = int(child.match.group(1)), int(child.match.group(2))
        child.expect_exact("(mixdbg) ")
        os.kill(gdb, signal.SIGKILL)
        # (it may even finish within the second mixdbg watches it before saying "runs on")
        child.expect(rf"mixdbg: gdb \(pid {gdb}\) died(; the debuggee \(pid {pid}\) runs on|"
                     rf", and the debuggee \(pid {pid}\) exited with code 7)")
        child.expect(pexpect.EOF, timeout=90)
    finally:
        close_interactive(child, pid)
    mixdbg, fates = fates_of(tmp_path)
    assert fates[mixdbg] == Fate(75, None)
    assert fates.get(pid, Fate(7, None)) == Fate(7, None)  # reaped by mixdbg if it finished first
    assert (tmp_path / "result").read_text() == "6"
