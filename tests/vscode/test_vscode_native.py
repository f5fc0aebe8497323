"""The native views of a real VS Code on mixdbg dap (issue 23): the memory view ("View Binary
Data", the Hex Editor's, installed from its public source), Break on Value Change on a C
global, and a step in the Disassembly view. Checks read the views' text; the screenshots are
kept for people (the path is printed)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from dap.natives import marker_line
from vscode_real import HEX_EDITOR, REPO, CodeServer, ServerOptions, code_server, drive, vscode_real

__all__ = ["code_server", "vscode_real"]  # fixtures, used by name

pytestmark = [pytest.mark.slow, pytest.mark.vscode]

DAP_TESTS = REPO / "tests" / "dap"


@pytest.fixture
def memlab_workspace(tmp_path: Path) -> Path:
    """A folder with memlab.c, its module built -g -O0 beside it, and its driver script."""
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler")
    workspace = tmp_path / "memlab"
    workspace.mkdir()
    for name in ("native/memlab.c", "scripts/memlab_main.py", "scripts/finish.py"):
        shutil.copy(DAP_TESTS / name, workspace)
    module = workspace / f"memlab{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run([compiler, "-g", "-O0", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                    str(workspace / "memlab.c"), "-o", str(module)], check=True, timeout=300, capture_output=True)
    return workspace


@pytest.mark.timeout(600)
@pytest.mark.parametrize("code_server", [ServerOptions(extensions=(HEX_EDITOR,))], indirect=True)
def test_memory_view_break_on_value_change_and_a_disassembly_step(code_server: CodeServer,
                                                                 memlab_workspace: Path) -> None:
    source = memlab_workspace / "memlab.c"
    lines = {"filled": marker_line(source, "filled"), "bump": marker_line(source, "bump"),
             "afterBump": marker_line(source, "after_bump")}
    # Given a breakpoint clicked in the gutter of fill(), after its loop wrote i * 7 + 1 into
    # 16 bytes; when F5 is pressed on the driver script
    steps = drive(code_server, "native_views.js", memlab_workspace, timeout=540, source="memlab.c",
                  script="memlab_main.py", lines=lines)
    assert steps["stopTop"].startswith(f"fill memlab.c {lines['filled']}:")
    # Then "View Binary Data" on the buffer's pointer shows those 16 bytes at its address
    assert steps["memoryRow"] == "00000000 " + " ".join(f"{i * 7 + 1:02X}" for i in range(16))
    # ... a step in the Disassembly view moves to the next instruction, in the same line
    assert steps["instructionBefore"] and steps["instructionAfter"] != steps["instructionBefore"]
    assert steps["instructionAfter"] == steps["instructionNext"]
    assert steps["pausedOnStep"] == "Paused on step"
    assert steps["stepTop"].startswith(f"fill memlab.c {lines['filled']}:")
    # ... and Break on Value Change on the C global stops in bump(), where it changes, saying how
    assert "Break on Value Change" in steps["valueMenu"]
    assert re.match(rf"bump memlab\.c ({lines['bump']}|{lines['afterBump']}):", steps["changedTop"]), steps["changed"]
    assert steps["pausedOnChange"] == "memlab_counter changed: 0 -> 1"
    assert steps["counter"] == "memlab_counter = 1"
