"""Mixed stacks on every platform (issue 9): the matrix script's call chain, at a
breakpoint by name, at FILE:LINE and at a native crash, through the real CLI and gdb.

The Python frames must be exactly the expected ones, and each run of them must sit in
its place between the native frames: under the C function it called, above the C
function that called back into it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    LOCAL_PLATFORMS,
    MATRIX_SCRIPT,
    Forky,
    MixdbgRun,
    Platforms,
    compile_in_forky,
    matrix_expected,
    run_mixdbg,
    script_line,
)

pytestmark = pytest.mark.timeout(300)

#: (mode of the script, breakpoint spec or None for the crash, innermost two native frames)
STOPS = {
    "name": ("loop", "native_step", ["native_step", "native_loop"]),
    "line": ("loop", "mixdbg_testext.c:{step}", ["native_step", "native_loop"]),
    "crash": ("crash", None, ["native_crash_here", "native_crash"]),
}


def index_of(frames: list[dict[str, Any]], kind: str, function: str) -> int:
    return next(i for i, f in enumerate(frames) if f["kind"] == kind and f["function"].startswith(function))


def check_stop(stop: dict[str, Any], minor: int, script: str, natives: list[str]) -> None:
    """Exactly the expected Python frames, each run between the right native frames."""
    frames = stop["frames"]
    assert stop["python_frames"].startswith("ok"), stop["python_frames"]
    assert "by C-stack address" in stop["python_frames"] and "at the end" not in stop["python_frames"]
    assert [f["function"] for f in frames[:2]] == natives
    ours = [(f["function"], f["line"]) for f in frames if f["kind"] == "python" and f["file"] == script]
    assert ours == matrix_expected(minor)
    # C called from résumé_данные: only native frames between them
    called, caller = index_of(frames, "native", natives[1]), index_of(frames, "python", "résumé_данные")
    assert called < caller and all(f["kind"] == "native" for f in frames[called:caller])
    # <lambda> -> C native_callback -> callback_target
    assert (index_of(frames, "python", "callback_target") < index_of(frames, "native", "native_callback")
            < index_of(frames, "python", "<lambda>"))
    # each eval loop that runs them was replaced by its Python frames, none left over
    chain = frames[:index_of(frames, "python", "main_chain") + 1]
    assert not [f for f in chain if f["function"] == "_PyEval_EvalFrameDefault"]
    # and the thread's own Python frames (threading's, debugpy's) below all of it
    below = frames[index_of(frames, "python", "main_chain") + 1:]
    assert [Path(f["file"]).name for f in below if f["kind"] == "python"].count("threading.py") >= 2


def check_run(result: MixdbgRun, minor: int, script: str, how: str) -> dict[str, Any]:
    mode, _, natives = STOPS[how]
    stops = result.of("stopped")
    assert len(stops) == 1, result.stderr[-3000:]
    check_stop(stops[0], minor, script, natives)
    if mode == "crash":
        assert stops[0]["reason"] == "signal" and stops[0]["signal"] == "SIGSEGV"
        assert result.returncode == 128 + 11
    else:
        assert stops[0]["reason"] == "breakpoint" and result.returncode == 0, result.stderr[-3000:]
    return stops[0]


def check_threads(stop: dict[str, Any], script: str) -> None:
    """With --threads: the main thread waits in join() at the script's last line."""
    others = [t for t in stop["threads"] if t["thread"] != stop["thread"]]
    at_join = [t for t in others if ("<module>", script_line(MATRIX_SCRIPT, "join"))
               in [(f["function"], f["line"]) for f in t["frames"] if f["file"] == script]]
    assert len(at_join) == 1, json.dumps(stop["threads"])[:3000]


def args_for(how: str, step_line: int) -> list[str]:
    _, spec, _ = STOPS[how]
    breaks = ["-b", spec.format(step=step_line)] if spec else []
    return ["run", "--json", "--port", "0", "--threads", *breaks]


@pytest.mark.parametrize("how", list(STOPS))
@pytest.mark.parametrize("label", [pytest.param(label, marks=[] if label == "pyenv-3.11" else pytest.mark.slow)
                                   for label in LOCAL_PLATFORMS])
def test_matrix(platforms: Platforms, label: str, how: str) -> None:
    # Given the matrix script on this platform's interpreter
    platform = platforms.get(label)
    mode = STOPS[how][0]
    # When mixdbg runs it and it stops (breakpoint by name, by FILE:LINE, or a crash)
    result = run_mixdbg([*args_for(how, platform.cext.line("step")), "--python", str(platform.python),
                         str(MATRIX_SCRIPT), mode], env=platform.env(), timeout=120)
    # Then the stop's Python frames are exactly the expected ones, in their places
    stop = check_run(result, platform.minor, str(MATRIX_SCRIPT), how)
    check_threads(stop, str(MATRIX_SCRIPT))


@pytest.mark.slow
@pytest.mark.parametrize("how", list(STOPS))
def test_matrix_on_forky_python_314(forky: Forky, tmp_path: Path, how: str) -> None:
    # Given the matrix script and the extension built in the chroot, for its stripped 3.14
    compile_in_forky(forky, tmp_path)
    source = (tmp_path / "mixdbg_testext.c").read_text().splitlines()
    step = next(n for n, text in enumerate(source, start=1) if "/* @step */" in text)
    # When mixdbg (with forky's gdb 18) runs it there
    command = ["env", "PYTHONPATH=/project", forky.python, "-m", "mixdbg", *args_for(how, step),
               "--python", "/usr/bin/python3.14", "/project/matrix.py", STOPS[how][0]]
    done = forky.run(tmp_path, command, timeout=200)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    # Then the Python frames are exactly the expected ones, in their places
    stop = check_run(MixdbgRun(done.returncode, events, done.stdout, done.stderr), 14, "/project/matrix.py", how)
    check_threads(stop, "/project/matrix.py")
    assert stop["python_frames"].startswith("ok (Python 3.14.")
    assert os.path.basename(stop["frames"][0]["library"]).startswith("mixdbg_testext")


def test_threads_in_human_output(platforms: Platforms) -> None:
    # Given the matrix script, run for people (no --json) with --threads
    platform = platforms.get("pyenv-3.11")
    result = run_mixdbg(["run", "--no-prompt", "--port", "0", "--threads", "-b", "native_step",
                         str(MATRIX_SCRIPT), "loop"], env=platform.env())
    # Then the stop shows its thread, then every other thread, the main one waiting in join()
    assert result.returncode == 0, result.stderr[-2000:]
    stop, _, others = result.stdout.partition("\nthread 1 (LWP ")
    assert "[py] résumé_данные" in stop and "[py] résumé_данные" not in others
    assert f"[py] <module>  {MATRIX_SCRIPT}:{script_line(MATRIX_SCRIPT, 'join')}" in others
