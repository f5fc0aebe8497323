"""Load: a hot conditional breakpoint, 200 breakpoints, 10 sessions side by side.

Counts are asserted exactly; times are printed (run with -s), never asserted: the suite
shares two cores with other engineers' tests. benchmarks/bench_conditional_loop.py measures
the conditional loop against a plain run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CExtension, run_mixdbg
from faultkit import end_by_pid, json_run_args, write_script

LOOP = "import sys, mixdbg_testext as ext\nprint('total', ext.loop(int(sys.argv[1])))\nsys.exit(int(sys.argv[2]))\n"


@pytest.mark.slow  # 53-55 s of the default suite's 14 min: CI runs it
@pytest.mark.timeout(120)
def test_conditional_breakpoint_in_a_100000_call_native_loop(cext: CExtension, tmp_path: Path) -> None:
    script = write_script(tmp_path, LOOP)
    spec = f"{cext.source.name}:{cext.line('loop')} if i % 10000 == 0"
    start = time.monotonic()
    result = run_mixdbg([*json_run_args(spec), str(script), "100000", "0"], env=cext.env(), timeout=115)
    took = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    stops = result.of("stopped")
    assert len(stops) == 10
    assert all(s["breakpoint"] == 1 and s["frames"][0]["function"] == "native_loop" for s in stops)
    assert "total 9999900000" in result.stderr
    print(f"\n100,000-call conditional breakpoint: {len(stops)} stops in {took:.1f} s wall")


@pytest.mark.timeout(120)
def test_200_breakpoints(cext: CExtension, tmp_path: Path) -> None:
    # 200 breakpoints, each true for exactly one call: breakpoint K+1 stops at i == K
    script = write_script(tmp_path, LOOP)
    line = f"{cext.source.name}:{cext.line('loop')}"
    specs = [f"{line} if i == {k}" for k in range(200)]
    start = time.monotonic()
    result = run_mixdbg([*json_run_args(*specs), str(script), "200", "0"], env=cext.env(), timeout=115)
    took = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    assert [s["breakpoint"] for s in result.of("stopped")] == list(range(1, 201))
    resolved = {b["id"] for b in result.of("breakpoint") if not b["pending"]}
    assert resolved == set(range(1, 201))
    print(f"\n200 breakpoints: 200 stops in {took:.1f} s wall")


@pytest.mark.timeout(120)
def test_10_sessions_side_by_side(cext: CExtension, tmp_path: Path) -> None:
    # Given 10 sessions started at once, each on its own free port (--port 0)
    script = write_script(tmp_path, LOOP)
    start = time.monotonic()
    procs = [
        subprocess.Popen([sys.executable, "-m", "mixdbg", *json_run_args("native_step"), str(script),
                          str(3 + n), str(n)], env=cext.env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        for n in range(10)
    ]
    outputs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=110)
            outputs.append((proc.returncode, [json.loads(line) for line in out.splitlines()], err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                end_by_pid([proc.pid])
                proc.wait()
    took = time.monotonic() - start
    # Then each one saw exactly its own debuggee's stops and exit code, none interfering
    sessions = []
    for n, (code, events, err) in enumerate(outputs):
        assert code == n, err
        session = next(e for e in events if e["event"] == "session")
        sessions.append(session)
        stops = [e for e in events if e["event"] == "stopped"]
        assert len(stops) == 3 + n
        assert events[-1] == {"event": "exited", "code": n, "signal": None}
        assert f"total {sum(2 * i for i in range(3 + n))}" in err
    assert len({s["port"] for s in sessions}) == 10
    assert len({s["pid"] for s in sessions}) == 10 and len({s["gdb_pid"] for s in sessions}) == 10
    print(f"\n10 parallel sessions: all correct, {took:.1f} s wall for all 10")
