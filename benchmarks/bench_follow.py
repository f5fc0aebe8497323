"""Cost of following DataLoader workers: one run, alternating, of the same job three ways.

The job: a DataLoader over 64 items whose __getitem__ calls torch.randn, with 2 and with
4 fork workers (no breakpoint: what following costs when nothing stops).
  python         plain `python dl.py N`
  follow-none    `mixdbg run --json --follow none dl.py N` (gdb on the main process only)
  follow-python  `mixdbg run --json dl.py N` (the default: gdb follows every worker)
Prints the median wall time of each, the ratios, and gdb's peak memory (VmHWM, read from
/proc while gdb runs) under each mixdbg mode. Target: follow-python <= 1.5 x follow-none
with 4 workers.

usage: python benchmarks/bench_follow.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKERS = (2, 4)
JOB = """\
import sys
import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(2)


if __name__ == "__main__":
    print(sum(b.shape[0] for b in DataLoader(Items(), batch_size=2, num_workers=int(sys.argv[1]))))
"""


def commands(job: Path, workers: int) -> dict[str, list[str]]:
    """The three command lines for ``workers`` workers, by name."""
    mixdbg = [sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0"]
    return {
        "python": [sys.executable, str(job), str(workers)],
        "follow-none": [*mixdbg, "--follow", "none", str(job), str(workers)],
        "follow-python": [*mixdbg, "--follow", "python", str(job), str(workers)],
    }


def gdb_peak_kb(gdb_pid: int) -> int:
    """gdb's peak resident memory so far (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{gdb_pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def timed(argv: list[str]) -> tuple[float, int]:
    """Seconds one command takes to run to completion, and gdb's peak memory in kB (0 when
    the command runs no gdb), read from the ``session`` event's gdb_pid until gdb exits."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            text=True)
    assert proc.stdout is not None
    peak, gdb_pid = 0, 0
    first = proc.stdout.readline() if "mixdbg" in argv else ""
    if first.startswith("{"):
        gdb_pid = int(json.loads(first).get("gdb_pid") or 0)
    while proc.poll() is None:
        if gdb_pid:
            peak = max(peak, gdb_peak_kb(gdb_pid))
        time.sleep(0.05)
    proc.stdout.read()
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:6]}... exited with {proc.returncode}")
    return elapsed, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each command (default 3)")
    runs = parser.parse_args().runs
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        job = Path(scratch) / "dl.py"
        job.write_text(JOB)
        timed([sys.executable, str(job), "0"])  # warm the page cache for torch's libraries
        for workers in WORKERS:
            argvs = commands(job, workers)
            seconds: dict[str, list[float]] = {name: [] for name in argvs}
            peaks: dict[str, list[int]] = {name: [] for name in argvs}
            for round_number in range(runs):
                for name, argv in argvs.items():
                    elapsed, peak = timed(argv)
                    seconds[name].append(elapsed)
                    peaks[name].append(peak)
                print(f"{workers} workers, round {round_number + 1}/{runs}: " +
                      ", ".join(f"{n} {s[-1]:.2f}s" for n, s in seconds.items()), file=sys.stderr)
            medians = {name: statistics.median(values) for name, values in seconds.items()}
            results[f"{workers}_workers"] = {
                "median_seconds": {name: round(value, 3) for name, value in medians.items()},
                "follow_python_vs_follow_none": round(medians["follow-python"] / medians["follow-none"], 3),
                "follow_python_vs_python": round(medians["follow-python"] / medians["python"], 3),
                "follow_none_vs_python": round(medians["follow-none"] / medians["python"], 3),
                "gdb_peak_mb": {name: round(max(peaks[name]) / 1024) for name in ("follow-none", "follow-python")},
            }
    print(json.dumps({"runs": runs, **results, "target_follow_python_vs_follow_none_4_workers": 1.5}, indent=2))


if __name__ == "__main__":
    main()
