"""What mixdbg says about each interpreter before and at a stop: ``doctor`` names the
version and how Python frames are read, on every platform; on one it cannot read (3.9)
it says so, and a run still stops, with native frames and one line saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import LOCAL_PLATFORMS, MATRIX_SCRIPT, Forky, Platforms, build_cext, pyenv_python, run_mixdbg

pytestmark = pytest.mark.timeout(120)


REPO = Path(__file__).resolve().parents[2]


def python_check(stdout: str) -> dict[str, Any]:
    check: dict[str, Any] = next(c for c in json.loads(stdout)["checks"] if c["name"] == "python")
    return check


def doctor(python: Path) -> dict[str, Any]:
    """``mixdbg doctor --json --python PYTHON``'s python check (this checkout's mixdbg)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "mixdbg", "doctor", "--json", "--python", str(python)],
                          capture_output=True, text=True, timeout=100, cwd=REPO, env=env, check=False)
    return python_check(done.stdout)


@pytest.mark.parametrize("label", [pytest.param(label, marks=[] if label == "pyenv-3.11" else pytest.mark.slow)
                                   for label in LOCAL_PLATFORMS])
def test_doctor_names_version_and_reading_method(platforms: Platforms, label: str) -> None:
    platform = platforms.get(label)
    check = doctor(platform.python)
    assert check["status"] == "ok", check
    method = "debug offsets" if platform.minor >= 13 else "known layout"
    assert check["details"]["frames"] == method
    assert f"Python {platform.version}." in check["summary"] and f"({method})" in check["summary"]


@pytest.mark.slow
def test_doctor_on_forky_python_314(forky: Forky, tmp_path: Path) -> None:
    result = forky.run(tmp_path, [forky.python, "-m", "mixdbg", "doctor", "--json", "--python", "/usr/bin/python3.14"])
    check = python_check(result.stdout)
    assert check["status"] == "ok" and check["details"]["frames"] == "debug offsets"
    assert check["summary"].startswith("Python 3.14.")


@pytest.fixture(scope="module")
def python39() -> Path:
    python = pyenv_python("3.9")
    if python is None:
        pytest.skip("no pyenv 3.9 here")
    return python


def test_doctor_says_39_is_not_supported(python39: Path) -> None:
    check = doctor(python39)
    assert check["status"] == "warn" and check["details"]["frames"] is None
    assert "Python frames not supported (3.10 to 3.14 are); stops show native frames only" in check["summary"]


def test_a_run_on_39_stops_with_native_frames(python39: Path, tmp_path: Path) -> None:
    # Given the matrix script on Python 3.9 (no debugpy of its own: mixdbg lends its copy)
    cext = build_cext(tmp_path / "cext", str(python39))
    # When it runs to a breakpoint in C
    result = run_mixdbg(["run", "--json", "--port", "0", "--python", str(python39), "-b", "native_step",
                         str(MATRIX_SCRIPT), "loop"], env=cext.env())
    # Then the stop comes, with native frames, and one line says why there are no Python frames
    assert result.returncode == 0, result.stderr[-2000:]
    stops = result.of("stopped")
    assert len(stops) == 1
    assert [f["function"] for f in stops[0]["frames"][:2]] == ["native_step", "native_loop"]
    assert "native_callback" in [f["function"] for f in stops[0]["frames"]]
    assert not [f for f in stops[0]["frames"] if f["kind"] == "python"]
    assert stops[0]["python_frames"] == "unavailable: Python 3.9 is not supported (3.10 to 3.14 are)"
