"""Memory requests: readMemory and writeMemory (VS Code's memory view, "View Binary Data"
on a variable with a ``memoryReference``). A memory reference is an address in hex; the
process is the one the address was handed out from at this stop (a variable of a fork
child's frame reads that child), else the stopped thread's."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from mixdbg.dap.inspection import stopped_session
from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import request

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter

#: The most one readMemory returns (VS Code's hex editor asks for 64 KiB or less at a time).
MAX_READ = 16 << 20


_stopped = stopped_session


def _address(arguments: dict[str, Any]) -> tuple[int, int]:
    """The reference's address and the address asked for (reference + offset)."""
    text = str(arguments.get("memoryReference", ""))
    try:
        base = int(text, 0)
    except ValueError:
        raise DapError(f"memory reference {text!r} is not an address (0x...)") from None
    return base, base + int(arguments.get("offset") or 0)


@request("readMemory", supportsReadMemoryRequest=True)
def read_memory(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """``count`` bytes at the reference plus ``offset``; the unreadable rest (an unmapped
    page) as ``unreadableBytes``, as the specification says."""
    session = _stopped(adapter)
    base, address = _address(arguments)
    count = int(arguments.get("count") or 0)
    if not 0 <= count <= MAX_READ:
        raise DapError(f"readMemory of {count} bytes: 0 to {MAX_READ} at a time")
    if address < 0:
        return {"address": hex(address), "unreadableBytes": count}
    data, unreadable = session.inspect.read_memory(session.inspect.memory_process(base), address, count)
    body: dict[str, Any] = {"address": hex(address), "data": base64.b64encode(data).decode("ascii")}
    if unreadable:
        body["unreadableBytes"] = unreadable
    return body


@request("writeMemory", supportsWriteMemoryRequest=True)
def write_memory(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Write the bytes through gdb (which then knows of them), then tell the client that
    memory changed (``memory``) and that values may have (``invalidated``)."""
    session = _stopped(adapter)
    base, address = _address(arguments)
    try:
        data = base64.b64decode(str(arguments.get("data", "")), validate=True)
    except (binascii.Error, ValueError):
        raise DapError("writeMemory: 'data' is not base64") from None
    if data:
        session.inspect.write_memory(session.inspect.memory_process(base), address, data)
    adapter.memory_changed(str(arguments["memoryReference"]), address - base, len(data))
    return {"offset": address - base, "bytesWritten": len(data)}
