"""The Python agent in a real debuggee, with the tests playing the engine (pyagent_engine).

Each test runs a small script under ``pyagent_harness.py``, whose trap reads and writes the
mailbox at the contract's raw offsets; stops are checked by the line the engine would read
from memory. The interpreter under test is this one; the slow variants run every supported
one (pyenv 3.10-3.13, forky's 3.14).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pyagent_engine import FORKY_SCRIPT, FakeEngine, Trap, debuggee, line_of

from mixdbg.engine import agents, attention

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
        assert [(var["name"], var["value"], var.get("evaluateName")) for var in reply["body"]["variables"]] == [
            ("special variables", "", None), ("x", "1", "point.x"), ("y", "2", "point.y")]
        # the caller's frame (K = 1) and its module's globals: its class and function in their groups
        trap, reply = engine.ask(trap, {"command": "variables", "id": 3, "frame": 1, "scope": "globals"})
        groups = {var["name"]: var["ref"] for var in reply["body"]["variables"]}
        trap, classes = engine.ask(trap, {"command": "children", "id": 31, "ref": groups["class variables"]})
        trap, functions = engine.ask(trap, {"command": "children", "id": 32, "ref": groups["function variables"]})
        assert [var["name"] for var in classes["body"]["variables"] + functions["body"]["variables"]] == [
            "Point", "work"]
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


def test_bad_conditions_are_reported_and_stop(python: str) -> None:
    config = _config(LOOP, {"at": "loop", "condition": "1 / i"}, {"at": "log", "condition": "i ==="})
    with debuggee(LOOP, python, config) as (engine, wait):
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
import time


def work(name):
    value = name.upper()  # @work
    return value


for n in range(2):  # one after the other: the steps below cannot race the other's breakpoint
    thread = threading.Thread(target=work, args=(f"t{n}",), name=f"t{n}")
    thread.start()
    thread.join()
time.sleep(0.2)  # join() returns before the OS thread is gone from /proc/self/task
print("joined")  # @joined
"""


def test_breakpoints_in_threads(python: str) -> None:
    with debuggee(THREADS, python, _config(THREADS, {"at": "work"}, {"at": "joined"})) as (engine, wait):
        for name in ("t0", "t1"):
            trap = engine.stop("breakpoint")
            assert trap.thread == name and trap.tid != trap.pid
            trap, reply = engine.ask(trap, {"command": "evaluate", "id": 1, "frame": 0, "expression": "name",
                                            "context": "watch"})
            assert reply["body"]["result"] == repr(trap.thread)
            engine.resume(trap, {"command": "next"})
            trap = engine.stop("step")
            assert trap.line == line_of(THREADS, "work") + 1 and trap.armed == 0
            # a step off the end of the thread: its slot outlives it, until the next stop
            engine.resume(trap, {"command": "next"})
        trap = engine.stop("breakpoint")
        assert trap.thread == "MainThread" and trap.armed == 0
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
        parent = engine.hellos.get(timeout=10)
        trap = engine.stop("breakpoint")
        child = engine.hellos.get(timeout=10)
        assert trap.pid == child["hello"] != parent["hello"] and trap.line == line_of(FORK, "child")
        assert child["shared"] == parent["shared"] and trap.armed == 0
        engine.resume(trap, {"command": "continue"})
        trap = engine.stop("breakpoint")
        assert trap.pid == parent["hello"] and trap.line == line_of(FORK, "parent")
        engine.resume(trap, {"command": "continue"})
        result = wait()
    # the program saw one thread (3.12+ warns at a fork of a threaded process, on stderr)
    assert (result.stdout, result.stderr) == ("parent done\n", "")


def test_engine_arms_slots_and_empty_in_continues(python: str) -> None:
    with debuggee(STEPS, python, _config(STEPS, {"at": "add"})) as (engine, wait):
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


def test_breakpoints_set_while_running(python: str) -> None:
    source = "import time\nfor n in range(400):\n    time.sleep(0.01)  # @sleep\nprint('end')\n"
    with debuggee(source, python, []) as (engine, wait):
        engine.hellos.get(timeout=10)
        engine.configure_running({"breakpoints": {"SCRIPT": [{"id": 7, "line": line_of(source, "sleep")}]}})
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


#: gdb's side of the real trap, as the engine does it: a breakpoint on Py_GetCompiler,
#: the mailbox at $rdi, the answer written into ``in`` (python inside gdb).
GDB_ENGINE = """
import json
import gdb

MAGIC = 0x4741474244584D4D
answers = [{"command": "evaluate", "id": 1, "frame": 0, "expression": "n * 2", "context": "watch"},
           {"command": "continue"}]
seen = []
for name in ("PYTHONHOME", "PYTHONPATH"):  # pip's gdb wrapper sets them for its own Python
    gdb.execute(f"unset environment {name}")
gdb.execute("set breakpoint pending on")
gdb.execute("break Py_GetCompiler")
gdb.execute("run")
while gdb.selected_inferior().pid:
    inferior = gdb.selected_inferior()
    mailbox = int(gdb.parse_and_eval("$rdi")) & 0xFFFFFFFFFFFFFFFF
    try:
        magic = int.from_bytes(bytes(inferior.read_memory(mailbox, 8)), "little")
    except gdb.MemoryError:
        magic = 0  # not the agent's call: resumed silently
    if magic == MAGIC:
        size = int.from_bytes(bytes(inferior.read_memory(mailbox + 24, 4)), "little")
        seen.append(json.loads(bytes(inferior.read_memory(mailbox + 32, size))))
        if answers:
            data = json.dumps(answers.pop(0)).encode()
            inferior.write_memory(mailbox + 32 + (1 << 20), data)
            inferior.write_memory(mailbox + 28, len(data).to_bytes(4, "little"))
    gdb.execute("continue")
print("SEEN " + json.dumps(seen))
"""


def test_native_trap_under_gdb(python: str) -> None:
    # Given the real trap, and gdb playing the engine's part of it
    gdb = shutil.which(os.environ.get("MIXDBG_GDB") or "gdb")
    if gdb is None and python != "forky":
        pytest.skip("no gdb")
    source = "n = 21\nprint('n', n)  # @print\n"
    with debuggee(source, python, _config(source, {"at": "print"}), native=True) as (engine, _):
        (engine.directory / "gdb_engine.py").write_text(GDB_ENGINE)
        gdb_args = ["-nx", "-batch", "-x", "gdb_engine.py", "--args", *engine.command]
        if python == "forky":
            argv = [str(FORKY_SCRIPT), "run", str(engine.directory), "gdb", *gdb_args]
        else:
            argv = [str(gdb), *gdb_args]
        env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
        # When gdb runs the debuggee
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=engine.directory,
                                stdin=subprocess.DEVNULL, check=False)
    # Then the stop and the reply went through the mailbox, and the program ran on
    assert "SEEN " in result.stdout, result.stdout + result.stderr
    seen = json.loads(result.stdout.split("SEEN ", 1)[1].splitlines()[0])
    assert [message["event"] for message in seen] == ["stopped", "reply"], result.stdout
    assert seen[0]["reason"] == "breakpoint" and seen[0]["breakpoints"] == [1]
    assert seen[1]["body"] == {"result": "42", "type": "int", "ref": 0, "evaluateName": "n * 2"}
    assert "n 21" in result.stdout


@pytest.mark.torch
def test_tensor_variables(torch_installed: None) -> None:
    source = "import torch\nweights = torch.arange(20, dtype=torch.float32).reshape(4, 5)\nprint('ok')  # @print\n"
    with debuggee(source, sys.executable, _config(source, {"at": "print"}), timeout=120) as (engine, wait):
        trap = engine.traps.get(timeout=90)
        trap, reply = engine.ask(trap, {"command": "evaluate", "id": 1, "frame": 0, "expression": "weights",
                                        "context": "watch"})
        assert reply["body"]["type"] == "Tensor" and reply["body"]["ref"] > 0
        trap, reply = engine.ask(trap, {"command": "children", "id": 2, "ref": reply["body"]["ref"]})
        children = {var["name"]: var["value"] for var in reply["body"]["variables"]}
        assert children == {"dtype": "torch.float32", "shape": "(4, 5)", "device": "device(type='cpu')",
                            "values": repr([float(index) for index in range(16)])}
        engine.resume(trap, {"command": "continue"})
        assert wait().stdout == "ok\n"


NEXT_OVER = """\
def busy(n):
    total = 0
    for i in range(n):
        total += i  # @busy
    return total


def main():
    a = busy(1000)  # @first
    b = busy(10)  # @second
    return a + b  # @sum


print(main())
"""


def test_next_steps_over_calls_and_stops_at_their_breakpoints(python: str) -> None:
    with debuggee(NEXT_OVER, python, _config(NEXT_OVER, {"at": "first"})) as (engine, wait):
        trap = _step(engine, engine.stop("breakpoint"), "next")
        assert trap.line == line_of(NEXT_OVER, "second")
        engine.configure({"breakpoints": {"SCRIPT": [{"id": 2, "line": line_of(NEXT_OVER, "busy"),
                                                      "hitCondition": "3"}]}})
        # sent while the program is stopped: the agent applies it before it runs on
        engine.resume(trap, {"command": "next"})
        trap = engine.stop("breakpoint")  # a breakpoint inside the call wins over the step
        assert trap.function == "busy" and trap.out["breakpoints"] == [2] and trap.armed == 0
        engine.configure({"breakpoints": {}})
        trap = _step(engine, trap, "stepOut")
        assert (trap.function, trap.line) == ("main", line_of(NEXT_OVER, "second"))
        trap = _step(engine, trap, "next")
        assert trap.line == line_of(NEXT_OVER, "sum")
        engine.resume(trap, {"command": "continue"})
        assert wait().stdout == "499545\n"


NESTED = """\
def helper(n):
    return n * 2  # @helper


def main():
    value = 1  # @main
    return value


main()
print(helper(1))
"""


def test_evaluation_never_stops_again(python: str) -> None:
    with debuggee(NESTED, python, _config(NESTED, {"at": "helper"}, {"at": "main"})) as (engine, wait):
        trap = engine.stop("breakpoint")
        assert trap.line == line_of(NESTED, "main")
        trap, reply = engine.ask(trap, {"command": "evaluate", "id": 1, "frame": 0, "expression": "helper(2)",
                                        "context": "repl"})
        assert reply["body"]["result"] == "4"  # through the breakpoint in helper without stopping
        trap = _step(engine, trap, "stepOut")  # back at the call: an opcode (3.12: monitoring) event
        assert trap.line == len(NESTED.splitlines()) - 1
        trap, reply = engine.ask(trap, {"command": "evaluate", "id": 2, "frame": 0, "expression": "helper(21)",
                                        "context": "repl"})
        assert reply["body"]["result"] == "42"
        engine.resume(trap, {"command": "continue"})
        trap = engine.stop("breakpoint")
        assert trap.line == line_of(NESTED, "helper")
        engine.resume(trap, {"command": "continue"})
        assert wait().stdout == "2\n"


def test_breakpoint_in_the_standard_library_and_quiet_exits() -> None:
    # Given a breakpoint in a library file (never traced otherwise) and raised exceptions on
    import copy
    import inspect

    lines, first = inspect.getsourcelines(copy.deepcopy)
    body = first + next(index for index, text in enumerate(lines) if text.strip().startswith("if memo is None"))
    source = "import copy\nimport sys\ncopy.deepcopy([1])\nsys.exit(0)\n"
    config = [{"breakpoints": {os.path.realpath(copy.__file__): [{"id": 3, "line": body}]}},
              {"exceptions": {"raised": True, "uncaught": True}}]
    with debuggee(source, sys.executable, config) as (engine, wait):
        trap = engine.stop("breakpoint")
        assert (trap.function, trap.frames[0][1], trap.line) == ("deepcopy", "copy.py", body)
        engine.resume(trap, {"command": "continue"})
        # Then sys.exit(0) is no exception stop
        result = wait()
    assert result.returncode == 0 and engine.traps.empty()


#: gdb stops in zlib.adler32 (C, holding the GIL), lets the test send a breakpoint and get
#: the agent's attention as the engine does (``engine.attention``), and continues.
GDB_NATIVE_STOP = """
import json
import os
import time
import gdb

for name in ("PYTHONHOME", "PYTHONPATH"):
    gdb.execute(f"unset environment {name}")
gdb.execute("set breakpoint pending on")
gdb.execute("break zlib_adler32")
gdb.execute("run")
open("native-stop", "w").close()
deadline = time.monotonic() + 30
while not os.path.exists("config-sent") and time.monotonic() < deadline:
    time.sleep(0.05)
gdb.execute("delete")
gdb.execute("break Py_GetCompiler")
gdb.execute("continue")
while gdb.selected_inferior().pid:
    mailbox = int(gdb.parse_and_eval("$rdi")) & 0xFFFFFFFFFFFFFFFF
    size = int.from_bytes(bytes(gdb.selected_inferior().read_memory(mailbox + 24, 4)), "little")
    print("STOP " + bytes(gdb.selected_inferior().read_memory(mailbox + 32, size)).decode())
    gdb.execute("continue")
"""


def test_configuration_from_a_native_stop_applies_before_the_next_line(tmp_path: Path) -> None:
    # Given gdb stopped in C code that holds the GIL, and a breakpoint on the very next line
    gdb = shutil.which(os.environ.get("MIXDBG_GDB") or "gdb")
    if gdb is None:
        pytest.skip("no gdb")
    source = "import zlib\nchecksum = zlib.adler32(b'x')\nafter = checksum  # @after\nprint(after)\n"
    with debuggee(source, sys.executable, [], native=True) as (engine, _):
        (engine.directory / "gdb_engine.py").write_text(GDB_NATIVE_STOP)
        env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
        gdb_run = subprocess.Popen([gdb, "-nx", "-batch", "-x", "gdb_engine.py", "--args", *engine.command],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=engine.directory,
                                   env=env, stdin=subprocess.DEVNULL)
        try:
            hello = engine.hellos.get(timeout=60)
            deadline = time.monotonic() + 60
            while not (engine.directory / "native-stop").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            # When the engine sends it at the native stop and gets the agent's attention (without
            # it, the breakpoint is missed: 3 runs of 3)
            engine.configure({"breakpoints": {"SCRIPT": [{"id": 5, "line": line_of(source, "after")}]}})
            pid, shared = int(hello["hello"]), int(hello["shared"])
            assert agents.nudge(_write_to(pid), pid, shared)
            assert attention.wake_threads(pid, shared, _write_to(pid)) == 2  # trace object and frame
            (engine.directory / "config-sent").write_text("sent")
            out, err = gdb_run.communicate(timeout=60)
        finally:
            if gdb_run.poll() is None:
                gdb_run.kill()
                gdb_run.communicate()
    # Then the breakpoint stops on that line
    stops = [json.loads(line[5:]) for line in out.splitlines() if line.startswith("STOP ")]
    assert [stop["breakpoints"] for stop in stops] == [[5]], out + err


def _write_to(pid: int) -> agents.WriteMemory:
    """The engine's memory writes, through /proc (gdb holds the process stopped)."""
    def write(target: int, address: int, data: bytes) -> None:
        assert target == pid
        with open(f"/proc/{pid}/mem", "r+b", buffering=0) as memory:
            memory.seek(address)
            memory.write(data)
    return write


def test_native_trap_without_a_debugger_runs_on() -> None:
    # Given breakpoints and an exception filter, and nobody on the trap (gdb gone)
    source = "for n in range(3):\n    square = n * n  # @square\nprint('square', square)\nraise SystemExit(3)\n"
    config = [*_config(source, {"at": "square"}), {"exceptions": {"raised": True, "uncaught": True}}]
    with debuggee(source, sys.executable, config, native=True) as (engine, _):
        env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
        result = subprocess.run(engine.command, capture_output=True, text=True, timeout=60, env=env,
                                stdin=subprocess.DEVNULL, check=False)
    # Then every stop resumes at once (in_len == 0) and the program ends as it would
    assert (result.returncode, result.stdout, result.stderr) == (3, "square 4\n", "")
