"""mixdbg dies (signal, terminal gone, SIGKILL) while the debuggee runs or is stopped.

Promise: the debuggee continues and finishes with its normal result and exit code, its
output reaches where it was going, and no gdb or debugpy adapter of ours remains (the
subreaper harness exits only when every process mixdbg started has ended).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from conftest import CExtension
from faultkit import (
    SUBREAPER,
    Fate,
    Scenario,
    assert_no_traceback,
    close_interactive,
    end_by_pid,
    json_run_args,
    proc_status,
    wait_for,
    write_script,
)

pytestmark = pytest.mark.timeout(120)

# Spins in C through a conditional breakpoint gdb evaluates at every call (never true), so
# gdb is busy with the debuggee when mixdbg dies; then writes output that must not be lost.
SPINNER = """\
import sys, pathlib, mixdbg_testext as ext
pathlib.Path("spinning").touch()
ext.spin(float(sys.argv[1]))
for i in range(2000):
    print("line", i)
print("result", ext.loop(10), flush=True)
sys.exit(7)
"""

# Stops at native_step (three calls); writes its result to a file as well as to stdout.
STOPPER = """\
import sys, pathlib, mixdbg_testext as ext
total = ext.loop(3)
print("result", total, flush=True)
pathlib.Path("result").write_text(str(total))
sys.exit(7)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL],
                         ids=lambda s: signal.Signals(s).name)
def test_mixdbg_dies_while_the_debuggee_runs(cext: CExtension, tmp_path: Path, signum: int) -> None:
    # Given a debuggee spinning in C through a conditional breakpoint, no terminal
    write_script(tmp_path, SPINNER)
    scenario = Scenario(json_run_args("native_step if i < 0") + ["script.py", "3"], cext.env(), tmp_path)
    try:
        session = scenario.wait_event("session")
        wait_for((tmp_path / "spinning").exists, 60, "the debuggee to start spinning")
        assert proc_status(session["pid"]).get("TracerPid") == str(session["gdb_pid"])
        # When mixdbg receives the signal
        mixdbg = scenario.mixdbg_pid
        os.kill(mixdbg, signum)
        fates = scenario.finish(90)
    finally:
        scenario.close()
    # Then mixdbg exits 128+N (or is killed), the debuggee finishes normally, nothing is left
    name = signal.Signals(signum).name
    expected_mixdbg = Fate(None, name) if signum == signal.SIGKILL else Fate(128 + signum, None)
    assert fates[mixdbg] == expected_mixdbg, scenario.stderr()
    assert fates[session["pid"]] == Fate(7, None), scenario.stderr()
    # and its output (which went to mixdbg's stderr file, not through mixdbg) is complete
    err = scenario.stderr()
    assert "line 1999" in err and "result 90" in err
    assert_no_traceback(err)
    if signum != signal.SIGKILL:
        assert scenario.of("detached")[0]["reason"] == f"mixdbg received {name}"


def spawn_interactive(cext: CExtension, tmp_path: Path, *args: str) -> pexpect.spawn:
    """mixdbg at a terminal (a pty), under the subreaper; its report goes to fates.jsonl."""
    return pexpect.spawn(sys.executable, [str(SUBREAPER), str(tmp_path / "fates.jsonl"), "--",
                                          sys.executable, "-m", "mixdbg", *args],
                         env=cext.env(), cwd=str(tmp_path), timeout=60, encoding="utf-8",
                         codec_errors="replace", dimensions=(50, 200))


def fates_of(tmp_path: Path) -> tuple[int, dict[int, Fate]]:
    lines = [json.loads(line) for line in (tmp_path / "fates.jsonl").read_text().splitlines()]
    mixdbg = next(line["command"] for line in lines if "command" in line)
    return mixdbg, {line["pid"]: Fate(line["code"], line["signal"]) for line in lines if "pid" in line}


def debuggee_pid(child: pexpect.spawn) -> int:
    child.expect(r"debugging PID (\d+):")
    return int(child.match.group(1))


@contextlib.contextmanager
def stopped_at_the_prompt(cext: CExtension, tmp_path: Path, script: str) -> Iterator[tuple[pexpect.spawn, int]]:
    """mixdbg at a terminal running ``script`` with the debuggee stopped at ``native_step``
    and the prompt waiting: yields the pexpect child and the debuggee's PID; on leaving,
    mixdbg is closed and a debuggee a failed test left running is ended by PID."""
    write_script(tmp_path, script)
    child = spawn_interactive(cext, tmp_path, "run", "--port", "0", "-b", "native_step", "script.py")
    pid = 0
    try:
        pid = debuggee_pid(child)
        child.expect("stopped at breakpoint 1")
        child.expect_exact("(mixdbg) ")
        yield child, pid
    finally:
        close_interactive(child, pid)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "SIGKILL", "second Ctrl-C", "detach"])
def test_mixdbg_ends_while_the_debuggee_is_stopped_at_a_breakpoint(cext: CExtension, tmp_path: Path,
                                                                    how: str) -> None:
    # Given the debuggee stopped at a breakpoint, the prompt waiting
    with stopped_at_the_prompt(cext, tmp_path, STOPPER) as (child, pid):
        assert proc_status(pid)["State"].startswith("t")
        # When mixdbg is ended
        mixdbg = fates_of(tmp_path)[0]
        if how == "second Ctrl-C":
            child.sendintr()
        elif how == "detach":
            child.sendline("detach")
        else:
            os.kill(mixdbg, signal.Signals[how])
        # Then the debuggee resumes and finishes with its result and exit code
        child.expect("result 6")
        child.expect(pexpect.EOF, timeout=90)
    mixdbg, fates = fates_of(tmp_path)
    assert fates[pid] == Fate(7, None)
    assert (tmp_path / "result").read_text() == "6"
    if how == "SIGKILL":
        assert fates[mixdbg] == Fate(None, "SIGKILL")
    elif how in ("SIGTERM", "SIGHUP"):
        assert fates[mixdbg] == Fate(128 + signal.Signals[how], None)
    else:  # a second Ctrl-C is a SIGINT at the prompt: 128+2; 'detach' is a normal end
        assert fates[mixdbg] == Fate(130 if how == "second Ctrl-C" else 0, None)
    assert_no_traceback(child.before or "")


def test_a_sigint_pending_at_detach_is_not_delivered(cext: CExtension, tmp_path: Path) -> None:
    # Given the debuggee stopped at a breakpoint with a SIGINT queued but undelivered: what
    # gdb's interrupt leaves behind when it races a breakpoint hit (as mixdbg detaches); the
    # debuggee handles SIGINT as Python does by default, even if this test inherits it ignored
    script = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n" + STOPPER
    with stopped_at_the_prompt(cext, tmp_path, script) as (child, pid):
        os.kill(pid, signal.SIGINT)
        wait_for(lambda: int(proc_status(pid)["ShdPnd"], 16) & (1 << (signal.SIGINT - 1)) != 0, 10,
                 "the SIGINT to be pending")
        # When the user detaches
        child.sendline("detach")
        child.expect(pexpect.EOF, timeout=90)
    # Then gdb takes the SIGINT (as it would have, attached) and the debuggee finishes normally
    mixdbg, fates = fates_of(tmp_path)
    assert fates[pid] == Fate(7, None)
    assert (tmp_path / "result").read_text() == "6"
    assert fates[mixdbg] == Fate(0, None)


def test_terminal_closed_while_stopped(cext: CExtension, tmp_path: Path) -> None:
    # Given a debuggee stopped at a breakpoint at the prompt, which writes only to a file
    write_script(tmp_path, STOPPER.replace('print("result", total, flush=True)\n', ""))
    child = spawn_interactive(cext, tmp_path, "run", "--port", "0", "-b", "native_step", "script.py")
    pid = 0
    try:
        pid = debuggee_pid(child)
        child.expect_exact("(mixdbg) ")
        # When the terminal goes away (the pty's master is closed: SIGHUP, as when SSH drops)
        # (pexpect closes the fd first, then fails to end the subreaper, which ignores SIGHUP)
        with contextlib.suppress(pexpect.ExceptionPexpect):
            child.close(force=False)
        wait_for(lambda: (tmp_path / "result").exists() and not proc_status(pid), 90, "the debuggee to finish")
    finally:
        if pid and proc_status(pid):
            end_by_pid([pid])
    # Then mixdbg detached and the debuggee finished normally (its own session: no SIGHUP)
    wait_for(lambda: sum("pid" in line for line in (tmp_path / "fates.jsonl").read_text().splitlines()) >= 2,
             30, "the subreaper to reap mixdbg and the debuggee")
    mixdbg, fates = fates_of(tmp_path)
    assert fates[pid] == Fate(7, None)
    assert (tmp_path / "result").read_text() == "6"
    assert fates[mixdbg] == Fate(128 + signal.SIGHUP, None)


GATED = """\
import os, sys, time, pathlib, mixdbg_testext as ext
while not os.path.exists("gate"):
    time.sleep(0.02)
total = ext.loop(3)
pathlib.Path("result").write_text(str(total))
sys.exit(7)
"""


def test_reader_of_json_output_goes_away(cext: CExtension, tmp_path: Path) -> None:
    # Given 'mixdbg run --json ... | consumer', the consumer exits after the first event
    write_script(tmp_path, GATED)
    report = tmp_path / "fates.jsonl"
    with open(tmp_path / "stderr", "wb") as stderr:
        harness = subprocess.Popen(
            [sys.executable, str(SUBREAPER), str(report), "--", sys.executable, "-m", "mixdbg",
             *json_run_args("native_step"), "script.py"],
            env=cext.env(), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
    assert harness.stdout is not None
    try:
        session = json.loads(harness.stdout.readline())
        assert session["event"] == "session"
        harness.stdout.close()
        # When the debuggee then stops at a breakpoint (mixdbg's report hits EPIPE)
        (tmp_path / "gate").touch()
        harness.wait(90)
    finally:
        if harness.poll() is None:
            end_by_pid([session["pid"], session["gdb_pid"], session["adapter_pid"] or 0])
            harness.wait(30)
    # Then mixdbg ends as SIGPIPE would (128+13), without a traceback, and the debuggee finishes
    mixdbg, fates = fates_of(tmp_path)
    assert fates[mixdbg] == Fate(128 + signal.SIGPIPE, None), (tmp_path / "stderr").read_text()
    assert fates[session["pid"]] == Fate(7, None)
    assert (tmp_path / "result").read_text() == "6"
    assert_no_traceback((tmp_path / "stderr").read_text())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_while_the_session_starts(cext: CExtension, tmp_path: Path, signum: int) -> None:
    # Given a debuggee whose start-up is slow (a site hook marks it, then waits a moment)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import os, sys, time\nif sys.argv[0].endswith('bootstrap.py'):\n"
        "    open('starting', 'w').close()\n    time.sleep(2)\n")
    write_script(tmp_path, STOPPER)
    env = cext.env()
    env["PYTHONPATH"] = f"{hooks}{os.pathsep}{env['PYTHONPATH']}"
    scenario = Scenario(json_run_args("native_step") + ["script.py"], env, tmp_path)
    try:
        # When mixdbg is signalled before the session has started
        wait_for((tmp_path / "starting").exists, 60, "the debuggee to start")
        mixdbg = scenario.mixdbg_pid
        os.kill(mixdbg, signum)
        fates = scenario.finish(90)
    finally:
        scenario.close()
    # Then it still ends as the signal says (not as an 'internal error'), the script runs
    # to its end undebugged, and nothing is left
    assert fates[mixdbg] == Fate(128 + signum, None), scenario.stderr()
    assert "internal error" not in scenario.stderr()
    assert (tmp_path / "result").read_text() == "6"
    assert Fate(7, None) in fates.values()
