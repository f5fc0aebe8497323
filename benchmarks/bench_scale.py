"""Debug builds at scale: the first stop in a big C++ library with real DWARF, reached from
Python, under `mixdbg run` against `gdb -batch` in the same run (issue 25).

The library is Debian's libceph-common.so.2 (librados's dependency: its DWARF, 95 MB of
zlib-compressed sections, is in librados2-dbg; ceph-common-dbg holds the Ceph tools'), the
script `import rados; rados.Rados(conffile="")` run by Debian's /usr/bin/python3, the
breakpoint `ceph::common::CephContext::CephContext` (rados_create2 -> common_preinit ->
new CephContext). Arms, alternated in each round:
  gdb          gdb -batch: the pending breakpoint, run, bt at the stop, continue
  mixdbg-cold  mixdbg run --json -b ...: gdb's index cache and mixdbg's caches empty
  mixdbg-warm  the same with the caches a previous run filled
For each: the time to the first stop (its line on stdout), the whole run, and gdb's peak
memory (VmHWM of the session's gdb process, sampled every 50 ms until it exits). After a
mixdbg session with libraries not in the index cache, the gdb that indexes them (detached,
lowest priority: mixdbg/indexcache.py) is waited for before the next arm, and its peak
memory reported apart (indexer_peak_mb). Goals: cold first stop <= gdb's, warm <= 0.5 x
cold, the session gdb's memory under mixdbg <= gdb -batch's.

usage: python benchmarks/bench_scale.py [--runs N] [--gdb PATH]
needs: apt-get install python3-rados librados2-dbg
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = "/usr/bin/python3"
BREAKPOINT = "ceph::common::CephContext::CephContext"
LIBRARY = Path("/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2")
SCRIPT = """\
import rados
try:
    rados.Rados(conffile="")
except rados.Error as error:
    print(error)
"""


def is_gdb(argv: list[str]) -> bool:
    """Whether a command line is gdb's own (the wheel's gdb runs under the dynamic loader,
    ``ld-linux... .../bin/gdb``; its ``gdb`` on PATH is a Python wrapper that starts it)."""
    program = [arg for arg in argv[:2] if not Path(arg).name.startswith("ld-linux")][:1]
    return bool(program) and Path(program[0]).name == "gdb" and not Path(argv[0]).name.startswith("python")


def gdb_peak(root: int, stop: threading.Event, found: list[int]) -> None:
    """Sample VmHWM of the session's gdb (the first gdb among ``root`` and its descendants)
    until it exits: not the gdb mixdbg starts after it to index libraries (``indexer_peak``)."""
    import psutil

    gdb: psutil.Process | None = None
    while not stop.is_set():
        try:
            if gdb is None:
                parent = psutil.Process(root)
                gdb = next((p for p in [parent, *parent.children(recursive=True)] if is_gdb(p.cmdline())), None)
            if gdb is not None:
                found[0] = max(found[0], vm_hwm(gdb.pid))
        except (OSError, psutil.Error):
            if gdb is not None and not gdb.is_running():
                return
        stop.wait(0.05)


def vm_hwm(pid: int) -> int:
    """Peak resident memory of process ``pid`` so far, in KB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def indexer_peak(cache: Path, timeout: float = 900.0) -> int:
    """Wait for the gdbs mixdbg started after a session to index libraries into ``cache``
    (detached: they outlive it) to finish, so that they neither slow the next arm nor miss
    the warm one's cache; their peak memory in KB (0: none ran)."""
    import psutil

    peak, deadline = 0, time.monotonic() + timeout
    while time.monotonic() < deadline:
        writers = []
        for process in psutil.process_iter():
            try:
                argv = process.cmdline()
                if is_gdb(argv) and any(str(cache) in arg for arg in argv):
                    writers.append(process)
                    peak = max(peak, vm_hwm(process.pid))
            except (OSError, psutil.Error):
                continue
        if not writers:
            return peak
        time.sleep(0.1)
    raise SystemExit(f"the index of {cache} was still being written after {timeout:.0f} s")


def timed(argv: list[str], env: dict[str, str], marker: str) -> tuple[float, float, int]:
    """(seconds to the first stdout line holding ``marker``, seconds to the end, gdb's peak KB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            env=env, text=True)
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=gdb_peak, args=(proc.pid, stop, peak), daemon=True)
    sampler.start()
    first = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if first is None and marker in line:
            first = time.perf_counter() - start
    proc.wait()
    total = time.perf_counter() - start
    stop.set()
    sampler.join()
    if first is None:
        raise SystemExit(f"{argv[:4]}... never stopped (exit {proc.returncode})")
    return first, total, peak[0]


def debug_sizes() -> dict[str, float]:
    """MB of libceph-common's separate debug file, and of its DWARF once inflated (the
    sizes compressed sections' headers give)."""
    import struct

    sys.path.insert(0, str(ROOT))
    from mixdbg.debugfiles import read_facts, separate_debug_file
    from mixdbg.elfsections import SHF_COMPRESSED

    found = separate_debug_file(LIBRARY, read_facts(LIBRARY))
    if found is None:
        raise SystemExit(f"no debug file for {LIBRARY}: apt-get install librados2-dbg")
    inflated = 0
    with found[0].open("rb") as stream:
        for name, section in found[1].sections.items():
            if name.startswith(".debug_") and section.has_bytes:
                if section.flags & SHF_COMPRESSED:  # Elf64_Chdr: type, reserved, size, alignment
                    stream.seek(section.offset)
                    inflated += struct.unpack("<IIQQ", stream.read(24))[2]
                else:
                    inflated += section.size
    return {"debug_file_mb": round(found[0].stat().st_size / 1e6, 1), "dwarf_inflated_mb": round(inflated / 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--gdb", help="the gdb of every arm (default: the one mixdbg chooses)")
    args = parser.parse_args()
    if subprocess.run([PYTHON, "-c", "import rados"], capture_output=True, check=False).returncode != 0:
        raise SystemExit("needs Debian's python3-rados and librados2-dbg (apt-get install python3-rados librados2-dbg)")
    sys.path.insert(0, str(ROOT))
    from mixdbg.gdbmi import find_gdb, gdb_environment

    gdb = find_gdb(args.gdb)
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        script = directory / "create.py"
        script.write_text(SCRIPT)
        base = dict(gdb_environment(), MIXDBG_GDB=gdb, PYTHONPATH=str(ROOT))
        base.pop("PYTHONHOME", None)
        gdb_argv = [gdb, "-nx", "-batch", "-iex", "set debuginfod enabled off", "-iex", "set index-cache enabled off",
                    "-ex", "unset environment PYTHONHOME", "-ex", "unset environment PYTHONPATH",
                    "-ex", "set breakpoint pending on", "-ex", f"break {BREAKPOINT}", "-ex", "run", "-ex", "bt",
                    "-ex", "continue", "--args", PYTHON, str(script)]
        mixdbg_argv = [sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0", "--python", PYTHON,
                       "-b", BREAKPOINT, str(script)]
        warm_cache = directory / "warm"
        subprocess.run([PYTHON, str(script)], capture_output=True, check=False)  # the page cache
        timed(mixdbg_argv, dict(base, XDG_CACHE_HOME=str(warm_cache)), '"stopped"')  # fills the warm cache
        indexers = [indexer_peak(warm_cache)]
        indexed = sorted(entry.name for entry in (warm_cache / "mixdbg" / "gdb-index").glob("*"))
        samples: dict[str, list[tuple[float, float, int]]] = {"gdb": [], "mixdbg-cold": [], "mixdbg-warm": []}
        for round_number in range(args.runs):
            cold_cache = directory / f"cold-{round_number}"
            samples["gdb"].append(timed(gdb_argv, base, "Breakpoint 1, "))
            samples["mixdbg-cold"].append(timed(mixdbg_argv, dict(base, XDG_CACHE_HOME=str(cold_cache)),
                                                '"stopped"'))
            indexers.append(indexer_peak(cold_cache))  # after the session, before the next arm
            shutil.rmtree(cold_cache, ignore_errors=True)
            samples["mixdbg-warm"].append(timed(mixdbg_argv, dict(base, XDG_CACHE_HOME=str(warm_cache)),
                                                '"stopped"'))
            print(f"round {round_number + 1}/{args.runs}: " + ", ".join(
                f"{name} {s[-1][0]:.1f}s/{s[-1][1]:.1f}s {s[-1][2] / 1024:.0f}MB" for name, s in samples.items()),
                file=sys.stderr)
    first = {name: statistics.median(s[0] for s in values) for name, values in samples.items()}
    total = {name: statistics.median(s[1] for s in values) for name, values in samples.items()}
    peak = {name: max(s[2] for s in values) for name, values in samples.items()}
    print(json.dumps({
        "runs": args.runs, "gdb": gdb, "breakpoint": BREAKPOINT, "library": str(LIBRARY), **debug_sizes(),
        "load_average": round(os.getloadavg()[0], 2),
        "first_stop_seconds": {name: round(value, 2) for name, value in first.items()},
        "whole_run_seconds": {name: round(value, 2) for name, value in total.items()},
        "gdb_peak_mb": {name: round(value / 1024) for name, value in peak.items()},
        "indexer_peak_mb": round(max(indexers) / 1024),
        "index_cache_entries": indexed,
        "cold_vs_gdb": round(first["mixdbg-cold"] / first["gdb"], 3),
        "warm_vs_cold": round(first["mixdbg-warm"] / first["mixdbg-cold"], 3),
        "memory_cold_vs_gdb": round(peak["mixdbg-cold"] / peak["gdb"], 3),
        "memory_warm_vs_gdb": round(peak["mixdbg-warm"] / peak["gdb"], 3),
        "goals": {"cold_vs_gdb": 1.0, "warm_vs_cold": 0.5, "memory_vs_gdb": 1.0},
    }, indent=2))


if __name__ == "__main__":
    main()
