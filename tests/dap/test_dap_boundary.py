"""Stepping across the Python <-> C/C++ boundary through ``mixdbg dap`` (issue 15): Step
Into from a Python line into the user's native function (C API, pybind11, Cython), Step
Out twice from a native method to the native caller then to the Python line, a Python
callback called from C++ with its C++ caller on the stack and Step Out back into it; after
each, a function breakpoint set before the step still hits."""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest
from conftest import Forky, pyenv_python

from .client import DapClient
from .fixtures import DapFactory, forky_command
from .natives import NativeModule, NativeSet, NativeSets

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(params=["3.11", *(pytest.param(version, marks=pytest.mark.slow) for version in ("3.10", "3.12", "3.13"))])
def natives(request: pytest.FixtureRequest, native_sets: NativeSets) -> NativeSet:
    """The modules and scripts built for the interpreter under test (the debuggee's: the
    adapter runs on the tests' own Python): 3.11, and 3.10, 3.12 and 3.13 in the platform
    runs (each reaches a Python line from native code its own way)."""
    if request.param == "3.11":
        return native_sets.get(sys.executable)
    python = pyenv_python(request.param)
    if python is None:
        pytest.skip(f"no pyenv Python {request.param} here")
    return native_sets.get(python)

GLUE = ("pybind11/", "/include/python", "Objects/", "Python/")


def start(dap: DapClient, natives: NativeSet, script: str, marker: str,
          function_breakpoints: list[str] = ()) -> int:  # type: ignore[assignment]
    """Launch ``script`` with a Python breakpoint at ``marker``; the stopped thread."""
    path = natives.script(script)
    dap.launch({"program": str(path), "cwd": str(path.parent), "console": "internalConsole",
                "env": natives.env({}), "python": natives.python},
               breakpoints={path: [natives.line(script, marker)]},
               function_breakpoints=list(function_breakpoints))
    stop = dap.wait_stopped()
    assert dap.stack(stop["threadId"])[0]["line"] == natives.line(script, marker)
    return int(stop["threadId"])


def top(dap: DapClient, thread: int) -> dict[str, Any]:
    """The innermost frame after a stop."""
    return dap.stack(thread)[0]


def step(dap: DapClient, thread: int, kind: str) -> dict[str, Any]:
    """One step request; the innermost frame where it stopped."""
    dap.request(kind, threadId=thread)
    dap.wait_stopped()
    return top(dap, thread)


def assert_users_native(frame: dict[str, Any], module: NativeModule, function: str) -> None:
    """A stop in the user's own source, never in binding or interpreter code."""
    path = frame.get("source", {}).get("path", "")
    assert path == str(module.source), frame
    assert not any(part in path for part in GLUE)
    assert function in frame["name"], frame


@pytest.mark.parametrize("kind, script, marker, function", [
    ("capi", "capi_main.py", "call", "native_loop"),
    ("geom", "geom_main.py", "method", "area"),
    ("cython", "cython_main.py", "call", "sum_squares"),
])
def test_step_into_from_python_reaches_the_users_native_function(
        dap: DapClient, natives: NativeSet, kind: str, script: str, marker: str, function: str) -> None:
    module = {"capi": natives.capi, "geom": natives.geom, "cython": natives.cython}[kind]
    thread = start(dap, natives, script, marker, function_breakpoints=["native_step"] if kind == "capi" else [])
    # When stepping into the Python line that calls the module
    frame = step(dap, thread, "stepIn")
    # Then one request lands in the user's function, in its source
    assert_users_native(frame, module, function)
    if kind == "capi":  # a function breakpoint set before the step still hits
        dap.request("continue", threadId=thread)
        stop = dap.wait_stopped()
        assert stop["reason"] == "function breakpoint" and top(dap, thread)["name"] == "native_step"
        dap.request("setFunctionBreakpoints", breakpoints=[])
    dap.request("setBreakpoints", source={"path": str(natives.script(script))}, breakpoints=[])
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0


def test_step_into_prepared_while_the_user_reads_the_stop_lands_where_gdb_would(
        dap_factory: DapFactory, natives: NativeSet) -> None:
    # Given a Python stop at a line calling the C module, looked at as an editor does
    capi, dap = natives.capi, dap_factory()
    thread = start(dap, natives, "capi_main.py", "call")
    dap.threads()
    # ... and, while the user reads it, the adapter prepares the module's functions
    log = dap_factory.logs[-1]
    deadline = time.monotonic() + 60
    while '--function "native_loop"' not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    # When stepping into the line
    frame = step(dap, thread, "stepIn")
    # Then it broke at the prepared address, on the function's first statement, as gdb does by name
    assert_users_native(frame, capi, "native_loop")
    assert frame["line"] == capi.line("entry")
    assert f'-break-insert -t -p {thread} "*0x' in log.read_text()
    dap.request("setBreakpoints", source={"path": str(natives.script("capi_main.py"))}, breakpoints=[])
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0


def test_step_out_twice_from_a_native_method_reaches_the_native_caller_then_python(
        dap: DapClient, natives: NativeSet) -> None:
    geom = natives.geom
    script = natives.script("geom_main.py")
    # Given a native line breakpoint in Polygon::area, reached from total_area (C++) called from Python
    dap.launch({"program": str(script), "cwd": str(natives.directory), "console": "internalConsole",
                "env": natives.env({}), "python": natives.python}, function_breakpoints=["total_area"])
    thread = dap.wait_stopped()["threadId"]
    assert "total_area" in top(dap, thread)["name"]
    dap.request("setBreakpoints", source={"path": str(geom.source)}, breakpoints=[{"line": geom.line("shoelace")}])
    dap.request("continue", threadId=thread)
    dap.wait_stopped()
    assert top(dap, thread)["line"] == geom.line("shoelace")
    dap.request("setBreakpoints", source={"path": str(geom.source)}, breakpoints=[])
    # When stepping out: total_area (the native caller), on its loop line
    frame = step(dap, thread, "stepOut")
    assert_users_native(frame, geom, "total_area")
    assert frame["line"] == geom.line("total_loop")
    # When stepping out again: the Python caller on the call's own line, the call complete
    # (where debugpy's Step Out and gdb's finish land), with Python locals and evaluate
    frame = step(dap, thread, "stepOut")
    assert frame["source"]["path"] == str(script) and frame["name"] == "main"
    assert frame["line"] == natives.line("geom_main.py", "call"), frame
    assert dap.evaluate("len(polys)", frame["id"])["result"] == "2"
    # Then next runs the rest of that line (total is stored) and stops on the next one
    frame = step(dap, thread, "next")
    assert frame["line"] == natives.line("geom_main.py", "after"), frame
    assert dap.evaluate("total", frame["id"])["result"] == "20.0"
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0
    assert "geom first 6.0 total 20.0" in dap.output("stdout")


def test_next_off_the_end_of_a_native_function_lands_on_the_python_call_line(
        dap: DapClient, natives: NativeSet) -> None:
    geom = natives.geom
    script = natives.script("geom_main.py")
    # Given a stop on total_area's return line (C++ called from Python)
    dap.launch({"program": str(script), "cwd": str(natives.directory), "console": "internalConsole",
                "env": natives.env({}), "python": natives.python},
               breakpoints={geom.source: [geom.line("total_return")]})
    thread = dap.wait_stopped()["threadId"]
    assert top(dap, thread)["line"] == geom.line("total_return")
    dap.request("setBreakpoints", source={"path": str(geom.source)}, breakpoints=[])
    # When stepping over lines until the function has returned
    frame = step(dap, thread, "next")
    for _ in range(3):
        if frame.get("source", {}).get("path") != str(geom.source):
            break
        frame = step(dap, thread, "next")
    # Then the Python caller on the call's own line (never binding or interpreter code)
    assert frame["source"]["path"] == str(script) and frame["name"] == "main", frame
    assert frame["line"] == natives.line("geom_main.py", "call"), frame
    assert dap.evaluate("len(polys)", frame["id"])["result"] == "2"
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0


def test_python_callback_called_from_cpp_shows_and_steps_out_to_its_cpp_caller(
        dap: DapClient, natives: NativeSet) -> None:
    geom = natives.geom
    # Given a Python breakpoint in the callback that total_area (C++) calls
    thread = start(dap, natives, "geom_main.py", "callback")
    dap.request("setFunctionBreakpoints", breakpoints=[{"name": "Polygon::area"}])
    # Then the stack holds the C++ caller between the callback and main
    names = [f["name"] for f in dap.stack(thread) if f.get("presentationHint") != "subtle"]
    assert names[0] == "scale"
    assert "total_area" in names[1], names
    assert names[2] == "main", names
    # When stepping out: in total_area, after the call
    frame = step(dap, thread, "stepOut")
    assert_users_native(frame, geom, "total_area")
    assert frame["line"] in (geom.line("total_scale"), geom.line("total_scale") + 1)
    # Then continue reaches the function breakpoint set before, then the next callback
    dap.request("continue", threadId=thread)
    assert dap.wait_stopped()["reason"] == "function breakpoint"
    dap.request("setFunctionBreakpoints", breakpoints=[])
    dap.request("continue", threadId=thread)
    dap.wait_stopped()
    assert top(dap, thread)["name"] == "scale"
    dap.request("setBreakpoints", source={"path": str(natives.script("geom_main.py"))}, breakpoints=[])
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0


def test_step_into_from_native_reaches_the_python_callback(dap: DapClient, natives: NativeSet) -> None:
    capi = natives.capi
    script = natives.script("capi_main.py")
    # Given a native breakpoint on the line of native_callback that calls the Python callback
    dap.launch({"program": str(script), "cwd": str(natives.directory), "console": "internalConsole",
                "env": natives.env({}), "python": natives.python}, breakpoints={capi.source: [capi.line("callback")]})
    thread = dap.wait_stopped()["threadId"]
    dap.request("setBreakpoints", source={"path": str(capi.source)}, breakpoints=[])
    # When stepping into: the callback's first line
    frame = step(dap, thread, "stepIn")
    assert (frame["name"], frame["line"]) == ("on_call", natives.line("capi_main.py", "callback"))
    # ... with Python values there
    assert dap.evaluate("7 * 6", frame["id"])["result"] == "42"
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0


CALLED_TWICE = """\
import mixdbg_testext as ext


def on_call():
    answer = 7  # @answer
    return answer


print(ext.callback(on_call), ext.callback(on_call))
"""


def test_step_into_from_native_reaches_a_python_callback_already_run(dap: DapClient, natives: NativeSet) -> None:
    # Given a native stop in native_callback, the second time: its Python callback has run
    # once before (3.12+: its start is no longer reported to the agent)
    capi = natives.capi
    script = natives.directory / "called_twice_main.py"
    script.write_text(CALLED_TWICE)
    dap.launch({"program": str(script), "cwd": str(natives.directory), "console": "internalConsole",
                "env": natives.env({}), "python": natives.python}, breakpoints={capi.source: [capi.line("callback")]})
    thread = dap.wait_stopped()["threadId"]
    dap.request("continue", threadId=thread)
    dap.wait_stopped()
    dap.request("setBreakpoints", source={"path": str(capi.source)}, breakpoints=[])
    # When stepping into the C line that calls it: its first line
    frame = step(dap, thread, "stepIn")
    assert (frame["name"], frame["line"]) == ("on_call", 5)
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0
    assert dap.output("stdout") == "7 7\n"


@pytest.mark.slow
def test_boundary_steps_on_forky_python_314_and_gdb_18(forky: Forky, forky_natives: NativeSet,
                                                       dap_factory: DapFactory) -> None:
    # Given the adapter itself inside the chroot (its gdb 18, Python 3.14), and the modules built there
    natives = forky_natives
    capi, geom = natives.capi, natives.geom
    command = forky_command(forky, natives.directory, [forky.python, "-m", "mixdbg", "dap"])
    dap = dap_factory(command=command, timeout=120)
    # When stepping into the C API call from Python, then out again
    thread = start(dap, natives, "capi_main.py", "call")
    assert_users_native(step(dap, thread, "stepIn"), capi, "native_loop")
    frame = step(dap, thread, "stepOut")
    assert frame["name"] == "main" and frame["source"]["path"] == str(natives.script("capi_main.py"))
    assert frame["line"] == natives.line("capi_main.py", "call"), frame  # the call's own line
    dap.request("setBreakpoints", source={"path": str(natives.script("capi_main.py"))}, breakpoints=[])
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0
    # ... and into a pybind11 method, and out of a Python callback into its C++ caller
    dap = dap_factory(command=command, timeout=120)
    thread = start(dap, natives, "geom_main.py", "method")
    assert_users_native(step(dap, thread, "stepIn"), geom, "area")
    dap.request("setBreakpoints", source={"path": str(natives.script("geom_main.py"))},
                breakpoints=[{"line": natives.line("geom_main.py", "callback")}])
    dap.request("continue", threadId=thread)
    dap.wait_stopped()
    assert top(dap, thread)["name"] == "scale"
    dap.request("setBreakpoints", source={"path": str(natives.script("geom_main.py"))}, breakpoints=[])
    assert_users_native(step(dap, thread, "stepOut"), geom, "total_area")
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0
