"""PyTorch values in every native variable under ``mixdbg dap`` (issue 24): a user's
custom operator built with ``-O0 -g``, stopped at its kernel's loop line. Tensors are read
from memory by gdb's tensor printers (``mixdbg/pytorch/gdb_printers.py``): no call into the
debuggee."""

from __future__ import annotations

import re
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


def test_kernel_line_shows_tensors_from_memory(dap: DapClient, torch_extension: TorchExtension,
                                               torch_cache: dict[str, str]) -> None:
    # Given a breakpoint on the loop line of the user's kernel (its library loads later)
    line = torch_extension.line("loop")
    dap.launch(launch_config(torch_extension, torch_cache), breakpoints={torch_extension.source: [line]})
    stop = dap.wait_stopped(timeout=180)
    frame = dap.stack(stop["threadId"])[0]
    assert (frame["name"], frame["line"]) == ("scaled_add_cpu", line)
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
