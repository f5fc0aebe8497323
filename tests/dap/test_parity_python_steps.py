"""The tracer's debugpy features, with debugpy's adapter as the oracle (issue 22): the same
client script runs against debugpy and against ``mixdbg dap`` on the same program and
interpreter, and both must show the user the same thing: Step Into Target reaches the
chosen call, a line jumped to (Jump to Cursor) runs again, a step shows ``(return)``
values, and an exception raised in a worker function that only the library catches stops
there (user-uncaught)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Forky, pyenv_python

from .client import DapClient
from .fixtures import DapFactory, forky_command
from .natives import SCRIPTS, marker_line
from .oracles import Adapter, both, launch

pytestmark = pytest.mark.timeout(300)

PROGRAM = SCRIPTS / "python_steps_main.py"


@pytest.fixture(params=["3.11", "3.12", *(pytest.param(version, marks=pytest.mark.slow) for version in ("3.10", "3.13"))])
def python(request: pytest.FixtureRequest) -> str:
    """The interpreter under test: this one (3.11), pyenv's 3.12 (sys.monitoring), and in the
    platform runs 3.10 and 3.13."""
    if request.param == "3.11":
        return sys.executable
    found = pyenv_python(request.param)
    if found is None:
        pytest.skip(f"no pyenv Python {request.param} here")
    return str(found)


def line(marker: str) -> int:
    return marker_line(PROGRAM, marker)


def top(dap: DapClient, thread: int) -> dict[str, Any]:
    return dap.stack(thread)[0]


def observe(dap: DapClient, program: Path) -> dict[str, Any]:
    """Drive the program through the four features; what the user saw at each."""
    seen: dict[str, Any] = {}
    thread = dap.wait_stopped()["threadId"]
    # Step Into Target: the calls of `total = helper(inner(1), other(2))`; into other(2)
    frame = top(dap, thread)
    targets = dap.request("stepInTargets", frameId=frame["id"])["body"]["targets"]
    # (debugpy labels a target with its call's source, other(2); on 3.10 with the name only)
    chosen = next(target for target in targets if target["label"] in ("other(2)", "other"))
    dap.request("stepIn", threadId=thread, targetId=chosen["id"])
    stop = dap.wait_stopped()
    seen["target"] = (stop["reason"], top(dap, thread)["name"], top(dap, thread)["line"])
    # Jump to Cursor: at `after = runs`, back to `runs += 1`, which runs again
    dap.request("continue", threadId=thread)
    dap.wait_stopped()
    goto = dap.request("gotoTargets", source={"path": str(program)}, line=line("again"))["body"]["targets"]
    dap.request("goto", threadId=thread, targetId=goto[0]["id"])
    stop = dap.wait_stopped()
    seen["goto"] = (stop["reason"], top(dap, thread)["line"])
    dap.request("next", threadId=thread)
    dap.wait_stopped()
    seen["runs"] = dap.evaluate("runs", top(dap, thread)["id"])["result"]
    # showReturnValue: next over `value = forty_two()`
    dap.request("continue", threadId=thread)
    dap.wait_stopped()
    dap.request("next", threadId=thread)
    dap.wait_stopped()
    seen["return"] = dap.frame_variables(top(dap, thread)["id"])["(return) forty_two"]["value"]
    # user-uncaught: the worker's exception, caught by ThreadPoolExecutor, stops in the worker
    dap.request("continue", threadId=thread)
    stop = dap.wait_stopped()
    worker = top(dap, stop["threadId"])
    seen["user-uncaught"] = (stop["reason"], worker["name"].split()[0], worker["line"])
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited() == 0
    seen["output"] = dap.output("stdout")
    return seen


def expect_the_same(seen: dict[str, dict[str, Any]]) -> None:
    """Both adapters showed the same, and it is what the feature promises."""
    assert seen["mixdbg"] == seen["debugpy"], seen
    assert seen["mixdbg"]["target"] == ("step", "other", line("other"))
    assert seen["mixdbg"]["goto"] == ("goto", line("again"))
    assert seen["mixdbg"]["runs"] == "2"
    assert seen["mixdbg"]["return"] == "42"
    assert seen["mixdbg"]["user-uncaught"] == ("exception", "worker", line("raise"))
    assert seen["mixdbg"]["output"] == "done 6 2 42 ['bad item 3']\n"


def test_step_into_target_jump_return_value_and_user_uncaught_as_debugpy(
        dap_factory: DapFactory, python: str, tmp_path: Path) -> None:
    program = Path(shutil.copy(PROGRAM, tmp_path / PROGRAM.name))
    breakpoints = {program: [line("targets"), line("jumped"), line("returns")]}

    def scenario(adapter: Adapter) -> dict[str, Any]:
        dap = launch(dap_factory, adapter, program, python, breakpoints, filters=("uncaught", "user-uncaught"))
        return observe(dap, program)
    expect_the_same(both(scenario))


@pytest.mark.slow
def test_the_same_on_forky_python_314(forky: Forky, dap_factory: DapFactory, tmp_path: Path) -> None:
    # Given both adapters inside the chroot (its Python 3.14 and the venv's debugpy)
    shutil.copy(PROGRAM, tmp_path / PROGRAM.name)
    program = Path("/project") / PROGRAM.name
    breakpoints = {program: [line("targets"), line("jumped"), line("returns")]}

    def scenario(adapter: Adapter) -> dict[str, Any]:
        command = forky_command(forky, tmp_path, [forky.python, *adapter.python_module])
        dap = launch(dap_factory, adapter, program, forky.python, breakpoints, command=command,
                     filters=("uncaught", "user-uncaught"))
        return observe(dap, program)
    expect_the_same(both(scenario))
