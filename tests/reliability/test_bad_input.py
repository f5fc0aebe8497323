"""Bad input everywhere: every verb with missing, empty, wrong-typed and absurd arguments,
odd scripts, non-UTF-8 bytes, and launch.json files mixdbg must not touch.

Promise: one line on stderr starting 'mixdbg: ' (an indented hint may follow), no traceback,
the documented exit code (cli.DESCRIPTION: 64 usage, 65 unparseable file, 66 not found,
69 unavailable, 73 cannot write), and no file in the working directory changed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CExtension, MixdbgRun, run_mixdbg
from faultkit import Scenario, json_run_args

pytestmark = pytest.mark.timeout(120)

DOCUMENTED = {64, 65, 66, 69, 73, 75, 77}
HUGE = "9" * 5000


def _verbs() -> set[str]:
    help_text = subprocess.run([sys.executable, "-m", "mixdbg", "--help"], capture_output=True, text=True,
                               check=True).stdout
    return {line.split()[0] for line in help_text.splitlines() if line.startswith("    ") and line.split()}


VERBS = _verbs()


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with a hash of its bytes and its mode."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path)] = "link:" + os.readlink(path)
        elif path.is_file():
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() + oct(path.stat().st_mode)
    return found


#: Verbs whose output is a report of checks: a bad --lib or --pid is a 'fail' line in it.
REPORT_VERBS = ("doctor", "ptrace")


def assert_one_line_error(result: MixdbgRun, codes: set[int] | int, verb: str = "") -> None:
    allowed = {codes} if isinstance(codes, int) else codes
    assert result.returncode in allowed, (result.returncode, result.stderr)
    for text in (result.stdout, result.stderr):
        assert "Traceback" not in text and "internal error" not in text, text
    # progress lines ('mixdbg: starting ...') may come first; then one error line, and
    # only an indented hint after it
    lines = [line for line in result.stderr.splitlines() if not line.endswith("...")]
    if verb in REPORT_VERBS and not lines:
        assert any(line.startswith(("fail", "target:")) for line in result.stdout.splitlines()), result.stdout
        return
    assert lines and lines[0].startswith("mixdbg: "), result.stderr
    assert all(line.startswith("  ") for line in lines[1:]), result.stderr


@pytest.fixture(autouse=True)
def no_live_sessions(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private runtime dir: 'break' and 'detach' must not reach a live session of another
    test (or engineer) running at the same time, and behave the same whatever runs."""
    runtime = tmp_path_factory.mktemp("runtime")
    runtime.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A working directory holding files of the user's: script, directory, launch.json."""
    (tmp_path / "script.py").write_text("print('hello')\n")
    (tmp_path / "pkgdir").mkdir()
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "launch.json").write_text('// mine\n{"configurations": []}\n')
    (tmp_path / "notelf.so").write_text("not an ELF file\n")
    return tmp_path


# (verb, arguments, exit code or set of acceptable documented codes)
CASES = [
    ("", [], 64),
    ("", ["no-such-verb"], 64),
    ("", ["--bogus"], 64),
    ("run", [], 64),
    ("run", ["-m"], 64),
    ("run", ["-m", ""], 64),
    ("run", [""], 64),
    ("run", ["missing.py"], 66),
    ("run", ["pkgdir"], 64),
    ("run", ["--port", "", "script.py"], 64),
    ("run", ["--port", "abc", "script.py"], 64),
    ("run", ["--port", "-1", "script.py"], 64),
    ("run", ["--port", "65536", "script.py"], 64),
    ("run", ["--port", HUGE, "script.py"], 64),
    ("run", ["--max-frames", "0", "script.py"], 64),
    ("run", ["--max-frames", "1.5", "script.py"], 64),
    ("run", ["--host", "", "script.py"], {64, 69}),
    ("run", ["--host", "0.0.0.0", "script.py"], 64),
    ("run", ["-b", "", "script.py"], 64),
    ("run", ["-b", "*0x", "script.py"], 64),
    ("run", ["-b", "f if", "script.py"], 64),
    ("run", ["--python", "/nonexistent/python3", "script.py"], {66, 69}),
    ("run", ["--python", "pkgdir", "script.py"], {66, 69}),
    ("run", ["--gdb", "/nonexistent/gdb", "script.py"], 69),
    ("attach", [], 64),
    ("attach", [""], 64),
    ("attach", ["abc"], 64),
    ("attach", ["0"], 64),
    ("attach", ["-1"], 64),
    ("attach", ["4194303"], 66),
    ("attach", [HUGE], {64, 66}),
    ("ps", ["extra"], 64),
    ("break", [], {64, 66}),
    ("break", [""], {64, 66}),
    ("break", ["--delete", "abc"], 64),
    ("break", ["--delete", "-3"], 64),
    ("break", ["--list", "--delete", "1"], 64),
    ("break", ["--session", "abc", "f"], 64),
    ("break", ["--session", "4194303", "f"], 66),
    ("break", ["--session", HUGE, "f"], {64, 66}),
    ("break", ["--regex", "--max-locations", "0", "f"], 64),
    ("break", ["--regex", "--max-locations", "100000", "f"], {64, 66}),
    ("break", ["x" * 100_000], 66),
    ("sessions", ["extra"], 64),
    ("detach", ["--session"], 64),
    ("detach", ["--session", ""], 64),
    ("detach", ["--session", "abc"], 64),
    ("detach", ["--session", "4194303"], 66),
    ("setup", ["--workspace"], 64),
    ("setup", ["--workspace", "missing-dir"], 66),
    ("setup", ["--workspace", "script.py"], {64, 66}),
    ("setup", ["--port", "abc"], 64),
    ("setup", ["--port", "70000"], 64),
    ("setup", ["--port", HUGE], 64),
    ("setup", ["--source-map", "no-equals-sign"], 64),
    ("setup", ["--source-map", "=/x"], 64),
    ("setup", ["--python", "/nonexistent/python3"], {64, 66}),
    ("ptrace", ["--pid", "abc"], 64),
    ("ptrace", ["--pid", "0"], 64),
    ("ptrace", ["--pid", "4194303"], 66),
    ("ptrace", ["--pid", HUGE], {64, 66}),
    ("ptrace", ["--fix", "--restore"], 64),
    ("ptrace", ["--pid", "1", "--fix"], 64),
    ("doctor", ["--lib"], 64),
    ("doctor", ["--lib", ""], {64, 65, 66}),
    ("doctor", ["--lib", "missing.so"], 66),
    ("doctor", ["--lib", "notelf.so"], 65),
    ("doctor", ["--lib", "pkgdir"], {64, 65, 66}),
    ("doctor", ["extra"], 64),
]


def _case_id(case: object) -> str:
    verb, args, _ = case.values if hasattr(case, "values") else case  # type: ignore[attr-defined]
    return f"{verb or 'mixdbg'}-{'_'.join(a[:40] for a in args) or 'none'}"[:80]


@pytest.mark.parametrize("verb, args, codes", CASES, ids=[_case_id(case) for case in CASES])
def test_bad_arguments(workdir: Path, verb: str, args: list[str], codes: set[int] | int) -> None:
    if verb and verb not in VERBS:
        pytest.skip(f"'mixdbg {verb}' is not in 'mixdbg --help' yet")
    before = snapshot(workdir)
    result = run_mixdbg([verb, *args] if verb else args, cwd=workdir, timeout=100)
    assert_one_line_error(result, codes, verb)
    assert snapshot(workdir) == before


def test_script_with_a_syntax_error(workdir: Path) -> None:
    (workdir / "broken.py").write_text("x = 1\ndef f(:\n    pass\n")
    before = snapshot(workdir)
    result = run_mixdbg(["run", "--port", "0", "broken.py"], cwd=workdir)
    assert_one_line_error(result, 65)
    assert "broken.py" in result.stderr and "line 2" in result.stderr
    assert snapshot(workdir) == before


NON_UTF8 = os.fsdecode(b"caf\xe9-\xff")


def run_raw(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> MixdbgRun:
    """Like ``run_mixdbg``, for output that may echo the user's non-UTF-8 bytes back."""
    proc = subprocess.run([sys.executable, "-m", "mixdbg", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=100, stdin=subprocess.DEVNULL, check=False)
    out, err = (stream.decode("utf-8", "replace") for stream in (proc.stdout, proc.stderr))
    return MixdbgRun(proc.returncode, [], out, err)


def test_non_utf8_script_path_and_arguments_pass_through(cext: CExtension, tmp_path: Path) -> None:
    # Given a script whose path and argument are not UTF-8
    directory = tmp_path / NON_UTF8
    directory.mkdir()
    script = directory / f"{NON_UTF8}.py"
    script.write_text("import os, sys, mixdbg_testext as ext\next.loop(1)\n"
                      "open(os.path.join(os.path.dirname(__file__), 'arg'), 'wb').write(os.fsencode(sys.argv[1]))\n")
    result = run_mixdbg([*json_run_args("native_step"), str(script), NON_UTF8], env=cext.env())
    # Then it runs, and the script gets its argument byte for byte
    assert result.returncode == 0, result.stderr
    assert len(result.of("stopped")) == 1
    assert (directory / "arg").read_bytes() == b"caf\xe9-\xff"
    assert "Traceback" not in result.stderr


def test_non_utf8_breakpoint_spec_reaches_gdb(workdir: Path) -> None:
    # (it used to fail to encode, and was reported as 'gdb exited', exit 75)
    result = run_raw(["run", "--port", "0", "-b", NON_UTF8, "script.py"], cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "never resolved" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("verb, args, codes", [
    ("run", [f"{NON_UTF8}.py"], 66),
    ("doctor", ["--lib", f"{NON_UTF8}.so"], 66),
    ("setup", ["--workspace", NON_UTF8], 66),
    ("break", ["--session", "4194303", NON_UTF8], 66),
])
def test_non_utf8_bad_input(workdir: Path, verb: str, args: list[str], codes: int) -> None:
    if verb not in VERBS:
        pytest.skip(f"'mixdbg {verb}' is not in 'mixdbg --help' yet")
    before = snapshot(workdir)
    result = run_raw([verb, *args], cwd=workdir)
    assert_one_line_error(result, codes, verb)
    assert snapshot(workdir) == before


def _launch_json(workspace: Path, kind: str) -> None:
    vscode = workspace / ".vscode"
    vscode.mkdir(exist_ok=True)
    path = vscode / "launch.json"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 16)
    elif kind == "huge":
        entry = '{"name": "c%d", "type": "node", "request": "launch", "pad": "%s"},'
        path.write_text('{"configurations": [' + "".join(entry % (i, "x" * 1000) for i in range(10_000)) + "]}")
        assert path.stat().st_size > 10_000_000
    elif kind == "symlink":
        (workspace / "elsewhere.json").write_text('{"configurations": []}\n')
        path.symlink_to("../elsewhere.json")
    elif kind == "read-only":
        path.write_text('// mine\n{"configurations": []}\n')
        path.chmod(0o444)
    elif kind == "read-only-dir":
        path.write_text('// mine\n{"configurations": []}\n')
        vscode.chmod(0o555)
    elif kind == "directory":
        path.mkdir()
    elif kind == "unparseable":
        path.write_text('{"configurations": [ {"name": "x",, } ]\n')


@pytest.mark.parametrize("kind, code", [
    ("empty", 65), ("binary", 65), ("huge", 65), ("symlink", 73), ("read-only", 73),
    pytest.param("read-only-dir", 73, marks=pytest.mark.skipif(
        os.geteuid() == 0, reason="root may write in a read-only directory; the file itself is writable")),
    ("directory", {65, 73}), ("unparseable", 65),
])
def test_launch_json_mixdbg_must_not_touch(tmp_path: Path, kind: str, code: int | set[int]) -> None:
    if "setup" not in VERBS:
        pytest.skip("'mixdbg setup' is not in 'mixdbg --help' yet")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _launch_json(workspace, kind)
    before = snapshot(tmp_path)
    try:
        result = run_mixdbg(["setup", "--workspace", str(workspace)], cwd=tmp_path)
        after = snapshot(tmp_path)
    finally:
        (workspace / ".vscode").chmod(0o755)
    assert_one_line_error(result, code)
    assert after == before


GATED = """\
import os, time
while not os.path.exists("gate"):
    time.sleep(0.05)
"""


@pytest.mark.parametrize("args, code", [
    ([""], 64),
    (["--delete", "999"], {64, 66}),
    # '(' is a literal in gdb's (basic) regex: too many C++ names with parameters (64) when a
    # C++ library is loaded, none (66) when not (debugpy's native helper no longer is)
    (["--regex", "("], {64, 66}),
    (["x" * 100_000], 64),
])
def test_break_with_bad_input_against_a_live_session(cext: CExtension, tmp_path: Path, args: list[str],
                                                     code: int | set[int]) -> None:
    write = tmp_path / "script.py"
    write.write_text(GATED)
    scenario = Scenario(json_run_args() + ["script.py"], cext.env(), tmp_path)
    try:
        session = scenario.wait_event("session")
        result = run_mixdbg(["break", "--session", str(session["pid"]), *args], cwd=tmp_path)
        (tmp_path / "gate").touch()
        scenario.finish(60)
    finally:
        (tmp_path / "gate").touch()
        scenario.close()
    assert_one_line_error(result, code, "break")
    assert scenario.of("exited") == [{"event": "exited", "code": 0, "signal": None}]  # unharmed
