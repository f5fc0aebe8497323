"""The frame reader (``mixdbg.pyframes``) outside gdb, on live stopped interpreters of
every platform: the matrix script's frames, threads and locals, read from /proc/PID/mem."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    LOCAL_PLATFORMS,
    MATRIX_SCRIPT,
    Forky,
    Platforms,
    build_cext,
    compile_in_forky,
    matrix_expected,
    script_line,
)

from mixdbg.memory import ProcMemory
from mixdbg.pyframes import open_interpreter
from mixdbg.pyruntime import find_runtime

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]
LIVE_READER = Path(__file__).resolve().parents[1] / "live_reader.py"
EXPECTED_LOCALS = [("n", "1"), ("label", "'naïve'"), ("ratio", "0.5"), ("blob", "b'\\x00raw'"),
                   ("pair", "tuple (len 2)"), ("flag", "True"), ("nothing", "None"), ("items", "list (len 3)"),
                   ("table", "dict (len 1)"), ("tags", "set (len 2)"), ("model", "<a Model, by a registered summary>"),
                   ("big", "int (large)"), ("neg", "-7"), ("record", "Record(size=3, name='r')"),
                   ("opened", "Record(size=4, name='r')")]
#: Some of the globals a module's frame shows (its locals are its globals).
EXPECTED_GLOBALS = [("MODE", "'block'"), ("ext", "<module 'mixdbg_testext'>"), ("Record", "<class 'Record'>")]


def script_frames(thread: dict[str, Any], script: str) -> list[tuple[str, int]]:
    return [(name, line) for run in thread["runs"] for name, file, line in run["frames"] if file == script]


def check_matrix(document: dict[str, Any], minor: int, script: str) -> None:
    """The worker's chain and the main thread's join, exactly; every run placed by a marker."""
    assert "unsupported" not in document, document
    assert document["method"] == ("known layout" if minor < 13 else "debug offsets")
    worker = next(t for t in document["threads"] if script_frames(t, script)[:1] == [matrix_expected(minor)[0]])
    assert script_frames(worker, script) == matrix_expected(minor)
    outer = [Path(file).name for run in worker["runs"] for _, file, _ in run["frames"] if file != script]
    assert outer[-3:] == ["threading.py"] * 3 and worker["problem"] is None
    assert all(run["marker"] for run in worker["runs"])
    others = [script_frames(t, script) for t in document["threads"] if t is not worker]
    assert others == [[("<module>", script_line(MATRIX_SCRIPT, "join"))]]
    assert document["locals"] == [list(pair) for pair in EXPECTED_LOCALS]
    module = dict(document["module"])
    assert [(name, module.get(name)) for name, _ in EXPECTED_GLOBALS] == EXPECTED_GLOBALS
    assert module["worker"].startswith("Thread(") and "__name__" not in module


@pytest.mark.parametrize("label", [pytest.param(label, marks=[] if label == "pyenv-3.11" else pytest.mark.slow)
                                   for label in LOCAL_PLATFORMS])
def test_reader_on_a_live_interpreter(platforms: Platforms, label: str) -> None:
    # Given the matrix script spinning in C, on this platform's interpreter
    platform = platforms.get(label)
    env = platform.env()
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env['PYTHONPATH']}"
    # When the reader reads it, stopped, from /proc/PID/mem
    result = subprocess.run([sys.executable, str(LIVE_READER), str(platform.python), str(MATRIX_SCRIPT)],
                            env=env, capture_output=True, text=True, timeout=100, check=False)
    assert result.returncode == 0, result.stderr
    # Then every frame, thread and local is the expected one
    check_matrix(json.loads(result.stdout), platform.minor, str(MATRIX_SCRIPT))


@pytest.mark.slow
def test_reader_on_forky_python_314(forky: Forky, tmp_path: Path) -> None:
    # Given the matrix script and the test extension compiled inside the chroot
    (tmp_path / LIVE_READER.name).write_bytes(LIVE_READER.read_bytes())
    compile_in_forky(forky, tmp_path)
    # When the reader reads Debian's stripped /usr/bin/python3.14 running it
    result = forky.run(tmp_path, ["env", "PYTHONPATH=/project", forky.python, "/project/live_reader.py",
                                  "/usr/bin/python3.14", "/project/matrix.py"])
    assert result.returncode == 0, result.stderr
    # Then every frame, thread and local is the expected one
    document = json.loads(result.stdout)
    assert document["version"].startswith("3.14.")
    check_matrix(document, 14, "/project/matrix.py")


def test_python_39_is_refused_in_one_line(platforms: Platforms, tmp_path: Path) -> None:
    python = Path(str(platforms.get("pyenv-3.11").python).replace("3.11", "3.9"))
    candidates = sorted(python.parents[2].glob("3.9.*/bin/python3.9"))
    if not candidates:
        pytest.skip("no pyenv 3.9 here")
    cext = build_cext(tmp_path / "cext", str(candidates[-1]))
    env = cext.env()
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env['PYTHONPATH']}"
    result = subprocess.run([sys.executable, str(LIVE_READER), str(candidates[-1]), str(MATRIX_SCRIPT)],
                            env=env, capture_output=True, text=True, timeout=100, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"unsupported": "Python 3.9 is not supported (3.10 to 3.14 are)"}


WARM_INIT = """\
import sys, time

class Thing:
    def __init__(self, last):
        if last:
            print("ready", flush=True)
            time.sleep(60)  # @sleep

def build():
    for i in range(300):
        Thing(i == 299)  # @call

build()  # @build
"""


@pytest.mark.slow
@pytest.mark.parametrize("label", ["pyenv-3.12", "pyenv-3.13", "stripped-3.13"])
def test_warm_init_call_shows_no_cleanup_trampoline(platforms: Platforms, tmp_path: Path, label: str) -> None:
    # Given __init__ called from a warmed-up call site (3.13 specialises it through an
    # extra "__init__" cleanup frame with no line: CPython's own traceback shows it)
    platform = platforms.get(label)
    script = tmp_path / "warm.py"
    script.write_text(WARM_INIT)
    target = subprocess.Popen([str(platform.python), str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout is not None and target.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        os.kill(target.pid, signal.SIGSTOP)
        # When the reader reads it
        found = find_runtime(target.pid)
        with ProcMemory(target.pid) as memory:
            threads = open_interpreter(memory, found.runtime, found.py_version or None, found.hint).threads()
    finally:
        target.kill()
        os.kill(target.pid, signal.SIGCONT)
        target.wait(30)
    # Then the user's frames are shown, and only them
    frames = [(f.function, f.line) for f in threads[0].frames if f.file == str(script)]
    assert frames == [("__init__", script_line(script, "sleep")), ("build", script_line(script, "call")),
                      ("<module>", script_line(script, "build"))]
    assert [f for f in threads[0].frames if f.file != str(script)] == []
