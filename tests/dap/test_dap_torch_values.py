"""PyTorch values in every native variable under ``mixdbg dap`` (issue 24): a user's
custom operator built with ``-O0 -g``, stopped at its kernel's loop line. Tensors are read
from memory by gdb's tensor printers (``mixdbg/pytorch/gdb_printers.py``): no call into the
debuggee."""

from __future__ import annotations

import base64
import re
import struct
from typing import Any

import pytest
from torchext_fixture import TorchExtension

from .client import DapClient

pytestmark = [pytest.mark.torch, pytest.mark.timeout(300)]

#: A tensor's fields, in the order VARIABLES lists them.
FIELDS = ["dtype", "shape", "strides", "storage_offset", "device", "data", "values"]
ONES = {"dtype": "float32", "shape": "[2, 3]", "strides": "[3, 1]", "storage_offset": "0", "device": "cpu",
        "values": "[[1., 1., 1.], [1., 1., 1.]]"}


def launch_config(extension: TorchExtension, cache: dict[str, str]) -> dict[str, Any]:
    """The custom operators' driver script, run as VS Code launches it."""
    script, library = extension.argv()
    return {"program": script, "args": [library], "cwd": str(extension.directory), "console": "internalConsole",
            "env": cache}


def fields_of(dap: DapClient, variable: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A tensor's fields as VARIABLES shows them once it is expanded."""
    fields = dap.children(variable)
    assert list(fields) == FIELDS, fields
    return fields


def stop_at_the_loop(dap: DapClient, extension: TorchExtension, cache: dict[str, str],
                     ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Launch the driver with a breakpoint on the kernel's loop line (its library loads
    later); the stop and its top frame."""
    line = extension.line("loop")
    dap.launch(launch_config(extension, cache), breakpoints={extension.source: [line]})
    stop = dap.wait_stopped(timeout=180)
    frame = dap.stack(stop["threadId"])[0]
    assert (frame["name"], frame["line"]) == ("scaled_add_cpu", line)
    return stop, frame


def test_kernel_line_shows_tensors_from_memory(dap: DapClient, torch_extension: TorchExtension,
                                               torch_cache: dict[str, str]) -> None:
    # Given a breakpoint on the loop line of the user's kernel (its library loads later)
    stop, frame = stop_at_the_loop(dap, torch_extension, torch_cache)
    # When VARIABLES is shown: the tensor arguments are one line each, the double a number
    local = dap.frame_variables(frame["id"], "Locals")
    assert local["a"]["value"] == local["b"]["value"] == "tensor float32 [2, 3] cpu"
    assert local["alpha"]["value"] == "2"
    assert local["out"]["value"] == "tensor float32 [2, 3] cpu"
    # ...and the line's tensor expands to its fields, its values those of torch.ones(2, 3)
    fields = fields_of(dap, local["a"])
    assert {name: fields[name]["value"] for name in ONES} == ONES
    data = fields["data"]
    assert re.fullmatch(r"0x[0-9a-f]+", data["value"]) and data["memoryReference"] == data["value"]
    assert all(fields[name]["variablesReference"] == 0 for name in ONES)  # leaves, not expandable
    # Hovering over a: the one-line summary, expandable the same way
    hover = dap.evaluate("a", frame["id"], context="hover")
    assert hover["result"] == "tensor float32 [2, 3] cpu"
    assert {name: v["value"] for name, v in fields_of(dap, hover).items()} == \
        {name: v["value"] for name, v in fields.items()}
    # The seeds' recipe without the call: ((at::Tensor*)ptr), and 'tensor' on its TensorImpl
    address = int(dap.evaluate("(unsigned long)&a", frame["id"])["result"])
    through_pointer = dap.evaluate(f"((at::Tensor*){address:#x})", frame["id"])
    impl = int(dap.evaluate("(unsigned long)a.impl_.target_", frame["id"])["result"])
    by_address = dap.evaluate(f"tensor {impl:#x}", frame["id"])
    for view in (through_pointer, by_address):
        assert view["result"] == "tensor float32 [2, 3] cpu"
        assert {name: v["value"] for name, v in fields_of(dap, view).items()} == \
            {name: v["value"] for name, v in fields.items()}
    dap.request("setBreakpoints", source={"path": str(torch_extension.source)}, breakpoints=[])
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited(timeout=120) == 0
    assert "scaled 18.0 9.0 8.0" in dap.output("stdout")


@pytest.mark.slow
def test_op_on_a_custom_operator_stops_with_schema_names_and_a_typo_is_reported_at_the_end(
        dap: DapClient, torch_extension: TorchExtension, torch_cache: dict[str, str]) -> None:
    # Given function breakpoints on a user's operator and on a typo of it, before it registers
    startup = dap.launch(launch_config(torch_extension, torch_cache),
                         function_breakpoints=["op:myops::scaled_add", "op:myops::scaled_ad"])
    assert [b["verified"] for b in startup.function_breakpoints] == [False, False]
    assert "no library has registered this operator" in startup.function_breakpoints[1]["message"]
    # When the library registers it: the breakpoint binds, and stops in the kernel
    bound = dap.wait_event("breakpoint", lambda e: e["body"]["breakpoint"].get("verified") is True, timeout=180)
    assert bound["body"]["breakpoint"]["line"] == torch_extension.line("first")
    stop = dap.wait_stopped(timeout=180)
    assert stop["reason"] == "function breakpoint" and "myops::scaled_add" in stop.get("description", "")
    frame = dap.stack(stop["threadId"])[0]
    assert (frame["name"], frame["line"]) == ("scaled_add_cpu", torch_extension.line("first"))
    # Then Arguments names them from the schema: a, b, alpha = 2
    arguments = dap.frame_variables(frame["id"], "Arguments")
    assert list(arguments) == ["a", "b", "alpha"]
    assert arguments["a"]["value"] == arguments["b"]["value"] == "tensor float32 [2, 3] cpu"
    assert arguments["alpha"]["value"] == "2"
    assert {name: v["value"] for name, v in fields_of(dap, arguments["a"]).items() if name in ONES} == ONES
    # ...and the typo lets the program run to its end, then is reported with close matches
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited(timeout=120) == 0
    dap.wait_event("output", lambda e: "scaled_ad)" in e["body"].get("output", ""), timeout=30)
    assert "did you mean: op:myops::scaled_add?" in dap.output("important")


@pytest.mark.slow
def test_view_binary_data_reads_the_tensor_data(dap: DapClient, torch_extension: TorchExtension,
                                                torch_cache: dict[str, str]) -> None:
    # Given the stop at the kernel's loop line, and a's data (a memoryReference)
    stop, frame = stop_at_the_loop(dap, torch_extension, torch_cache)
    data = fields_of(dap, dap.frame_variables(frame["id"], "Locals")["a"])["data"]
    # When VS Code's "View Binary Data" reads it
    read = dap.request("readMemory", memoryReference=data["memoryReference"], count=24)["body"]
    # Then it holds the six float32 ones of torch.ones(2, 3)
    assert base64.b64decode(read["data"]) == struct.pack("<6f", *[1.0] * 6)
    dap.request("setBreakpoints", source={"path": str(torch_extension.source)}, breakpoints=[])
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited(timeout=120) == 0
