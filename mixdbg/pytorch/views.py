"""Tensors and native arguments at a stop, for the session: asks the in-gdb commands of
``gdb_commands.py`` (which read registers and memory only) and returns their JSON.

The layout of the debuggee's torch build is established once per session (``layout``)
and handed to gdb with each request; when it cannot be, every answer says why, in one line.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from mixdbg.gdbmi import SLOW_COMMAND_TIMEOUT, GdbMi
from mixdbg.pytorch import arguments, catalogue, headers, layout, tensors

#: Parameter types that make a stop worth decoding (cheap test on the frame's name).
TORCH_TYPES = ("at::Tensor", "c10::ArrayRef<", "c10::Scalar")


def ask_gdb(gdb: GdbMi, command: str, request: Any) -> Any:
    """Run one of ``gdb_commands.py``'s commands on ``request``; its JSON answer."""
    with tempfile.TemporaryDirectory(prefix="mixdbg-") as directory:
        source = Path(directory, "request.json")
        source.write_text(json.dumps(request))
        gdb.console(f"{command} {source}", SLOW_COMMAND_TIMEOUT)  # the path last: spaces are fine
        return json.loads(source.with_name("answer.json").read_text())


class TorchViews:
    """The session's view of tensors: the layout (discovered once) and the gdb requests."""

    def __init__(self, gdb: GdbMi) -> None:
        self.gdb = gdb
        self._layout: dict[str, Any] | None = None
        self._problem: str | None = None
        self._headers: headers.HeaderIndex | None = None
        self._summarising = False
        self._printing = False  # gdb's tensor printers have the layout (or why not)

    def layout(self, pid: int, python: str) -> dict[str, Any] | None:
        """The debuggee's tensor layout, or None (``problem`` says why)."""
        if self._layout is None and self._problem is None:
            try:
                self._layout = layout.for_process(pid, python)
            except layout.LayoutUnknown as err:
                if "not loaded" in err.message:
                    return None  # torch may load later: ask again at the next stop
                self._problem = err.message
        return self._layout

    def problem(self) -> str:
        """Why there is no layout."""
        return self._problem or "torch is not loaded in the debuggee"

    def arguments(self, pid: int, python: str, function: str, names: list[str] | None,
                  returns: str | None = None, debug_info: bool = False) -> list[dict[str, Any]] | None:
        """The innermost frame's decoded arguments when they have torch types (None when
        none has); a single ``error`` entry when they cannot be decoded. ``debug_info``: gdb
        has the function's (its frame has a source line), which gives the arguments at any
        line, read as the tensor printers read them; else the signature in ``function``
        says whether to decode them from registers and memory at its entry."""
        if not debug_info and not any(kind in function for kind in TORCH_TYPES):
            return None
        found = self.layout(pid, python)
        if debug_info and found is None and self._problem is None:
            return None  # torch is not loaded in this process: no tensors to show
        if found is None and not debug_info:
            return [{"error": f"not decoded: {self.problem()}"}]
        if debug_info:
            self.prepare_printers(pid, python)
        if names is None and returns is None:
            declaration = self._declaration(pid, function)
            if declaration is not None:
                names, returns = list(declaration.names), declaration.returns
        answer = ask_gdb(self.gdb, "mixdbg-torch-args", {"layout": found, "names": names, "returns": returns})
        if "error" in answer:
            why = str(answer["error"])
            return [{"error": why if why.startswith("not decoded") else f"not decoded: {why}"}]
        decoded: list[dict[str, Any]] | None = answer["arguments"]
        return decoded

    def summarise_python_tensors(self, pid: int, python: str) -> None:
        """Once torch is loaded: let Python ``locals`` show tensors (dtype, shape, values)."""
        if self._summarising:
            return
        found = self.layout(pid, python)
        if found is not None:
            ask_gdb(self.gdb, "mixdbg-torch-summaries", {"layout": found})
            self._summarising = True

    def prepare_printers(self, pid: int, python: str) -> None:
        """Before gdb shows native values: once torch is loaded, hand gdb's tensor printers
        (``gdb_printers.py``) the layout of this build, or why there is none."""
        if self._printing:
            return
        found = self.layout(pid, python)
        if found is None and self._problem is None:
            return  # torch is not loaded yet
        with tempfile.TemporaryDirectory(prefix="mixdbg-") as directory:
            request = Path(directory, "layout.json")
            request.write_text(json.dumps({"layout": found} if found is not None else {"error": self.problem()}))
            self.gdb.console(f"mixdbg-torch-layout {request}")
        self._printing = True

    def _declaration(self, pid: int, function: str) -> headers.Declaration | None:
        """The header declaration of an ``at::native::`` function (return type, names)."""
        parsed = arguments.signature(function)
        if parsed is None or not parsed[0].startswith("at::native::"):
            return None
        if self._headers is None:
            root = catalogue.torch_root_of_process(pid)
            if root is None:
                return None
            self._headers = headers.HeaderIndex(root)
        return headers.lookup(self._headers, *parsed)

    def tensor(self, pid: int, python: str, address: int) -> dict[str, Any]:
        """``{"tensor": ...}`` for the tensor at ``address``, or ``{"error": why}``."""
        found = self.layout(pid, python)
        if found is None:
            return {"error": f"not decoded: {self.problem()}"}
        answer: dict[str, Any] = ask_gdb(self.gdb, f"mixdbg-tensor {address:#x}", {"layout": found})
        return answer


def interpreter(pid: int, python: str | None) -> str:
    """The interpreter that runs the layout probe: the debuggee's."""
    return python or os.path.realpath(f"/proc/{pid}/exe")


def argument_lines(decoded: list[dict[str, Any]]) -> list[str]:
    """One line per argument for people: ``self: at::Tensor const& = float32[2, 3] ...``."""
    lines = []
    for entry in decoded:
        label = entry.get("name") or (f"#{entry['position']}" if "position" in entry else "arguments")
        kind = f": {entry['type']}" if "type" in entry else ""
        if "tensor" in entry:
            shown = tensors.describe(entry["tensor"])
        elif "tensors" in entry:
            shown = "[" + "; ".join(tensors.describe(t["tensor"]) if "tensor" in t else t["error"]
                                    for t in entry["tensors"]) + "]"
        elif "value" in entry:
            shown = repr(entry["value"])
        else:
            shown = entry.get("error", "(not shown)")
        lines.append(f"  {label}{kind} = {shown}")
    return lines
