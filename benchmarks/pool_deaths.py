"""gdb deaths while mixdbg follows a multiprocessing Pool (issue 17, acceptance 2).

The job is the test suite's pool (tests/integration/test_follow.py::test_pool_children_stop):
a ``Pool(2)`` of the spawn or forkserver start method whose workers call into the tests' C
extension. Each run is ``mixdbg run --json --port 0 -b native_step pool.py METHOD`` with
``MIXDBG_GDB`` set to one gdb; the gdbs and methods alternate run by run, so load affects
them alike. Each run ends as one of:
  ok       exit 0, both workers stopped, the pool's result printed
  death    gdb died (mixdbg's "gdb (pid N) died" line, exit 75)
  hang     not done within --timeout (see run_bounded)
  other    anything else (the first line of its stderr tail is kept)
and counts, from mixdbg's log, how often two gdb-13 workarounds acted: exits gdb did not
report (found in /proc) and processes gdb left stopped while running the others.
Prints one JSON line per run, then the counts per gdb and method. Stops starting runs when
--budget seconds have passed and says how many it made.

usage: python benchmarks/pool_deaths.py [--runs N] [--gdb PATH]... [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
CEXT_SOURCE = REPO / "tests" / "cext" / "mixdbg_testext.c"
METHODS = ("spawn", "forkserver")
POOL = (REPO / "tests" / "scripts" / "pool.py").read_text()


#: mixdbg with its log on stderr: the workarounds say when they act (lost exits found in
#: /proc, processes gdb forgot to resume).
WITH_LOG = ("import logging, sys; logging.basicConfig(level=logging.INFO, format='mixdbg-log: %(message)s'); "
            "from mixdbg.cli import main; sys.exit(main(sys.argv[1:]))")
LOST_EXIT = "gdb did not report the exit"
FORGOTTEN = "stopped while it runs them"


def build_extension(directory: Path) -> None:
    """Compile the tests' C extension (``-g -O0``) into ``directory``."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("no C compiler on PATH")
    library = directory / f"mixdbg_testext{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run([compiler, "-g", "-O0", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                    str(CEXT_SOURCE), "-o", str(library)], check=True)


def run_bounded(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[int | None, str, str]:
    """Run mixdbg ``argv``; its exit code (None if it was not done within ``timeout``),
    stdout and stderr. Output goes through files: the debuggee's processes inherit them and
    may outlive mixdbg. A run that hangs is sent SIGTERM (mixdbg detaches); if mixdbg is
    still there after 30 s it is killed, and then its gdb and the debuggee's processes."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                text=True)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                out.seek(0)
                _kill_session(out.read())
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()


def _kill_session(out: str) -> None:
    """SIGKILL the gdb and the debuggee (and its descendants) of a session mixdbg left."""
    session = next((json.loads(line) for line in out.splitlines() if '"event": "session"' in line), None)
    if session is None:
        return
    pids = [session.get("gdb_pid"), session.get("pid")]
    try:
        pids += [child.pid for child in psutil.Process(session["pid"]).children(recursive=True)]
    except psutil.Error:
        pass  # the debuggee is gone already
    for pid in filter(None, pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass  # gone already


def one_run(gdb: str, method: str, directory: Path, timeout: float) -> dict[str, object]:
    """One pool run under mixdbg with ``gdb``; its outcome and wall time."""
    env = dict(os.environ, MIXDBG_GDB=gdb,
               PYTHONPATH=os.pathsep.join(filter(None, [str(directory), str(REPO), os.environ.get("PYTHONPATH")])))
    argv = [sys.executable, "-c", WITH_LOG, "run", "--json", "--port", "0", "-b", "native_step",
            str(directory / "pool.py"), method]
    start = time.monotonic()
    code, out, err = run_bounded(argv, env, directory, timeout)
    outcome = "hang" if code is None else classify(code, out, err)
    tail = [line for line in err.splitlines() if line.startswith("mixdbg:")][-1:]
    return {"gdb": gdb, "method": method, "outcome": outcome, "code": code,
            "seconds": round(time.monotonic() - start, 2), "note": tail[0] if tail else "",
            "lost_exits": err.count(LOST_EXIT), "forgotten_resumes": err.count(FORGOTTEN)}


def classify(code: int, out: str, err: str) -> str:
    """ok / death / other, from mixdbg's exit code, events and stderr."""
    if code == 75 or ("gdb (pid" in err and "died" in err):
        return "death"
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    main = next((event["pid"] for event in events if event.get("event") == "session"), None)
    stopped = {event["pid"] for event in events if event.get("event") == "stopped"}
    if code == 0 and len(stopped) == 2 and main not in stopped and "results [1, 2]" in err:
        return "ok"
    return "other"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50, help="runs per gdb and start method (default 50)")
    parser.add_argument("--gdb", action="append", help="a gdb to measure (repeatable; default: the "
                        "gdb mixdbg chooses, and /usr/bin/gdb)")
    parser.add_argument("--budget", type=float, default=3600, help="start no run after this many seconds")
    parser.add_argument("--timeout", type=float, default=120, help="a run not done after this is a hang")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from mixdbg.gdbmi import find_gdb

    gdbs = args.gdb or [find_gdb(), "/usr/bin/gdb"]
    counts: Counter[tuple[str, str, str]] = Counter()
    acted: Counter[tuple[str, str]] = Counter()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mixdbg-pool-") as name:
        directory = Path(name)
        build_extension(directory)
        (directory / "pool.py").write_text(POOL)
        plan = [(gdb, method) for _ in range(args.runs) for method, gdb in itertools.product(METHODS, gdbs)]
        for number, (gdb, method) in enumerate(plan):
            if time.monotonic() - started > args.budget:
                print(f"budget of {args.budget:.0f} s spent after {number} of {len(plan)} runs", flush=True)
                break
            result = one_run(gdb, method, directory, args.timeout)
            counts[(gdb, method, str(result["outcome"]))] += 1
            acted[(gdb, "lost_exits")] += int(str(result["lost_exits"]))
            acted[(gdb, "forgotten_resumes")] += int(str(result["forgotten_resumes"]))
            print(json.dumps(result), flush=True)
    for gdb, method in itertools.product(gdbs, METHODS):
        tally = {outcome: counts[(gdb, method, outcome)] for outcome in ("ok", "death", "hang", "other")}
        print(f"{gdb} {method}: {sum(tally.values())} runs: {tally}")
    for gdb in gdbs:
        print(f"{gdb}: lost exits found in /proc {acted[(gdb, 'lost_exits')]}, "
              f"forgotten resumes {acted[(gdb, 'forgotten_resumes')]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
