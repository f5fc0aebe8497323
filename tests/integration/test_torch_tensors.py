"""Tensors at native stops, read from memory only, on the real torch 2.13 wheel (no DWARF)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pexpect
import pytest
from conftest import MixdbgRun, continue_to_exit, mixdbg_at_terminal, run_mixdbg

from mixdbg import calls

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "testdebug.py"
#: One torch.add per case of acceptance item 3, in this order.
CASES = """\
import torch
x = torch.arange(6.).reshape(2, 3)
y = torch.ones(2, 3)
torch.add(x, y)
torch.add(x.t(), y.t(), alpha=2)
torch.add(x[1:], 2)
torch.add(torch.arange(3), torch.tensor([True, False, True]))
torch.add(torch.tensor([1.5, -2.0], dtype=torch.bfloat16), torch.ones(2, dtype=torch.bfloat16))
torch.add(torch.arange(10000.), 1)
print("done", flush=True)
"""

pytestmark = [pytest.mark.timeout(240), pytest.mark.torch]


def run_cases(tmp_path: Path, python: str | None = None) -> MixdbgRun:
    """Run CASES with a breakpoint on aten::add.Tensor, function calls forced off."""
    script = tmp_path / "cases.py"
    script.write_text(CASES)
    env = cache_env(tmp_path)
    env[calls.OVERRIDE_VARIABLE] = "off"
    extra = ["--python", python] if python else []
    return run_mixdbg(["run", "--json", "--port", "0", *extra, "-b", "op:aten::add.Tensor", str(script)],
                      env=env, timeout=230)


@contextmanager
def at_first_add(tmp_path: Path, source: str) -> Iterator[pexpect.spawn]:
    """``source`` run at a terminal, stopped at its first aten::add.Tensor, at the prompt."""
    script = tmp_path / "script.py"
    script.write_text(source)
    with mixdbg_at_terminal(["run", "--port", "0", "-b", "op:aten::add.Tensor", str(script)],
                            cache_env(tmp_path)) as child:
        child.expect("operator aten::add.Tensor")
        child.expect_exact("(mixdbg) ")
        yield child


def cache_env(tmp_path: Path) -> dict[str, str]:
    """This environment with a cache directory of the test's own (kernels, tensor layout)."""
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return env


def tensors_of(stop: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {arg["name"]: arg["tensor"] for arg in stop["arguments"] if "tensor" in arg}


def check_cases(result: MixdbgRun) -> None:
    """Acceptance item 3, on the events of ``run_cases``."""
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.of("session")[0]["function_calls"] is False
    stops = result.of("stopped")
    assert len(stops) == 6
    plain, transposed, sliced, ints, bf16, big = (tensors_of(stop) for stop in stops)
    assert plain["self"] == {"dtype": "float32", "shape": [2, 3], "strides": [3, 1], "storage_offset": 0,
                             "device": "cpu", "values": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "truncated": False,
                             "data": plain["self"]["data"]}
    assert int(plain["self"]["data"], 16) == int(transposed["self"]["data"], 16)
    assert [arg["name"] for arg in stops[0]["arguments"]] == ["self", "other", "alpha"]
    assert stops[0]["arguments"][0]["type"] == "at::Tensor const&"
    assert stops[1]["arguments"][2]["value"] == 2
    assert transposed["self"]["strides"] == [1, 3]
    assert transposed["self"]["values"] == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert sliced["self"]["storage_offset"] == 3 and sliced["self"]["values"] == [3.0, 4.0, 5.0]
    assert ints["self"]["dtype"] == "int64" and ints["self"]["values"] == [0, 1, 2]
    assert ints["other"]["dtype"] == "bool" and ints["other"]["values"] == [True, False, True]
    assert bf16["self"]["dtype"] == "bfloat16" and bf16["self"]["values"] == [1.5, -2.0]
    assert len(big["self"]["values"]) == 16 and big["self"]["truncated"] is True
    assert big["self"]["values"][:3] == [0.0, 1.0, 2.0]
    assert "done" in result.stderr


def test_tensor_arguments_at_add(torch_installed: None, tmp_path: Path) -> None:
    check_cases(run_cases(tmp_path))


def test_randn_shows_its_size(torch_installed: None, tmp_path: Path) -> None:
    env = cache_env(tmp_path)
    result = run_mixdbg(["run", "--json", "--port", "0", "-b", "op:aten::randn", str(EXAMPLE)], env=env, timeout=230)
    assert result.returncode == 0, result.stderr[-2000:]
    (stop,) = result.of("stopped")
    arguments = {arg["name"]: arg for arg in stop["arguments"]}
    assert arguments["size"]["value"] == [2, 3]
    assert arguments["dtype"]["value"] is None
    assert arguments["device"]["value"] == "cpu"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_same_in_a_fresh_venv_with_the_torch_wheel(torch_installed: None, tmp_path: Path) -> None:
    # Given a fresh venv with torch 2.13.0 from its wheel (no DWARF) and debugpy
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "torch==2.13.0", "debugpy>=1.8.22"], check=True,
                   timeout=400, capture_output=True)
    # When the cases run there, with function calls forced off
    # Then every check of item 3 holds: the layout probe ran in the venv's interpreter
    check_cases(run_cases(tmp_path, python=python))


def test_prompt_args_and_tensor_address(torch_installed: None, tmp_path: Path) -> None:
    # Given the first stop of the cases at the prompt
    with at_first_add(tmp_path, CASES) as child:
        # When the user asks for the arguments
        child.sendline("args")
        # Then each is one line, read from memory
        child.expect(r"self: at::Tensor const& = float32\[2, 3\] cpu strides \[3, 1\] = "
                     r"\[\[0\., 1\., 2\.\], \[3\., 4\., 5\.\]\]")
        child.expect(r"alpha: c10::Scalar const& = 1\r\n")
        # and 'tensor' decodes the at::Tensor whose address is in rcx (after the result
        # pointer, the functor and the dispatch key set), and refuses a bad address in one line
        child.sendline("p (void *)$rcx")
        child.expect(r"(0x[0-9a-f]+)\r\n")
        child.sendline(f"tensor {child.match.group(1)}")
        child.expect(r"tensor float32 \[2, 3\] cpu\r\n  dtype = float32\r\n  shape = \[2, 3\]\r\n"
                     r"  strides = \[3, 1\]\r\n  storage_offset = 0\r\n  device = cpu\r\n  data = 0x[0-9a-f]+\r\n"
                     r"  values = \[\[0\., 1\., 2\.\], \[3\., 4\., 5\.\]\]\r\n")
        child.sendline("tensor 0x10")
        child.expect(r"not decoded: memory unreadable[^\r\n]*\r\n")
        child.sendline("delete 1")
        continue_to_exit(child)


def test_a_plain_function_stop_takes_names_and_return_type_from_the_headers(torch_installed: None,
                                                                            tmp_path: Path) -> None:
    env = cache_env(tmp_path)
    result = run_mixdbg(["run", "--json", "--port", "0", "-b", "at::native::randn", str(EXAMPLE)], env=env,
                        timeout=230)
    assert result.returncode == 0, result.stderr[-2000:]
    stops = result.of("stopped")
    assert stops and all(stop.get("op") is None for stop in stops)
    for stop in stops:  # both overloads (with and without a generator) return at::Tensor by value
        arguments = {arg["name"]: arg for arg in stop["arguments"]}
        assert arguments["size"]["value"] == [2, 3], stop["arguments"]
        assert arguments["size"]["type"] == "c10::ArrayRef<long>"


IN_A_FUNCTION = """\
import torch

def f():
    x = torch.arange(6.).reshape(2, 3)
    n = 3
    return torch.add(x.t(), n)

f()
"""


def test_python_locals_show_tensors(torch_installed: None, tmp_path: Path) -> None:
    # Given a stop in aten::add called from a Python function with a tensor local
    with at_first_add(tmp_path, IN_A_FUNCTION) as child:
        # When the user asks for the innermost Python frame's locals
        child.sendline("locals")
        # Then the tensor is summarised from memory like a native argument, the int as before
        child.expect(r"x = tensor float32\[2, 3\] cpu strides \[3, 1\] = \[\[0\., 1\., 2\.\], \[3\., 4\., 5\.\]\]")
        child.expect(r"n = 3\r\n")
        child.sendline("delete 1")
        continue_to_exit(child)
