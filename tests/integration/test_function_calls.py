"""No expression kills the debuggee: where gdb cannot call functions safely (gdb 13 on an
AMX CPU, as here) mixdbg turns calls off, says so in 'doctor', and 'p f()' is one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from conftest import Forky, mixdbg_at_terminal

from mixdbg import calls
from mixdbg.gdbmi import find_gdb

AMX_HERE = "amx_tile" in calls.cpu_flags()
GDB_MAJOR = int(subprocess.run([find_gdb(), "-nx", "-batch", "-ex", "p $_gdb_major"], capture_output=True,
                               text=True, check=True).stdout.split("=")[-1])
UNSAFE_HERE = AMX_HERE and GDB_MAJOR < calls.FIRST_SAFE_GDB

SLEEPER = """\
import time
print("sleeping", flush=True)
time.sleep(3)
print("slept well", flush=True)
"""


def _doctor_calls_check(argv: list[str]) -> dict[str, object]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    document = json.loads(done.stdout)
    return next(c for c in document["checks"] if c["name"] == "function calls")


@pytest.mark.timeout(60)
def test_doctor_reports_the_limit_here() -> None:
    if not UNSAFE_HERE:
        pytest.skip(f"gdb {GDB_MAJOR} can call functions on this CPU")
    check = _doctor_calls_check([sys.executable, "-m", "mixdbg", "doctor", "--json"])
    assert check["status"] == "warn"
    assert check["fix"] == "install gdb 14 or newer"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_doctor_does_not_report_it_with_gdb_18_in_forky(forky: Forky, tmp_path: Path) -> None:
    done = forky.run(tmp_path, [forky.python, "-m", "mixdbg", "doctor", "--json"], timeout=120)
    document = json.loads(done.stdout)
    check = next(c for c in document["checks"] if c["name"] == "function calls")
    assert check["status"] == "ok", check
    assert "gdb 18" in str(check["summary"])


@pytest.mark.timeout(90)
def test_print_call_after_ctrl_c_in_sleep_leaves_the_script_intact(tmp_path: Path) -> None:
    if not UNSAFE_HERE:
        pytest.skip("gdb can call functions here: the sequence that killed scripts cannot happen")
    # Given a script sleeping in time.sleep under mixdbg's prompt
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    with mixdbg_at_terminal(["run", "--port", "0", str(script)]) as child:
        child.expect("sleeping")
        # When the user interrupts it and prints a function call, then continues
        child.sendintr()
        child.expect("interrupted")
        child.expect_exact("(mixdbg) ")
        child.sendline("p (int)getpid()")
        # Then the call is refused in one line, nothing is called
        child.expect(r"error: mixdbg does not let gdb call functions in the debuggee here: [^\r\n]*\r\n")
        child.expect_exact("(mixdbg) ")
        # and the script finishes its sleep, prints, and exits 0 (gdb 13 called into it
        # before: OSError: [Errno 514])
        child.sendline("c")
        child.expect("slept well")
        child.expect("the debuggee exited with code 0")
        child.expect(pexpect.EOF)
        assert "Errno 514" not in (child.before or "")
        child.close()
        assert child.exitstatus == 0

@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_session_with_gdb_18_in_forky_keeps_function_calls(forky: Forky, tmp_path: Path) -> None:
    (tmp_path / "hello.py").write_text("print('hello from forky')\n")
    done = forky.run(tmp_path, [forky.python, "-m", "mixdbg", "run", "--json", "--port", "0", "/project/hello.py"])
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    session = next(e for e in events if e["event"] == "session")
    assert session["function_calls"] is True
    assert "hello from forky" in done.stderr
