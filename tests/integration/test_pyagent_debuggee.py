"""The Python agent in a real debuggee, with the tests playing the engine (pyagent_engine).

Each test runs a small script under ``pyagent_harness.py``, whose trap reads and writes the
mailbox at the contract's raw offsets; stops are checked by the line the engine would read
from memory. The interpreter under test is this one; the slow variants run every supported
one (pyenv 3.10-3.13, forky's 3.14).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from pyagent_engine import FORKY_SCRIPT, FakeEngine, Trap, debuggee, line_of

PYENV = Path(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))) / "versions"
OTHER_PYTHONS = [pytest.param(str(PYENV / f"{version}/bin/python"), id=version.rsplit(".", 1)[0],
                              marks=pytest.mark.slow)
                 for version in ("3.10.13", "3.12.1", "3.13.0")]
FORKY = pytest.param("forky", id="3.14-forky", marks=pytest.mark.slow)


def _available(python: str) -> str:
    if python == "forky":
        if not FORKY_SCRIPT.is_file() or os.geteuid() != 0:
            pytest.skip("the forky chroot needs shared/envs/forky and root")
    elif not Path(python).is_file():
        pytest.skip(f"no {python}")
    return python


@pytest.fixture(params=[pytest.param(sys.executable, id="this"), *OTHER_PYTHONS, FORKY])
def python(request: pytest.FixtureRequest) -> str:
    """Every interpreter the agent supports (only this one unless slow tests run)."""
    return _available(str(request.param))


STEPS = """\
def add(a, b):
    total = a + b  # @add
    return total  # @return


def main():
    x = 1  # @x
    y = add(x, 2)  # @call
    print("y", y)  # @print
    return y


main()  # @main
print("done")  # @done
"""


def _bp(source: str, *specs: dict[str, Any]) -> dict[str, Any]:
    """A breakpoints message for the script, each spec with a marker instead of a line."""
    bps = [{"id": index + 1, "line": line_of(source, spec.pop("at")), **spec} for index, spec in enumerate(specs)]
    return {"breakpoints": {"SCRIPT": bps}}


def _config(source: str, *specs: dict[str, Any], **extra: Any) -> list[dict[str, Any]]:
    messages = [_bp(source, *specs)] if specs else []
    return messages + [{key: value} for key, value in extra.items()]


def _step(engine: FakeEngine, trap: Trap, command: str) -> Trap:
    engine.resume(trap, {"command": command})
    return engine.stop("step")


def test_entry_next_step_in_and_out(python: str) -> None:
    # Given a stop on entry
    with debuggee(STEPS, python, [{"stopOnEntry": True}]) as (engine, wait):
        trap = engine.stop("entry")
        assert (trap.function, trap.line) == ("<module>", 1)
        # When we step as a user would, then each stop is where debugpy would stop
        trap = _step(engine, trap, "next")
        assert trap.line == line_of(STEPS, "main") - 7  # def main():
        trap = _step(engine, trap, "next")
        assert trap.line == line_of(STEPS, "main")
        trap = _step(engine, trap, "stepIn")
        assert (trap.function, trap.line) == ("main", line_of(STEPS, "x"))
        depth = trap.out["depth"]
        trap = _step(engine, trap, "next")
        assert trap.line == line_of(STEPS, "call") and trap.out["depth"] == depth
        trap = _step(engine, trap, "stepIn")
        assert (trap.function, trap.line, trap.out["depth"]) == ("add", line_of(STEPS, "add"), depth + 1)
        trap = _step(engine, trap, "stepOut")
        assert (trap.function, trap.line) == ("main", line_of(STEPS, "call"))
        trap = _step(engine, trap, "next")
        assert trap.line == line_of(STEPS, "print")
        engine.resume(trap, {"command": "continue"})
        result = wait()
    assert result.returncode == 0, result.stderr
    assert result.stdout == "y 3\ndone\n"


VARIABLES = """\
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def work(items):
    point = Point(1, 2)
    table = {"a": items}
    count = len(items)  # @stop
    return count


print("count", work([3, 4, 5]))
"""


def test_breakpoint_variables_and_evaluate(python: str) -> None:
    with debuggee(VARIABLES, python, _config(VARIABLES, {"at": "stop"})) as (engine, wait):
        trap = engine.stop("breakpoint")
        assert trap.out["breakpoints"] == [1] and trap.line == line_of(VARIABLES, "stop")
        # Given a breakpoint stop, the locals are there with children
        trap, reply = engine.ask(trap, {"command": "variables", "id": 1, "frame": 0})
        variables = {var["name"]: var for var in reply["body"]["variables"]}
        assert set(variables) == {"items", "point", "table"}
        assert variables["items"]["value"] == "[3, 4, 5]" and variables["point"]["type"] == "Point"
        trap, reply = engine.ask(trap, {"command": "children", "id": 2, "ref": variables["point"]["ref"]})
        assert [(var["name"], var["value"]) for var in reply["body"]["variables"]] == [("x", "1"), ("y", "2")]
        # the caller's frame (K = 1) and its module's globals
        trap, reply = engine.ask(trap, {"command": "variables", "id": 3, "frame": 1, "scope": "globals"})
        assert {"Point", "work"} <= {var["name"] for var in reply["body"]["variables"]}
        # evaluate: an expression, an error, a statement in the repl that changes a local
        trap, reply = engine.ask(trap, {"command": "evaluate", "id": 4, "frame": 0, "expression": "table['a'][1:]",
                                        "context": "watch"})
        assert reply["body"]["result"] == "[4, 5]" and reply["body"]["ref"] > 0
        trap, reply = engine.ask(trap, {"command": "evaluate", "id": 5, "frame": 0, "expression": "nothing",
                                        "context": "hover"})
        assert reply["error"] == "NameError: name 'nothing' is not defined"
        trap, reply = engine.ask(trap, {"command": "evaluate", "id": 6, "frame": 0, "expression": "items = [0]",
                                        "context": "repl"})
        assert reply["body"] == {"result": "", "type": "", "ref": 0}
        engine.resume(trap, {"command": "continue"})
        result = wait()
    assert result.stdout == "count 1\n", result.stderr


LOOP = """\
total = 0
for i in range(10):
    total += i  # @loop
    square = i * i  # @log
print("total", total)
"""


def test_condition_hit_condition_and_logpoint(python: str) -> None:
    config = _config(LOOP, {"at": "loop", "condition": "i % 2 == 0", "hitCondition": "2"},
                     {"at": "log", "logMessage": "i={i} square={square}", "hitCondition": "%5"})
    with debuggee(LOOP, python, config) as (engine, wait):
        trap = engine.stop("breakpoint")
        trap, reply = engine.ask(trap, {"command": "evaluate", "id": 1, "frame": 0, "expression": "i",
                                        "context": "watch"})
        assert reply["body"]["result"] == "2"  # the second hit of the condition: i == 2
        engine.resume(trap, {"command": "continue"})
        result = wait()
        outputs = [engine.message(), engine.message()]
    assert result.stdout == "total 45\n", result.stderr
    pid = engine.hellos.get_nowait()["hello"]
    # the logpoint's line runs before `square` is assigned in that iteration
    assert outputs == [{"output": "i=4 square=9\n", "pid": pid}, {"output": "i=9 square=64\n", "pid": pid}]


def test_bad_conditions_are_reported_and_stop() -> None:
    config = _config(LOOP, {"at": "loop", "condition": "1 / i"}, {"at": "log", "condition": "i ==="})
    with debuggee(LOOP, sys.executable, config) as (engine, wait):
        assert engine.message() == {"problem": "breakpoint condition: SyntaxError: invalid syntax", "breakpoint": 2}
        trap = engine.stop("breakpoint")
        assert trap.out["breakpoints"] == [1]  # i == 0: the condition raised
        assert engine.message() == {"problem": "breakpoint condition failed: ZeroDivisionError: division by zero",
                                    "breakpoint": 1}
        engine.resume(trap, {"command": "continue"})
        trap = engine.stop("breakpoint")
        assert trap.out["breakpoints"] == [2]  # the condition cannot be compiled
        engine.configure({"breakpoints": {}})
        engine.resume(trap, {"command": "continue"})
        assert wait().stdout == "total 45\n"


EXCEPTIONS = """\
import threading


def fail(n):
    raise ValueError(f"bad {n}")  # @raise


def catch():
    for n in range(2):
        try:
            fail(n)  # @call
        except ValueError:
            pass
    for _ in iter([1]):  # StopIteration ends the loop: never a stop
        pass


def crash():
    items = [1, 2]
    return items[5]  # @index


catch()
worker = threading.Thread(target=crash, name="worker")
worker.start()
worker.join()
print("still here")
fail(9)  # @uncaught
"""


def test_raised_and_uncaught_exceptions(python: str) -> None:
    with debuggee(EXCEPTIONS, python, [{"exceptions": {"raised": True, "uncaught": True}}]) as (engine, wait):
        # raised: once per exception object, where it is raised (not in every frame it leaves)
        for n in range(2):
            trap = engine.stop("exception")
            assert (trap.function, trap.line) == ("fail", line_of(EXCEPTIONS, "raise"))
            assert trap.out["exception"]["type"] == "ValueError" and trap.out["description"] == f"ValueError: bad {n}"
            engine.resume(trap, {"command": "continue"})
        # a thread's uncaught exception: raised first, then uncaught with the traceback's frames
        trap = engine.stop("exception")
        assert (trap.function, trap.thread) == ("crash", "worker")
        engine.resume(trap, {"command": "continue"})
        trap = engine.stop("exception")
        assert trap.thread == "worker" and trap.out["exception"]["type"] == "IndexError"
        assert trap.out["frames"][0] == {"name": "crash", "file": engine.script, "line": line_of(EXCEPTIONS, "index")}
        assert "items[5]" in trap.out["exception"]["text"]
        trap, reply = engine.ask(trap, {"command": "evaluate", "id": 1, "frame": 0, "expression": "items",
                                        "context": "watch"})
        assert reply["body"]["result"] == "[1, 2]"
        engine.resume(trap, {"command": "stepIn"})  # a step after the fact: continue
        # the main thread's uncaught exception, after its raised stop
        trap = engine.stop("exception")
        assert trap.line == line_of(EXCEPTIONS, "raise")
        engine.resume(trap, {"command": "continue"})
        trap = engine.stop("exception")
        assert trap.out["description"] == "ValueError: bad 9" and trap.out["depth"] == 0
        assert [frame["name"] for frame in trap.out["frames"]][:2] == ["fail", "<module>"]
        assert 'raise ValueError(f"bad {n}")' in trap.out["exception"]["text"]
        engine.resume(trap, {"command": "continue"})
        result = wait()
    # the original hooks ran after the stops
    assert result.returncode == 1 and result.stdout == "still here\n"
    assert "IndexError: list index out of range" in result.stderr and "ValueError: bad 9" in result.stderr


JUST_MY_CODE = """\
import copy


class Thing:
    def __deepcopy__(self, memo):
        return Thing()  # @mine


copy.deepcopy(Thing())  # @call
print("copied")
"""


@pytest.mark.parametrize("just_my_code", [True, False])
def test_step_in_follows_just_my_code(python: str, just_my_code: bool) -> None:
    config = _config(JUST_MY_CODE, {"at": "call"}, justMyCode=just_my_code)
    with debuggee(JUST_MY_CODE, python, config) as (engine, wait):
        trap = _step(engine, engine.stop("breakpoint"), "stepIn")
        if just_my_code:  # through the standard library's copy.deepcopy to the user's method
            assert (trap.function, trap.line) == ("__deepcopy__", line_of(JUST_MY_CODE, "mine"))
        else:
            assert (trap.function, trap.frames[0][1]) == ("deepcopy", "copy.py")
        engine.resume(trap, {"command": "continue"})
        assert wait().stdout == "copied\n"


THREADS = """\
import threading


def work(name):
    value = name.upper()  # @work
    return value


for n in range(2):  # one after the other: the steps below cannot race the other's breakpoint
    thread = threading.Thread(target=work, args=(f"t{n}",), name=f"t{n}")
    thread.start()
    thread.join()
print("joined")
"""


def test_breakpoints_in_threads(python: str) -> None:
    with debuggee(THREADS, python, _config(THREADS, {"at": "work"})) as (engine, wait):
        for name in ("t0", "t1"):
            trap = engine.stop("breakpoint")
            assert trap.thread == name and trap.tid != trap.pid
            trap, reply = engine.ask(trap, {"command": "evaluate", "id": 1, "frame": 0, "expression": "name",
                                            "context": "watch"})
            assert reply["body"]["result"] == repr(trap.thread)
            engine.resume(trap, {"command": "next"})
            trap = engine.stop("step")
            assert trap.line == line_of(THREADS, "work") + 1
            engine.resume(trap, {"command": "continue"})
        assert wait().stdout == "joined\n"


FORK = """\
import os

pid = os.fork()
if pid == 0:
    where = "child"  # @child
    os._exit(0)
os.waitpid(pid, 0)
print("parent done")  # @parent
"""


def test_fork_child_says_hello_and_stops(python: str) -> None:
    with debuggee(FORK, python, _config(FORK, {"at": "child"}, {"at": "parent"})) as (engine, wait):
        parent = engine.hellos.get(timeout=10)["hello"]
        trap = engine.stop("breakpoint")
        child = engine.hellos.get(timeout=10)
        assert trap.pid == child["hello"] != parent and trap.line == line_of(FORK, "child")
        assert child["shared"] == engine.hellos.queue[0]["shared"] if engine.hellos.queue else True
        assert trap.armed == 0
        engine.resume(trap, {"command": "continue"})
        trap = engine.stop("breakpoint")
        assert trap.pid == parent and trap.line == line_of(FORK, "parent")
        engine.resume(trap, {"command": "continue"})
        assert wait().stdout == "parent done\n"


def test_engine_arms_slots_and_empty_in_continues() -> None:
    with debuggee(STEPS, sys.executable, _config(STEPS, {"at": "add"})) as (engine, wait):
        trap = engine.stop("breakpoint")
        depth = trap.out["depth"]
        # the engine arms STEP_TO_DEPTH on this thread for the caller's depth, and lets go
        engine.resume(trap, {"command": "continue"}, arm=[{"mode": 2, "depth": depth - 1}])
        trap = engine.stop("step")
        assert (trap.function, trap.line) == ("main", line_of(STEPS, "print"))
        assert trap.out["depth"] == depth - 1 and trap.armed == 0
        # STEP_IN from the engine: the next line anywhere
        engine.resume(trap, {"command": "continue"}, arm=[{"mode": 1, "depth": 0}])
        trap = engine.stop("step")
        assert trap.line == line_of(STEPS, "print") + 1
        # a trap answered with nothing (in_len == 0): the program runs on
        engine.resume(trap, None)
        assert wait().stdout == "y 3\ndone\n"


def test_breakpoints_set_while_running() -> None:
    source = "import time\nfor n in range(400):\n    time.sleep(0.01)  # @sleep\nprint('end')\n"
    with debuggee(source, sys.executable, []) as (engine, wait):
        engine.hellos.get(timeout=10)
        engine.configure({"breakpoints": {"SCRIPT": [{"id": 7, "line": line_of(source, "sleep")}]}})
        trap = engine.stop("breakpoint")
        assert trap.out["breakpoints"] == [7]
        engine.configure({"breakpoints": {}})
        engine.resume(trap, {"command": "continue"})
        assert wait().stdout == "end\n"


def test_no_engine_no_run(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("print('ran')\n")
    base = [sys.executable, str(Path(__file__).with_name("pyagent_harness.py")),
            str(Path(__file__).parents[2] / "mixdbg" / "pyagent" / "agent.py")]
    # no socket at all
    result = subprocess.run([*base, str(tmp_path / "none.sock"), "unused", str(script)], capture_output=True,
                            text=True, timeout=30, check=False)
    assert result.returncode == 3 and result.stdout == ""
    assert result.stderr.startswith("mixdbg: cannot reach the debugger at ")
    # an engine that goes away before go
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(tmp_path / "cfg.sock"))
    server.listen(1)
    threading.Thread(target=lambda: server.accept()[0].close(), daemon=True).start()
    try:
        result = subprocess.run([*base, str(tmp_path / "cfg.sock"), "unused", str(script)], capture_output=True,
                                text=True, timeout=30, check=False)
    finally:
        server.close()
    assert (result.returncode, result.stdout) == (3, "")
    assert result.stderr == "mixdbg: the debugger went away before the program started\n"
