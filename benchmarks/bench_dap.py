"""Benchmark: ``mixdbg dap`` as an editor drives it, each figure beside a baseline measured in
the same run and beside the peer's (Seam, ``../shared/research/peer-seam.md``).

1. launch to the first native stop (function breakpoint ``native_step``) vs ``mixdbg run
   --json`` to the same stop (goal <= 1.1x);
1b. the first stop fully shown, on the pybind11 program the peer was measured on
   (``geom_main.py``, a line breakpoint in ``Polygon::area``): launch (the adapter's start
   included) -> the stop, then ``stackTrace``, ``scopes`` + ``variables`` (Locals) and
   ``evaluate this->ys[2] + 40``, as an editor asks at a first stop; against gdb's own DAP
   (``gdb -i dap``, the same gdb) in the same run, and the peer's 511 ms to the stop, 536
   fully shown (its stackTrace, variables, evaluate: 10, 7, 7 ms);
2. ``stackTrace`` + ``scopes`` + ``variables`` at a stop 200 Python frames deep (goal < 30 ms;
   the peer's stackTrace alone: 21.8 ms at 201 frames);
3. native ``next`` per step vs gdb's own ``next`` (peer: 3.6 ms);
4. Python ``next`` per step vs debugpy's adapter (peer: 7.8 ms);
   both stepped as VS Code steps (``threads`` and ``stackTrace`` after each stop), timed to
   the ``stopped`` event and to the stack's answer (the whole cycle);
5. across the boundary: Step Into Python -> C, -> pybind11, Step Out native -> Python, Step
   Into native -> Python callback (peer: 61-129, 133-200, 15-29, 22-33 ms).

Medians; times from the request to the ``stopped`` event, as the peer's were measured.
Usage: python benchmarks/bench_dap.py [--steps N] [--runs N] [--only PART ...]
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from dap.client import DapClient
from dap.natives import NativeSet
from dap.oracles import GDB, MIXDBG, Adapter, ScriptClients
from dap.schema import SCHEMA_PATH, DapSchema

PEER = {"first stop": "470-940 ms (small programs)", "to the stop": "511 ms", "stackTrace": "10 ms",
        "scopes + variables": "7 ms", "evaluate": "7 ms", "fully shown": "536 ms", "stack": "21.8 ms (stackTrace only)",
        "native next": "3.6 ms", "python next": "7.8 ms", "into C": "61-129 ms", "into pybind11": "133-200 ms",
        "out to Python": "15-29 ms", "into callback": "22-33 ms"}


def adapter(work: Path, schema: DapSchema) -> DapClient:
    """A client of a new ``mixdbg dap``."""
    return DapClient.spawn([sys.executable, "-m", "mixdbg", "dap"], work, schema, timeout=120)


def launch(client: DapClient, natives: NativeSet, script: str, *args: str, lines: dict[str, list[int]] | None = None,
           functions: tuple[str, ...] = ()) -> int:
    """Launch a driver script; the thread of its first stop."""
    client.launch({"program": str(natives.script(script)), "args": list(args), "cwd": str(natives.directory),
                   "console": "internalConsole", "env": natives.env()},
                  breakpoints={Path(k): v for k, v in (lines or {}).items()}, function_breakpoints=list(functions))
    return int(client.wait_stopped(timeout=120)["threadId"])


def first_stop(work: Path, schema: DapSchema, natives: NativeSet, runs: int) -> tuple[float, float]:
    """Seconds from launch to the first native stop: mixdbg dap, and mixdbg run --json."""
    dap_times, run_times = [], []
    for _ in range(runs):
        client = adapter(work, schema)
        started = time.monotonic()
        try:
            launch(client, natives, "capi_main.py", functions=("native_step",))
            dap_times.append(time.monotonic() - started)
        finally:
            client.close(terminate_debuggee=True)
        started = time.monotonic()
        run = subprocess.Popen([sys.executable, "-m", "mixdbg", "run", "--json", "-b", "native_step",
                                str(natives.script("capi_main.py"))], cwd=natives.directory, env=natives.env(),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert run.stdout is not None
        for line in run.stdout:
            if json.loads(line).get("event") == "stopped":
                run_times.append(time.monotonic() - started)
                break
        run.kill()
        run.wait()
    return statistics.median(dap_times), statistics.median(run_times)


#: What the first look evaluates: gdb's DAP (-nx, no libstdc++ xmethods) indexes the vector's storage.
FIRST_LOOK_EXPRESSION = {"mixdbg": "this->ys[2] + 40", "gdb": "this->ys._M_impl._M_start[2] + 40"}


def first_look(work: Path, schema: DapSchema, natives: NativeSet, runs: int) -> dict[str, dict[str, float]]:
    """Seconds of each part of the first stop fully shown (see 1b), medians per adapter,
    mixdbg dap and gdb -i dap alternated."""
    found: dict[str, dict[str, list[float]]] = {"mixdbg": {}, "gdb": {}}
    geom, clients = natives.geom, ScriptClients(work, schema)
    for _ in range(runs):
        for oracle in (MIXDBG, GDB):
            for what, spent in _looked_at(oracle, clients, natives, geom.source, geom.line("area")).items():
                found[oracle.name].setdefault(what, []).append(spent)
    return {name: {what: statistics.median(values) for what, values in parts.items()} for name, parts in found.items()}


def _looked_at(oracle: Adapter, clients: ScriptClients, natives: NativeSet, source: Path, line: int) -> dict[str, float]:
    """One session of the first look: each part's seconds, as its requests were answered."""
    started = time.monotonic()
    client = oracle.client(clients)
    try:
        client.launch(oracle.config(natives, "geom_main.py"), breakpoints={source: [line]})
        thread = int(client.wait_stopped(timeout=120)["threadId"])
        stopped = client.received_at(client.events("stopped")[0])
        trace = client.request("stackTrace", threadId=thread, startFrame=0, levels=20)
        frame = trace["body"]["stackFrames"][0]["id"]
        scopes = client.request("scopes", frameId=frame)
        variables = client.request("variables", variablesReference=scopes["body"]["scopes"][0]["variablesReference"])
        value = client.request("evaluate", expression=FIRST_LOOK_EXPRESSION[oracle.name], frameId=frame,
                               context="watch")
        assert value["body"]["result"] == "43", value
        return {"to the stop": stopped - started, "stackTrace": client.elapsed(trace),
                "scopes + variables": client.elapsed(scopes) + client.elapsed(variables),
                "evaluate": client.elapsed(value), "fully shown": client.received_at(value) - started}
    finally:
        client.close(terminate_debuggee=True)


def deep_stack(work: Path, schema: DapSchema, natives: NativeSet, runs: int) -> tuple[float, float]:
    """Seconds for stackTrace + scopes + variables at a native stop under 200 Python frames,
    and for the stackTrace alone (a new session each run: the first look at a stop, nothing
    cached)."""
    times, traces = [], []
    for _ in range(runs):
        client = adapter(work, schema)
        try:
            thread = launch(client, natives, "deep_main.py", "200", functions=("native_step",))
            # each request to its response, as the peer's were timed (not our client's own
            # schema checks of a 230-frame answer between them)
            answer = client.request("stackTrace", threadId=thread, startFrame=0)
            spent = client.elapsed(answer)
            traces.append(spent)
            frames = answer["body"]["stackFrames"]
            python = next(f for f in frames if f["name"] == "down")
            for frame in (frames[0], python):
                scopes = client.request("scopes", frameId=frame["id"])
                spent += client.elapsed(scopes)
                for scope in scopes["body"]["scopes"]:
                    spent += client.elapsed(client.request("variables", variablesReference=scope["variablesReference"]))
            times.append(spent)
            assert len([f for f in frames if f["name"] == "down"]) >= 199
        finally:
            client.close(terminate_debuggee=True)
    return statistics.median(times), statistics.median(traces)


def steps_as_an_editor(client: DapClient, thread: int, steps: int) -> tuple[float, float]:
    """``next`` ``steps`` times as VS Code does it: after each stop, ``threads`` and the
    stopped thread's first 20 frames. Medians of request -> ``stopped``, and of the whole
    cycle (-> the stack's answer)."""
    to_stop, cycle = [], []
    for _ in range(steps):
        stepped = client.timed("next", threadId=thread)
        client.threads()
        frames = client.request("stackTrace", threadId=thread, startFrame=0, levels=20)
        to_stop.append(stepped.to_event)
        cycle.append(client.received_at(frames) - client.received_at(stepped.response) + stepped.to_response)
    return statistics.median(to_stop), statistics.median(cycle)


def native_next(work: Path, schema: DapSchema, natives: NativeSet, steps: int) -> tuple[float, float, float]:
    """Seconds per native ``next`` (to ``stopped``, and the cycle with the editor's stack
    request), and gdb's own ``next`` in one gdb."""
    client = adapter(work, schema)
    capi = natives.capi
    try:
        thread = launch(client, natives, "steps_main.py", str(steps), lines={str(capi.source): [capi.line("loop")]})
        client.request("setBreakpoints", source={"path": str(capi.source)}, breakpoints=[])
        to_stop, cycle = steps_as_an_editor(client, thread, steps)
    finally:
        client.close(terminate_debuggee=True)
    script = (f"set breakpoint pending on\nbreak {capi.source}:{capi.line('loop')}\nrun\ndelete\npython\nimport time\n"
              f"times = []\nfor _ in range({steps}):\n    t = time.monotonic()\n    gdb.execute('next', to_string=True)\n"
              "    times.append(time.monotonic() - t)\ntimes.sort()\nprint('MEDIAN', times[len(times) // 2])\nend\nkill\n")
    with tempfile.NamedTemporaryFile("w", suffix=".gdb", delete=False) as handle:
        handle.write(script)
    gdb = subprocess.run(["gdb", "-nx", "-batch", "-x", handle.name, "--args", sys.executable,  # noqa: PLW1510
                          str(natives.script("steps_main.py")), str(steps)],
                         cwd=natives.directory, env=natives.env(), capture_output=True, text=True, timeout=300)
    median = next(float(line.split()[1]) for line in gdb.stdout.splitlines() if line.startswith("MEDIAN"))
    return to_stop, cycle, median


def python_next(work: Path, schema: DapSchema, natives: NativeSet, steps: int) -> list[tuple[float, float]]:
    """Seconds per Python ``next`` (to ``stopped``, and the cycle with the editor's stack
    request): mixdbg dap, and debugpy's adapter."""
    results = []
    script = natives.script("steps_main.py")
    line = natives.line("steps_main.py", "py_step")
    natives.capi  # noqa: B018 - built before either arm starts
    for command in ([sys.executable, "-m", "mixdbg", "dap"], [sys.executable, "-m", "debugpy.adapter"]):
        client = DapClient.spawn(command, work, schema, timeout=120)
        try:
            client.launch({"type": "python", "request": "launch", "program": str(script), "args": [str(steps * 4)],
                           "cwd": str(natives.directory), "console": "internalConsole", "env": natives.env({}),
                           "justMyCode": True}, breakpoints={script: [line]})
            thread = int(client.wait_stopped(timeout=120)["threadId"])
            client.request("setBreakpoints", source={"path": str(script)}, breakpoints=[])
            results.append(steps_as_an_editor(client, thread, steps))
        finally:
            client.close(terminate_debuggee=True)
    return results


def boundary(work: Path, schema: DapSchema, natives: NativeSet, runs: int) -> dict[str, float]:
    """Seconds of each step across the boundary (medians over ``runs`` sessions)."""
    found: dict[str, list[float]] = {key: [] for key in ("into C", "into pybind11", "out to Python", "into callback")}
    for _ in range(runs):
        for key, script, marker in (("into C", "capi_main.py", "call"), ("into pybind11", "geom_main.py", "method")):
            client = adapter(work, schema)
            try:
                thread = launch(client, natives, script, lines={str(natives.script(script)): [natives.line(script, marker)]})
                client.threads()  # as an editor does at each stop
                client.stack(thread)
                time.sleep(2.0)  # the user reads the stop: the read-ahead of the module's functions is done
                found[key].append(client.timed("stepIn", threadId=thread).to_event)
                if key == "into C":
                    found["out to Python"].append(client.timed("stepOut", threadId=thread).to_event)
            finally:
                client.close(terminate_debuggee=True)
        capi = natives.capi
        client = adapter(work, schema)
        try:
            thread = launch(client, natives, "capi_main.py", lines={str(capi.source): [capi.line("callback")]})
            client.request("setBreakpoints", source={"path": str(capi.source)}, breakpoints=[])
            found["into callback"].append(client.timed("stepIn", threadId=thread).to_event)
        finally:
            client.close(terminate_debuggee=True)
    return {key: statistics.median(values) for key, values in found.items()}


def row(what: str, ours: float, base: float | None, base_name: str, peer: str) -> None:
    """One line of the report: ms, the baseline and ratio, the peer's figure."""
    ratio = f"{ours / base:.2f}x {base_name} ({base * 1000:.1f} ms)" if base else ""
    print(f"{what:<34} {ours * 1000:8.1f} ms   {ratio:<40} peer: {peer}", flush=True)


def report(part: str, work: Path, schema: DapSchema, natives: NativeSet, args: argparse.Namespace) -> None:
    """Measure one part of the benchmark and print its rows."""
    if part == "first-stop":
        dap, run = first_stop(work, schema, natives, args.runs)
        row("launch -> first native stop", dap, run, "mixdbg run", PEER["first stop"])
    elif part == "first-look":
        looks = first_look(work, schema, natives, args.runs)
        for what, ours in looks["mixdbg"].items():
            row(f"first look: {what}", ours, looks["gdb"][what], "gdb -i dap", PEER[what])
    elif part == "deep":
        whole, trace = deep_stack(work, schema, natives, args.runs + 4)
        row("stackTrace+scopes+variables, 200 deep", whole, None, "", "-")
        row("stackTrace alone, 200 deep", trace, None, "", PEER["stack"])
    elif part == "native-next":
        ours, cycle, gdb = native_next(work, schema, natives, args.steps)
        row("native next", ours, gdb, "gdb's next", PEER["native next"])
        row("native next + stackTrace", cycle, None, "", "-")
    elif part == "python-next":
        (ours, cycle), (debugpy, debugpy_cycle) = python_next(work, schema, natives, args.steps)
        row("Python next", ours, debugpy, "debugpy", PEER["python next"])
        row("Python next + stackTrace", cycle, debugpy_cycle, "debugpy", "-")
    else:
        for key, value in boundary(work, schema, natives, args.runs).items():
            row(f"step {key}", value, None, "", PEER[key])


PARTS = ("first-stop", "first-look", "deep", "native-next", "python-next", "boundary")


def main() -> None:
    """Run the measurements (every part, or those of ``--only``) and print the report."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=PARTS, action="append", help="measure only this part (repeatable)")
    args = parser.parse_args()
    schema = DapSchema(SCHEMA_PATH)
    # bytecode, as installing the package writes it (an editable install under
    # PYTHONDONTWRITEBYTECODE has none: the adapter's start then costs 0.5 s more)
    compileall.compile_dir(str(REPO / "mixdbg"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="bench-dap-") as directory:
        work = Path(directory)
        natives = NativeSet(sys.executable, work / "natives")
        natives.capi, natives.geom  # noqa: B018 - built before anything is timed
        for part in args.only or PARTS:
            report(part, work, schema, natives, args)


if __name__ == "__main__":
    main()
