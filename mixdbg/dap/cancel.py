"""The DAP ``cancel`` request (what it cancels and how: ``inflight.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import request

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter


@request("cancel", supportsCancelRequest=True)
def cancel(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Cancel a request by its ``requestId`` or ``progressId`` (served on the reader thread:
    see ``Requests.arrived``)."""
    seq, progress = arguments.get("requestId"), arguments.get("progressId")
    if seq is None and progress is None:
        raise DapError("cancel needs a requestId or a progressId")
    adapter.requests.cancel(int(seq) if seq is not None else None, str(progress) if progress is not None else None)
    return {}
