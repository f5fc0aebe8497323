"""Determinism of the seed run: `mixdbg run --json` with the three seed breakpoints on
examples/testdebug.py, N times in a row; prints each distinct sequence of stops (breakpoint
id and top frame) and how many runs produced it. Every run must produce the same one.

usage: python benchmarks/repeat_seed_run.py [--runs N]
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["run", "--json", "--port", "0", "-b", "PyInit__C", "-b", "THPModule_initExtension",
        "-b", "at::native::randn", str(ROOT / "examples" / "testdebug.py")]


def one_run() -> tuple[tuple[str, ...], int, float]:
    """The stop sequence, exit code and wall time of one run."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mixdbg", *ARGS], capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    stops = []
    for line in proc.stdout.splitlines():
        event = json.loads(line)
        if event["event"] == "stopped":
            stops.append(f"{event['breakpoint']}:{event['frames'][0]['function'].split('(')[0]}")
    return tuple(stops), proc.returncode, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    sequences: collections.Counter[tuple[str, ...]] = collections.Counter()
    codes: collections.Counter[int] = collections.Counter()
    times = []
    for _ in range(runs):
        stops, code, elapsed = one_run()
        sequences[stops] += 1
        codes[code] += 1
        times.append(elapsed)
    print(json.dumps({
        "runs": runs,
        "distinct_sequences": len(sequences),
        "sequences": [{"count": n, "stops": list(seq)} for seq, n in sequences.most_common()],
        "exit_codes": dict(codes),
        "seconds_min_median_max": [round(min(times), 2), round(sorted(times)[len(times) // 2], 2),
                                   round(max(times), 2)],
    }, indent=2))


if __name__ == "__main__":
    main()
