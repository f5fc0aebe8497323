"""PyTorch-aware debugging: operator breakpoints and tensors read from memory only.

``catalogue`` knows the installed torch's aten operators and the C++ functions that run
them, ``ops`` turns ``op:aten::add`` into breakpoint targets, ``opbreaks`` keeps a
session's; ``customops`` binds operators of other namespaces as libraries register them
(``registered``, ``dispatcher``: the dispatcher's registrations read from memory).
``layout`` discovers where a tensor's (and the dispatcher's) fields are for one torch
build, ``tensors`` reads a tensor from memory (standard library only: gdb's Python runs it
too), ``arguments`` places a native function's arguments at its entry. gdb itself runs
``gdb_commands``, ``gdb_operators`` and the tensor pretty-printers (``gdb_printers``,
``gdb_values``).
"""
