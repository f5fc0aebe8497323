"""Runs inside gdb's embedded Python (``source``d by mixdbg): PyTorch helper commands.

``mixdbg-demangle INFILE OUTFILE``: demangle the linkage names in INFILE (a JSON list)
with gdb's own demangler and write the JSON list of results to OUTFILE. Operator
breakpoints need the demangled names: gdb resolves a pending breakpoint on a demangled
qualified name through its symbol hash (measured: 6 such breakpoints cost nothing over
``import torch``'s 5 s), but on a mangled name by a scan of every minimal symbol (about
1 s per breakpoint and per ``import torch`` here).

Standard library and ``gdb`` only; Python 3.9-compatible (gdb's Python is not mixdbg's).
"""

from __future__ import annotations

import json

import gdb  # type: ignore[import-untyped]


class MixdbgDemangle(gdb.Command):  # type: ignore[misc]
    """mixdbg-demangle INFILE OUTFILE: demangle a JSON list of C++ linkage names."""

    def __init__(self) -> None:
        super().__init__("mixdbg-demangle", gdb.COMMAND_DATA)

    def invoke(self, argument: str, from_tty: bool) -> None:
        source, _, target = argument.strip().partition(" ")
        with open(source, encoding="utf-8") as stream:
            names = json.load(stream)
        result = [gdb.execute(f"demangle -l c++ -- {name}", to_string=True).strip() for name in names]
        with open(target, "w", encoding="utf-8") as out:
            json.dump(result, out)


MixdbgDemangle()
