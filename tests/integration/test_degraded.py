"""An interpreter without debug info or gdb script: stops still come, with native frames,
and say why the Python frames are missing (here: Debian's own /usr/bin/python3.11)."""

from __future__ import annotations

import importlib.util
import os
import sysconfig
from pathlib import Path

import pytest
from conftest import CExtension, run_mixdbg

from mixdbg.stack import interpreter_gdb_scripts

SYSTEM_PYTHON = Path("/usr/bin/python3.11")

pytestmark = pytest.mark.timeout(90)


def test_stops_without_python_debug_info(cext: CExtension, tmp_path: Path) -> None:
    if not SYSTEM_PYTHON.exists() or sysconfig.get_python_version() != "3.11":
        pytest.skip("needs Debian's python3.11 beside a 3.11 test interpreter")
    if interpreter_gdb_scripts(str(SYSTEM_PYTHON)):
        pytest.skip("this system python has a gdb script: not the degraded case")
    # Given an interpreter that only sees debugpy and the extension, nothing else of ours
    site = tmp_path / "site"
    site.mkdir()
    debugpy = importlib.util.find_spec("debugpy")
    assert debugpy is not None and debugpy.origin is not None
    (site / "debugpy").symlink_to(Path(debugpy.origin).parent)
    script = tmp_path / "app.py"
    script.write_text("import mixdbg_testext as ext\next.loop(1)\n")
    env = dict(os.environ, PYTHONPATH=f"{site}:{cext.directory}")
    # When mixdbg runs it there
    result = run_mixdbg(["run", "--json", "--port", "0", "--python", str(SYSTEM_PYTHON), "-b", "native_step",
                         str(script)], env=env)
    # Then the stop comes, with native frames, and says why there are no Python frames
    assert result.returncode == 0, result.stderr
    stops = result.of("stopped")
    assert len(stops) == 1
    assert [f["function"] for f in stops[0]["frames"][:2]] == ["native_step", "native_loop"]
    assert stops[0]["python_frames"].startswith("unavailable")
    assert not [f for f in stops[0]["frames"] if f["kind"] == "python"]
    assert any("no gdb script" in w["message"] for w in result.of("warning"))
