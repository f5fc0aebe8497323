"""``mixdbg dap`` at the command line: help that teaches, loopback unless widened loudly,
one-line errors with documented exit codes."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(60)


def mixdbg(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """``python -m mixdbg ARGS``, its output captured."""
    return subprocess.run([sys.executable, "-m", "mixdbg", *args], capture_output=True, text=True,
                          timeout=timeout, check=False, stdin=subprocess.DEVNULL)


def test_help_names_the_editors_arguments_and_exit_codes() -> None:
    result = mixdbg("dap", "--help")
    assert result.returncode == 0
    for words in ("nvim-dap", "--port", "program | module", "disconnect", "Exit codes"):
        assert words in result.stdout


def test_a_host_beyond_loopback_needs_allow_remote() -> None:
    result = mixdbg("dap", "--port", "0", "--host", "0.0.0.0")
    assert result.returncode == 64
    assert result.stderr.count("\n") <= 2 and "--allow-remote" in result.stderr


def test_a_port_in_use_is_one_line_and_69() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        result = mixdbg("dap", "--port", str(taken.getsockname()[1]))
    assert result.returncode == 69
    assert "cannot listen" in result.stderr and "Traceback" not in result.stderr


def test_end_of_input_before_any_request_ends_quietly() -> None:
    result = subprocess.run([sys.executable, "-m", "mixdbg", "dap"], input="", capture_output=True, text=True,
                            timeout=30, check=False)
    assert result.returncode == 0 and result.stdout == ""
