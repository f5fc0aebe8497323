"""Play VS Code: `mixdbg setup`, then `mixdbg run --vscode`, then attach both debuggers
the way the generated launch.json tells VS Code to, to the same process in the same run."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import CExtension, run_mixdbg
from dap.client import DapClient
from dap.schema import DapSchema

from mixdbg.attach import process_state
from mixdbg.gdbmi import GdbCommandError, GdbMi, MiRecord
from mixdbg.launch_gen import CPPDBG_NAME, DEBUGPY_NAME, launch_json_path, read_configurations

pytestmark = pytest.mark.timeout(120)

SCRIPT = """\
import mixdbg_testext as ext
value = 41
value += 1
print("native", ext.loop(2))
"""


def wait_for_configs(launch_json: Path, old_pid: object) -> dict[str, dict[str, Any]]:
    """The launch.json configurations, once run --vscode has written a new processId."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        configs = {c["name"]: c for c in read_configurations(launch_json) if "name" in c}
        if configs[CPPDBG_NAME]["processId"] != old_pid:
            return configs
        time.sleep(0.1)
    raise TimeoutError("run --vscode never wrote a processId")


def test_f5_attaches_python_and_gdb_to_the_same_process(cext: CExtension, tmp_path: Path,
                                                        dap_schema: DapSchema) -> None:
    # Given a workspace set up by `mixdbg setup`
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = workspace / "app.py"
    script.write_text(SCRIPT)
    assert run_mixdbg(["setup", "--workspace", str(workspace)]).returncode == 0
    launch_json = launch_json_path(workspace)
    before = {c["name"]: c for c in read_configurations(launch_json) if "name" in c}
    # When `mixdbg run --vscode` starts the script
    run = subprocess.Popen([sys.executable, "-m", "mixdbg", "run", "--vscode", "--json", "--port", "0",
                            "--workspace", str(workspace), str(script)],
                           env=cext.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           stdin=subprocess.DEVNULL)
    records: list[MiRecord | None] = []
    gdb = GdbMi(records.append)
    dap = None
    try:
        configs = wait_for_configs(launch_json, before[CPPDBG_NAME]["processId"])
        cpp, python = configs[CPPDBG_NAME], configs[DEBUGPY_NAME]
        pid = cpp["processId"]
        assert isinstance(pid, int)
        # Then the Python debugger connects where launch.json says and sets a breakpoint
        dap = DapClient.connect(python["connect"]["port"], tmp_path / "dap", dap_schema,
                                host=python["connect"]["host"])
        dap.request("initialize", adapterID="debugpy", clientID="mixdbg-tests", linesStartAt1=True,
                    columnsStartAt1=True, pathFormat="path")
        dap.send_request("attach", {"justMyCode": python["justMyCode"], "connect": python["connect"]})
        dap.wait_event("initialized")
        reply = dap.request("setBreakpoints", source={"path": str(script)}, breakpoints=[{"line": 3}])
        assert reply["body"]["breakpoints"][0]["verified"]
        dap.request("configurationDone")
        # and gdb, started with launch.json's setupCommands, attaches to its processId
        gdb.start()
        gdb.command("-gdb-set mi-async on")
        for setup in cpp["setupCommands"]:
            try:
                gdb.command(setup["text"])
            except GdbCommandError:
                assert setup.get("ignoreFailures"), setup
        assert Path(cpp["program"]).resolve() == Path(f"/proc/{pid}/exe").resolve()
        gdb.command(f"-target-attach {pid}", 60)
        gdb.command("-break-insert -f native_step")
        wait_until(lambda: any(r and r.message == "stopped" for r in records))
        gdb.command("-exec-continue")
        # The Python breakpoint stops the script on line 3
        stopped = dap.wait_event("stopped", timeout=60)
        frames = dap.request("stackTrace", threadId=stopped["body"]["threadId"])["body"]["stackFrames"]
        assert (Path(frames[0]["source"]["path"]).name, frames[0]["line"]) == ("app.py", 3)
        # (no waiting for the response: gdb's stop freezes pydevd's threads until gdb continues)
        resumed = dap.send_request("continue", {"threadId": stopped["body"]["threadId"]})
        # and then gdb stops in the C extension called from line 4, in the same process
        wait_until(lambda: any(r and r.message == "stopped" and r.payload.get("reason") == "breakpoint-hit"
                               for r in records))
        hit = next(r for r in records if r and r.message == "stopped" and r.payload.get("reason") == "breakpoint-hit")
        assert hit.payload["frame"]["func"] == "native_step"
        assert process_state(pid)["TracerPid"] == str(gdb.pid)  # the very process debugpy stopped
        gdb.command("-break-delete")
        gdb.command("-target-detach")
        dap.wait_response(resumed)
        dap.wait_event("terminated", timeout=60)
        dap.request("disconnect")
        _, err = run.communicate(timeout=60)
        assert run.returncode == 0, err
        assert "native 2" in err
    finally:
        if dap is not None:
            dap.close()
        gdb.quit()
        if run.poll() is None:
            run.terminate()
            run.wait(30)


def wait_until(condition: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.05)
