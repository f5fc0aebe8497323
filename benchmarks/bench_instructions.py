"""Benchmark: the instructions a debugger adds to pure user code, counted (valgrind's
callgrind), not timed: plain ``python``, debugpy's adapter and ``mixdbg dap`` on one
interpreter, launched as ``bench_overhead.py`` launches them (VS Code's way: one breakpoint
in a function never called, the default exception filters).

    python benchmarks/bench_instructions.py [--pythons 3.10,3.11] [--debuggers debugpy,mixdbg]
                                            [--workloads calls,lines] [--runs N]

``bench_overhead.py``'s time ratios move by 20% between runs on a shared machine; the count of
instructions the program's own thread executes does not. Each workload is counted twice, with
its work and without it, and the difference is the work's: start-up and the debugger's own
setup cancel out. Only the program's main thread is counted (debugpy's helper threads are
not). The count still moves between processes: on 3.10 a trace function's two attribute
reads (``frame.f_code.co_name``) cost about 300 instructions more per call when their names
share a slot of CPython's type attribute cache (which depends on where the interned names
lie in memory); ``--runs`` counts each mode in that many processes and prints the median
and the range. Two workloads: ``calls`` (a recursion: the cost per Python call) and ``lines`` (a loop
that calls no Python function: the cost per traced line). Prints the instructions per call or
per iteration and the ratio to plain python. Needs ``valgrind``; 3.10-3.13 (pyenv's).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import bench_overhead as overhead
from dap.schema import SCHEMA_PATH, DapSchema

#: name: (the work, its units, how many units one run does)
WORKLOADS = {
    "calls": ("fib(22)", "call", 57313),  # fib(22) makes 57,313 calls
    "lines": ("for _ in range(3):\n        count(WORDS)", "iteration", 60000),
}
FUNCTIONS = overhead.USER_FUNCTIONS + """

WORDS = [f"w{i % 997}" for i in range(20000)]
"""


def script(work: str) -> str:
    """A workload file: the prelude (its never-called breakpoint), the functions, ``work``."""
    return overhead.PRELUDE + FUNCTIONS + f"\n\ndef work():\n    {work}\n\n\nreport(work)\n"


def wrapper(python: str, out: Path) -> Path:
    """An interpreter that runs a workload under callgrind (debugpy's launcher, which names
    the workload too, runs plain)."""
    path = out / "python"
    path.write_text(f"""#!/bin/sh
case "$1" in */launcher) exec {python} "$@";; esac
case "$*" in */wl_*) exec valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file={out}/cg.%p \
{python} "$@";; esac
exec {python} "$@"
""")
    path.chmod(0o755)
    return path


def counted(out: Path) -> int:
    """The instructions of the workload's main thread, from the files callgrind wrote."""
    for found in sorted(out.glob("cg.*-01")):
        data = found.read_text(errors="replace")
        command = re.search(r"^cmd: (.*)$", data, re.MULTILINE)
        total = re.search(r"^summary: (\d+)$", data, re.MULTILINE)
        if command and total and "/wl_" in command.group(1) and "/launcher " not in command.group(1):
            return int(total.group(1))
    raise RuntimeError(f"callgrind counted no workload in {out}")


def instructions(target: overhead.Platform, mode: str, name: str, schema: DapSchema, work: Path) -> int:
    """The main thread's instructions running ``wl_{name}.py`` under ``mode``."""
    out = work / "cg"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    counting = dataclasses.replace(target, python=str(wrapper(target.python, out)))
    if mode == "python":
        overhead.plain(counting, f"wl_{name}.py")
    else:
        source = (target.directory / f"wl_{name}.py").read_text()
        overhead.debugged(counting, mode, f"wl_{name}.py", {overhead.marker_line(source, overhead.NEVER): None},
                          schema, work)
    return counted(out)


def main() -> int:
    """Count every interpreter asked for, and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pythons", default="3.10,3.11")
    parser.add_argument("--debuggers", default="debugpy,mixdbg")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--runs", type=int, default=1, help="processes counted per mode (median)")
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    os.environ["DEBUGPY_PROCESS_SPAWN_TIMEOUT"] = "900"  # debugpy's debuggee starts slowly under callgrind
    schema = DapSchema(SCHEMA_PATH)
    print(f"instructions of the program's main thread, counted by callgrind (debugpy {overhead.DEBUGPY})", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as temporary:
        for version in options.pythons.split(","):
            if version == "3.14":
                print("  3.14 runs inside the forky chroot, without valgrind: not counted", flush=True)
                continue
            work = Path(temporary) / version
            work.mkdir()
            target = overhead.platform(version, work)
            (target.directory / "wl_empty.py").write_text(script("pass"))
            for name in options.workloads.split(","):
                body, unit, units = WORKLOADS[name]
                (target.directory / f"wl_{name}.py").write_text(script(body))
                counts = {mode: [(instructions(target, mode, name, schema, work)
                                  - instructions(target, mode, "empty", schema, work)) / units
                                 for _ in range(options.runs)]
                          for mode in ["python", *options.debuggers.split(",")]}
                per_unit = {mode: statistics.median(values) for mode, values in counts.items()}
                ratios = "  ".join(f"{mode} {per_unit[mode]:6.0f} ({per_unit[mode] / per_unit['python']:.2f}x"
                                   + (f"; {min(counts[mode]):.0f}-{max(counts[mode]):.0f}" if options.runs > 1 else "")
                                   + ")" for mode in per_unit if mode != "python")
                print(f"  {version}  {name:<6} per {unit}: python {per_unit['python']:5.0f}  {ratios}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
