"""What it costs to make a request at a Python stop cancellable, per interpreter.

    python benchmarks/bench_cancellable.py [--repeat N]           # this interpreter
    for v in 3.10 3.11 3.12 3.13; do python$v benchmarks/bench_cancellable.py; done

Standard library only. A request in the main thread runs untraced (the engine's signal ends
it): it costs nothing. In another thread it runs under the agent's cancellation tracer
(``values.run_cancellable(..., traced=True)``). Prints, for Python-heavy code run as a
request would run it, the best time of N interleaved runs traced against untraced, beside
the floor any settrace debugger pays (a trace function that does nothing):
- a loop over several lines (line events in that frame);
- a loop calling a small function at each iteration (a call event per call);
- a loop written on one line (3.10/3.11 trace it per instruction: they send no line event).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mixdbg.pyagent import values  # the checkout's, not an installed one

N = 200_000


def lines() -> int:
    total = 0
    for i in range(N):
        total += i % 7
    return total


def add_one(x: int) -> int:
    return x + 1


def calls() -> int:
    total = 0
    for _ in range(N):
        total = add_one(total)
    return total


def one_line() -> int:
    total = 0
    for i in range(N): total += i % 7
    return total


def _never() -> bool:
    return False


def _floor(frame: Any, event: str, arg: Any) -> Any:
    return _floor


def _with_floor(work: Callable[[], int]) -> int:
    sys.settrace(_floor)
    try:
        return work()
    finally:
        sys.settrace(None)


def timed(run: Callable[[], Any], timings: list[float]) -> None:
    """Run once, adding its wall time to ``timings``."""
    started = time.perf_counter()
    run()
    timings.append(time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="interleaved runs per mode (best kept)")
    repeat = parser.parse_args().repeat
    print(f"Python {sys.version.split()[0]}: ratio to the same code untraced (best of {repeat})")
    for name, work in (("loop over lines", lines), ("a call per iteration", calls), ("one-line loop", one_line)):
        plain: list[float] = []
        traced: list[float] = []
        floor: list[float] = []
        for _ in range(repeat):
            timed(work, plain)
            timed(lambda work=work: values.run_cancellable(work, _never, traced=True), traced)
            timed(lambda work=work: _with_floor(work), floor)
        base = min(plain)
        print(f"  {name:22} cancellable {min(traced) / base:5.1f}x   settrace floor {min(floor) / base:5.1f}x")


if __name__ == "__main__":
    main()
