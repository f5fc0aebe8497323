"""The Python tracer through ``mixdbg dap`` (issue 22): what the program sees is what it sees
under plain python (no thread of the agent's: 3.12 warns at a fork of a threaded process);
breakpoints set while the program runs stop it (the agent has no thread reading them: the
engine gets its attention); a program that monitors itself (sys.monitoring) keeps working,
and when it left no tool id free the agent says so and traces with sys.settrace;
exceptionInfo shows the program's frames only; exceptionOptions per exception class, with
debugpy as the oracle."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import pyenv_python

from .client import DapClient
from .fixtures import DapFactory
from .oracles import Adapter, both, launch

pytestmark = pytest.mark.timeout(180)


def _python(version: str) -> str:
    if version == "3.11":
        return sys.executable
    found = pyenv_python(version)
    if found is None:
        pytest.skip(f"no pyenv Python {version} here")
    return str(found)


def _program(tmp_path: Path, source: str, name: str = "program.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def _line(path: Path, marker: str) -> int:
    return next(n for n, text in enumerate(path.read_text().splitlines(), 1) if text.rstrip().endswith(marker))


def _start(dap: DapClient, program: Path, python: str, **extra: object) -> None:
    dap.launch({"program": str(program), "cwd": str(program.parent), "console": "internalConsole", "python": python},
               **extra)  # type: ignore[arg-type]


FORK = """\
import os
import time

pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.2)
print("forked")
"""


def test_a_fork_prints_what_it_prints_under_plain_python(dap: DapClient, tmp_path: Path) -> None:
    # Given 3.12, which warns at a fork of a multi-threaded process
    python = _python("3.12")
    program = _program(tmp_path, FORK)
    plain = subprocess.run([python, str(program)], capture_output=True, text=True, timeout=60, check=False)
    assert (plain.stdout, plain.stderr) == ("forked\n", "")
    # When it runs under mixdbg dap
    _start(dap, program, python)
    assert dap.wait_exited() == 0
    # Then it printed the same: the agent started no thread (the reader thread did: a warning)
    assert dap.output("stdout") == "forked\n"
    assert dap.output("stderr") == ""


LOOP = """\
import time

for n in range(3000):
    time.sleep(0.01)  # @sleep
print("end")
"""


@pytest.mark.parametrize("version", ["3.11", "3.12"])
def test_a_breakpoint_set_while_the_program_runs_stops_it(dap: DapClient, tmp_path: Path, version: str) -> None:
    # Given a program running a loop, without breakpoints
    program = _program(tmp_path, LOOP)
    _start(dap, program, _python(version))
    # When a breakpoint is set in the loop while it runs
    dap.request("setBreakpoints", source={"path": str(program)}, breakpoints=[{"line": _line(program, "# @sleep")}])
    # Then it stops there, soon
    stop = dap.wait_stopped(timeout=30)
    assert stop["reason"] == "breakpoint"
    assert dap.stack(stop["threadId"])[0]["line"] == _line(program, "# @sleep")
    dap.request("setBreakpoints", source={"path": str(program)}, breakpoints=[])
    dap.request("disconnect", terminateDebuggee=True)


SELF_MONITORING = """\
import sys

mon = sys.monitoring
counted = []
for tool in (mon.COVERAGE_ID, mon.PROFILER_ID):
    mon.use_tool_id(tool, f"program {tool}")
    mon.register_callback(tool, mon.events.LINE, lambda code, line, tool=tool: counted.append(tool))


def work():
    total = 0
    for i in range(5):
        total += i  # @work
    return total


mon.set_local_events(mon.COVERAGE_ID, work.__code__, mon.events.LINE)
mon.set_local_events(mon.PROFILER_ID, work.__code__, mon.events.LINE)
print("work", work(), "lines", counted.count(mon.COVERAGE_ID), counted.count(mon.PROFILER_ID))
"""


def test_a_program_that_monitors_itself_keeps_its_tools(dap: DapClient, tmp_path: Path) -> None:
    # Given a program that uses sys.monitoring's coverage and profiler tool ids itself
    python = _python("3.12")
    program = _program(tmp_path, SELF_MONITORING)
    plain = subprocess.run([python, str(program)], capture_output=True, text=True, timeout=60, check=False)
    # When it runs under mixdbg dap with a breakpoint in the monitored function
    _start(dap, program, python, breakpoints={program: [_line(program, "# @work")]})
    stop = dap.wait_stopped()
    assert dap.stack(stop["threadId"])[0]["line"] == _line(program, "# @work")
    dap.request("setBreakpoints", source={"path": str(program)}, breakpoints=[])
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited() == 0
    # Then the program counted what it counts under plain python
    assert dap.output("stdout") == plain.stdout == "work 10 lines 13 13\n"


#: Takes every sys.monitoring tool id before the agent starts (a sitecustomize).
TAKES_ALL = "import sys\nfor tool in range(6):\n    sys.monitoring.use_tool_id(tool, 'taken')\n"


def test_no_free_tool_id_is_said_and_python_is_traced_all_the_same(dap: DapClient, tmp_path: Path) -> None:
    # Given an interpreter whose every sys.monitoring tool id is taken before the program
    python = _python("3.12")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(TAKES_ALL)
    program = _program(tmp_path, LOOP.replace("3000", "3"))
    # When it runs under mixdbg dap with a breakpoint
    dap.launch({"program": str(program), "cwd": str(tmp_path), "console": "internalConsole", "python": python,
                "env": {"PYTHONPATH": str(tmp_path / "site")}}, breakpoints={program: [_line(program, "# @sleep")]})
    # Then the user is told, in one line, and the breakpoint stops all the same (sys.settrace)
    stop = dap.wait_stopped()
    assert "every sys.monitoring tool id is in use" in dap.output("important")
    assert dap.stack(stop["threadId"])[0]["line"] == _line(program, "# @sleep")
    dap.request("setBreakpoints", source={"path": str(program)}, breakpoints=[])
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited() == 0


UNCAUGHT = """\
def fail():
    raise RuntimeError("broken")  # @raise


fail()  # @call
"""


def test_exception_info_shows_the_programs_frames_only(dap: DapClient, tmp_path: Path) -> None:
    # Given an uncaught exception (the default filter)
    program = _program(tmp_path, UNCAUGHT)
    _start(dap, program, sys.executable, exception_filters=["python-uncaught"])
    stop = dap.wait_stopped()
    assert stop["reason"] == "exception"
    # Then its traceback starts at the program's first frame: no runpy, no mixdbg bootstrap
    info = dap.request("exceptionInfo", threadId=stop["threadId"])["body"]
    trace = info["details"]["stackTrace"]
    assert info["breakMode"] == "unhandled"
    assert "runpy" not in trace and "bootstrap.py" not in trace and "mixdbg" not in trace, trace
    assert trace.splitlines()[1] == f'  File "{program}", line {_line(program, "# @call")}, in <module>', trace
    assert trace.rstrip().endswith("RuntimeError: broken")
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited() == 1


OPTIONS = """\
def raise_and_catch(kind):
    try:
        raise kind("caught")  # @raise
    except Exception:
        pass


raise_and_catch(KeyError)
raise_and_catch(ValueError)
print("done")
"""


def test_exception_options_per_exception_class_as_debugpy(dap_factory: DapFactory, tmp_path: Path) -> None:
    # Given exceptionOptions: ValueError stops when raised, everything else never
    program = _program(tmp_path, OPTIONS)
    options = [{"path": [{"names": ["Python Exceptions"]}], "breakMode": "never"},
               {"path": [{"names": ["Python Exceptions"]}, {"names": ["ValueError"]}], "breakMode": "always"}]

    def scenario(adapter: Adapter) -> list[str]:
        dap = launch(dap_factory, adapter, program, sys.executable, filters=(), stopOnEntry=True)
        thread = dap.wait_stopped()["threadId"]
        dap.request("setExceptionBreakpoints", filters=[], exceptionOptions=options)
        dap.request("continue", threadId=thread)
        stop = dap.wait_stopped()
        info = dap.request("exceptionInfo", threadId=stop["threadId"])["body"]
        seen = [stop["reason"], info["description"], str(dap.stack(stop["threadId"])[0]["line"])]
        dap.request("continue", threadId=stop["threadId"])
        assert dap.wait_exited() == 0
        return seen + [str(len(dap.events("stopped")))]
    # Then both adapters stop once (after the entry): at the raised ValueError, not the KeyError
    seen = both(scenario)
    assert seen["mixdbg"] == seen["debugpy"] == ["exception", "caught", str(_line(program, "# @raise")), "2"], seen
