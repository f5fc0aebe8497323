"""libstdc++ in C++ expressions (issue 23): the pretty printers and xmethods of the
libstdc++ the program maps are loaded (the wheel's gdb runs -nx and loads none), so
std::vector indexes and std::string prints in evaluate, watch and hover."""

from __future__ import annotations

from pathlib import Path

import pytest

from .client import DapClient
from .natives import NativeSet

pytestmark = pytest.mark.timeout(180)


def test_std_vector_indexes_and_std_string_prints_in_a_pybind11_method(dap: DapClient, natives: NativeSet) -> None:
    # Given a stop in Polygon::area (pybind11) of the triangle (0,0) (4,0) (4,3)
    geom = natives.geom
    dap.launch({"program": str(natives.script("geom_main.py")), "cwd": str(natives.directory),
                "console": "internalConsole", "env": natives.env({})},
               breakpoints={geom.source: [geom.line("area")]})
    thread = dap.wait_stopped(timeout=120)["threadId"]
    frame = dap.stack(thread)[0]
    assert frame["name"].endswith("area")
    # Then std::vector's operator[] and size() work (xmethods), in every context
    for context in ("repl", "watch", "hover"):
        assert dap.evaluate("this->ys[2] + 40", frame["id"], context)["result"] == "43"
    assert dap.evaluate("this->xs.size()", frame["id"])["result"] == "3"
    # ... and std::string and std::vector print as values (pretty printers)
    assert dap.evaluate("this->name", frame["id"])["result"] == '"triangle"'
    points = dap.evaluate("this->ys", frame["id"])
    assert "length 3" in points["result"] and points["variablesReference"]
    assert [v["value"] for v in dap.variables(points["variablesReference"])] == ["0", "0", "3"]


def test_attach_loads_the_printers_of_a_libstdcxx_already_mapped(dap: DapClient, natives: NativeSet,
                                                                tmp_path: Path) -> None:
    # Given a running Python process that has geom (and so libstdc++) loaded, measuring a triangle in a loop
    geom = natives.geom
    process = natives.run_beating("import geom\npoly = geom.Polygon('triangle', [(0, 0), (4, 0), (4, 3)])",
                                  "poly.area()", tmp_path / "beat")
    try:
        # When mixdbg dap attaches and stops in Polygon::area
        dap.attach({"processId": process.pid}, breakpoints={geom.source: [geom.line("area")]})
        frame = dap.stack(dap.wait_stopped(timeout=60)["threadId"])[0]
        # Then std::vector's operator[] works there too (the old code: 'Could not find operator[].')
        assert dap.evaluate("this->ys[2] + 40", frame["id"], "watch")["result"] == "43"
        dap.request("disconnect")
    finally:
        process.kill()
        process.wait()
