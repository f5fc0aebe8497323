"""``console: integratedTerminal``: the debuggee runs in the editor's terminal (a real pty
here, as an editor's terminal is), reached through ``runInTerminal``; ``--port`` serves a
client that connects to a running adapter."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from .client import DapClient
from .fixtures import DapFactory, mixdbg_dap_command
from .natives import NativeModule, NativeSet
from .schema import DapSchema

pytestmark = pytest.mark.timeout(120)


class TerminalClient(DapClient):
    """A client whose ``runInTerminal`` runs the command in a pseudo-terminal."""

    ptys: list[pexpect.spawn]

    def reverse_request(self, command: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        if command != "runInTerminal":
            return super().reverse_request(command, arguments)
        args = list(arguments["args"])
        env = {**os.environ, **arguments.get("env", {})}  # as an editor's terminal does
        child = pexpect.spawn(args[0], args[1:], cwd=arguments.get("cwd"), env=env, encoding="utf-8", timeout=60)
        self.ptys.append(child)
        return {"processId": child.pid, "shellProcessId": child.pid}


def test_run_without_debugging_runs_in_the_editors_terminal(tmp_path: Path, dap_schema: DapSchema) -> None:
    script = tmp_path / "plain.py"
    script.write_text("import sys\nprint('plain', sys.stdin.isatty(), sys.stdout.isatty())\n")
    client = TerminalClient.spawn(mixdbg_dap_command(tmp_path / "dap.log"), tmp_path, dap_schema, timeout=60)
    client.ptys = []
    try:
        client.launch({"program": str(script), "cwd": str(tmp_path), "noDebug": True})
        # Then the program ran in the terminal (its stdin and stdout are the terminal), and ended the session
        assert client.wait_exited() == 0
        client.ptys[0].expect("plain True True")
        client.wait_event("terminated")
        client.ptys[0].expect(pexpect.EOF)
    finally:
        client.close()
        for pty in client.ptys:
            pty.terminate(force=True)


def test_the_program_runs_in_the_editors_terminal(tmp_path: Path, dap_schema: DapSchema, natives: NativeSet,
                                                  capi_module: NativeModule) -> None:
    client = TerminalClient.spawn(mixdbg_dap_command(tmp_path / "dap.log"), tmp_path, dap_schema, timeout=60)
    client.ptys = []
    try:
        client.launch({"program": str(natives.script("capi_main.py")), "cwd": str(natives.directory),
                       "env": natives.env({})}, function_breakpoints=["native_step"])
        stop = client.wait_stopped()
        # Then the terminal's process waits, holding the terminal, while the program runs in it
        terminal = client.ptys[0]
        assert terminal.isalive()
        client.request("setFunctionBreakpoints", breakpoints=[])
        client.request("continue", threadId=stop["threadId"])
        assert client.wait_exited() == 0
        terminal.expect("capi total 6 called 7")
        assert "capi total" not in client.output("stdout")
        client.wait_event("terminated")
        terminal.expect(pexpect.EOF)  # the session is over: the terminal is the shell's again
    finally:
        client.close()
        for pty in client.ptys:
            pty.terminate(force=True)


def test_a_client_connects_to_a_running_adapter_on_a_port(dap_factory: DapFactory, natives: NativeSet,
                                                         capi_module: NativeModule) -> None:
    dap = dap_factory("tcp")
    dap.launch({"program": str(natives.script("capi_main.py")), "cwd": str(natives.directory),
                "console": "internalConsole", "env": natives.env({})}, function_breakpoints=["native_loop"])
    stop = dap.wait_stopped()
    assert dap.stack(stop["threadId"])[0]["name"] == "native_loop"
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited() == 0
    assert sys.executable
