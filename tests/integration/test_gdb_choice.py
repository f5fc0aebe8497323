"""The gdb mixdbg runs by default: the wheel's, found without PATH; the system's, with one
line saying why, when the wheel's cannot run here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CEXT_SOURCE, CExtension, Forky, MixdbgRun

from mixdbg import gdbpath

pytestmark = pytest.mark.timeout(120)

SCRIPT = "import mixdbg_testext as ext\nprint('total', ext.loop(2))\n"
#: mixdbg with the wheel's gdb judged unusable (as for an interpreter without a shared
#: libpython, which this machine's interpreters all have).
NO_LIBPYTHON = ("import sys; from mixdbg import gdbpath, cli; gdbpath.shared_libpython = lambda: None; "
                "sys.exit(cli.main(sys.argv[1:]))")


def _run(argv: list[str], env: dict[str, str]) -> MixdbgRun:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=100,
                          stdin=subprocess.DEVNULL, check=False)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return MixdbgRun(done.returncode, events, done.stdout, done.stderr)


def _env(cext: CExtension, path: str) -> dict[str, str]:
    env = {k: v for k, v in cext.env().items() if k != gdbpath.VARIABLE}
    env["PATH"] = path
    return env


def test_without_gdb_on_path_the_wheels_gdb_debugs(cext: CExtension, tmp_path: Path) -> None:
    if gdbpath.wheel_script() is None or gdbpath.shared_libpython() is None:
        pytest.skip(f"{gdbpath.WHEEL} is not usable for {sys.executable}")
    # Given a PATH with no gdb program on it (the interpreter's directory only: at most the
    # wheel's script and pyenv's shims)
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = _env(cext, os.path.dirname(sys.executable))
    assert gdbpath.system_gdb() is None or "/usr/bin" not in env["PATH"]
    # When mixdbg runs a script with a native breakpoint, and doctor is asked
    run = _run([sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0", "-b", "native_step",
                str(script)], env)
    doctor = subprocess.run([sys.executable, "-m", "mixdbg", "doctor", "--json"], env=env, capture_output=True,
                            text=True, timeout=100, check=False)
    # Then the wheel's gdb stopped at every call, without a word about falling back
    assert run.returncode == 0, run.stderr
    assert [event["breakpoint"] for event in run.of("stopped")] == [1, 1]
    assert not [event for event in run.of("warning") if "system's gdb" in event["message"]]
    gdb = json.loads(doctor.stdout)["checks"][0]
    assert (gdb["status"], gdb["details"]["source"]) == ("ok", gdbpath.BUNDLED)
    assert int(str(gdb["details"]["version"]).split(".")[0]) >= 14


def test_without_shared_libpython_the_system_gdb_debugs_after_one_line(cext: CExtension, tmp_path: Path) -> None:
    system = gdbpath.system_gdb()
    if system is None:
        pytest.skip("no system gdb to fall back to")
    # Given an interpreter whose libpython the wheel's gdb cannot use
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = _env(cext, os.environ.get("PATH", ""))
    # When mixdbg runs (human output) a script with a native breakpoint
    run = _run([sys.executable, "-c", NO_LIBPYTHON, "run", "--no-prompt", "--port", "0", "-b", "native_step",
                str(script)], env)
    # Then one line says which gdb and why, and that gdb stops at every call
    assert run.returncode == 0, run.stderr
    fallback = [line for line in run.stderr.splitlines() if "system's gdb" in line]
    assert len(fallback) == 1 and system in fallback[0] and "shared libpython" in fallback[0], run.stderr
    assert run.stdout.count("stopped at breakpoint 1") == 2, run.stdout


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_fresh_forky_venv_debugs_python314_with_the_wheels_gdb(forky: Forky, tmp_path: Path) -> None:
    # Given forky's Python 3.14 and a new venv there, into which this checkout is installed
    # as the README says (pip install -e .), and a PATH that holds that venv alone (forky's
    # own gdb 18 is not on it)
    repo = Path(__file__).resolve().parents[2]
    shutil.copytree(repo, tmp_path / "src", ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__"))
    shutil.copy(CEXT_SOURCE, tmp_path)
    shutil.copy(repo / "tests" / "scripts" / "pool.py", tmp_path)
    build = ("gcc -g -O0 -shared -fPIC $(python3.14-config --includes) mixdbg_testext.c "
             "-o mixdbg_testext$(python3.14-config --extension-suffix)")
    venv = "/project/venv/bin"
    script = (f"set -e; cd /project; {build}; python3.14 -m venv venv; {venv}/pip install -q -e src; "
              f"PATH={venv} {venv}/mixdbg doctor --json > doctor.json; "
              f"PATH={venv} {venv}/mixdbg run --json --no-prompt --port 0 -b native_step pool.py forkserver > pool.json")
    # When doctor is asked, and the forkserver pool runs under mixdbg
    done = forky.run(tmp_path, ["bash", "-c", script], timeout=800)
    # Then the gdb is the wheel's 18.1, and both pool workers stopped in the extension
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    gdb = json.loads((tmp_path / "doctor.json").read_text())["checks"][0]
    assert (gdb["status"], gdb["details"]["source"]) == ("ok", gdbpath.BUNDLED), gdb
    assert str(gdb["details"]["version"]).startswith("18."), gdb
    pool = [json.loads(line) for line in (tmp_path / "pool.json").read_text().splitlines()]
    main = next(e["pid"] for e in pool if e["event"] == "session")
    assert len({e["pid"] for e in pool if e["event"] == "stopped" and e["pid"] != main}) == 2
    assert "results [1, 2]" in done.stderr + done.stdout
