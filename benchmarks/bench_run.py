"""Wall time of `mixdbg run` against its yardsticks, with the same gdb in every arm.

Measured in one run, alternating, so that a noisy machine affects every arm alike:
  python      plain `python examples/testdebug.py`
  gdb         a hand-written `gdb -batch` with the three seed breakpoints, printing a
              backtrace at each stop and continuing (what a user would type)
  mixdbg      `mixdbg run --json -b PyInit__C -b THPModule_initExtension -b at::native::randn`,
              with mixdbg's caches as a session after the first has them (one untimed run first)
  mixdbg-cold the same with empty caches (a fresh XDG_CACHE_HOME each time): no known
              breakpoint places, no gdb index cache
  torch       `mixdbg run --json` of a script that only imports torch
  torch-op    the same with `-b op:aten::add` (an operator breakpoint by name)
The gdb is the one mixdbg chooses (``--gdb`` another); mixdbg gets it as ``MIXDBG_GDB``.
Prints the median of each and the ratios; goals: mixdbg <= 0.8 x gdb (issue 25; 1.0 in
issue 17), mixdbg <= 3 x python, torch-op <= 1.2 x torch.

usage: python benchmarks/bench_run.py [--runs N] [--gdb PATH]
"""

from __future__ import annotations

import argparse
import json
import os
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


def commands(directory: Path, gdb: str) -> dict[str, list[str]]:
    """The command lines, by name."""
    mixdbg = [sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0"]
    seeds = [argument for spec in SEEDS for argument in ("-b", spec)]
    importer = directory / "import_torch.py"
    importer.write_text("import torch\n")
    return {
        "python": [sys.executable, str(EXAMPLE)],
        "gdb": [gdb, "-nx", "-batch", "-iex", "set debuginfod enabled off", "-x", str(gdb_script(directory)),
                "--args", sys.executable, str(EXAMPLE)],
        "mixdbg": [*mixdbg, *seeds, str(EXAMPLE)],
        "mixdbg-cold": [*mixdbg, *seeds, str(EXAMPLE)],
        "torch": [*mixdbg, str(importer)],
        "torch-op": [*mixdbg, "-b", "op:aten::add", str(importer)],
    }


def environment(name: str, env: dict[str, str], directory: Path, round_number: int) -> dict[str, str]:
    """The environment of one arm's run: ``mixdbg-cold`` gets caches of its own, empty."""
    if name != "mixdbg-cold":
        return env
    return dict(env, XDG_CACHE_HOME=str(directory / f"cold-cache-{round_number}"))


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Seconds one command takes to run to completion (its output discarded)."""
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                          env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]}... exited with {done.returncode}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    parser.add_argument("--gdb", help="the gdb of every arm (default: the one mixdbg chooses)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from mixdbg.gdbmi import find_gdb, gdb_environment

    gdb = find_gdb(args.gdb)
    env = dict(gdb_environment(), MIXDBG_GDB=gdb, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as scratch:
        argvs = commands(Path(scratch), gdb)
        timed(argvs["python"], env)  # warm the page cache for torch's libraries
        timed(argvs["mixdbg"], env)  # a first session: what later ones find in mixdbg's cache
        samples: dict[str, list[float]] = {name: [] for name in argvs}
        for round_number in range(args.runs):
            for name, argv in argvs.items():
                samples[name].append(timed(argv, environment(name, env, Path(scratch), round_number)))
            print(f"round {round_number + 1}/{args.runs}: " +
                  ", ".join(f"{n} {s[-1]:.2f}s" for n, s in samples.items()), file=sys.stderr)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    result = {
        "runs": args.runs,
        "gdb": gdb,
        "load_average": round(os.getloadavg()[0], 2),
        "median_seconds": {name: round(value, 3) for name, value in medians.items()},
        "mixdbg_vs_gdb": round(medians["mixdbg"] / medians["gdb"], 3),
        "mixdbg_cold_vs_gdb": round(medians["mixdbg-cold"] / medians["gdb"], 3),
        "mixdbg_vs_python": round(medians["mixdbg"] / medians["python"], 3),
        "gdb_vs_python": round(medians["gdb"] / medians["python"], 3),
        "torch_op_vs_torch": round(medians["torch-op"] / medians["torch"], 3),
        "goals": {"mixdbg_vs_gdb": 0.8, "mixdbg_vs_python": 3.0, "torch_op_vs_torch": 1.2},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
