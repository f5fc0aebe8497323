"""Benchmark: the time a stop's mixed stack costs, against the same stop with native frames only.

Two stops, each measured inside one gdb at the same stop, so that only the stack walk
differs:

1. the README's torch run (``examples/testdebug.py``) at ``at::native::randn``;
2. the tests' C extension called 200 Python frames deep (``down(200)``).

Then, end to end as issue 9 measured it (155-160 ms per stop with the interpreter's gdb
script): ``mixdbg run --json`` of 100 calls at depth 200, with a breakpoint there and
without one; the difference per stop is what a user waits for each reported stop.

At each, gdb's frame cache is dropped and ``mixdbg-stack`` (gdb_helper.py, as a session
runs it at every stop) is timed ``--repeat`` times with the interpreter located (Python
frames read from memory and placed) and with it unknown (native frames only). It prints
the median milliseconds per stop, the difference, the ratio, and how many Python frames
were read. Goal (issue 9): under 20 ms per stop.

Usage: python benchmarks/bench_stack.py [--repeat N] [--python PYTHON] [--skip-torch]
(``--python`` another interpreter: its stops, its version's reader.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import build_cext

REPO = Path(__file__).resolve().parents[1]
HELPER = REPO / "mixdbg" / "gdb_helper.py"
DEEP = """\
import sys
import mixdbg_testext as ext

def down(n):
    return ext.loop(1) if n == 0 else down(n - 1)

for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
    down(200)
"""
#: Stops of the end-to-end measurement (the issue's: 100 stops at depth 200).
END_TO_END_STOPS = 100

#: Runs inside gdb at the stop: times mixdbg-stack with and without the interpreter.
IN_GDB = """
import json, statistics, time
import gdb

def address(name):
    try:
        return int(gdb.parse_and_eval("(unsigned long)&'%s'" % name))
    except gdb.error:
        return 0

def timed(setup, repeat, out):
    gdb.execute(setup)
    times = []
    for _ in range(repeat):
        gdb.invalidate_cached_frames()
        start = time.perf_counter()
        gdb.execute("mixdbg-stack 128 one " + out)
        times.append(time.perf_counter() - start)
    with open(out) as f:
        stack = json.load(f)
    return statistics.median(times) * 1000, stack

repeat, out, hint = int(REPEAT), OUT, HINT
pid = gdb.selected_inferior().pid
located = "mixdbg-python %d %#x %#x %s" % (pid, address("_PyRuntime"), address("Py_Version"), hint)
mixed_ms, mixed = timed(located, repeat, out)
native_ms, native = timed("mixdbg-python %d unavailable benchmark" % pid, repeat, out)
python = [f for f in mixed["frames"] if f["kind"] == "python"]
print("MIXDBG-BENCH " + json.dumps({"mixed_ms": mixed_ms, "native_ms": native_ms, "status": mixed["python"],
                                   "python_frames": len(python), "frames": len(mixed["frames"]),
                                   "native_frames": len(native["frames"])}))
"""


def measure(python: str, script: Path, breakpoint: str, repeat: int, env: dict[str, str], work: Path) -> dict[str, float]:
    """Run ``python script`` under gdb to ``breakpoint``; time the stack there."""
    hint = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    code = IN_GDB.replace("REPEAT", str(repeat)).replace("OUT", repr(str(work / "stack.json")))
    code = code.replace("HINT", repr(hint))
    (work / "bench_in_gdb.py").write_text(code)
    gdb_env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    command = ["gdb", "-nx", "-batch", "-ex", "set breakpoint pending on", "-ex", "set pagination off",
               "-ex", f"source {HELPER}", "-ex", f"break {breakpoint}",
               "-ex", f"set environment PYTHONPATH {env.get('PYTHONPATH', '')}", "-ex", "run",
               "-ex", f"source {work / 'bench_in_gdb.py'}", "-ex", "kill", "--args", python, str(script)]
    done = subprocess.run(command, env=gdb_env, capture_output=True, text=True, timeout=600, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("MIXDBG-BENCH "):
            result: dict[str, float] = json.loads(line.split(" ", 1)[1])
            return result
    raise SystemExit(f"no measurement from gdb:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def end_to_end(python: str, script: Path, env: dict[str, str], work: Path) -> None:
    """Per-stop time of ``mixdbg run`` with ``END_TO_END_STOPS`` stops, against no stop."""
    times = []
    for breaks in (["-b", "native_step"], []):
        command = [sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0", "--python", python, *breaks,
                   str(script), str(END_TO_END_STOPS)]
        start = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, timeout=900, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"mixdbg failed: {done.stderr[-2000:]}")
        stops = [line for line in done.stdout.splitlines() if '"event": "stopped"' in line]
        assert len(stops) == (END_TO_END_STOPS if breaks else 0), len(stops)
    per_stop = (times[0] - times[1]) / END_TO_END_STOPS * 1000
    print(f"end to end, mixdbg run, {END_TO_END_STOPS} stops 200 Python frames deep: {times[0]:.2f} s, without"
          f" the breakpoint {times[1]:.2f} s: {per_stop:.1f} ms per reported stop")


def report(name: str, result: dict[str, float]) -> None:
    extra = result["mixed_ms"] - result["native_ms"]
    print(f"{name}: mixed stack {result['mixed_ms']:.1f} ms/stop ({result['python_frames']} Python frames,"
          f" {result['frames']} shown), native only {result['native_ms']:.1f} ms/stop"
          f" ({result['native_frames']} frames); Python frames cost {extra:+.1f} ms, ratio"
          f" {result['mixed_ms'] / result['native_ms']:.2f}; goal < 20 ms: {'met' if result['mixed_ms'] < 20 else 'MISSED'}")
    print(f"    status: {result['status']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--skip-torch", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mixdbg-bench-") as tmp:
        work = Path(tmp)
        cext = build_cext(work / "cext", options.python)
        (work / "deep.py").write_text(DEEP)
        report("200 Python frames deep", measure(options.python, work / "deep.py", "native_step", options.repeat,
                                                 cext.env(), work))
        env = cext.env()
        env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env['PYTHONPATH']}"
        end_to_end(options.python, work / "deep.py", env, work)
        if not options.skip_torch:
            report("README torch run at at::native::randn",
                   measure(options.python, REPO / "examples" / "testdebug.py", "at::native::randn", options.repeat,
                           dict(os.environ), work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
