"""`mixdbg run` end to end: real gdb, real debugpy, the tests' own -g C extension."""

from __future__ import annotations

import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CExtension, MixdbgRun, run_mixdbg

pytestmark = pytest.mark.timeout(90)

CALLER = """\
import mixdbg_testext as ext

def inner():
    return ext.loop({n})

def outer():
    return inner()

print("total", outer())
"""


def write_script(tmp_path: Path, text: str, name: str = "script.py") -> Path:
    script = tmp_path / name
    script.write_text(text)
    return script


def line_of(script: Path, fragment: str) -> int:
    """The 1-based line of ``script`` that contains ``fragment``."""
    for number, text in enumerate(script.read_text().splitlines(), start=1):
        if fragment in text:
            return number
    raise KeyError(fragment)


def python_frames(event: dict[str, Any]) -> list[tuple[str, int]]:
    return [(f["function"], f["line"]) for f in event["frames"] if f["kind"] == "python"]


def run_json(cext: CExtension, script: Path, *breaks: str) -> MixdbgRun:
    args = ["run", "--json", "--port", "0"]
    for spec in breaks:
        args += ["-b", spec]
    return run_mixdbg([*args, str(script)], env=cext.env())


def test_function_breakpoint_stops_once_per_call_with_python_callers(cext: CExtension, tmp_path: Path) -> None:
    # Given a script whose Python functions call into C three times
    script = write_script(tmp_path, CALLER.format(n=3))
    # When mixdbg runs it with a breakpoint on the C function
    result = run_json(cext, script, "native_step")
    # Then there is one stop per call, and each stack goes C -> Python callers in order
    assert result.returncode == 0, result.stderr
    stops = result.of("stopped")
    assert len(stops) == 3
    for stop in stops:
        assert stop["reason"] == "breakpoint" and stop["breakpoint"] == 1
        native = [f["function"] for f in stop["frames"] if f["kind"] == "native"]
        assert native[:2] == ["native_step", "native_loop"]
        assert python_frames(stop)[:3] == [
            ("inner", line_of(script, "ext.loop")),
            ("outer", line_of(script, "return inner()")),
            ("<module>", line_of(script, "print(")),
        ]
        # C frames come before (inside) the Python frames that called them
        kinds = [f["kind"] for f in stop["frames"]]
        assert kinds.index("python") > kinds.index("native")
    assert "total 6" in result.stderr
    assert result.of("exited") == [{"event": "exited", "code": 0, "signal": None}]


def test_line_breakpoint_with_and_without_condition(cext: CExtension, tmp_path: Path) -> None:
    script = write_script(tmp_path, CALLER.format(n=5))
    loop_line = f"{cext.source.name}:{cext.line('loop')}"
    every = run_json(cext, script, loop_line)
    only_third = run_json(cext, script, f"{loop_line} if i == 2")
    assert every.returncode == 0 and only_third.returncode == 0
    assert len(every.of("stopped")) == 5
    assert len(only_third.of("stopped")) == 1
    top = only_third.of("stopped")[0]["frames"][0]
    assert (top["function"], top["line"]) == ("native_loop", cext.line("loop"))
    resolved = [b for b in only_third.of("breakpoint") if not b["pending"]]
    assert resolved and resolved[-1]["condition"] == "i == 2"


@pytest.mark.parametrize("how, name", [(0, "SIGSEGV"), (1, "SIGABRT"), (2, "SIGFPE")])
def test_native_crash_is_a_stop_with_mixed_stack(cext: CExtension, tmp_path: Path, how: int, name: str) -> None:
    script = write_script(tmp_path, f"import mixdbg_testext as ext\n\ndef boom():\n    ext.crash({how})\n\nboom()\n")
    result = run_json(cext, script)
    stops = result.of("stopped")
    assert len(stops) == 1
    assert stops[0]["reason"] == "signal" and stops[0]["signal"] == name
    functions = [f["function"] for f in stops[0]["frames"]]
    assert "native_crash_here" in functions
    assert ("boom", 4) in python_frames(stops[0])
    assert result.of("exited") == [{"event": "exited", "code": None, "signal": name}]
    assert result.returncode == 128 + signal.Signals[name].value


def test_module_mode_and_script_arguments(cext: CExtension, tmp_path: Path) -> None:
    (tmp_path / "callmod.py").write_text("import sys, mixdbg_testext as ext\nprint('args', sys.argv[1:])\n"
                                         "ext.loop(int(sys.argv[1]))\nsys.exit(3)\n")
    env = cext.env()
    env["PYTHONPATH"] += f":{tmp_path}"
    result = run_mixdbg(["run", "--json", "--port", "0", "-b", "native_step", "-m", "callmod", "2", "--json"],
                        env=env, cwd=tmp_path)
    assert result.returncode == 3
    assert len(result.of("stopped")) == 2
    assert "args ['2', '--json']" in result.stderr


def test_session_event_names_the_real_debuggee(cext: CExtension, tmp_path: Path) -> None:
    script = write_script(tmp_path, "import os\nprint('pid', os.getpid())\n")
    result = run_json(cext, script)
    session = result.of("session")[0]
    assert f"pid {session['pid']}" in result.stderr
    assert session["port"] > 0 and session["host"] == "127.0.0.1"
    assert session["adapter_pid"] is None  # without --wait-for-client, debugpy's adapter is in-process
    # Where Yama is absent the prctl opt-in is a no-op and the run still works
    yama = Path("/proc/sys/kernel/yama/ptrace_scope").exists()
    assert session["ptracer_declared"] is yama
    assert result.returncode == 0


def test_the_diagnostic_log_has_gdbs_commands_and_leaves_the_output_alone(cext: CExtension, tmp_path: Path) -> None:
    # Given $MIXDBG_LOG naming a file that already holds a line of the user's
    log = tmp_path / "mixdbg.log"
    log.write_text("the user's earlier line\n")
    env = {**cext.env(), "MIXDBG_LOG": str(log)}
    # When a session stops at a native breakpoint
    result = run_mixdbg(["run", "--json", "--port", "0", "-b", "native_step", str(write_script(tmp_path, CALLER.format(n=1)))],
                        env=env)
    # Then the run is as without the log, and the log (appended to) names gdb's commands and their times
    assert result.returncode == 0 and len(result.of("stopped")) == 1, result.stderr
    text = log.read_text()
    assert text.startswith("the user's earlier line\n")
    assert "mixdbg.gdbmi: " in text and " ms: -break-insert" in text and "native_step" in text


def test_human_output_shows_the_stack(cext: CExtension, tmp_path: Path) -> None:
    script = write_script(tmp_path, CALLER.format(n=1))
    result = run_mixdbg(["run", "--port", "0", "-b", "native_step", str(script)], env=cext.env())
    assert result.returncode == 0
    assert "stopped at breakpoint 1" in result.stdout
    assert "[py] inner" in result.stdout and "native_step" in result.stdout
    assert "the debuggee exited with code 0" in result.stdout


# --- bad input: one line, no traceback, documented exit code -----------------------

def assert_one_line_error(result: MixdbgRun, code: int, *words: str) -> None:
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    first = result.stderr.strip().splitlines()[0]
    assert first.startswith("mixdbg: ")
    for word in words:
        assert word in result.stderr


def test_missing_script(tmp_path: Path) -> None:
    assert_one_line_error(run_mixdbg(["run", str(tmp_path / "nope.py")]), 66, "not found")


def test_script_is_a_directory(tmp_path: Path) -> None:
    assert_one_line_error(run_mixdbg(["run", str(tmp_path)]), 64, "directory")


def test_port_in_use_is_named(tmp_path: Path) -> None:
    script = write_script(tmp_path, "print(1)\n")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_mixdbg(["run", "--port", str(port), str(script)])
    assert_one_line_error(result, 69, str(port), "in use")


def test_no_gdb(tmp_path: Path) -> None:
    # (Without MIXDBG_GDB, the gdb-for-pwndbg wheel's gdb is found whatever PATH holds:
    # tests/integration/test_gdb_choice.py.)
    script = write_script(tmp_path, "print(1)\n")
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path), "MIXDBG_GDB": "no-such-gdb"}
    result = run_mixdbg(["run", "--port", "0", str(script)], env=env)
    assert_one_line_error(result, 69, "gdb not found", "no-such-gdb")


def test_unparseable_breakpoint_fails_before_the_script_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = write_script(tmp_path, f"open({str(marker)!r}, 'w').close()\n")
    result = run_mixdbg(["run", "--port", "0", "-b", "*0x", str(script)])
    assert_one_line_error(result, 64, "*0x")
    assert not marker.exists()


def test_attach_to_missing_pid() -> None:
    assert_one_line_error(run_mixdbg(["attach", "12ab"]), 64, "process id")
    assert_one_line_error(run_mixdbg(["attach", "4194303"]), 66, "no process")


def test_remote_host_needs_explicit_flag(tmp_path: Path) -> None:
    script = write_script(tmp_path, "print(1)\n")
    assert_one_line_error(run_mixdbg(["run", "--host", "0.0.0.0", str(script)]), 64, "--allow-remote")


def test_breakpoint_that_debugpy_start_up_would_hit(cext: CExtension, tmp_path: Path) -> None:
    # debugpy starts threads while it starts up under gdb; only the script's own count
    script = write_script(tmp_path, "import threading\n\nt = threading.Thread(target=print)\nt.start()\nt.join()\n")
    result = run_json(cext, script, "PyThread_start_new_thread")
    assert result.returncode == 0, result.stderr
    stops = result.of("stopped")
    assert stops, result.stderr
    assert ("<module>", 4) in python_frames(stops[0])


def test_temporary_directory_with_a_space(cext: CExtension, tmp_path: Path) -> None:
    spaced = tmp_path / "tmp dir"
    spaced.mkdir()
    script = write_script(tmp_path, CALLER.format(n=1))
    env = cext.env()
    env["TMPDIR"] = str(spaced)
    result = run_mixdbg(["run", "--json", "--port", "0", "-b", "native_step", str(script)], env=env)
    assert result.returncode == 0, result.stderr
    assert len(result.of("stopped")) == 1
    assert not list(spaced.iterdir())  # no stack file left behind
