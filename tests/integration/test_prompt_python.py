"""The prompt's Python commands at a real terminal: ``locals [N]`` and ``bt all``, on every
platform (issue 9: locals read from the interpreter's memory)."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest
from conftest import LOCAL_PLATFORMS, MATRIX_SCRIPT, Forky, Platforms, compile_in_forky, script_line

pytestmark = pytest.mark.timeout(180)

LOCALS = [r"n = 1", r"label = 'naïve'", r"ratio = 0\.5", r"blob = b'\\x00raw'", r"pair = tuple \(len 2\)",
          r"flag = True", r"nothing = None", r"items = list \(len 3\)", r"table = dict \(len 1\)",
          r"tags = set \(len 2\)", r"model = Model\r", r"big = int \(large\)", r"neg = -7",
          r"record = Record\(size=3, name='r'\)"]


def converse(child: pexpect.spawn) -> None:
    """At the native_step stop: locals of the innermost Python frame, of a chosen one, of the
    selected native frame (gdb's), and every thread's stack."""
    try:
        child.expect(r"stopped at breakpoint 1")
        child.expect_exact("(mixdbg) ")
        child.sendline("bt")
        child.expect(r"#(\d+) +\[py\] ")
        innermost = child.match.group(1)
        child.expect(r"#(\d+) +\[py\] forward ")
        forward = child.match.group(1)
        child.expect_exact("(mixdbg) ")
        child.sendline(f"locals {innermost}")
        child.expect(rf"locals of frame #{innermost}:")
        for pattern in LOCALS:
            child.expect(pattern)
        child.expect_exact("(mixdbg) ")
        child.sendline(f"locals {forward}")
        child.expect(rf"locals of frame #{forward}:")
        child.expect(r"self = Model")
        child.expect(r"n = 1")
        child.expect_exact("(mixdbg) ")
        child.sendline("locals")  # the selected frame: #0, native_step, built with -g
        child.expect(r"locals of frame #0:")
        child.expect(r"i = \d+")
        child.expect_exact("(mixdbg) ")
        child.sendline("bt all")
        child.expect(r"thread 1 \(LWP \d+\)")
        child.expect(rf"\[py\] <module>  \S*matrix.py:{script_line(MATRIX_SCRIPT, 'join')}")
        child.expect(r"thread \d+ \(LWP \d+\)")
        child.expect(r"\[py\] résumé_данные")
        child.expect_exact("(mixdbg) ")
        child.sendline("c")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.parametrize("label", [pytest.param(label, marks=[] if label == "pyenv-3.11" else pytest.mark.slow)
                                   for label in LOCAL_PLATFORMS])
def test_locals_and_bt_all(platforms: Platforms, label: str) -> None:
    platform = platforms.get(label)
    child = pexpect.spawn(sys.executable, ["-m", "mixdbg", "run", "--port", "0", "--python", str(platform.python),
                                           "-b", "native_step", str(MATRIX_SCRIPT), "loop"],
                          env=platform.env(), encoding="utf-8", timeout=60)
    converse(child)


@pytest.mark.slow
def test_locals_and_bt_all_on_forky_python_314(forky: Forky, tmp_path: Path) -> None:
    compile_in_forky(forky, tmp_path)
    child = pexpect.spawn(str(forky.script), ["run", str(tmp_path), "env", "PYTHONPATH=/project", forky.python,
                                              "-m", "mixdbg", "run", "--port", "0", "--python", "/usr/bin/python3.14",
                                              "-b", "native_step", "/project/matrix.py", "loop"],
                          encoding="utf-8", timeout=90)
    converse(child)
