"""The memory-only tensor reader and the Python-tensor summary, against a live process with
real torch tensors, stopped with SIGSTOP and read through /proc/PID/mem (no gdb)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mixdbg.memory import ProcMemory
from mixdbg.pytorch import layout, tensors

HOLDER = """\
import json, os, signal, torch
x = torch.arange(6.).reshape(2, 3)
keep = {
    "x": x, "t": x.t(), "slice": x[1:], "int64": torch.arange(5), "bool": torch.tensor([True, False]),
    "bfloat16": torch.tensor([1.5, -2.0], dtype=torch.bfloat16), "float16": torch.tensor([0.5], dtype=torch.float16),
    "big": torch.arange(10000.), "meta": torch.zeros(2, device="meta"), "sparse": torch.eye(2).to_sparse(),
    "seven": torch.arange(8.).reshape(1, 2, 1, 2, 1, 2, 1), "scalar": torch.tensor(3.5),
    "nan": torch.tensor([float("nan"), float("inf")]), "expanded": torch.tensor([1., 2.]).expand(3, 2),
}
print(json.dumps({k: [t._cdata, id(t)] for k, t in keep.items()} | {"not_a_tensor": [0, id(keep)]}), flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
"""

pytestmark = [pytest.mark.timeout(120), pytest.mark.torch]


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, dict[str, list[int]], dict[str, Any]]]:
    """A process holding tensors, stopped; its addresses; the layout of its torch."""
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("torch is not installed")
    proc = subprocess.Popen([sys.executable, "-W", "ignore", "-c", HOLDER], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        addresses = json.loads(proc.stdout.readline())
        deadline = time.monotonic() + 30
        while not Path(f"/proc/{proc.pid}/stat").read_text().split(") ")[1].startswith("T"):
            assert time.monotonic() < deadline, "the holder did not stop itself"
            time.sleep(0.05)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
            found = layout.for_process(proc.pid, sys.executable)
        yield proc.pid, addresses, found
    finally:
        proc.kill()
        proc.wait(10)


def _read(held: tuple[int, dict[str, list[int]], dict[str, Any]], name: str) -> dict[str, Any]:
    pid, addresses, found = held
    with ProcMemory(pid) as memory:
        return tensors.read_tensor(memory, addresses[name][0], found)


def test_the_layout_is_found_and_matches_the_build(held: tuple[int, dict[str, list[int]], dict[str, Any]]) -> None:
    _, _, found = held
    assert found["fields"]["ndim"] + 8 == found["fields"]["sizes"]
    assert found["dtypes"]["6"] == ["float32", 4] and found["dtypes"]["15"] == ["bfloat16", 2]
    assert len(found["build_id"]) == 40


def test_values_in_logical_order_for_any_strides(held: tuple[int, dict[str, list[int]], dict[str, Any]]) -> None:
    x = _read(held, "x")
    data = x.pop("data")
    assert x == {"dtype": "float32", "shape": [2, 3], "strides": [3, 1], "storage_offset": 0,
                 "device": "cpu", "values": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "truncated": False}
    transposed = _read(held, "t")
    assert transposed["strides"] == [1, 3] and transposed["values"] == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    sliced = _read(held, "slice")
    assert sliced["storage_offset"] == 3 and sliced["values"] == [3.0, 4.0, 5.0]
    # data: where the first element is, the storage offset counted in
    assert int(sliced["data"], 16) == int(data, 16) + 3 * 4 and transposed["data"] == data
    expanded = _read(held, "expanded")
    assert expanded["strides"] == [0, 1] and expanded["values"] == [1.0, 2.0] * 3
    seven = _read(held, "seven")  # more dims than fit inline: sizes and strides out of line
    assert seven["shape"] == [1, 2, 1, 2, 1, 2, 1] and seven["values"] == [float(i) for i in range(8)]


def test_dtypes_and_truncation(held: tuple[int, dict[str, list[int]], dict[str, Any]]) -> None:
    assert _read(held, "int64")["values"] == [0, 1, 2, 3, 4]
    assert _read(held, "bool")["values"] == [True, False]
    assert _read(held, "bfloat16")["values"] == [1.5, -2.0]
    assert _read(held, "float16")["values"] == [0.5]
    assert _read(held, "nan")["values"] == ["nan", "inf"]
    scalar = _read(held, "scalar")
    assert scalar["shape"] == [] and scalar["values"] == [3.5]
    big = _read(held, "big")
    assert big["values"] == [float(i) for i in range(16)] and big["truncated"] is True
    assert tensors.format_values(_read(held, "x")) == "[[0., 1., 2.], [3., 4., 5.]]"
    assert tensors.format_values(_read(held, "bfloat16")) == "[1.5000, -2.0000]"


def test_what_cannot_be_read_is_said_not_shown(held: tuple[int, dict[str, list[int]], dict[str, Any]]) -> None:
    meta = _read(held, "meta")
    assert meta["device"] == "meta" and meta["shape"] == [2] and meta["values"] is None
    assert "not in host memory" in meta["values_error"]
    with pytest.raises(tensors.TensorUnreadable, match="not a plain c10::TensorImpl"):
        _read(held, "sparse")
    pid, _, found = held
    with ProcMemory(pid) as memory, pytest.raises(tensors.TensorUnreadable, match="memory unreadable"):
        tensors.read_tensor(memory, 16, found)


def test_python_tensor_summary_from_its_pyobject(held: tuple[int, dict[str, list[int]], dict[str, Any]]) -> None:
    pid, addresses, found = held
    with ProcMemory(pid) as memory:
        summary = tensors.summarize_python_tensor(memory, addresses["t"][1], found)
        assert summary == tensors.read_tensor(memory, addresses["t"][0], found)
        with pytest.raises(tensors.TensorUnreadable):
            tensors.summarize_python_tensor(memory, addresses["not_a_tensor"][1], found)


def test_the_discovered_layout_agrees_with_the_2_13_headers(
        held: tuple[int, dict[str, list[int]], dict[str, Any]]) -> None:
    # The offsets that tensor-views.md verified three ways for torch 2.13.0+cpu (live
    # tensors, gdb's ptype /o on the wheel's own headers, reads at real breakpoints).
    _, _, found = held
    if not str(found["torch"]).startswith("2.13."):
        pytest.skip(f"the reference table is for torch 2.13, this is {found['torch']}")
    assert found["fields"] == {"ndim": 56, "sizes": 64, "strides": 104, "inline_dims": 5, "storage_offset": 144,
                               "numel": 152, "storage": 16, "storage_data": 16, "storage_nbytes": 48, "dtype": 160,
                               "device": 162, "pyobject": 48, "thp_cdata": 16}


def test_a_layout_from_another_build_is_refused(held: tuple[int, dict[str, list[int]], dict[str, Any]],
                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a "debuggee library" whose build id is not the probed libc10.so's
    pid, _, _ = held
    loaded = layout.c10_of_process(pid)
    assert loaded is not None
    other = loaded[0].with_name("libtorch_python.so")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    # When its layout is asked for, Then the probe's result is rejected, not used
    with pytest.raises(layout.LayoutUnknown, match="another torch"):
        layout.layout_for(other, sys.executable)


def test_the_probe_finds_the_same_layout_whatever_the_heap_holds(
        held: tuple[int, dict[str, list[int]], dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    # Each field must be found exactly once: a value that occurs by chance (stale heap
    # bytes) would make the probe fail or move, not silently agree.
    _, _, found = held
    site_packages = Path(str(found["c10"])).parents[2]
    for perturb in ("37", "185"):
        monkeypatch.setenv("MALLOC_PERTURB_", perturb)
        assert layout.run_probe(sys.executable, site_packages)["fields"] == found["fields"]
