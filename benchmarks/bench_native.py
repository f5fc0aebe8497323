"""Benchmark: the native requests of ``mixdbg dap`` (issue 23), each against gdb's own DAP
(``gdb -i dap``, the same gdb) in the same run, on memlab (``tests/dap/native/memlab.c``):

1. ``readMemory`` of 64 KiB at a stop (memlab's ``memlab_block``): median of 20 reads;
2. a data breakpoint in a loop of 10,000 iterations: the watch (on a global written every
   iteration, with a condition true only at the last) set, then ``continue`` to its stop
   (gdb's DAP has no data breakpoints: the same watchpoint through its console).

The first stop fully shown, the third benchmark of issue 23, is ``bench_dap.py``'s (on the
pybind11 program the peer was measured on, against gdb's own DAP too).

Medians over ``--runs`` sessions. Usage: python benchmarks/bench_native.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from dap.client import DapClient
from dap.natives import NativeSet
from dap.oracles import GDB, MIXDBG, Adapter, ScriptClients
from dap.schema import SCHEMA_PATH, DapSchema

LOOP = 10_000


def stopped(adapter: Adapter, factory: ScriptClients, natives: NativeSet, marker: str,
            *args: str) -> tuple[DapClient, int, dict[str, Any], float]:
    """A session stopped at memlab.c's ``marker``: client, thread, top frame, seconds to the stop."""
    lab = natives.memlab
    client = adapter.client(factory)
    started = time.monotonic()
    client.launch(adapter.config(natives, "memlab_main.py", *args), breakpoints={lab.source: [lab.line(marker)]})
    thread = client.wait_stopped(timeout=120)["threadId"]
    spent = time.monotonic() - started
    return client, thread, client.stack(thread)[0], spent


def read_64k(adapter: Adapter, factory: ScriptClients, natives: NativeSet) -> float:
    """Median seconds of a 64 KiB readMemory at the stack pointer's page."""
    client, _, frame, _ = stopped(adapter, factory, natives, "filled")
    try:
        block = client.evaluate("(unsigned char *) memlab_block", frame["id"], "watch")
        times = []
        for _ in range(20):
            answer = client.request("readMemory", memoryReference=block["memoryReference"], count=65536)
            times.append(client.elapsed(answer))
        return statistics.median(times)
    finally:
        client.close(terminate_debuggee=True)


def watch_loop(adapter: Adapter, factory: ScriptClients, natives: NativeSet) -> float:
    """Seconds from ``continue`` to the stop of a watch that the loop's last iteration fires."""
    client, thread, frame, _ = stopped(adapter, factory, natives, "bump_start", str(LOOP))
    try:
        condition = f"memlab_last == {LOOP - 1}"
        if adapter is GDB:
            client.evaluate(f"watch -l memlab_last if {condition}", frame["id"], "repl")
        else:
            scope = next(s for s in client.scopes(frame["id"]) if s["name"] == "Globals")
            info = client.request("dataBreakpointInfo", name="memlab_last",
                                  variablesReference=scope["variablesReference"])["body"]
            client.request("setDataBreakpoints", breakpoints=[{"dataId": info["dataId"], "condition": condition}])
        client.request("setBreakpoints", source={"path": str(natives.memlab.source)}, breakpoints=[])
        return client.timed("continue", threadId=thread).to_event
    finally:
        client.close(terminate_debuggee=True)


def main() -> None:
    """Run each measurement for mixdbg dap and gdb's own DAP; print ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    schema = DapSchema(SCHEMA_PATH)
    with tempfile.TemporaryDirectory(prefix="bench-native-") as directory:
        work = Path(directory)
        natives = NativeSet(sys.executable, work / "natives")
        natives.memlab  # noqa: B018 - built before anything is timed
        factory = ScriptClients(work, schema)
        results: dict[str, dict[str, list[float]]] = {"mixdbg": {}, "gdb": {}}
        for _ in range(args.runs):
            for adapter in (MIXDBG, GDB):
                found = results[adapter.name]
                found.setdefault("readMemory 64 KiB", []).append(read_64k(adapter, factory, natives))
                found.setdefault(f"watch, {LOOP} iterations", []).append(watch_loop(adapter, factory, natives))
        for what in results["mixdbg"]:
            ours, gdb = (statistics.median(results[name][what]) for name in ("mixdbg", "gdb"))
            print(f"{what:<28} mixdbg {ours * 1000:8.1f} ms   gdb -i dap {gdb * 1000:8.1f} ms "
                  f"({ours / gdb:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
