"""``mixdbg dap`` with real torch (issue 14): the seed run, an operator breakpoint with
tensor arguments, DataLoader workers (Python and operator stops in the workers, a worker's
SIGSEGV), and the program kept when the client lets go or the adapter dies."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from .client import DapClient
from .natives import NativeModule, NativeSet

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "testdebug.py"


def config(natives: NativeSet, script: str, *args: str, **extra: Any) -> dict[str, Any]:
    """A launch configuration for a driver script, its output in the debug console."""
    return {"program": str(natives.script(script)), "args": list(args), "cwd": str(natives.directory),
            "console": "internalConsole", "env": natives.env({}), **extra}


def test_seed_run_stops_at_the_three_breakpoints_with_the_python_line_and_size(
        dap: DapClient, torch_installed: None) -> None:
    # Given the README's three function breakpoints on examples/testdebug.py
    dap.launch({"program": str(SEED), "cwd": str(REPO), "console": "internalConsole"},
               function_breakpoints=["PyInit__C", "THPModule_initExtension", "at::native::randn"])
    seen: list[str] = []
    while True:
        stop = dap.wait_stopped(timeout=120)
        thread = stop["threadId"]
        frames = dap.stack(thread)
        seen.append(frames[0]["name"])
        if "randn" in frames[0]["name"]:
            break
        dap.request("continue", threadId=thread)
    assert "PyInit__C" in seen[0] and "THPModule_initExtension" in seen[1]
    # Then at randn: <module> testdebug.py:3 below it, and frame 0's size is [2, 3]
    module = next(f for f in frames if f["name"] == "<module>")
    assert module["source"]["path"] == str(SEED) and module["line"] == 3
    assert dap.frame_variables(frames[0]["id"], "Arguments")["size"]["value"] == "[2, 3]"
    dap.request("setFunctionBreakpoints", breakpoints=[])
    dap.request("continue", threadId=thread)
    assert dap.wait_exited(timeout=60) == 0


def test_operator_breakpoint_stops_with_tensor_arguments(dap: DapClient, natives: NativeSet,
                                                         torch_installed: None) -> None:
    dap.launch(config(natives, "ops_main.py"), function_breakpoints=["op:aten::add"])
    stop = dap.wait_stopped(timeout=120)
    assert stop["reason"] == "function breakpoint"
    assert "aten::add" in stop.get("description", "")
    frames = dap.stack(stop["threadId"])
    arguments = dap.frame_variables(frames[0]["id"], "Arguments")
    tensor = arguments["self"]
    assert tensor["variablesReference"] > 0
    assert tensor["value"] == "tensor float32 [2, 3] cpu"
    parts = {v["name"]: v["value"] for v in dap.variables(tensor["variablesReference"])}
    assert parts["dtype"] == "float32" and parts["shape"] == "[2, 3]"
    assert parts["values"].startswith("[[1., 1.")
    other = {v["name"]: v["value"] for v in dap.variables(arguments["other"]["variablesReference"])}
    assert other["values"].startswith("[[2., 2.")
    # When stepping out of the next operator's kernel (randn, called from a Python line): a
    # step (it was reported as a pause), on the call's line, the call complete
    dap.request("setFunctionBreakpoints", breakpoints=[{"name": "op:aten::randn"}])
    dap.request("continue", threadId=stop["threadId"])
    dap.wait_stopped(timeout=120)
    dap.request("setFunctionBreakpoints", breakpoints=[])
    dap.request("stepOut", threadId=stop["threadId"])
    assert dap.wait_stopped(timeout=120)["reason"] == "step"
    top = dap.stack(stop["threadId"])[0]
    assert (top["name"], top["line"]) == ("main", natives.line("ops_main.py", "randn"))
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited(timeout=60) == 0
    assert "ops sum 18.0" in dap.output("stdout")


def test_dataloader_workers_stop_in_python_and_at_randn_with_named_threads(
        dap: DapClient, natives: NativeSet, capi_module: NativeModule, torch_installed: None) -> None:
    script = natives.script("dataloader_main.py")
    dap.launch(config(natives, "dataloader_main.py"),
               breakpoints={script: [natives.line("dataloader_main.py", "randn")]},
               function_breakpoints=["op:aten::randn"])
    # Then the Python line stops in a worker, named after it, then randn's kernel in that worker
    stop = dap.wait_stopped(timeout=120)
    names = {t["id"]: t["name"] for t in dap.threads()}
    assert "DataLoader worker" in names[stop["threadId"]], names
    frame = dap.stack(stop["threadId"])[0]
    assert frame["name"] == "__getitem__"
    assert dap.evaluate("i in range(8)", frame["id"])["result"] == "True"
    dap.request("setBreakpoints", source={"path": str(script)}, breakpoints=[])
    dap.request("continue", threadId=stop["threadId"])
    stop = dap.wait_stopped(timeout=60)
    assert stop["reason"] == "function breakpoint"
    assert "DataLoader worker" in {t["id"]: t["name"] for t in dap.threads()}[stop["threadId"]]
    dap.request("setFunctionBreakpoints", breakpoints=[])
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited(timeout=120) == 0
    assert "items 8" in dap.output("stdout")


def test_dataloader_worker_crash_is_a_stop_with_its_stack_then_the_parents_error(
        dap: DapClient, natives: NativeSet, capi_module: NativeModule, torch_installed: None) -> None:
    dap.launch(config(natives, "dataloader_main.py", "2", "crash"))
    stop = dap.wait_stopped(timeout=120)
    assert stop["reason"] == "exception" and "SIGSEGV" in stop.get("description", "")
    names = {t["id"]: t["name"] for t in dap.threads()}
    assert "DataLoader worker" in names[stop["threadId"]]
    frames = dap.stack(stop["threadId"])
    getitem = next(f for f in frames if f["name"] == "__getitem__")
    assert getitem["line"] == natives.line("dataloader_main.py", "crash")
    info = dap.request("exceptionInfo", threadId=stop["threadId"])["body"]
    assert info["exceptionId"] == "SIGSEGV"
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited(timeout=120) == 1
    assert "RuntimeError" in dap.output("stderr")


def _wait_gone(pid: int, timeout: float) -> bool:
    try:
        psutil.Process(pid).wait(timeout)
    except psutil.TimeoutExpired:
        return False
    except psutil.NoSuchProcess:
        pass
    return True


def test_disconnect_without_terminating_at_a_native_stop_lets_the_program_finish(
        dap: DapClient, natives: NativeSet, tmp_path: Path, torch_installed: None) -> None:
    result = tmp_path / "result.txt"
    dap.launch({**config(natives, "ops_main.py"), "env": natives.env({"MIXDBG_TEST_RESULT": str(result)})},
               function_breakpoints=["op:aten::add"])
    stop = dap.wait_stopped(timeout=120)
    pid = dap.processes()[0]
    dap.request("disconnect", terminateDebuggee=False)
    assert _wait_gone(pid, 60)
    assert "ops sum 18.0" in result.read_text()
    assert stop["threadId"]


def test_killing_the_adapter_at_a_stop_lets_the_program_finish(
        dap: DapClient, natives: NativeSet, tmp_path: Path, torch_installed: None) -> None:
    result = tmp_path / "result.txt"
    dap.launch({**config(natives, "ops_main.py"), "env": natives.env({"MIXDBG_TEST_RESULT": str(result)})},
               function_breakpoints=["op:aten::add"])
    dap.wait_stopped(timeout=120)
    pid = dap.processes()[0]
    os.kill(dap.process.pid, signal.SIGKILL)  # the adapter, at a stop
    assert _wait_gone(pid, 60)
    time.sleep(0.1)
    assert "ops sum 18.0" in result.read_text()
