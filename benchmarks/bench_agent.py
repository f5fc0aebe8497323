"""What the Python agent costs a running program, and one Python `next` through a trap.

    python benchmarks/bench_agent.py [--repeat N]

Standard library only: run it with any interpreter (3.10-3.14). It loads the agent by path as
bootstrap does, serves the config socket itself (hello -> go) and replaces the native trap by
a Python one that answers every stop with ``next`` at once, so the figures are the agent's
own work (gdb's stop and resume come on top).

Times are the thread's CPU time (the machine may be shared). Prints, against the same
interpreter without a trace function in the same run (the runs interleaved), beside the
floor any settrace debugger pays (a trace function that does nothing, with and without a
line tracer; on 3.12+ the agent uses sys.monitoring, which has no such floor):
- fib(25) defined in a user file (no breakpoint, no step: no line events): the ratio;
- fib(25) defined in a library file: the ratio;
- Python ``next`` through the trap, per step (microseconds);
- on 3.12+, how many ``sys.monitoring`` callbacks the agent receives in two more runs of
  fib(25) from a user file (after the first, each code object's start is ``DISABLE``d).
benchmarks/bench_overhead.py measures whole programs under the debuggers.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

AGENT = Path(__file__).resolve().parents[1] / "mixdbg" / "pyagent" / "agent.py"
FIB = "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n"
STEPPER = "def steps(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n"
IN_OFFSET = 32 + (1 << 20)


def load(name: str, path: Path) -> Any:
    """A module loaded by path (the agent, as bootstrap loads it; the benchmark's own files)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def serve_engine(path: str, config: list[dict[str, Any]]) -> socket.socket:
    """The config socket's engine side: hello -> config -> go, then hold the connection."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    held: list[socket.socket] = []

    def serve() -> None:
        conn, _ = server.accept()
        held.append(conn)
        conn.makefile("rb").readline()
        for message in [*config, {"go": True}]:
            conn.sendall(json.dumps(message).encode() + b"\n")
    threading.Thread(target=serve, daemon=True).start()
    return server


def _line_floor(frame: Any, event: str, arg: Any) -> Any:
    return _line_floor


TRACERS: dict[str, Any] = {"off": None, "floor: call only": lambda frame, event, arg: None,
                           "floor: empty line tracer": lambda frame, event, arg: _line_floor}


def interleaved(repeat: int, tracers: dict[str, Any], run: Callable[[], object]) -> dict[str, float]:
    """The fastest of ``repeat`` rounds per trace function (a ``(switch on, switch off)``
    pair for the agent's own tracer), the rounds interleaved so that a busy machine slows
    every variant alike (CPU seconds)."""
    best = dict.fromkeys(tracers, float("inf"))
    for _ in range(repeat):
        for name, tracer in tracers.items():
            on, off = tracer if isinstance(tracer, tuple) else (lambda t=tracer: sys.settrace(t), lambda: sys.settrace(None))
            on()
            start = time.thread_time()
            run()
            elapsed = time.thread_time() - start
            off()
            best[name] = min(best[name], elapsed)
    return best


def agent_switch(agent: Any) -> tuple[Callable[[], None], Callable[[], None]]:
    """Switching the agent's tracer on and off: its global trace function (``sys.settrace``,
    3.10/3.11), or its ``sys.monitoring`` events (3.12+)."""
    tracer = agent.tracer
    if tracer.NAME == "settrace":
        return lambda: sys.settrace(tracer._trace_call), lambda: sys.settrace(None)
    return tracer.configuration_changed, tracer.stop


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as temporary:
        measure(Path(temporary), options.repeat, options.steps)


def measure(work: Path, repeat: int, steps: int) -> None:
    """Run every measurement with its files in ``work``, and print."""
    (work / "lib").mkdir()
    (work / "user_fib.py").write_text(FIB)
    (work / "lib" / "lib_fib.py").write_text(FIB)
    (work / "stepper.py").write_text(STEPPER)
    user, library, stepper = (load(name, work / file) for name, file in (
        ("user_fib", "user_fib.py"), ("lib_fib", "lib/lib_fib.py"), ("stepper", "stepper.py")))
    agent = load("_mixdbg_agent", AGENT)
    # The library file stands for site-packages: its directory joins the agent's library roots.
    agent._LIBRARY_ROOTS += (os.path.join(str(work / "lib"), ""),)
    steps_taken = [0]

    def trap(address: int) -> None:
        """The engine, at once: every stop is answered with ``next``."""
        steps_taken[0] += 1
        answer = json.dumps({"command": "next"} if steps_taken[0] < steps else {"command": "continue"})
        ctypes.memmove(address + IN_OFFSET, answer.encode(), len(answer))
        ctypes.c_uint32.from_address(address + 28).value = len(answer)
    agent.trap = trap
    sock = str(work / "cfg.sock")
    server = serve_engine(sock, [{"breakpoints": {str(work / "stepper.py"): [{"id": 1, "line": 2}]}}])
    agent.start(sock)
    on, off = agent_switch(agent)
    off()
    threading.settrace(None)  # type: ignore[arg-type]
    tracers = {**TRACERS, "agent": (on, off)}
    results = {name: interleaved(repeat, tracers, lambda m=module: m.fib(25))
               for name, module in (("user", user), ("library", library))}
    callbacks = count_callbacks(agent, [lambda: user.fib(25)] * 2)
    on()
    start = time.thread_time()
    stepper.steps(steps)
    per_step = (time.thread_time() - start) / steps_taken[0]
    off()
    server.close()

    print(f"Python {sys.version.split()[0]}: fib(25) with a trace function / without, best of {repeat}")
    for name, best in results.items():
        print(f"  fib in a {name} file ({best['off'] * 1e3:.1f} ms without): " + ", ".join(
            f"{tracer} {best[tracer] / best['off']:.2f}x" for tracer in tracers if tracer != "off"))
    print(f"  Python next through the trap: {per_step * 1e6:.1f} us per step ({steps_taken[0]} steps)")
    if callbacks is not None:
        print(f"  sys.monitoring callbacks in two runs of fib(25): {callbacks[0]}, then {callbacks[1]}")


def count_callbacks(agent: Any, runs: list[Callable[[], object]]) -> list[int] | None:
    """3.12+: the number of the agent's ``sys.monitoring`` callbacks during each run (its
    tracer on, as configured); None under ``sys.settrace``."""
    tracer = agent.tracer
    if tracer.NAME != "monitoring":
        return None
    monitoring = tracer.monitoring  # sys.monitoring, typed Any there
    counts = [0]
    events = monitoring.events
    for event in (events.PY_START, events.PY_RESUME, events.LINE, events.PY_RETURN, events.INSTRUCTION,
                  events.RAISE, events.PY_UNWIND):
        callback = monitoring.register_callback(tracer.tool, event, None)

        def counted(*args: Any, callback: Callable[..., Any] = callback) -> Any:
            counts[0] += 1
            return callback(*args)
        monitoring.register_callback(tracer.tool, event, counted)
    tracer.configuration_changed()
    found = []
    for run in runs:
        counts[0] = 0
        run()
        found.append(counts[0])
    tracer.stop()
    return found


if __name__ == "__main__":
    main()
