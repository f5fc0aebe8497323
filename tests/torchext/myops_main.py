"""Builds the custom operators (``myops_main.py BUILD_DIR --build``), or loads the built
library and calls them (``myops_main.py LIBRARY [MANY]``, ``myops::many`` MANY times):
after torch is imported, so the operators register after any breakpoint set at the start."""

import sys
from pathlib import Path

import torch

if sys.argv[-1] == "--build":
    from torch.utils import cpp_extension

    cpp_extension.load(name="mixdbg_myops", sources=[str(Path(sys.argv[1]) / "myops.cpp")],
                       extra_cflags=["-O0", "-g"], build_directory=sys.argv[1], is_python_module=False)
    sys.exit(0)

torch.ops.load_library(sys.argv[1])
x = torch.ones(2, 3)
y = torch.ones(2, 3)
z = torch.ops.myops.scaled_add(x, y, 2.0)  # @call
w = torch.ops.vision_like.shrink(z, 0.5)  # @shrink_call
k = torch.ops.myops.kinds(x[:, 1:], None, 2, [4, 5, 6], torch.float64)  # @kinds_call
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 0):  # benchmarks/bench_torch_values.py
    torch.ops.myops.many(x)
print("scaled", z.sum().item(), w.sum().item(), k.sum().item(), flush=True)
