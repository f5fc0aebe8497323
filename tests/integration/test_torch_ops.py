"""Operator breakpoints (op:aten::NAME) on the real torch 2.13 wheel, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import MixdbgRun, continue_to_exit, mixdbg_at_terminal, run_mixdbg

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "testdebug.py"
ADD = """\
import torch
x = torch.arange(6.).reshape(2, 3)
y = torch.ones(2, 3)
torch.add(x, y)
x + 2
torch.add(x, 2)
x.add(y, alpha=2)
print("added", flush=True)
"""
MATMUL = """\
import torch
a = torch.ones(2, 3)
b = torch.ones(3, 4)
c = a @ b
d = c.t() @ a
print("multiplied", flush=True)
"""

pytestmark = [pytest.mark.timeout(180), pytest.mark.torch]


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return env


def run_with(tmp_path: Path, spec: str, source: str | None = None, follow: str = "python") -> MixdbgRun:
    """Run ``source`` (default: the README example) with one breakpoint; it must exit 0."""
    script = EXAMPLE
    if source is not None:
        script = tmp_path / "script.py"
        script.write_text(source)
    result = run_mixdbg(["run", "--json", "--port", "0", "--follow", follow, "-b", spec, str(script)],
                        env=_env(tmp_path), timeout=170)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


@pytest.mark.parametrize("follow", ["python", "none"])  # kernels by C++ name / by address
def test_op_add_stops_once_per_call_naming_the_overload(torch_installed: None, tmp_path: Path, follow: str) -> None:
    # Given a script with four additions of CPU tensors
    # When it runs with an operator breakpoint on every overload of aten::add
    result = run_with(tmp_path, "op:aten::add", ADD, follow)
    # Then it stops exactly four times, each naming the overload that ran, in a CPU kernel
    stops = result.of("stopped")
    assert [stop["op"] for stop in stops] == ["aten::add.Tensor"] * 4
    assert all("wrapper_CPU_add_Tensor" in stop["frames"][0]["function"] for stop in stops)
    # and the breakpoint event says what the operator resolved to
    resolved = [b for b in result.of("breakpoint") if not b["pending"]][-1]
    assert set(resolved["ops"]) >= {"aten::add.Tensor", "aten::add.out", "aten::add.Scalar"}
    assert "CPU" in resolved["ops"]["aten::add.Tensor"]
    assert "added" in result.stderr


def test_at_native_add_gets_the_operator_hint(torch_installed: None, tmp_path: Path) -> None:
    hints = {b.get("hint") for b in run_with(tmp_path, "at::native::add", ADD).of("breakpoint")}
    assert any(hint and "op:aten::add stops in every call" in hint for hint in hints)


def test_randn_once_and_mm_once_per_matmul(torch_installed: None, tmp_path: Path) -> None:
    assert [stop["op"] for stop in run_with(tmp_path, "op:aten::mm", MATMUL).of("stopped")] == ["aten::mm"] * 2
    assert [stop["op"] for stop in run_with(tmp_path, "op:aten::randn").of("stopped")] == ["aten::randn"]


def test_an_unknown_operator_is_one_line_and_exit_64(torch_installed: None, tmp_path: Path) -> None:
    result = run_mixdbg(["run", "--port", "0", "-b", "op:aten::addd", str(EXAMPLE)], env=_env(tmp_path))
    assert result.returncode == 64
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "did you mean: op:aten::add" in lines[0], result.stderr


def test_operator_specs_at_the_prompt(torch_installed: None, tmp_path: Path) -> None:
    # Given a stop at the first addition, at a terminal
    script = tmp_path / "script.py"
    script.write_text(ADD + MATMUL)
    with mixdbg_at_terminal(["run", "--port", "0", "-b", "op:aten::add.Tensor", str(script)], _env(tmp_path)) as child:
        child.expect("operator aten::add.Tensor")
        child.expect_exact("(mixdbg) ")
        # When the user adds an operator breakpoint with a typo, then the right one
        child.sendline("b op:aten::mmm")
        child.expect(r"mixdbg: op:aten::mmm: [^\r\n]*did you mean: op:aten::mm\b")
        child.sendline("b op:aten::mm")
        child.expect(r"breakpoint \d+ \(op:aten::mm\): \d+ location\(s\): kernels of aten::mm ")
        child.sendline("delete 1")
        child.sendline("c")
        # Then the next stops are the two matrix products
        child.expect("operator aten::mm\r\n")
        child.sendline("c")
        child.expect("operator aten::mm\r\n")
        continue_to_exit(child)


GATED_MATMUL = """\
import os, sys, time, torch
a, b = torch.ones(2, 3), torch.ones(3, 4)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.01)
c = a @ b
d = c.t() @ a
"""


def test_mixdbg_break_adds_an_operator_to_a_live_session(torch_installed: None, tmp_path: Path,
                                                         rundir: Path) -> None:
    # Given a live session whose script waits at a gate after importing torch
    script, gate = tmp_path / "gated.py", tmp_path / "gate"
    script.write_text(GATED_MATMUL)
    proc = subprocess.Popen([sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0", str(script), str(gate)],
                            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        session = json.loads(proc.stdout.readline())
        assert session["event"] == "session", session
        deadline = time.monotonic() + 30
        while not (rundir / f"{session['pid']}.sock").exists():
            assert time.monotonic() < deadline, "the session never served its control socket"
            time.sleep(0.05)
        # When another terminal adds an operator breakpoint
        added = run_mixdbg(["break", "op:aten::mm", "--session", str(session["pid"]), "--json"], env=_env(tmp_path))
        assert added.returncode == 0, added.stderr
        gate.touch()
        out, err = proc.communicate(timeout=120)
        # Then each matrix product stops once
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert [e["op"] for e in events if e["event"] == "stopped"] == ["aten::mm", "aten::mm"], err[-2000:]
        assert proc.returncode == 0
    finally:
        gate.touch()  # the script ends on its own
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_attach_to_a_process_that_already_loaded_torch(torch_installed: None, tmp_path: Path) -> None:
    # Given a running script that has imported torch and waits at a gate
    script, gate = tmp_path / "gated.py", tmp_path / "gate"
    script.write_text(GATED_MATMUL)
    debuggee = subprocess.Popen([sys.executable, str(script), str(gate)], env=_env(tmp_path),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = [debuggee]
    try:
        deadline = time.monotonic() + 60
        while "libtorch_cpu.so" not in Path(f"/proc/{debuggee.pid}/maps").read_text():
            assert time.monotonic() < deadline, "torch never loaded"
            time.sleep(0.1)
        # When mixdbg attaches with an operator breakpoint (its kernels bound at once)
        attached = subprocess.Popen([sys.executable, "-m", "mixdbg", "attach", str(debuggee.pid), "--json",
                                     "-b", "op:aten::mm"], env=_env(tmp_path), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        started.append(attached)
        assert attached.stdout is not None
        for line in attached.stdout:
            if '"event": "session"' in line:
                break
        gate.touch()
        out, err = attached.communicate(timeout=120)
        # Then each matrix product stops once, with its arguments
        stops = [json.loads(line) for line in out.splitlines() if '"event": "stopped"' in line]
        assert [s["op"] for s in stops] == ["aten::mm", "aten::mm"], err[-2000:]
        assert stops[0]["arguments"][0]["tensor"]["shape"] == [2, 3]
        assert debuggee.wait(30) == 0
    finally:
        gate.touch()
        for proc in reversed(started):  # mixdbg first: it detaches, then the script ends
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
