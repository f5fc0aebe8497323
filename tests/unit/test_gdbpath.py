"""Which gdb mixdbg runs (``mixdbg.gdbpath``): the order of choices and the fallback's reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mixdbg import gdbpath
from mixdbg.errors import UnavailableError
from mixdbg.gdbmi import gdb_environment


@pytest.fixture(autouse=True)
def fresh_choice(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No ``MIXDBG_GDB`` from the caller's environment, and no cached wheel decision."""
    monkeypatch.delenv(gdbpath.VARIABLE, raising=False)
    gdbpath._bundled.cache_clear()
    yield
    gdbpath._bundled.cache_clear()


def _program(directory: Path) -> Path:
    """An ELF program called ``gdb`` in ``directory`` (a copy of ``true``)."""
    directory.mkdir(parents=True, exist_ok=True)
    true = shutil.which("true")
    assert true is not None
    target = directory / "gdb"
    shutil.copy(os.path.realpath(true), target)
    return target


def test_argument_then_variable_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = _program(tmp_path / "a")
    theirs = _program(tmp_path / "b")
    monkeypatch.setenv(gdbpath.VARIABLE, str(theirs))
    assert gdbpath.choose(str(mine)) == gdbpath.GdbChoice(str(mine), gdbpath.ARGUMENT)
    assert gdbpath.choose() == gdbpath.GdbChoice(str(theirs), gdbpath.VARIABLE)


def test_a_named_gdb_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(UnavailableError, match="--gdb names"):
        gdbpath.choose(str(tmp_path / "nothing"))


def test_the_wheels_gdb_is_the_default_here() -> None:
    script = gdbpath.wheel_script()
    if script is None or gdbpath.shared_libpython() is None:
        pytest.skip(f"{gdbpath.WHEEL} is not usable for {sys.executable}")
    assert gdbpath.choose() == gdbpath.GdbChoice(script, gdbpath.BUNDLED)
    version = subprocess.run([script, "-nx", "--version"], capture_output=True, text=True, timeout=60,
                             env=gdb_environment(), check=True).stdout
    assert version.startswith("GNU gdb")


def test_no_shared_libpython_falls_back_to_the_system_gdb_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = _program(tmp_path / "usr" / "bin")
    monkeypatch.setenv("PATH", str(system.parent))
    monkeypatch.setattr(gdbpath, "shared_libpython", lambda: None)
    monkeypatch.setattr(gdbpath, "wheel_script", lambda: "/somewhere/bin/gdb")
    choice = gdbpath.choose()
    assert (choice.path, choice.source) == (str(system), gdbpath.SYSTEM)
    line = choice.fallback_line()
    assert line is not None and "needs a shared libpython" in line and str(system) in line


def test_without_the_wheel_and_without_a_system_gdb_the_error_says_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(gdbpath, "wheel_script", lambda: None)
    monkeypatch.setattr(gdbpath, "SYSTEM_GDB", str(tmp_path / "no-gdb"))
    with pytest.raises(UnavailableError, match="is not installed for .* and there is no gdb on PATH"):
        gdbpath.choose()


def test_scripts_called_gdb_on_path_are_not_the_system_gdb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "gdb"
    shim.write_text("#!/bin/sh\nexec gdb \"$@\"\n")
    shim.chmod(0o755)
    real = _program(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{real.parent}")
    assert gdbpath.system_gdb() == str(real)


#: In a fresh mixdbg-like program (this test process's sys.path is pytest's): gdb's Python,
#: started by the wheel's script and as mixdbg starts it, asked for its module path,
#: environment and data directory, printed as JSON.
SIDE_BY_SIDE = """
import json, subprocess
from mixdbg import gdbpath
from mixdbg.gdbmi import gdb_environment
script = gdbpath.wheel_script()
how = gdbpath.launch(script)
ask = ["-nx", "-batch", "-ex", "python import sys, os, gdb; print(sys.path, os.environ.get('PYTHONHOME'), "
       "gdb.PYTHONDIR); import mixdbg; print(mixdbg.__file__)"]
def run(argv, env):
    return subprocess.run(argv + ask, capture_output=True, text=True, timeout=60, env=env, check=True).stdout
print(json.dumps({"argv": how.argv, "script": run([script], gdb_environment()),
                  "direct": run(list(how.argv), {**gdb_environment(), **how.env})}))
"""


def test_the_wheels_binary_runs_as_its_script_would_run_it(tmp_path: Path) -> None:
    script = gdbpath.wheel_script()
    if script is None or gdbpath.shared_libpython() is None:
        pytest.skip(f"{gdbpath.WHEEL} is not usable for {sys.executable}")
    # Given a user's PYTHONPATH (the script, started without it, passes none on to gdb)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    # When gdb's Python runs once started by the wheel's script, once as mixdbg starts it
    done = subprocess.run([sys.executable, "-c", SIDE_BY_SIDE], capture_output=True, text=True, timeout=120,
                          env=env, check=True)
    seen = json.loads(done.stdout)
    # Then mixdbg ran the bundled binary, not the script, and gdb saw the same: the script is the oracle
    assert script not in seen["argv"] and seen["argv"][-2] == "--data-directory", seen["argv"]
    assert seen["direct"] == seen["script"] and "mixdbg" in seen["direct"], seen
    assert str(tmp_path) not in seen["direct"]


def test_any_other_gdb_runs_as_it_is(tmp_path: Path) -> None:
    mine = str(_program(tmp_path))
    assert gdbpath.launch(mine) == gdbpath.Launch((mine,), {})
