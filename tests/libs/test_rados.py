"""Debian's librados as it is shipped (stripped, its DWARF in /usr/lib/debug/.build-id, an
exported versioned alias over the real function) called from Python through Debian's Cython
``rados`` module, with Debian's /usr/bin/python3: ``mixdbg run`` and ``mixdbg dap`` stop at
``rados_create2``, ``_rados_create2`` and ``librados_c.cc:166``, and a source map makes the
frame's source a local file (issue 25). Needs ``apt-get install python3-rados
librados2-dbg`` (``.ci/run`` installs them); skipped, with that reason, without them."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import run_mixdbg

from mixdbg import debuginfo

pytestmark = pytest.mark.timeout(240)

DEBIAN_PYTHON = "/usr/bin/python3"
LIBRADOS = Path("/usr/lib/x86_64-linux-gnu/librados.so.2")
#: The function's first line, and where librados_c.cc is in Ceph's source tree; Debian
#: builds with its tree mapped to ".", so the debug info names ./src/librados/librados_c.cc.
LINE = 166
IN_TREE = Path("src/librados/librados_c.cc")
SCRIPT = """\
import rados

try:
    rados.Rados(conffile="")  # @create
except rados.Error as error:  # no cluster here: reading the configuration fails after the create
    print(error)
"""


@pytest.fixture(scope="module")
def librados() -> None:
    """Skip unless Debian's rados module and librados's debug file are installed."""
    reason = "needs Debian's python3-rados and librados2-dbg (apt-get install python3-rados librados2-dbg)"
    if not Path(DEBIAN_PYTHON).exists() or not LIBRADOS.exists():
        pytest.skip(reason)
    if subprocess.run([DEBIAN_PYTHON, "-c", "import rados"], capture_output=True, check=False).returncode != 0:
        pytest.skip(reason)
    if debuginfo.classify(LIBRADOS).level != debuginfo.DWARF:
        pytest.skip(reason)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "create.py"
    path.write_text(SCRIPT)
    return path


def create_line(script: Path) -> int:
    return next(n for n, text in enumerate(script.read_text().splitlines(), 1) if "# @create" in text)


def local_tree(directory: Path) -> Path:
    """A folder standing for Ceph's source tree, with librados_c.cc in it (its content does
    not matter: only that the file exists)."""
    source = directory / "ceph" / IN_TREE
    source.parent.mkdir(parents=True)
    source.write_text("".join(f"// line {n}\n" for n in range(1, 400)))
    return directory / "ceph"


@pytest.mark.parametrize("spec", [
    "rados_create2",
    pytest.param("_rados_create2", marks=pytest.mark.slow),
    pytest.param(f"librados_c.cc:{LINE}", marks=pytest.mark.slow),
])
def test_mixdbg_run_stops_in_librados(librados: None, script: Path, spec: str) -> None:
    # Given the exported name, the real one (only in the debug file) or the line
    # When the script runs under mixdbg with Debian's interpreter
    result = run_mixdbg(["run", "--json", "--port", "0", "--python", DEBIAN_PYTHON, "-b", spec, str(script)],
                        timeout=200, cwd=script.parent)
    # Then it stops once in _rados_create2 at line 166, under the script's line
    assert result.returncode == 0, result.stderr[-3000:]
    stops = result.of("stopped")
    assert len(stops) == 1, result.stderr[-3000:]
    top = stops[0]["frames"][0]
    assert (top["function"], top["line"], Path(top["library"]).name) == ("_rados_create2", LINE, "librados.so.2")
    python = [(f["function"], Path(f["file"]).name, f["line"]) for f in stops[0]["frames"] if f["kind"] == "python"]
    assert python[0] == ("<module>", script.name, create_line(script))


@pytest.mark.slow
def test_a_source_map_gives_the_frame_a_local_file(librados: None, script: Path, tmp_path: Path) -> None:
    # Given Ceph's tree (as far as this test needs it) in a local folder, mapped to Debian's "."
    tree = local_tree(tmp_path)
    # When a breakpoint is set on the local file's line
    result = run_mixdbg(["run", "--json", "--port", "0", "--python", DEBIAN_PYTHON, "--source-map", f".={tree}",
                         "-b", f"{tree / IN_TREE}:{LINE}", str(script)], timeout=200, cwd=script.parent)
    # Then it binds there and the stop's frame is in the local file
    assert result.returncode == 0, result.stderr[-3000:]
    bound = [b for b in result.of("breakpoint") if not b["pending"]]
    assert bound and bound[0]["locations"][0]["file"] == str(tree / IN_TREE)
    (stop,) = result.of("stopped")
    assert (stop["frames"][0]["file"], stop["frames"][0]["line"]) == (str(tree / IN_TREE), LINE)


# --- mixdbg dap ---------------------------------------------------------------------------

def launch_config(script: Path, **extra: Any) -> dict[str, Any]:
    return {"program": str(script), "python": DEBIAN_PYTHON, "cwd": str(script.parent),
            "console": "internalConsole", **extra}


def stopped_top(dap: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The first stop's top frame and the stack, once it stopped at a breakpoint."""
    stopped = dap.wait_stopped(timeout=200)
    assert stopped["reason"] in ("breakpoint", "function breakpoint"), stopped
    frames = dap.stack(stopped["threadId"])
    return frames[0], frames


@pytest.mark.parametrize("function", [
    "rados_create2",
    pytest.param("_rados_create2", marks=pytest.mark.slow),
    pytest.param(f"librados_c.cc:{LINE}", marks=pytest.mark.slow),  # a function breakpoint takes FILE:LINE too
])
def test_mixdbg_dap_function_breakpoint_stops_in_librados(librados: None, script: Path, dap: Any,
                                                          function: str) -> None:
    # Given a function breakpoint on the exported name, the real one, or the DWARF's line
    startup = dap.launch(launch_config(script), function_breakpoints=[function], timeout=60)
    assert startup.function_breakpoints[0]["verified"] in (True, False)
    # Then the session stops in _rados_create2 with the script's line below it
    top, frames = stopped_top(dap)
    assert top["name"].startswith("_rados_create2") and top["line"] == LINE
    assert "instructionPointerReference" in top
    # and without a source map the frame says why it has no file to show
    assert top["source"]["presentationHint"] == "deemphasize" and "source not found" in top["source"]["origin"]
    assert "path" not in top["source"]
    # and an editor that opens it anyway is told the same in one line
    content = dap.request("source", source=top["source"], sourceReference=0)["body"]["content"]
    assert content.startswith("librados_c.cc: source not found here") and content.count("\n") == 1
    python = [f for f in frames if f.get("source", {}).get("path") == str(script)]
    assert python and python[0]["line"] == create_line(script)
    dap.request("continue", threadId=1)
    dap.wait_exited(timeout=120)


@pytest.mark.slow
def test_mixdbg_dap_source_map_both_ways(librados: None, script: Path, dap: Any, tmp_path: Path) -> None:
    # Given Ceph's tree in a local folder, mapped to Debian's "." by sourceMap, and a
    # breakpoint set in the editor on the local file's line
    tree = local_tree(tmp_path)
    local = tree / IN_TREE
    startup = dap.launch(launch_config(script, sourceMap={".": str(tree)}), breakpoints={local: [LINE]}, timeout=60)
    assert not startup.breakpoints[str(local)][0]["verified"]  # librados is not loaded yet
    # Then it stops there, and the frame's source is the local file, an absolute path
    top, _ = stopped_top(dap)
    assert top["source"].get("path") == str(local) and top["line"] == LINE
    assert "presentationHint" not in top["source"]
    dap.request("continue", threadId=1)
    dap.wait_exited(timeout=120)


# --- progress of the long symbol read --------------------------------------------------

CONSTRUCTOR = "ceph::common::CephContext::CephContext"


def test_mixdbg_dap_reports_the_symbol_read_as_progress(librados: None, script: Path, dap: Any) -> None:
    # Given a client that shows progress (as VS Code does) and a breakpoint in libceph-common,
    # whose debug file gdb reads for seconds
    dap.initialize(supportsProgressReporting=True)
    dap.launch(launch_config(script), function_breakpoints=[CONSTRUCTOR], timeout=60)
    stopped_top(dap)
    # Then the read was announced, updated and ended, in that order, under one id, naming
    # the library and its size
    events = [e for name in ("progressStart", "progressUpdate", "progressEnd") for e in dap.events(name)]
    events.sort(key=lambda event: event["seq"])
    reading = [e for e in events if "libceph-common.so.2" in json.dumps(e["body"])]
    assert reading and reading[0]["event"] == "progressStart", [e["event"] for e in events]
    ident = reading[0]["body"]["progressId"]
    mine = [e for e in events if e["body"]["progressId"] == ident]
    assert [e["event"] for e in mine] == ["progressStart", *["progressUpdate"] * (len(mine) - 2), "progressEnd"]
    assert re.search(r"libceph-common\.so\.2 \(\d+ MB of debug info\)", mine[0]["body"]["message"])
    assert "read in" in mine[-1]["body"]["message"]
    dap.request("continue", threadId=1)
    dap.wait_exited(timeout=120)


@pytest.mark.slow
def test_without_progress_support_the_read_is_said_in_the_console(librados: None, script: Path, dap: Any) -> None:
    # Given a client that does not show progress
    dap.initialize(supportsProgressReporting=False)
    dap.launch(launch_config(script), function_breakpoints=[CONSTRUCTOR], timeout=60)
    stopped_top(dap)
    # Then no progress event came, and the debug console said what gdb read
    assert not dap.events("progressStart") and not dap.events("progressEnd")
    said = dap.output()
    assert re.search(r"gdb reads symbols: libceph-common\.so\.2 \(\d+ MB of debug info\)", said), said
    dap.request("continue", threadId=1)
    dap.wait_exited(timeout=120)


def test_mixdbg_run_json_reports_progress_events(librados: None, script: Path) -> None:
    # When mixdbg run --json reads libceph-common's symbols for a breakpoint
    result = run_mixdbg(["run", "--json", "--port", "0", "--python", DEBIAN_PYTHON, "-b", CONSTRUCTOR, str(script)],
                        timeout=200, cwd=script.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    # Then progress events came before the stop: start, updates, end, one id, the library named
    progress = result.of("progress")
    reading = [e for e in progress if "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2" in e["libraries"]]
    assert [e["phase"] for e in reading] == ["start", *["update"] * (len(reading) - 2), "end"]
    assert len({e["id"] for e in reading}) == 1 and reading[0]["bytes"] > 50_000_000
    assert result.events.index(reading[-1]) < result.events.index(result.of("stopped")[0])
