"""Benchmark: what a debugger costs a running program: plain ``python``, debugpy's adapter and
``mixdbg dap``, each on 3.10-3.13 (pyenv) and forky's 3.14, interleaved, in one run.

    python benchmarks/bench_overhead.py [--runs N] [--pythons 3.10,3.11,...] [--workloads user,library,torch]
                                        [--debuggers debugpy,mixdbg] [--hits N (0: none)]

Each workload prints its own compute time (the process's CPU time around the work: the
machine may be shared). Under a debugger it runs as VS Code launches it: one breakpoint in
a function that is never called, the adapter's default exception filters,
``justMyCode`` and ``showReturnValue`` on (debugpy's VS Code defaults). Workloads:

- ``user``: pure user code (a recursion and a dict loop) in the launched file;
- ``library``: the standard library's ``difflib`` and ``fractions`` driven from the file;
- ``torch``: a small CPU training loop (``torch.nn``, ``optim``), 2000 steps (3.11 only,
  where torch is installed);
- and a breakpoint whose condition is false, hit ``--hits`` times: its cost per hit (the
  time with it minus the time without it, under the same debugger, over the hits).

debugpy runs from a venv of each interpreter with its own wheel (its compiled tracer for
that version; ``~/.cache/mixdbg-bench``, made on first use), 3.14's from the forky venv;
mixdbg from this checkout (installed into forky's venv for 3.14). Prints each median and
every ratio to plain python in the same run.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from conftest import FORKY_SCRIPT, FORKY_VENV, install_in_forky, pyenv_python
from dap.client import DapClient
from dap.schema import SCHEMA_PATH, DapSchema

CACHE = Path.home() / ".cache" / "mixdbg-bench"
#: The debugpy every interpreter gets: the one beside mixdbg.
DEBUGPY = importlib.metadata.version("debugpy")
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
#: The marker of the breakpoint line of every workload, in a function never called.
NEVER = "# @never"
PRELUDE = f"""\
import json
import sys
import time


def never_called():
    return 0  {NEVER}


def report(work):
    start = time.process_time()
    work()
    print(json.dumps({{"compute": time.process_time() - start}}), flush=True)
"""
#: The user-code workload's functions: a recursion (a call each) and a dict loop (a line each).
USER_FUNCTIONS = """

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def count(words):
    counts = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts
"""
WORKLOADS = {
    "user": PRELUDE + USER_FUNCTIONS + """

def work():
    fib(29)
    words = [f"w{i % 997}" for i in range(20000)]
    for _ in range(120):
        count(words)


report(work)
""",
    "library": PRELUDE + """
import difflib
import random
from fractions import Fraction


def work():
    rng = random.Random(7)
    lines = ["".join(rng.choice("abcdefgh ") for _ in range(60)) for _ in range(600)]
    for a, b in zip(lines, lines[1:]):
        difflib.SequenceMatcher(None, a, b).ratio()
    total = Fraction(0)
    for n in range(1, 25000):
        total += Fraction(1, n) * Fraction(n % 7 + 1, 3)


report(work)
""",
    "torch": PRELUDE + """
import torch


def work():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data, target = torch.randn(64, 32), torch.randn(64, 1)
    for _ in range(2000):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(data), target)
        loss.backward()
        optimizer.step()


report(work)
""",
}
#: The false-condition breakpoint goes on this line (``HITS`` times).
CONDITION = "# @condition"


def condition_workload(hits: int) -> str:
    """A loop whose body line is hit ``hits`` times."""
    return PRELUDE + f"""

def work():
    total = 0
    for i in range({hits}):
        total += i  {CONDITION}


report(work)
"""


def marker_line(source: str, marker: str) -> int:
    """The line carrying ``marker``."""
    return next(number for number, text in enumerate(source.splitlines(), 1) if text.rstrip().endswith(marker))


@dataclass(frozen=True)
class Platform:
    """One interpreter: how to run a command with it, and each mode's command line."""

    version: str
    python: str  # the interpreter (a venv's, with debugpy)
    directory: Path  # where the workloads are written
    inside: Path  # ... as the interpreter sees it
    wrap: Callable[[Sequence[str]], list[str]]  # runs a command where the interpreter lives
    mixdbg: list[str]  # ``mixdbg dap``
    debugpy: list[str]  # debugpy's adapter


def debugpy_venv(version: str) -> str:
    """A venv of pyenv's ``version`` with this debugpy's version installed (made once)."""
    if version == "3.11":
        return sys.executable
    base = pyenv_python(version)
    if base is None:
        raise RuntimeError(f"no pyenv Python {version}")
    venv = CACHE / f"debugpy-{version}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
    check = subprocess.run([str(python), "-c", "import debugpy; print(debugpy.__version__)"], capture_output=True,
                           text=True, check=False)
    if check.stdout.strip() != DEBUGPY:
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"debugpy=={DEBUGPY}"], check=True)
    return str(python)


def platform(version: str, work: Path) -> Platform:
    """The interpreter ``version`` ready to run the modes (3.14: inside forky)."""
    directory = work / version
    directory.mkdir()
    if version == "3.14":
        install_in_forky()
        python = f"{FORKY_VENV}/bin/python"

        def in_forky(command: Sequence[str]) -> list[str]:
            return [str(FORKY_SCRIPT), "run", str(directory), *command]
        return Platform(version, python, directory, Path("/project"), in_forky,
                        in_forky([python, "-m", "mixdbg", "dap"]), in_forky([python, "-m", "debugpy.adapter"]))
    python = debugpy_venv(version)
    return Platform(version, python, directory, directory, list, [sys.executable, "-m", "mixdbg", "dap"],
                    [python, "-m", "debugpy.adapter"])


def plain(target: Platform, script: str) -> float:
    """The compute time of ``script`` under plain python."""
    done = subprocess.run(target.wrap([target.python, str(target.inside / script)]), capture_output=True, text=True,
                          timeout=1200, check=False, cwd=target.directory)
    if done.returncode != 0:
        raise RuntimeError(f"{script} failed under python {target.version}: {done.stderr[-2000:]}")
    return compute_time(done.stdout)


def compute_time(output: str) -> float:
    """The workload's own report in its output."""
    for line in output.splitlines():
        if line.startswith('{"compute"'):
            return float(json.loads(line)["compute"])
    raise RuntimeError(f"no compute time in the output: {output[-2000:]}")


def debugged(target: Platform, mode: str, script: str, breakpoints: dict[int, str | None], schema: DapSchema,
             work: Path) -> float:
    """The compute time of ``script`` launched under ``mode``'s adapter, as VS Code does."""
    command = target.mixdbg if mode == "mixdbg" else target.debugpy
    client = DapClient.spawn(command, work / "dap", schema, timeout=600)
    try:
        capabilities = client.initialize(adapterID="mixdbg" if mode == "mixdbg" else "debugpy")
        defaults = [f["filter"] for f in capabilities.get("exceptionBreakpointFilters", []) if f.get("default")]
        program = target.inside / script
        config = {"type": "mixdbg" if mode == "mixdbg" else "debugpy", "request": "launch", "program": str(program),
                  "cwd": str(target.inside), "console": "internalConsole", "justMyCode": True,
                  "showReturnValue": True, "python": target.python}
        specs = [{"line": line, **({"condition": condition} if condition else {})}
                 for line, condition in breakpoints.items()]
        client.launch(config, breakpoints={program: specs}, exception_filters=defaults, timeout=600)
        client.wait_exited(timeout=1200)
        return compute_time(client.output("stdout"))
    finally:
        client.close(terminate_debuggee=True)


def measure(target: Platform, workloads: list[str], debuggers: list[str], runs: int, hits: int, schema: DapSchema,
            work: Path) -> dict[str, dict[str, list[float]]]:
    """Compute times per workload and mode, the modes interleaved run by run (the false
    condition's workload only when ``hits``)."""
    scripts = {name: WORKLOADS[name] for name in workloads}
    if hits:
        scripts["condition"] = condition_workload(hits)
    for name, source in scripts.items():
        (target.directory / f"wl_{name}.py").write_text(source)
    times: dict[str, dict[str, list[float]]] = {name: {} for name in scripts}
    for _ in range(runs):
        for name, source in scripts.items():
            never = {marker_line(source, NEVER): None}
            modes: dict[str, Callable[[], float]] = {"python": lambda n=name: plain(target, f"wl_{n}.py")}
            for mode in debuggers:
                modes[mode] = lambda m=mode, n=name, b=never: debugged(target, m, f"wl_{n}.py", b, schema, work)
                if name == "condition":
                    false = {**never, marker_line(source, CONDITION): "i < 0"}
                    modes[f"{mode}+bp"] = lambda m=mode, n=name, b=false: debugged(target, m, f"wl_{n}.py", b,
                                                                                  schema, work)
            for mode, run in modes.items():
                times[name].setdefault(mode, []).append(run())
    return times


def report(version: str, times: dict[str, dict[str, list[float]]], debuggers: list[str], hits: int) -> None:
    """Ratios to plain python: of the medians, of each run to the plain run just before it
    (their median: a machine whose speed drifts slows both alike), and of the fastest
    runs (the least disturbed); the false condition's cost per hit."""
    for name, by_mode in times.items():
        median = {mode: statistics.median(values) for mode, values in by_mode.items()}
        best = {mode: min(values) for mode, values in by_mode.items()}
        paired = {mode: statistics.median(run / plain for run, plain in zip(values, by_mode["python"]))
                  for mode, values in by_mode.items()}
        if name == "condition":
            for mode in debuggers:
                per_hit = (median[f"{mode}+bp"] - median[mode]) / hits * 1e6
                fastest = (best[f"{mode}+bp"] - best[mode]) / hits * 1e6
                print(f"  {version}  false condition x{hits}: {mode} {per_hit:6.2f} us per hit (median; "
                      f"fastest {fastest:.2f}; {median[f'{mode}+bp']:.3f} s, without the breakpoint "
                      f"{median[mode]:.3f} s)", flush=True)
            continue
        ratios = "  ".join(f"{mode} {median[mode] / median['python']:5.2f}x (paired {paired[mode]:.2f}x, fastest "
                           f"{best[mode] / best['python']:.2f}x)" for mode in debuggers)
        print(f"  {version}  {name:<8} python {median['python']:.3f} s  {ratios}", flush=True)


def main() -> int:
    """Measure every interpreter asked for, and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hits", type=int, default=100_000, help="the false condition's hits (0: not measured)")
    parser.add_argument("--debuggers", default="debugpy,mixdbg", help="beside plain python")
    parser.add_argument("--pythons", default=",".join(PYTHONS))
    parser.add_argument("--workloads", default="user,library,torch")
    options = parser.parse_args()
    schema = DapSchema(SCHEMA_PATH)
    print(f"compute time under a debugger / under plain python, of {options.runs} interleaved runs "
          f"(debugpy {DEBUGPY})", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as temporary:
        work = Path(temporary)
        for version in options.pythons.split(","):
            workloads = [name for name in options.workloads.split(",") if name != "torch" or version == "3.11"]
            started = time.monotonic()
            target = platform(version, work)
            debuggers = options.debuggers.split(",")
            times = measure(target, workloads, debuggers, options.runs, options.hits, schema, work)
            report(version, times, debuggers, options.hits)
            print(f"  ({version}: {time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
