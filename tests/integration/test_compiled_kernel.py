"""A breakpoint on the name of a function torch.compile generates (Inductor CPU's ``kernel``)
is reported once per change that matters (issue 25, item 7): the name is also a static
function of libm (with libc6-dbg's DWARF) and is placed in every compile worker the script
starts; the terminal said so about twenty times, some locations as ``None``."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import run_mixdbg

SCRIPT = """\
import torch


@torch.compile
def f(x):
    return torch.sin(x) + torch.cos(x)


print(f(torch.randn(8)))
"""

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.timeout(900)]


def test_kernel_breakpoint_lines_name_each_place_once(torch_installed: None, tmp_path: Path) -> None:
    # Given a torch.compile script (its kernel compiled by Inductor's workers) and -b kernel
    script = tmp_path / "compiled.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    # When it runs at a terminal's level of detail (no prompt)
    result = run_mixdbg(["run", "--no-prompt", "--port", "0", "-b", "kernel", str(script)], env=env, timeout=850,
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("breakpoint 1 ")]
    # Then each line says something new: pending, then each time new places appear, and
    # every place is named (no None)
    assert len(lines) == len(set(lines)) and len(lines) <= 4, lines
    assert not any("None" in line or "unnamed" in line for line in lines), lines
    assert re.search(r"kernel\(?\)? at \w+\.main\.cpp:\d+", lines[-1]), lines
    # and it stopped in the generated kernel, with the user's line below it
    assert re.search(r"#\d+\s+kernel\s+\S+\.main\.cpp:\d+", result.stdout)
    assert re.search(r"\[py\] <module>\s+\S*compiled\.py:9", result.stdout)
