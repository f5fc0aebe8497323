"""Benchmark: the first look at a native stop with 20 tensor locals, with gdb's tensor
printers (``mixdbg/pytorch/gdb_printers.py``) and without them.

The custom operators of the tests (``tests/torchext``, built with ``-O0 -g`` once and cached
in ``.pytest_cache``) are run under the gdb mixdbg uses, with mixdbg's in-gdb commands
sourced and pretty-printing on for variable objects, as mixdbg sets it. The driver calls
``myops::many`` N times; gdb stops at its line with twenty tensor locals each time. A look
is what mixdbg's ``locals`` and VARIABLES ask of gdb there: the frame's variables listed,
then a variable object created for each (``gdb.execute_mi``, the same MI commands).

Two gdbs run in the same benchmark: the first looks with the printers at its first stop
(handing them the layout first, ``mixdbg-torch-layout``, as mixdbg does once), the second
without (``disable pretty-printer``): each first look is cold, as a user meets it. At
every later stop both gdbs look both ways, in alternating order, for the medians.

Targets (issue 24): the first look with the printers under 50 ms, and no slower than the
first look without them by more than 20 ms.

Then the cost of a pending ``op:`` breakpoint outside aten (``--imports N``): ``mixdbg run``
of a script that imports torch, with ``-b op:myops::never`` and without, alternating; each
library load that links torch then stops once more where the load returns.

Usage: python benchmarks/bench_torch_values.py [--calls N] [--imports N]
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
from typing import Any

from mixdbg.gdbmi import find_gdb, gdb_environment
from mixdbg.pytorch import layout
from mixdbg.pytorch.catalogue import torch_root_of_interpreter
from mixdbg.session import HELPER_SCRIPT, TORCH_GDB_COMMANDS

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from torchext_fixture import TorchExtension, build  # the tests' build, found beside them

IN_GDB = r'''
import json, time
import gdb
settings = json.load(open(SETTINGS))
gdb.execute_mi("-enable-pretty-printing")
gdb.execute(f"break {settings['where']}")
gdb.execute("run")


def look(printers, first=False):
    """List the frame's variables and create a variable object for each; the seconds it took."""
    gdb.execute(("enable" if printers else "disable") + " pretty-printer global mixdbg-torch", to_string=True)
    start = time.perf_counter()
    if first and printers:
        gdb.execute(f"mixdbg-torch-layout {LAYOUT}")
    names = [v["name"] for v in gdb.execute_mi("-stack-list-variables", "--no-values")["variables"]]
    created = [gdb.execute_mi("-var-create", "-", "*", name) for name in names]
    elapsed = time.perf_counter() - start
    for variable in created:
        gdb.execute_mi("-var-delete", variable["name"])
    return elapsed, sum(1 for v in created if v["value"].startswith("tensor float32 [2, 3] cpu"))


first = look(settings["printers"], first=True)
later = {"with": [], "without": []}
stop = 0
while True:
    gdb.execute("continue")
    if not gdb.selected_inferior().pid:
        break
    stop += 1
    for printers in ((True, False) if stop % 2 else (False, True)):
        later["with" if printers else "without"].append(look(printers)[0])
json.dump({"first": first, "later": later}, open(RESULT, "w"))
'''


def run_gdb(directory: Path, extension: TorchExtension, printers: bool, calls: int, layout_file: Path) -> dict[str, Any]:
    """One gdb's looks: its first (with or without the printers) and the later ones."""
    name = "with" if printers else "without"
    settings, result = directory / f"settings-{name}.json", directory / f"result-{name}.json"
    where = f"{extension.source}:{extension.line('many')}"
    settings.write_text(json.dumps({"where": where, "printers": printers}))
    driver = directory / f"driver-{name}.py"
    driver.write_text(f"SETTINGS = {str(settings)!r}\nRESULT = {str(result)!r}\nLAYOUT = {str(layout_file)!r}\n"
                      + IN_GDB)
    done = subprocess.run(
        [find_gdb(), "-nx", "-batch", "-ex", "set breakpoint pending on", "-ex", "set confirm off",
         "-ex", f"source {HELPER_SCRIPT}", "-ex", f"source {TORCH_GDB_COMMANDS}", "-x", str(driver),
         "--args", sys.executable, "-W", "ignore", *extension.argv(), str(calls)],
        env=gdb_environment(), capture_output=True, text=True, timeout=900, check=False)
    if not result.is_file():
        raise SystemExit(f"gdb did not finish ({done.returncode}): {done.stderr[-2000:]}")
    found: dict[str, Any] = json.loads(result.read_text())
    return found


def pending_operator_cost(runs: int) -> None:
    """``import torch`` under ``mixdbg run`` with a pending ``op:`` outside aten and without."""
    mixdbg = [sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0"]
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory, "import_torch.py")
        script.write_text("import torch\n")
        arms = {"without": [*mixdbg, str(script)], "pending op": [*mixdbg, "-b", "op:myops::never", str(script)]}
        samples: dict[str, list[float]] = {name: [] for name in arms}
        for _ in range(runs):
            for name, argv in arms.items():
                start = time.perf_counter()
                subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                               check=True, timeout=300)
                samples[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    print(f"import torch (median of {runs}): without {medians['without']:.2f} s, with a pending op:myops::never "
          f"{medians['pending op']:.2f} s, ratio {medians['pending op'] / medians['without']:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=21, help="calls of myops::many: stops (default 21)")
    parser.add_argument("--imports", type=int, default=3, help="runs of each import torch arm (default 3; 0: none)")
    options = parser.parse_args()
    calls = options.calls
    extension = build(REPO / ".pytest_cache" / "d" / "torchext")
    root = torch_root_of_interpreter(sys.executable)
    found = layout.layout_for(root / "lib" / "libc10.so", sys.executable)
    with tempfile.TemporaryDirectory() as directory:
        layout_file = Path(directory, "layout.json")
        layout_file.write_text(json.dumps({"layout": found}))
        runs = {printers: run_gdb(Path(directory), extension, printers, calls, layout_file) for printers in (True, False)}
    first_with, tensors = runs[True]["first"]
    first_without, _ = runs[False]["first"]
    later = {kind: [t for run in runs.values() for t in run["later"][kind]] for kind in ("with", "without")}
    median_with, median_without = statistics.median(later["with"]), statistics.median(later["without"])
    print(f"tensor locals shown as tensors: {tensors} of 21 (20 locals and x)")
    print(f"first look:  with printers {first_with * 1000:.1f} ms, without {first_without * 1000:.1f} ms, "
          f"difference {(first_with - first_without) * 1000:+.1f} ms, ratio {first_with / first_without:.2f}")
    print(f"later looks (median of {len(later['with'])}): with {median_with * 1000:.1f} ms, "
          f"without {median_without * 1000:.1f} ms, difference {(median_with - median_without) * 1000:+.1f} ms, "
          f"ratio {median_with / median_without:.2f}")
    ok = first_with < 0.050 and first_with - first_without < 0.020 and tensors == 21
    print("targets (first look < 50 ms, at most 20 ms over without):", "met" if ok else "NOT met")
    if options.imports:
        pending_operator_cost(options.imports)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
