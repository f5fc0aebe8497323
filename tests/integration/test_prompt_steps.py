"""The prompt's steps and frame selection at a real terminal (issue 14): ``n``, ``s``,
``finish``, ``up``, ``down``, ``frame N``, with ``p`` and ``locals`` in the selected frame."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest
from conftest import CExtension, mixdbg_at_terminal

pytestmark = pytest.mark.timeout(120)

SCRIPT = """\
import mixdbg_testext as ext


def main():
    count = 2
    return ext.loop(count)


main()
"""


def prompt(child: pexpect.spawn) -> None:
    """Wait for the prompt."""
    child.expect_exact("(mixdbg) ")


def test_next_step_finish_and_frame_selection(cext: CExtension, tmp_path: Path) -> None:
    script = tmp_path / "steps.py"
    script.write_text(SCRIPT)
    step_line, loop_line = cext.line("step"), cext.line("loop")
    with mixdbg_at_terminal(["run", "--port", "0", "-b", f"{cext.source}:{loop_line}", str(script)],
                            env=cext.env()) as child:
        # Given a stop on native_loop's call of native_step
        child.expect(r"stopped at breakpoint 1")
        prompt(child)
        child.sendline("delete 1")
        prompt(child)
        # When stepping into it: native_step's first line, where p and locals see its frame
        child.sendline("s")
        child.expect(rf"native_step  \S*mixdbg_testext\.c:{step_line}")
        prompt(child)
        child.sendline("p i + 100")
        child.expect(r"\r\n100\r\n")
        prompt(child)
        # When stepping over a line: the next line of native_step
        child.sendline("n")
        child.expect(rf"native_step  \S*mixdbg_testext\.c:{step_line + 1}")
        prompt(child)
        # When finishing: back in native_loop, on its loop line
        child.sendline("finish")
        child.expect(rf"native_loop  \S*mixdbg_testext\.c:{loop_line}")
        prompt(child)
        # When moving up to the Python caller: its line; frame N and down select too
        child.sendline("bt")
        child.expect(r"#(\d+) +\[py\] main ")
        main_frame = int(child.match.group(1))
        prompt(child)
        child.sendline(f"frame {main_frame}")
        child.expect(rf"#{main_frame}\s+\[py\] main  \S*steps\.py:6")
        prompt(child)
        child.sendline("locals")
        child.expect(rf"locals of frame #{main_frame}:")
        child.expect(r"count = 2")
        prompt(child)
        child.sendline(f"down {main_frame}")
        child.expect(r"#0 +native_loop")
        prompt(child)
        child.sendline("locals")
        child.expect(r"locals of frame #0:")
        child.expect(r"n = 2")
        prompt(child)
        child.sendline("up 999")
        child.expect(r"no frame #\d+")
        prompt(child)
        child.sendline("c")
        child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
