"""libstdc++ in C++ expressions (issue 23): the pretty printers and xmethods of the
libstdc++ the program maps are loaded (the wheel's gdb runs -nx and loads none), so
std::vector indexes and std::string prints in evaluate, watch and hover."""

from __future__ import annotations

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
