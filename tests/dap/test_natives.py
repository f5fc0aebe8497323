"""The DAP tests' native modules and driver scripts, before any debugger: they build with
line information on their markers, and the scripts run to their expected output under
plain Python."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import pyenv_python

from .natives import NativeModule, NativeSet, NativeSets

pytestmark = pytest.mark.timeout(300)


def lines_without_code(module: NativeModule, markers: list[str]) -> list[str]:
    """The markers whose line gdb finds no code for in the module's debug info."""
    gdb = shutil.which("gdb")
    if gdb is None:
        pytest.skip("no gdb on PATH")
    commands = [arg for marker in markers for arg in ("-ex", f"info line {module.source.name}:{module.line(marker)}")]
    done = subprocess.run([gdb, "-nx", "-batch", *commands, str(module.library)], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, check=False)
    found = done.stdout.splitlines()
    return [marker for marker, answer in zip(markers, found) if "starts at address" not in answer]


@pytest.mark.parametrize(("module", "markers"), [
    ("capi", ["step", "loop", "callback", "segv"]),
    ("geom", ["area", "shoelace", "area_return", "total_start", "total_loop", "total_scale", "total_return"]),
    ("cython", ["square", "sum_start", "sum_loop", "apply_call"]),
])
def test_markers_have_code_in_the_debug_info(natives: NativeSet, module: str, markers: list[str]) -> None:
    built: NativeModule = getattr(natives, module)
    assert lines_without_code(built, markers) == []


@pytest.mark.parametrize(("script", "module", "expected"), [
    ("capi_main.py", "capi", "capi total 6 called 7\n"),
    ("geom_main.py", "geom", "geom first 6.0 total 20.0\n"),
    ("cython_main.py", "cython", "cython total 14 twos [0, 2]\n"),
    ("mixed_main.py", "capi", "mixed value 42 result 2\n"),
    ("deep_main.py", "capi", "deep 0\n"),
    ("steps_main.py", "capi", "steps 20000\n"),
])
def test_driver_scripts_run_under_plain_python(natives: NativeSet, script: str, module: str, expected: str) -> None:
    getattr(natives, module)
    done = natives.run_script(script)
    assert (done.returncode, done.stdout) == (0, expected), done.stderr


def test_a_script_records_its_result(natives: NativeSet, capi_module: NativeModule, tmp_path: Path) -> None:
    # Given $MIXDBG_TEST_RESULT naming a file, and stdout going nowhere
    result = tmp_path / "result"
    done = subprocess.run([natives.python, str(natives.script("capi_main.py"))], env={
        **natives.env(), "MIXDBG_TEST_RESULT": str(result)}, stdout=subprocess.DEVNULL, timeout=120, check=False)
    # Then the script's last line is in the file
    assert done.returncode == 0 and result.read_text() == "capi total 6 called 7\n"


@pytest.mark.torch
def test_ops_script(natives: NativeSet, torch_installed: None) -> None:
    done = natives.run_script("ops_main.py")
    assert (done.returncode, done.stdout) == (0, "ops sum 18.0 shape (2, 3)\n"), done.stderr


@pytest.mark.torch
def test_dataloader_script(natives: NativeSet, capi_module: NativeModule, torch_installed: None) -> None:
    done = natives.run_script("dataloader_main.py", "2")
    assert (done.returncode, done.stdout) == (0, "items 8\n"), done.stderr


@pytest.mark.torch
def test_dataloader_script_with_a_crashing_worker(natives: NativeSet, capi_module: NativeModule,
                                                   torch_installed: None) -> None:
    done = natives.run_script("dataloader_main.py", "2", "crash")
    assert done.returncode == 1
    assert "is killed by signal: Segmentation fault" in done.stderr


@pytest.mark.slow
def test_another_interpreter(native_sets: NativeSets) -> None:
    # Given the modules built for pyenv's 3.10 (not the interpreter running the tests)
    python = pyenv_python("3.10")
    if python is None:
        pytest.skip("no pyenv 3.10 here")
    natives = native_sets.get(python)
    assert natives.version == "3.10" and natives.geom.library.name.startswith("geom.cpython-310")
    assert natives.cython.library.exists() and natives.capi.library.exists()
    # Then the scripts run under it
    for script, expected in (("geom_main.py", "geom first 6.0 total 20.0\n"),
                             ("cython_main.py", "cython total 14 twos [0, 2]\n"),
                             ("capi_main.py", "capi total 6 called 7\n")):
        done = natives.run_script(script)
        assert (done.returncode, done.stdout) == (0, expected), done.stderr


@pytest.mark.slow
def test_forky_python_3_14(forky_natives: NativeSet) -> None:
    # Given the modules built inside the forky chroot for its Python 3.14
    assert forky_natives.version == "3.14"
    assert str(forky_natives.geom.source) == "/project/geom.cpp"
    assert str(forky_natives.cython.library).startswith("/project/cyloop.cpython-314")
    assert forky_natives.capi.name == "mixdbg_testext"
    # Then the scripts run there
    for script, expected in (("geom_main.py", "geom first 6.0 total 20.0\n"),
                             ("cython_main.py", "cython total 14 twos [0, 2]\n"),
                             ("capi_main.py", "capi total 6 called 7\n")):
        done = forky_natives.run_script(script)
        assert (done.returncode, done.stdout) == (0, expected), done.stderr
