"""The dispatcher reader (``mixdbg/pytorch/dispatcher.py``) against a live process holding
torch, stopped with SIGSTOP and read through /proc/PID/mem (no gdb): every registered
operator, any namespace, its schema's argument names and its backends' kernels."""

from __future__ import annotations

import importlib.metadata
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mixdbg.memory import ProcMemory
from mixdbg.pytorch import dispatcher, layout
from mixdbg.pytorch.mapped import mapped_library

#: Defines an operator of its own namespace, stops; defines a second one when continued, stops.
HOLDER = """\
import os, signal, torch
first = torch.library.Library("heldops", "DEF")
first.define("twice(Tensor self, float factor) -> Tensor")
first.impl("twice", lambda self, factor: self * 2, "CPU")
os.kill(os.getpid(), signal.SIGSTOP)
second = torch.library.Library("laterops", "DEF")
second.define("after(Tensor x) -> Tensor")
os.kill(os.getpid(), signal.SIGSTOP)
"""

pytestmark = [pytest.mark.timeout(120), pytest.mark.torch]


def _wait_stopped(pid: int) -> None:
    deadline = time.monotonic() + 60
    while not Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("T"):
        assert time.monotonic() < deadline, "the holder did not stop itself"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """A process that registered ``heldops::twice``, stopped; its dispatcher; the layout."""
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("torch is not installed")
    proc = subprocess.Popen([sys.executable, "-W", "ignore", "-c", HOLDER])
    try:
        _wait_stopped(proc.pid)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
            found = layout.for_process(proc.pid, sys.executable)["dispatcher"]
        loaded = mapped_library(proc.pid, "/libtorch_cpu.so")
        assert loaded is not None
        yield proc.pid, loaded[1] + found["dispatcher"], found
    finally:
        proc.kill()
        proc.wait(10)


def test_every_operator_of_every_namespace_with_its_schema_and_kernels(held: tuple[int, int, dict[str, Any]]) -> None:
    pid, address, found = held
    with ProcMemory(pid) as memory:
        operators, last = dispatcher.walk(memory, address, found)
        entries = {(name, overload): entry for name, overload, entry in operators}
        # Then aten's and the process's own operators are there, as many as the list holds
        assert len(operators) == dispatcher.operator_count(memory, address) > 3000
        assert ("aten::add", "Tensor") in entries and ("heldops::twice", "") in entries
        # ...with the names of their schemas' arguments
        assert dispatcher.argument_names(memory, entries[("aten::add", "Tensor")], found) == ["self", "other", "alpha"]
        assert dispatcher.argument_names(memory, entries[("heldops::twice", "")], found) == ["self", "factor"]
        # ...and the kernels of their backends: aten::add's CPU kernel a C++ one (an unboxed
        # entry), heldops::twice's CPU kernel a Python one (boxed only)
        (add_cpu,) = [k for k in dispatcher.kernels(memory, entries[("aten::add", "Tensor")], found) if "CPU" in k["keys"]]
        assert add_cpu["functor"] and add_cpu["unboxed"]
        (twice,) = dispatcher.kernels(memory, entries[("heldops::twice", "")], found)
        assert twice["keys"] == ["CPU"] and twice["boxed"] and not twice["unboxed"]
        assert last is not None
    # When the process registers one more operator: a walk from the last one finds it alone
    os.kill(pid, signal.SIGCONT)
    _wait_stopped(pid)
    with ProcMemory(pid) as memory:
        later, _ = dispatcher.walk(memory, address, found, after=last)
    assert [(name, overload) for name, overload, _ in later] == [("laterops::after", "")]


def test_the_measured_layout_agrees_with_the_2_13_headers(held: tuple[int, int, dict[str, Any]]) -> None:
    # OperatorEntry in torch 2.13: OperatorName (2 strings), then optional<AnnotatedSchema>
    # whose FunctionSchema begins with its OperatorName, then its arguments (a vector of
    # 112-byte c10::Argument); the dispatch table's KernelFunctions are 40 bytes each.
    _, _, found = held
    version = importlib.metadata.version("torch")
    if not version.startswith("2.13."):
        pytest.skip(f"the reference is for torch 2.13, this is {version}")
    assert (found["entry"], found["arguments"], found["argument_size"]) == (16, 128, 112)
    assert found["slots"]["CUDA"] - found["slots"]["CPU"] == 40
