"""PyTorch values everywhere (issue 24), through the real CLI and a plain gdb: a user's
custom operators built with ``torch.utils.cpp_extension.load(..., extra_cflags=["-O0",
"-g"])`` (``tests/torchext``), ``op:`` breakpoints on them, tensors at their lines."""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any

import pytest
from conftest import continue_to_exit, mixdbg_at_terminal, run_mixdbg
from torchext_fixture import TorchExtension

import mixdbg
from mixdbg.gdbmi import find_gdb, gdb_environment

#: What a plain gdb sources (gdb's Python imports the rest of mixdbg from beside it).
PRINTERS = os.path.join(os.path.dirname(mixdbg.__file__), "pytorch", "gdb_printers.py")

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.timeout(300)]


def environment(cache: dict[str, str]) -> dict[str, str]:
    """This environment with the session's own mixdbg cache."""
    return {**os.environ, **cache}


def named(stop: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A stop's decoded arguments by name."""
    return {argument["name"]: argument for argument in stop["arguments"]}


def test_op_on_custom_operators_stops_in_their_kernels_named_from_the_schema(
        torch_extension: TorchExtension, torch_cache: dict[str, str]) -> None:
    # Given op: breakpoints on operators of two namespaces registered by a library the script
    # loads after torch, and one with a typo
    specs = ["op:myops::scaled_add", "op:vision_like::shrink", "op:myops::kinds", "op:myops::scaled_ad"]
    args = ["run", "--json", "--port", "0"]
    for spec in specs:
        args += ["-b", spec]
    # When it runs
    result = run_mixdbg([*args, *torch_extension.argv()], env=environment(torch_cache), timeout=280)
    assert result.returncode == 0, result.stderr[-3000:]
    # Then each registered operator stops once, in its kernel function, past its prologue
    # (where gdb breaks on it by name)
    stops = result.of("stopped")
    assert [stop["op"] for stop in stops] == ["myops::scaled_add", "vision_like::shrink", "myops::kinds"]
    tops = [(stop["frames"][0]["function"], stop["frames"][0]["line"]) for stop in stops]
    assert tops[:2] == [("scaled_add_cpu", torch_extension.line("first")), ("shrink_cpu", torch_extension.line("shrink"))]
    assert tops[2][0] == "kinds_cpu"
    # ...with the arguments named from the schema: a, b, alpha = 2
    scaled = named(stops[0])
    assert list(scaled) == ["a", "b", "alpha"]
    assert scaled["a"]["tensor"]["shape"] == [2, 3] and scaled["a"]["tensor"]["values"] == [1.0] * 6
    assert scaled["alpha"]["value"] == 2
    # ...the second namespace's kernel, registered with TORCH_FN, reads z = 3 * ones
    shrink = named(stops[1])
    assert shrink["x"]["tensor"]["values"] == [3.0] * 6 and shrink["scale"]["value"] == 0.5
    # ...and an optional tensor, a Scalar, an int[] and a ScalarType? as Python shows them
    kinds = named(stops[2])
    assert kinds["x"]["tensor"]["strides"] == [3, 1] and kinds["x"]["tensor"]["storage_offset"] == 1
    assert kinds["maybe"]["value"] is None and kinds["scale"]["value"] == 2
    assert kinds["dims"]["value"] == [4, 5, 6] and kinds["dtype"]["value"] == "float64"
    # The breakpoint events say which backends' kernels they stop in
    bound = {event["spec"]: event for event in result.of("breakpoint") if not event["pending"]}
    assert bound["op:myops::scaled_add"]["ops"] == {"myops::scaled_add": ["CPU"]}
    # The typo let the program run, and is reported at the end with the registered names like it
    (warning,) = [w["message"] for w in result.of("warning") if "scaled_ad)" in w["message"]]
    assert "no library registered myops::scaled_ad" in warning
    assert "did you mean: op:myops::scaled_add?" in warning
    assert "scaled 18.0 9.0 8.0" in result.stderr


def test_prompt_locals_p_args_and_tensor_at_the_kernel_line(torch_extension: TorchExtension,
                                                           torch_cache: dict[str, str]) -> None:
    # Given a stop at the kernel's loop line, at a terminal
    where = f"{torch_extension.source}:{torch_extension.line('loop')}"
    with mixdbg_at_terminal(["run", "--port", "0", "-b", where, *torch_extension.argv()], environment(torch_cache),
                            timeout=180) as child:
        child.expect(r"stopped at breakpoint 1 ")
        child.expect_exact("(mixdbg) ")
        # When the user asks for the locals: the tensors in one line each
        child.sendline("locals")
        child.expect(r"a = tensor float32 \[2, 3\] cpu\r\n")
        child.expect(r"alpha = 2\r\n")
        child.expect(r"out = tensor float32 \[2, 3\] cpu\r\n")
        child.expect_exact("(mixdbg) ")
        # ...p a: the line and its fields, as gdb's print shows a printed value
        child.sendline("p a")
        child.expect(r"tensor float32 \[2, 3\] cpu\r\n  dtype = float32\r\n  shape = \[2, 3\]\r\n"
                     r"  strides = \[3, 1\]\r\n  storage_offset = 0\r\n  device = cpu\r\n  data = (0x[0-9a-f]+)\r\n"
                     r"  values = \[\[1\., 1\., 1\.\], \[1\., 1\., 1\.\]\]\r\n")
        data = child.match.group(1)
        child.expect_exact("(mixdbg) ")
        # ...args: from the debug info, at this line (not only at the function's entry)
        child.sendline("args")
        child.expect(r"a: const at::Tensor & = float32\[2, 3\] cpu strides \[3, 1\] = "
                     r"\[\[1\., 1\., 1\.\], \[1\., 1\., 1\.\]\]\r\n")
        child.expect(r"alpha: double = 2\.0\r\n")
        child.expect_exact("(mixdbg) ")
        # ...and 'tensor' on a's TensorImpl: the same view
        child.sendline("p (void *)a.impl_.target_")
        child.expect(r"(0x[0-9a-f]+)\r\n")
        child.sendline(f"tensor {child.match.group(1)}")
        child.expect(rf"tensor float32 \[2, 3\] cpu\r\n(  \w+ = [^\r]+\r\n){{5}}  data = {data}\r\n")
        child.sendline("delete 1")
        continue_to_exit(child)


def test_a_plain_gdb_sources_the_printers(torch_extension: TorchExtension, torch_cache: dict[str, str]) -> None:
    # Given a plain gdb (no mixdbg) that sources the printers, stopped in the kernel whose
    # locals are one of each c10 type
    commands = ["set breakpoint pending on", "set confirm off", f"source {PRINTERS}",
                f"break {torch_extension.source}:{torch_extension.line('kinds')}", "run", "info args", "info locals",
                "p *impl", "info pretty-printer", "kill"]
    args = [find_gdb(), "-nx", "-batch", "-q"] + [part for command in commands for part in ("-ex", command)]
    done = subprocess.run([*args, "--args", "python", "-W", "ignore", *torch_extension.argv()], capture_output=True,
                          text=True, timeout=280, env={**gdb_environment(), **torch_cache}, check=False)
    out = done.stdout
    # Then each value reads as Python would show it, from memory
    x = "tensor float32 [2, 2] cpu"
    expected = [
        f"x = {x} = {{dtype = float32, shape = [2, 2], strides = [3, 1], storage_offset = 1, device = cpu, ",
        "values = [[1., 1.], [1., 1.]]}", "maybe = nullopt", "scale = 2", "dims = [4, 5, 6] = {4, 5, 6}",
        "dtype = float64", f"list = [2 tensors] = {{{x}", "small = [4, 5, 6] = {4, 5, 6}", f"boxed = {x}",
        "number = 3.5", "device = cpu", "symint = 7", "undefined = tensor undefined", f"tensors = [2 tensors] = {{{x}",
        "nothing = nullopt", f"impl = {x}", "mixdbg-torch"]
    for text in expected:
        assert text in out, f"{text!r} not in:\n{out}\n{done.stderr[-2000:]}"
    assert re.search(r"strides = \[1, 3\]", out)  # list's second tensor, x.t()
    assert "$1 = <incomplete type>" in out  # TensorImpl itself: only pointers to it are read
