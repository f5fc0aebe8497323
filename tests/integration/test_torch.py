"""The README's main job, through the real CLI, on the real torch 2.13 wheel."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_mixdbg

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "testdebug.py"
SEED_BREAKPOINTS = ["PyInit__C", "THPModule_initExtension", "at::native::randn"]

pytestmark = [pytest.mark.timeout(180), pytest.mark.torch]


def test_seed_breakpoints_on_testdebug(torch_installed: None) -> None:
    # Given the README's command
    args = ["run", "--json", "--port", "0"]
    for spec in SEED_BREAKPOINTS:
        args += ["-b", spec]
    # When it runs examples/testdebug.py
    result = run_mixdbg([*args, str(EXAMPLE)], timeout=170)
    # Then the stops come in import order, none of them in a PLT stub
    assert result.returncode == 0, result.stderr[-2000:]
    stops = result.of("stopped")
    assert [s["breakpoint"] for s in stops][:2] == [1, 2]
    assert {s["breakpoint"] for s in stops[2:]} == {3} and len(stops) >= 3
    tops = [s["frames"][0]["function"] for s in stops]
    assert not any("@plt" in top for top in tops)
    assert tops[0] == "PyInit__C"
    assert tops[1].startswith("THPModule_initExtension")
    assert all(top.startswith("at::native::randn(") for top in tops[2:])
    # and the randn stops show the Python line that called torch.randn
    for stop in stops[2:]:
        python = [(f["function"], Path(f["file"]).name, f["line"]) for f in stop["frames"] if f["kind"] == "python"]
        assert python == [("<module>", "testdebug.py", 3)]
    # every Python frame has its line, torch/__init__.py's included (issue 9)
    python = [f for stop in stops for f in stop["frames"] if f["kind"] == "python"]
    assert python and all(isinstance(f["line"], int) for f in python)
    assert any(f["file"].endswith("torch/__init__.py") for f in stops[1]["frames"] if f["kind"] == "python")
    assert all(s["python_frames"].startswith("ok (Python ") for s in stops)
    # the breakpoints resolved in the libraries that define them
    resolved = {b["id"]: b for b in result.of("breakpoint") if not b["pending"]}
    assert set(resolved) == {1, 2, 3}
    assert all("@plt" not in (loc["function"] or "") for loc in resolved[3]["locations"])
    # the tensor is printed and the run ends normally
    assert "tensor([[" in result.stderr
    assert result.of("exited") == [{"event": "exited", "code": 0, "signal": None}]
