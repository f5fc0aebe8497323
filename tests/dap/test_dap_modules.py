"""The modules request at a Python stop, against debugpy's adapter as the oracle: each
Python module debugpy lists (those of the frames it has shown) is listed by mixdbg dap with
the same name, path and version, beside the program's other modules and the native
libraries of the process."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from .client import DapClient
from .fixtures import DapFactory
from .natives import NativeSet

pytestmark = pytest.mark.timeout(180)


def modules_at_finish(client: DapClient, natives: NativeSet, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Stop in finish.py's ``finish`` (called by memlab_main.py), show the stack as an
    editor does, then list the modules."""
    finish = natives.script("finish.py")
    client.launch(config, breakpoints={finish: [natives.line("finish.py", "finish")]})
    thread = client.wait_stopped(timeout=120)["threadId"]
    client.stack(thread)
    modules: list[dict[str, Any]] = client.request("modules")["body"]["modules"]
    client.request("setBreakpoints", source={"path": str(finish)}, breakpoints=[])
    client.request("continue", threadId=thread)
    client.wait_event("exited", timeout=60)
    return modules


def test_python_modules_at_a_python_stop_as_debugpy_lists_them(dap_factory: DapFactory, natives: NativeSet) -> None:
    natives.memlab  # noqa: B018 - built before either adapter starts
    config = {"program": str(natives.script("memlab_main.py")), "cwd": str(natives.directory),
              "console": "internalConsole", "env": natives.env(), "justMyCode": True}
    # Given the same client script against debugpy's adapter and mixdbg dap
    oracle = modules_at_finish(dap_factory(command=[sys.executable, "-m", "debugpy.adapter"], timeout=60), natives,
                               {"type": "python", "request": "launch", **config})
    ours = modules_at_finish(dap_factory(timeout=60), natives, config)
    # Then each module debugpy lists is ours too, with the same name, path and version
    described = {(m["name"], m.get("path"), m.get("version")) for m in ours}
    listed = [(m["name"], m.get("path"), m.get("version")) for m in oracle]
    assert ("finish", str(natives.script("finish.py")), "1.0") in listed
    assert set(listed) <= described, (listed, sorted(described))
    # ... and the other imported modules, the C extension among them, and its library
    assert ("memlab", str(natives.memlab.library), None) in described
    assert any(m["name"] == natives.memlab.library.name and "symbols" in m.get("symbolStatus", "") for m in ours)
