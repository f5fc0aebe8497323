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
from .oracles import GDB, LLDB, MIXDBG, Adapter, against, find_variable, program_output

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
    oracle, ours = against(GDB, dap_factory, lambda client, adapter: memory_session(client, adapter, natives))
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


def watch_session(client: DapClient, adapter: Adapter, natives: NativeSet, stops: int,
                  *args: str) -> list[tuple[Any, ...]]:
    """Stop at the start of memlab's ``bump``, watch the global ``memlab_counter`` (Break
    When Value Changes), continue ``stops`` times: each stop's reason, function, line,
    process and whether it names the value."""
    lab = natives.memlab
    client.launch(adapter.config(natives, "memlab_main.py", *args), breakpoints={lab.source: [lab.line("bump_start")]})
    thread = client.wait_stopped(timeout=120)["threadId"]
    frame = client.stack(thread)[0]
    # as VS Code's Break When Value Changes asks: the variable in its scope (Globals)
    scope = next(scope for scope in client.scopes(frame["id"])
                 if any(v["name"] == "memlab_counter" for v in client.variables(scope["variablesReference"])))
    info = client.request("dataBreakpointInfo", name="memlab_counter",
                          variablesReference=scope["variablesReference"])["body"]
    assert info["dataId"], info
    answer = client.request("setDataBreakpoints", breakpoints=[{"dataId": info["dataId"], "accessType": "write"}])
    assert answer["body"]["breakpoints"][0]["verified"], (info, answer)
    client.request("setBreakpoints", source={"path": str(lab.source)}, breakpoints=[])
    found = []
    for _ in range(stops):
        client.request("continue", threadId=thread)
        stop = client.wait_stopped(timeout=60)
        thread = stop["threadId"]
        top = client.stack(thread)[0]
        names = {t["id"]: t["name"] for t in client.threads()}
        found.append((stop["reason"], top["name"], top["line"], "pid" in names.get(thread, "") and
                      names[thread].split("(pid ")[-1].split(")")[0]))
    return found


@pytest.mark.timeout(300)
def test_watchpoint_stops_where_the_global_changes_as_lldb_dap(dap_factory: DapFactory, natives: NativeSet) -> None:
    # Given the same client script against lldb-dap (gdb's DAP has no data breakpoints) and mixdbg dap
    oracle, ours = against(LLDB, dap_factory, lambda client, adapter: watch_session(client, adapter, natives, 2))
    # Then both stop twice, as the data breakpoint, in bump, on the same line
    lab = natives.memlab
    # (lldb-dap 19 says reason 'breakpoint'; the specification's is 'data breakpoint')
    assert [stop[1:3] for stop in ours] == [stop[1:3] for stop in oracle]
    assert [stop[:2] for stop in ours] == [("data breakpoint", "bump")] * 2
    assert ours[0][2] in (lab.line("bump"), lab.line("after_bump"))


def test_watchpoint_in_a_fork_child(dap_factory: DapFactory, natives: NativeSet) -> None:
    # Given a watch on the global set in the parent (lldb-dap follows no fork: mixdbg alone)
    ours = watch_session(MIXDBG.client(dap_factory), MIXDBG, natives, 5, "3", "fork")
    # Then the parent's three changes stop, then the fork child's two, in the child
    assert [stop[:2] for stop in ours] == [("data breakpoint", "bump")] * 5
    parent, child = ours[0][3], ours[3][3]
    assert parent and child and parent != child
    assert [stop[3] for stop in ours] == [parent] * 3 + [child] * 2


def single_thread_session(client: DapClient, adapter: Adapter, natives: NativeSet) -> dict[str, Any]:
    """Stop in memlab's ``ticking`` (a C thread adds 1 to ``memlab_ticks`` every ms), step
    over a 20 ms sleep with ``singleThread``, then over a 200 ms one without: the ticks
    before and after each step, and where each step stopped."""
    lab = natives.memlab
    client.launch(adapter.config(natives, "memlab_main.py", "1", "ticks"), breakpoints={lab.source: [lab.line("ticking")]})
    thread = client.wait_stopped(timeout=120)["threadId"]
    client.request("setBreakpoints", source={"path": str(lab.source)}, breakpoints=[])

    def ticks() -> int:
        return int(client.evaluate("memlab_ticks", client.stack(thread)[0]["id"], "watch")["result"])
    found: dict[str, Any] = {"single thread": bool(client.capabilities.get("supportsSingleThreadExecutionRequests"))}
    before = ticks()
    client.request("next", threadId=thread, singleThread=True)
    client.wait_stopped()
    alone = ticks()
    client.request("next", threadId=thread)
    client.wait_stopped()
    found["lines"] = [frame["line"] for frame in client.stack(thread)[:1]]
    found["others frozen"], found["others ran"] = alone == before, ticks() > alone
    client.request("continue", threadId=thread)
    client.wait_event("exited", timeout=60)
    return found


def test_single_thread_steps_as_gdbs_own_dap(dap_factory: DapFactory, natives: NativeSet) -> None:
    # Given the same client script against gdb's own DAP and mixdbg dap
    oracle, ours = against(GDB, dap_factory, lambda client, adapter: single_thread_session(client, adapter, natives))
    # Then a singleThread step leaves the ticking thread where it was, a step without lets it run
    assert ours == oracle == {"single thread": True, "lines": [natives.memlab.line("ticked_twice")],
                              "others frozen": True, "others ran": True}


def test_instruction_breakpoint_in_every_followed_process(dap_factory: DapFactory, natives: NativeSet) -> None:
    # Given a stop in the parent's checksum while its fork child sleeps (gdb's DAP and
    # lldb-dap follow no fork: mixdbg alone)
    client, lab = MIXDBG.client(dap_factory), natives.memlab
    client.launch(MIXDBG.config(natives, "memlab_main.py", "1", "forked-fill"),
                  breakpoints={lab.source: [lab.line("checksum")]})
    client.wait_stopped(timeout=120)  # the parent's first fill, before the fork
    thread = client.step("continue", client.threads()[0]["id"], timeout=60)["threadId"]  # the parent's second
    # When a breakpoint is set on the instruction it stopped at, and the line's is removed
    address = client.stack(thread)[0]["instructionPointerReference"]
    answer = client.request("setInstructionBreakpoints", breakpoints=[{"instructionReference": address}])
    assert answer["body"]["breakpoints"][0]["verified"]
    client.request("setBreakpoints", source={"path": str(lab.source)}, breakpoints=[])
    client.request("continue", threadId=thread)
    # Then the child stops there too, in its own process
    stop = client.wait_stopped(timeout=60)
    frame = client.stack(stop["threadId"])[0]
    assert (frame["name"], frame["instructionPointerReference"], stop["hitBreakpointIds"]) == \
        ("checksum", address, [answer["body"]["breakpoints"][0]["id"]])
    names = {t["id"]: t["name"] for t in client.threads()}
    assert names[stop["threadId"]] != names[thread] and "child" in names[stop["threadId"]]
    client.request("setInstructionBreakpoints", breakpoints=[])
    client.request("continue", threadId=stop["threadId"])
    client.wait_event("exited", timeout=60)
