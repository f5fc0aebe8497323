"""The native half of ``mixdbg dap`` against the shipping adapters (issue 23): the same
client script runs against gdb's own DAP (``gdb -i dap``, the wheel's gdb), or LLDB's
``lldb-dap-19`` where gdb has no such request (data breakpoints), and against ``mixdbg
dap``, on a C extension built ``-g`` by the test, and both must give the same results."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from .client import DapClient
from .fixtures import DapFactory
from .natives import NativeSet
from .oracles import GDB, MIXDBG, Adapter, find_variable, program_output

pytestmark = pytest.mark.timeout(240)

#: What the program writes in place of the 16 bytes it filled.
WRITTEN = bytes(range(100, 116))


def checksum(data: bytes) -> int:
    """memlab.c's checksum (a C long, wrapping)."""
    total = 0
    for byte in data:
        total = (total * 31 + byte) & (2**64 - 1)
    return total - 2**64 if total >= 2**63 else total


def memory_session(client: DapClient, adapter: Adapter, natives: NativeSet) -> dict[str, Any]:
    """Stop where memlab's buffer is filled: read its 16 bytes through its pointer's
    memoryReference, write others, step one instruction, ask for the breakable lines of
    ``bump``, run to the end; what each step gave."""
    lab = natives.memlab
    client.launch(adapter.config(natives, "memlab_main.py"), breakpoints={lab.source: [lab.line("filled")]})
    thread = client.wait_stopped(timeout=120)["threadId"]
    frame = client.stack(thread)[0]
    found: dict[str, Any] = {"stop": (frame["name"], frame["line"])}
    pointer = find_variable(client, frame["id"], "bytes")
    reference = pointer["memoryReference"]
    read = client.request("readMemory", memoryReference=reference, count=16)["body"]
    found["bytes"] = list(base64.b64decode(read["data"]))
    found["address"] = int(read["address"], 16) == int(reference, 16)
    client.request("writeMemory", memoryReference=reference, data=base64.b64encode(WRITTEN).decode())
    again = client.request("readMemory", memoryReference=reference, offset=8, count=8)["body"]
    found["written"] = list(base64.b64decode(again["data"]))
    pc = int(frame["instructionPointerReference"], 16)
    client.request("next", threadId=thread, granularity="instruction")
    client.wait_stopped()
    stepped = client.stack(thread)[0]
    moved = int(stepped["instructionPointerReference"], 16)
    found["instruction step"] = (stepped["name"], 0 < moved - pc < 16)
    lines = client.request("breakpointLocations", source={"path": str(lab.source)}, line=lab.line("bump_start"),
                           endLine=lab.line("bump_end"))["body"]["breakpoints"]
    found["breakable"] = [entry["line"] for entry in lines]
    client.request("setBreakpoints", source={"path": str(lab.source)}, breakpoints=[])
    client.request("continue", threadId=thread)
    client.wait_event("exited", timeout=60)
    printed = re.search(r"checksum (-?\d+)", program_output(client))
    found["printed"] = int(printed.group(1)) if printed else None
    return found


def test_memory_instruction_step_and_breakable_lines_as_gdbs_own_dap(dap_factory: DapFactory,
                                                                     natives: NativeSet) -> None:
    # Given the same client script against gdb's own DAP and mixdbg dap
    oracle = memory_session(GDB.client(dap_factory), GDB, natives)
    ours = memory_session(MIXDBG.client(dap_factory), MIXDBG, natives)
    # Then both give the same results
    assert ours == oracle
    # ... which are the program's: the bytes it filled, the checksum of those written
    lab = natives.memlab
    assert ours["stop"] == ("fill", lab.line("filled"))
    assert ours["bytes"] == [i * 7 + 1 for i in range(16)]
    assert ours["written"] == list(WRITTEN[8:])
    assert ours["printed"] == checksum(WRITTEN) != checksum(bytes(i * 7 + 1 for i in range(16)))
    assert ours["instruction step"] == ("fill", True)
    assert lab.line("bump") in ours["breakable"] and lab.line("after_bump") in ours["breakable"]
