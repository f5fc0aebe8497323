"""The ``source`` request: what an editor shows for a frame's source it cannot open itself.

mixdbg gives a frame a ``source.path`` only when the file exists here; a frame whose debug
info names a file that is not here gets a source without one, de-emphasized, whose
``origin`` says why (``mixdbg.sources.missing_reason``). An editor that opens it anyway
(VS Code does, for the frame it focuses) asks for its content: it gets that one line, and the
frame's disassembly is still there (its ``instructionPointerReference``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import request

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter

#: What a source without a path shows when the editor gave no reason with it.
NO_FILE = "this source is not on this machine"


@request("source")
def source(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """A source's text: the file where it exists here, else the one line saying why not."""
    wanted = arguments.get("source") or {}
    path = str(wanted.get("path") or "")
    if path and os.path.isfile(path):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return {"content": handle.read()}
        except OSError as err:
            raise DapError(f"cannot read {path}: {err.strerror}") from None
    reason = str(wanted.get("origin") or NO_FILE)
    return {"content": f"{wanted.get('name') or path or 'source'}: {reason}\n", "mimeType": "text/plain"}
