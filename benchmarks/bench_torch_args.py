"""Benchmark: the per-stop cost of decoding tensor arguments at an operator breakpoint.

A gdb (the one mixdbg uses, with mixdbg's own in-gdb commands sourced) runs a script that
calls ``torch.add(x, y)`` N times, stopping at each call in the CPU kernel that
``op:aten::add.Tensor`` resolves to. At every stop it times, in the same process:

* ``mixdbg-stack``: the mixed stack every stop builds anyway (the baseline);
* ``mixdbg-torch-args``: the three arguments (two tensors, a scalar) read from memory.

It prints the median of each and their ratio. Timing inside gdb keeps the numbers free of
the seconds that gdb, debugpy and ``import torch`` take, which vary more than the costs
measured here on a shared machine.

Usage: python benchmarks/bench_torch_args.py [--calls N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from mixdbg.engine.gdb_boot import HELPER_SCRIPT, TORCH_GDB_COMMANDS
from mixdbg.gdbmi import find_gdb, gdb_environment
from mixdbg.pytorch import catalogue, layout, ops

SCRIPT = "import sys, torch\nx = torch.arange(6.).reshape(2, 3)\ny = torch.ones(2, 3)\n" \
         "for _ in range(int(sys.argv[1])):\n    torch.add(x, y)\n"

IN_GDB = r'''
import json, time
import gdb
settings = json.load(open(SETTINGS))
name = gdb.execute("demangle -l c++ -- " + settings["symbol"], to_string=True).strip()
gdb.execute("break -qualified " + name[:name.rindex("(c10::OperatorKernel")])
gdb.execute("run")
pid = gdb.selected_inferior().pid
for line in open(f"/proc/{pid}/maps"):
    fields = line.split()
    if len(fields) >= 6 and fields[5].endswith("/libc10.so") and int(fields[2], 16) == 0:
        settings["layout"]["c10_base"] = int(fields[0].split("-")[0], 16)
        break
json.dump({"layout": settings["layout"], "names": ["self", "other", "alpha"]}, open(REQUEST, "w"))
stack, decode, answers = [], [], []
while gdb.selected_inferior().pid:
    start = time.perf_counter()
    gdb.execute(f"mixdbg-stack 128 one {OUT}")
    middle = time.perf_counter()
    gdb.execute(f"mixdbg-torch-args {REQUEST}")
    stack.append(middle - start)
    decode.append(time.perf_counter() - middle)
    answers.append(json.load(open(ANSWER)))
    gdb.execute("continue")
json.dump({"stack": stack, "decode": decode, "answers": answers}, open(RESULT, "w"))
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="torch.add calls (default 50)")
    calls = parser.parse_args().calls
    root = catalogue.torch_root_of_interpreter(sys.executable)
    kernel = next(k for k in ops.resolve(catalogue.load(root), "aten::add.Tensor")
                  if k.dispatch_key == "CPU" and not k.boxed)
    found = layout.layout_for(root / "lib" / "libc10.so", sys.executable)
    with tempfile.TemporaryDirectory() as directory:
        paths = {name: Path(directory, f"{name}.json") for name in ("settings", "request", "answer", "out", "result")}
        paths["settings"].write_text(json.dumps({"symbol": kernel.symbol, "layout": found}))
        script, driver = Path(directory, "adds.py"), Path(directory, "driver.py")
        script.write_text(SCRIPT)
        driver.write_text("".join(f"{name.upper()} = {str(path)!r}\n" for name, path in paths.items()) + IN_GDB)
        done = subprocess.run(
            [find_gdb(), "-nx", "-batch", "-ex", "set breakpoint pending on", "-ex", f"source {HELPER_SCRIPT}",
             "-ex", f"source {TORCH_GDB_COMMANDS}", "-x", str(driver), "--args", sys.executable, str(script),
             str(calls)], env=gdb_environment(), capture_output=True, text=True, timeout=900, check=False)
        if not paths["result"].exists():
            raise SystemExit(f"gdb failed: {done.stdout[-1500:]}{done.stderr[-1500:]}")
        result = json.loads(paths["result"].read_text())
    assert len(result["answers"]) == calls, "one stop per call"
    assert all(len(a.get("arguments", [])) == 3 for a in result["answers"]), "every stop decodes 3 arguments"
    stack, decode = statistics.median(result["stack"]), statistics.median(result["decode"])
    print(f"stops: {calls} (torch.add at the CPU kernel), {os.cpu_count()} CPUs")
    print(f"mixed stack per stop (baseline):  {stack * 1000:7.2f} ms median")
    print(f"argument decoding per stop:       {decode * 1000:7.2f} ms median  (ratio {decode / stack:.2f})")
    print(f"first stop (cold): stack {result['stack'][0] * 1000:.1f} ms, arguments {result['decode'][0] * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
