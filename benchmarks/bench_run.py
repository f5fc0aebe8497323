"""Wall time of `mixdbg run` on examples/testdebug.py against its two yardsticks.

Measured in one run, alternating, so that a noisy machine affects all three alike:
  python    plain `python examples/testdebug.py`
  gdb       a hand-written `gdb -batch` with the three seed breakpoints, printing a
            backtrace at each stop and continuing (what a user would type)
  mixdbg    `mixdbg run --json -b PyInit__C -b THPModule_initExtension -b at::native::randn`
Prints the median of each and the ratios; the target is mixdbg <= 1.3 x gdb.

usage: python benchmarks/bench_run.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "testdebug.py"
SEEDS = ("PyInit__C", "THPModule_initExtension", "at::native::randn")


def gdb_script(directory: Path) -> Path:
    """The hand-written gdb baseline: pending breakpoints that print a backtrace and go on."""
    lines = ["set breakpoint pending on", "set confirm off", "set pagination off"]
    for spec in SEEDS:
        lines += [f"break {spec}", "commands", "bt", "continue", "end"]
    lines.append("run")
    path = directory / "seeds.gdb"
    path.write_text("\n".join(lines) + "\n")
    return path


def commands(directory: Path) -> dict[str, list[str]]:
    """The three command lines, by name."""
    mixdbg = [sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0"]
    for spec in SEEDS:
        mixdbg += ["-b", spec]
    gdb = shutil.which("gdb") or "gdb"
    return {
        "python": [sys.executable, str(EXAMPLE)],
        "gdb": [gdb, "-nx", "-batch", "-x", str(gdb_script(directory)), "--args", sys.executable, str(EXAMPLE)],
        "mixdbg": [*mixdbg, str(EXAMPLE)],
    }


def timed(argv: list[str]) -> float:
    """Seconds one command takes to run to completion (its output discarded)."""
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                          check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]}... exited with {done.returncode}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as scratch:
        argvs = commands(Path(scratch))
        timed(argvs["python"])  # warm the page cache for torch's libraries
        samples: dict[str, list[float]] = {name: [] for name in argvs}
        for round_number in range(runs):
            for name, argv in argvs.items():
                samples[name].append(timed(argv))
            print(f"round {round_number + 1}/{runs}: " +
                  ", ".join(f"{n} {s[-1]:.2f}s" for n, s in samples.items()), file=sys.stderr)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    result = {
        "runs": runs,
        "median_seconds": {name: round(value, 3) for name, value in medians.items()},
        "mixdbg_vs_gdb": round(medians["mixdbg"] / medians["gdb"], 3),
        "mixdbg_vs_python": round(medians["mixdbg"] / medians["python"], 3),
        "gdb_vs_python": round(medians["gdb"] / medians["python"], 3),
        "target_mixdbg_vs_gdb": 1.3,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
