"""The interactive prompt at a terminal (a real pty): continue, bt, print, break, detach, kill."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pexpect
import psutil
import pytest
from conftest import CExtension

pytestmark = pytest.mark.timeout(90)

SCRIPT = """\
import os, time, mixdbg_testext as ext
ext.loop(3)
open(os.environ["DONE_FILE"], "w").write("done")
"""


def spawn(cext: CExtension, tmp_path: Path, *args: str) -> tuple[pexpect.spawn, Path]:
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    done = tmp_path / "done"
    env = cext.env()
    env["DONE_FILE"] = str(done)
    child = pexpect.spawn(sys.executable, ["-m", "mixdbg", "run", "--port", "0", *args, str(script)],
                          env=env, encoding="utf-8", timeout=60)
    return child, done


def close(child: pexpect.spawn) -> None:
    if child.isalive():
        child.terminate(force=True)


def test_continue_backtrace_print_break_and_delete(cext: CExtension, tmp_path: Path) -> None:
    child, done = spawn(cext, tmp_path, "-b", "native_step")
    try:
        child.expect(r"stopped at breakpoint 1")
        child.expect_exact("(mixdbg) ")
        child.sendline("p i")
        child.expect(r"\r\n0\r\n")
        # a name not in scope: gdb's CLI's words, naming the frame (not -var-create's)
        child.sendline("p total")
        child.expect_exact('No symbol "total" in current context. (frame #0, native_step at ')
        child.sendline("bt")
        child.expect(r"\[py\] <module>")
        child.expect_exact("(mixdbg) ")
        # (numbers are gdb's: internal catchpoints, e.g. on forks, take some of them)
        child.sendline(f"b {cext.source.name}:{cext.line('loop')}")
        child.expect(r"breakpoint (\d+) \(.*\): 1 location")
        line_breakpoint = child.match.group(1)
        child.sendline("b native_stpe")
        child.expect(r"breakpoint (\d+) \(native_stpe\): pending")
        typo = child.match.group(1)
        child.expect("did you mean: native_step")
        child.sendline(f"delete {typo}")
        child.sendline("delete 1")
        child.expect("breakpoint 1 .*deleted")
        child.sendline("c")
        child.expect(rf"stopped at breakpoint {line_breakpoint}")
        child.sendline("frobnicate")
        child.expect("unknown command")
        child.sendline(f"delete {line_breakpoint}")
        child.sendline("c")
        child.expect("the debuggee exited with code 0")
        child.expect(pexpect.EOF)
        assert done.read_text() == "done"
    finally:
        close(child)


def test_detach_leaves_the_debuggee_running_untraced(cext: CExtension, tmp_path: Path) -> None:
    child, done = spawn(cext, tmp_path, "-b", "native_step")
    try:
        child.expect(r"debugging PID (\d+)")
        pid = int(child.match.group(1))
        child.expect_exact("(mixdbg) ")
        child.sendline("detach")
        child.expect("detached from PID")
        child.expect(pexpect.EOF)
        deadline = time.monotonic() + 30
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert done.read_text() == "done"
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    finally:
        close(child)


def test_kill_ends_the_debuggee(cext: CExtension, tmp_path: Path) -> None:
    child, done = spawn(cext, tmp_path, "-b", "native_step")
    try:
        child.expect_exact("(mixdbg) ")
        child.sendline("kill")
        child.expect("was killed by SIGKILL")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 128 + 9
        assert not done.exists()
    finally:
        close(child)
