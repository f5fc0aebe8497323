"""Benchmark: a conditional breakpoint inside a native loop called 100,000 times, true 10 times.

Builds the tests' -g C extension, then runs, in the same process and on the same machine:

1. the baseline: ``python script.py`` (no debugger);
2. ``mixdbg run --json`` with no breakpoint (the fixed cost: gdb, debugpy, attach);
3. ``mixdbg run --json -b 'FILE:LINE if i % 10000 == 0'`` on the loop body.

It prints the stops counted in (3) (exactly 10 expected) and the wall times and ratios.
gdb evaluates the condition itself at each of the 100,000 hits (mixdbg is not involved
until it is true), so (3) - (2) is the price of gdb's breakpoint round trip per hit.

Usage: python benchmarks/bench_conditional_loop.py [--calls N] [--every K]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import build_cext

SCRIPT = "import sys, mixdbg_testext as ext\nprint('total', ext.loop(int(sys.argv[1])))\n"


def timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mixdbg-bench-") as tmp:
        work = Path(tmp)
        cext = build_cext(work)
        env = cext.env()
        (work / "script.py").write_text(SCRIPT)
        calls = str(options.calls)
        spec = f"{cext.source.name}:{cext.line('loop')} if i % {options.every} == 0"
        mixdbg = [sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0"]

        plain, done = timed([sys.executable, "script.py", calls], env, work)
        assert done.returncode == 0, done.stderr
        fixed, done = timed([*mixdbg, "script.py", calls], env, work)
        assert done.returncode == 0, done.stderr
        debugged, done = timed([*mixdbg, "-b", spec, "script.py", calls], env, work)
        assert done.returncode == 0, done.stderr
        stops = [e for e in map(json.loads, done.stdout.splitlines()) if e["event"] == "stopped"]

    expected = options.calls // options.every
    per_hit = (debugged - fixed) / options.calls * 1e6
    print(f"conditional breakpoint '{spec}' in a loop of {options.calls:,} calls")
    print(f"  stops:                        {len(stops)} (expected {expected})")
    print(f"  plain python:                 {plain:8.2f} s")
    print(f"  mixdbg, no breakpoint:        {fixed:8.2f} s  ({fixed / plain:.0f}x plain)")
    print(f"  mixdbg, conditional bp:       {debugged:8.2f} s  ({debugged / plain:.0f}x plain)")
    print(f"  per evaluated hit:            {per_hit:8.1f} us  (gdb's stop/evaluate/step-over)")
    return 0 if len(stops) == expected else 1


if __name__ == "__main__":
    sys.exit(main())
