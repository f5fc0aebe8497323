"""Is a gdb-13 workaround still needed on this gdb? The vfork-from-a-threaded-parent job
(tests/integration/test_follow.py::test_vfork_from_a_threaded_parent_does_not_hang: a
thread serves a socket while the main thread starts two Python children with
``subprocess``, vfork forced on) under ``mixdbg run --json``, N runs per variant:

  shipped          mixdbg as it is (``maint set target-non-stop off`` and
                   ``handle SIGSTOP nostop noprint nopass`` while children are followed)
  target-non-stop  without those two settings (gdb's default, ``target-non-stop auto``)

Each run ends ok (exit 0, both children answered and were followed), hang (not done
within --timeout: see ``pool_deaths.run_bounded``), death (gdb died) or other.
The variants and gdbs alternate run by run.

usage: python benchmarks/gdb_workarounds.py [--runs N] [--gdb PATH]... [--variant NAME]...
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from pool_deaths import run_bounded

REPO = Path(__file__).resolve().parents[1]
JOB = (REPO / "tests" / "scripts" / "vfork_threaded.py").read_text()
#: mixdbg with the follow settings of a variant (the gdb-13 ones left out or not).
MIXDBG = ("import sys; from mixdbg.proctree import follow; from mixdbg.cli import main; "
          "follow._FOLLOW_SETTINGS = tuple(s for s in follow._FOLLOW_SETTINGS if {drop!r} not in s "
          "and {drop_too!r} not in s); sys.exit(main(sys.argv[1:]))")
VARIANTS = {
    "shipped": MIXDBG.format(drop="\0", drop_too="\0"),
    "target-non-stop": MIXDBG.format(drop="target-non-stop", drop_too="SIGSTOP"),
}


def one_run(gdb: str, variant: str, job: Path, timeout: float) -> dict[str, object]:
    """One run of the job under mixdbg with ``gdb`` and ``variant``; its outcome."""
    env = dict(os.environ, MIXDBG_GDB=gdb,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    argv = [sys.executable, "-c", VARIANTS[variant], "run", "--json", "--port", "0", str(job)]
    start = time.monotonic()
    code, out, err = run_bounded(argv, env, job.parent, timeout)
    children = sum(1 for line in out.splitlines() if '"role": "child"' in line and '"event": "process"' in line)
    if code is None:
        outcome = "hang"
    elif code == 0 and "parent got b'PARENT' [0, 0]" in err and children == 2:
        outcome = "ok"
    else:
        outcome = "death" if code == 75 else "other"
    return {"gdb": gdb, "variant": variant, "outcome": outcome, "code": code,
            "seconds": round(time.monotonic() - start, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="runs per gdb and variant (default 10)")
    parser.add_argument("--gdb", action="append", help="a gdb to measure (repeatable; default: the gdb "
                        "mixdbg chooses, and /usr/bin/gdb)")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="default: all")
    parser.add_argument("--timeout", type=float, default=60, help="a run not done after this is a hang")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from mixdbg.gdbmi import find_gdb

    gdbs = args.gdb or [find_gdb(), "/usr/bin/gdb"]
    variants = args.variant or sorted(VARIANTS)
    counts: Counter[tuple[str, str, str]] = Counter()
    with tempfile.TemporaryDirectory(prefix="mixdbg-vfork-") as name:
        job = Path(name) / "vf.py"
        job.write_text(JOB)
        for _ in range(args.runs):
            for gdb, variant in itertools.product(gdbs, variants):
                result = one_run(gdb, variant, job, args.timeout)
                counts[(gdb, variant, str(result["outcome"]))] += 1
                print(json.dumps(result), flush=True)
    for gdb, variant in itertools.product(gdbs, variants):
        tally = {outcome: counts[(gdb, variant, outcome)] for outcome in ("ok", "hang", "death", "other")}
        print(f"{gdb} {variant}: {sum(tally.values())} runs: {tally}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
