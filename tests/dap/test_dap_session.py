"""``mixdbg dap`` driven as an editor drives it (issue 14): native source breakpoints that
bind when their library loads, native steps and locals, Python and native stops in one
run with evaluation at each, bad input. Every message is checked against the schema."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from .client import DapClient, RequestFailed
from .natives import NativeModule, NativeSet

pytestmark = pytest.mark.timeout(180)


def top(dap: DapClient, thread: int) -> dict:
    """The innermost frame of a stopped thread."""
    return dap.stack(thread)[0]


def test_capi_source_breakpoint_binds_on_import_then_next_locals_and_step_out(dap: DapClient,
                                                                               natives: NativeSet) -> None:
    # Given a breakpoint in the C extension's native_step, set before the module is imported
    capi = natives.capi
    step_line = capi.line("step")
    startup = dap.launch({"program": str(natives.script("capi_main.py")), "cwd": str(natives.directory),
                          "console": "internalConsole", "env": natives.env({})},
                         breakpoints={capi.source: [step_line]})
    # Then it is unverified until the import, and verified (a breakpoint event) after it
    assert startup.breakpoints[str(capi.source)][0]["verified"] is False
    bound = dap.wait_event("breakpoint", lambda e: e["body"]["breakpoint"].get("verified") is True)
    assert bound["body"]["breakpoint"]["line"] == step_line
    stop = dap.wait_stopped()
    assert stop["reason"] == "breakpoint"
    thread = stop["threadId"]
    frames = dap.stack(thread)
    assert (frames[0]["name"], frames[0]["line"]) == ("native_step", step_line)
    assert frames[0]["source"]["path"] == str(capi.source)
    # ... the Python caller sits below the native loop, with its file and line
    python = [f for f in frames if f.get("source", {}).get("path") == str(natives.script("capi_main.py"))]
    assert python[0]["name"] == "main" and python[0]["line"] == natives.line("capi_main.py", "call")
    # When stepping over one line: the next line, with locals and values
    dap.request("next", threadId=thread)
    assert dap.wait_stopped()["reason"] == "step"
    here = top(dap, thread)
    assert here["line"] == step_line + 1
    local = dap.frame_variables(here["id"], "Locals")
    assert local["i"]["value"] == "0" and local["doubled"]["value"] == "0"
    assert dap.evaluate("i + 40", here["id"])["result"] == "40"
    # When stepping out: in the native caller, native_loop
    dap.request("stepOut", threadId=thread)
    dap.wait_stopped()
    assert top(dap, thread)["name"] == "native_loop"
    # Then continue (breakpoint removed) runs to the end with the program's own output
    dap.request("setBreakpoints", source={"path": str(capi.source)}, breakpoints=[])
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0
    dap.wait_event("terminated")
    assert "capi total 6 called 7" in dap.output("stdout")


def test_python_and_native_stops_in_one_run_evaluate_each(dap: DapClient, natives: NativeSet,
                                                         capi_module: NativeModule) -> None:
    # Given a Python line breakpoint and a native function breakpoint
    script = natives.script("mixed_main.py")
    python_line = natives.line("mixed_main.py", "python_stop")
    dap.launch({"program": str(script), "cwd": str(natives.directory), "console": "internalConsole",
                "env": natives.env({})}, breakpoints={script: [python_line]}, function_breakpoints=["native_step"])
    # Then the Python stop comes first, at its line, and evaluates Python
    stop = dap.wait_stopped()
    thread = stop["threadId"]
    frame = top(dap, thread)
    assert (frame["name"], frame["line"], frame["source"]["path"]) == ("main", python_line, str(script))
    assert [t["id"] for t in dap.threads()] == [thread]  # the program's one thread, not the agent's too
    assert dap.evaluate("value * 2", frame["id"])["result"] == "82"
    assert dap.frame_variables(frame["id"], "Locals")["value"]["value"] == "41"
    old_scope = dap.request("scopes", frameId=frame["id"])["body"]["scopes"][0]["variablesReference"]
    # ... then the native stop, evaluating C, with the Python caller below it
    dap.request("continue", threadId=thread)
    stop = dap.wait_stopped()
    assert stop["reason"] == "function breakpoint"
    # (a reference from before the continue, as an editor racing it asks: an error, and not
    # one for the editor to show the user)
    stale = dap.request_raw("variables", variablesReference=old_scope)
    assert not stale["success"] and "not valid any more" in stale["message"]
    assert stale["body"]["error"]["showUser"] is False
    frames = dap.stack(stop["threadId"])
    assert frames[0]["name"] == "native_step"
    assert dap.evaluate("i * 10 + 1", frames[0]["id"])["result"] == "1"
    main = next(f for f in frames if f["name"] == "main")
    assert main["line"] == natives.line("mixed_main.py", "native_call")
    dap.request("setFunctionBreakpoints", breakpoints=[])
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited() == 0
    assert "mixed value 42" in dap.output("stdout")


@pytest.mark.parametrize("config, message", [
    ({}, "'program'"),
    ({"program": "/nonexistent/script.py"}, "not found"),
    ({"program": "x.py", "follow": "sometimes"}, "follow"),
])
def test_bad_launch_is_one_line_error(dap: DapClient, config: dict, message: str) -> None:
    dap.initialize()
    with pytest.raises(RequestFailed) as failed:
        dap.launch(config)
    text = str(failed.value)
    assert message in text
    assert "\n" not in failed.value.response["message"]


def test_unknown_operator_and_bad_condition_are_errors_and_the_program_is_not_held(
        dap: DapClient, natives: NativeSet, capi_module: NativeModule) -> None:
    script = natives.script("mixed_main.py")
    dap.initialize()
    seq = dap.send_request("launch", {"program": str(script), "cwd": str(natives.directory),
                                      "console": "internalConsole", "env": natives.env({})})
    dap.wait_event("initialized")
    bad_op = dap.request_raw("setFunctionBreakpoints", breakpoints=[{"name": "op:aten::no_such_op"}])
    assert not bad_op["success"] and "no_such_op" in bad_op["message"]
    bad_condition = dap.request_raw("setBreakpoints", source={"path": str(script)},
                                    breakpoints=[{"line": 7, "condition": "value =="}])
    assert not bad_condition["success"] and "condition" in bad_condition["message"]
    dap.request("configurationDone")
    assert dap.wait_response(seq)["success"]
    assert dap.wait_exited() == 0  # nothing was set: the program ran to its end, debugged


def test_attach_by_pid_stops_natively_and_disconnect_leaves_it_running(dap: DapClient, natives: NativeSet,
                                                                      capi_module: NativeModule,
                                                                      tmp_path: Path) -> None:
    # Given a running Python process (ours) calling the C extension in a loop
    beat = tmp_path / "beat"
    process = natives.run_beating("import mixdbg_testext as ext", "ext.loop(1)", beat)
    try:
        # When attaching with a function breakpoint: a native stop, Python breakpoints refused in one line
        startup = dap.attach({"processId": process.pid}, function_breakpoints=["native_step"],
                             breakpoints={tmp_path / "x.py": [1]})
        python_bp = startup.breakpoints[str(tmp_path / "x.py")][0]
        assert python_bp["verified"] is False and "launched" in python_bp["message"]
        stop = dap.wait_stopped()
        assert dap.stack(stop["threadId"])[0]["name"] == "native_step"
        # Then disconnect lets it run on, untraced
        dap.request("disconnect")
        time.sleep(0.5)
        before = beat.stat().st_mtime
        time.sleep(0.5)
        assert process.poll() is None and beat.stat().st_mtime > before
        assert psutil.Process(process.pid).status() != psutil.STATUS_TRACING_STOP
    finally:
        process.kill()
        process.wait()


def test_breakpoint_removed_at_a_python_stop_is_gone_in_every_stopped_process(dap: DapClient,
                                                                             natives: NativeSet) -> None:
    # Given two fork children that both run a line with a breakpoint, many times
    script = natives.script("forks_main.py")
    dap.launch({"program": str(script), "cwd": str(natives.directory), "console": "internalConsole",
                "env": natives.env({})}, breakpoints={script: [natives.line("forks_main.py", "line")]})
    stop = dap.wait_stopped()
    assert dap.stack(stop["threadId"])[0]["name"] == "work"
    # When the breakpoint is removed at the first child's stop, and the tree continues
    dap.request("setBreakpoints", source={"path": str(script)}, breakpoints=[])
    dap.request("continue", threadId=stop["threadId"])
    # Then the other child, stopped too while it ran that line, never stops there again
    assert dap.wait_exited() == 0
    assert len(dap.events("stopped")) == 1
    assert "children [0, 0]" in dap.output("stdout")


PLAIN_RUN = """import os, sys, time
tracer = [line for line in open("/proc/self/status") if line.startswith("TracerPid:")][0].split()[1]
print("ran", sys.argv[1:], "tracer", tracer)  # @print
if sys.argv[1:] == ["wait"]:
    time.sleep(60)
sys.exit(3)
"""


def test_run_without_debugging_runs_the_program_as_python_does(dap: DapClient, tmp_path: Path) -> None:
    # Given a script with a Python and a function breakpoint, launched with noDebug (Ctrl+F5)
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_RUN)
    startup = dap.launch({"program": str(script), "args": ["a", "b"], "cwd": str(tmp_path),
                          "console": "internalConsole", "noDebug": True},
                         breakpoints={script: [3]}, function_breakpoints=["main"])
    # Then it runs to its end untraced (no gdb, no agent), never stops, and its exit code is reported
    assert dap.wait_exited() == 3
    dap.wait_event("terminated")
    assert "ran ['a', 'b'] tracer 0" in dap.output("stdout")
    assert not dap.events("stopped")
    # ...and the breakpoints were answered as not used
    for answered in (startup.breakpoints[str(script)], startup.function_breakpoints):
        assert answered == [{"verified": False, "message": "Run Without Debugging: breakpoints are not used"}]


def test_run_without_debugging_is_ended_by_terminate(dap: DapClient, tmp_path: Path) -> None:
    # Given a program launched without debugging that waits
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_RUN)
    dap.launch({"program": str(script), "args": ["wait"], "cwd": str(tmp_path), "console": "internalConsole",
                "noDebug": True})
    process = dap.wait_event("process")
    dap.wait_event("output", lambda e: "ran ['wait']" in e["body"]["output"])
    # When the client terminates it (VS Code's Stop): that process ends, of SIGTERM
    dap.request("terminate")
    assert dap.wait_exited() == 128 + 15
    dap.wait_event("terminated")
    assert not psutil.pid_exists(process["body"]["systemProcessId"]) or \
        psutil.Process(process["body"]["systemProcessId"]).status() == psutil.STATUS_ZOMBIE
