"""The debuggee misbehaves: exits early, exits non-zero, os._exit, forks, execs, hangs in C,
floods its output, runs many threads into one breakpoint. (Native crashes: see
tests/integration/test_run.py::test_native_crash_is_a_stop_with_mixed_stack.)

Promise: mixdbg reports what happened, exits with the debuggee's own code (or a documented
error code), never kills or freezes it, and leaves nothing behind.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest
from conftest import CExtension, run_mixdbg
from faultkit import Fate, Scenario, close_interactive, env_with, json_run_args, proc_status, write_script
from test_fault_mixdbg_dies import fates_of, spawn_interactive

pytestmark = pytest.mark.timeout(120)


def test_debuggee_exits_before_gdb_attaches(cext: CExtension, tmp_path: Path) -> None:
    # Given an interpreter whose site hook ends the process before mixdbg's bootstrap runs
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import os, sys\nif sys.argv[0].endswith('bootstrap.py'):\n    os._exit(5)\n")
    script = write_script(tmp_path, "print('never')\n")
    result = run_mixdbg(["run", "--port", "0", "-b", "native_step", str(script)], env=env_with(cext, hooks))
    # Then: one line naming the exit code, 69 (not 70, which would claim a bug of ours)
    assert result.returncode == 69, result.stderr
    assert "Traceback" not in result.stderr
    assert "mixdbg: the debuggee exited before debugpy started (exit code 5)" in result.stderr.splitlines()


def test_a_held_script_gdb_cannot_attach_to_is_never_run(tmp_path: Path) -> None:
    # Given an interpreter that runs under strace: another tracer holds the debuggee, so
    # gdb's attach is refused while the script waits at its gate
    strace = shutil.which("strace") or pytest.skip("strace is not installed")
    python = tmp_path / "python-under-strace"
    python.write_text(f'#!/bin/sh\nexec {strace} -f -qq -o /dev/null {sys.executable} "$@"\n')
    python.chmod(0o755)
    script = write_script(tmp_path, "open('ran', 'w').close()\n")
    # When mixdbg runs it
    result = run_mixdbg(["run", "--port", "0", "--python", str(python), str(script)], cwd=tmp_path)
    # Then mixdbg says why, and the script never ran (not released to run undebugged; here
    # strace outlives mixdbg's end of it, so the script's bootstrap says so too)
    time.sleep(1.0)  # what a released script would have had to start
    assert result.returncode == 77 and "mixdbg: cannot attach to process" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("ending, code", [
    ("sys.exit(3)", 3),
    ("os._exit(4)", 4),
    ("raise RuntimeError('boom')", 1),
])
def test_exit_paths_give_the_debuggees_code(cext: CExtension, tmp_path: Path, ending: str, code: int) -> None:
    script = write_script(tmp_path, f"import os, sys, mixdbg_testext as ext\next.loop(2)\n{ending}\n")
    result = run_mixdbg([*json_run_args("native_step"), str(script)], env=cext.env())
    assert result.returncode == code, result.stderr
    assert len(result.of("stopped")) == 2
    assert result.of("exited") == [{"event": "exited", "code": code, "signal": None}]


FORKER = """\
import os, sys, mixdbg_testext as ext
pid = os.fork()
if pid == 0:
    ext.loop(2)      # the child is not debugged: gdb removed its breakpoints at the fork
    os._exit(9)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status), flush=True)
print("parent", ext.loop(3), flush=True)
sys.exit(4)
"""


@pytest.mark.parametrize("follow", ["none", "python"])
def test_fork_child_runs_unharmed(cext: CExtension, tmp_path: Path, follow: str) -> None:
    # --follow none: the child is not debugged (gdb removed its breakpoints at the fork);
    # --follow python (the default): it is, and stops too
    script = write_script(tmp_path, FORKER)
    result = run_mixdbg([*json_run_args("native_step", extra=("--follow", follow)), str(script)], env=cext.env())
    assert result.returncode == 4, result.stderr
    assert "child exit 9" in result.stderr  # not -5 (SIGTRAP from a breakpoint left in it)
    assert "parent 6" in result.stderr
    main = result.of("session")[0]["pid"]
    in_child = [stop for stop in result.of("stopped") if stop["pid"] != main]
    assert len(result.of("stopped")) - len(in_child) == 3
    assert len(in_child) == (2 if follow == "python" else 0)


def test_exec_runs_the_new_program(cext: CExtension, tmp_path: Path) -> None:
    script = write_script(tmp_path, (
        "import os, sys, mixdbg_testext as ext\next.loop(1)\n"
        "os.execv(sys.executable, [sys.executable, '-c', "
        "\"import mixdbg_testext as e; print('after exec', e.loop(2)); raise SystemExit(5)\"])\n"))
    result = run_mixdbg([*json_run_args("native_step"), str(script)], env=cext.env())
    assert "after exec 2" in result.stderr
    assert result.returncode == 5


HANGER = """\
import pathlib, sys, mixdbg_testext as ext
print("spun", ext.spin(float(sys.argv[1])) > 0, flush=True)
pathlib.Path("result").write_text("done")
sys.exit(6)
"""


def test_ctrl_c_interrupts_a_native_hang_and_shows_where(cext: CExtension, tmp_path: Path) -> None:
    # Given a debuggee busy in C, at a terminal
    write_script(tmp_path, HANGER)
    child = spawn_interactive(cext, tmp_path, "run", "--port", "0", "script.py", "6")
    pid = 0
    try:
        child.expect(r"debugging PID (\d+):")
        pid = int(child.match.group(1))
        time.sleep(1)  # let it get into the C loop (not a timing assertion)
        # When the user presses Ctrl-C
        child.sendintr()
        # Then the debuggee is interrupted, not killed, and its mixed stack is shown
        child.expect("interrupted")
        child.expect_exact("(mixdbg) ")
        shown = child.before
        assert "native_spin" in shown and "[py] <module>" in shown, shown
        assert proc_status(pid)["State"].startswith("t")
        child.sendline("detach")
        child.expect("spun True")
        child.expect(pexpect.EOF, timeout=90)
    finally:
        close_interactive(child, pid)
    mixdbg, fates = fates_of(tmp_path)
    assert fates[pid] == Fate(6, None) and fates[mixdbg] == Fate(0, None)


FLOOD = """\
import sys, mixdbg_testext as ext
chunk = (b"x" * 1023 + b"\\n") * 1024
ext.loop(3)
for _ in range(100):
    sys.stdout.buffer.write(chunk)
sys.stdout.flush()
ext.loop(2)
"""


def test_100_mb_of_output_while_debugged(cext: CExtension, tmp_path: Path) -> None:
    # Given a debuggee that writes 100 MB quickly between breakpoint stops
    write_script(tmp_path, FLOOD)
    start = time.monotonic()
    scenario = Scenario(json_run_args("native_step") + ["script.py"], cext.env(), tmp_path)
    try:
        fates = scenario.finish(110)
    finally:
        scenario.close()
    took = time.monotonic() - start
    # Then every byte arrives (its stdout is an inherited fd, not a pipe through mixdbg)
    assert fates[scenario.mixdbg_pid] == Fate(0, None)
    assert len(scenario.of("stopped")) == 5
    size = scenario.stderr_path.stat().st_size
    with open(scenario.stderr_path, "rb") as written:
        assert written.read().count(b"x" * 1023 + b"\n") == 100 * 1024
    baseline_start = time.monotonic()
    with open(tmp_path / "plain.out", "wb") as out:
        subprocess.run([sys.executable, "script.py"], cwd=tmp_path, env=cext.env(), stdout=out, check=True)
    baseline = time.monotonic() - baseline_start
    print(f"\n100 MB output: {size / 1e6:.0f} MB written, {took:.1f} s under mixdbg (5 stops), "
          f"{baseline:.1f} s plain")


THREADS = """\
import threading, mixdbg_testext as ext
threads = [threading.Thread(target=ext.loop, args=(25,)) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("joined", flush=True)
"""


def test_many_threads_hit_the_same_breakpoint(cext: CExtension, tmp_path: Path) -> None:
    script = write_script(tmp_path, THREADS)
    result = run_mixdbg([*json_run_args("native_step"), str(script)], env=cext.env(), timeout=110)
    assert result.returncode == 0, result.stderr
    stops = result.of("stopped")
    assert len(stops) == 8 * 25  # exactly one stop per call, none lost, none doubled
    assert all(s["reason"] == "breakpoint" and s["breakpoint"] == 1 for s in stops)
    assert len({s["thread"] for s in stops}) >= 2
    assert "joined" in result.stderr
