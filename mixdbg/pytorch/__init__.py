"""PyTorch-aware debugging: operator breakpoints and tensors read from memory only.

``catalogue`` knows the installed torch's operators and the C++ functions that run them,
``ops`` turns ``op:aten::add`` into breakpoint targets, ``layout`` discovers where a
tensor's fields are for one torch build, ``tensors`` reads a tensor from memory (standard
library only: gdb's Python runs it too), ``arguments`` places a native function's
arguments at its entry, and ``gdb_commands`` is the part gdb itself runs.
"""
