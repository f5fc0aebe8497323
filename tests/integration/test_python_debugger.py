"""A Python debugger (a DAP client, as VS Code's) attaching to a plain `mixdbg run`, whose
debugpy serves DAP from inside the debuggee: Python and native stops in one run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CExtension
from dap.client import DapClient
from dap.schema import DapSchema

pytestmark = pytest.mark.timeout(90)

SCRIPT = """\
import os, time
import mixdbg_testext as ext
while not os.path.exists("gate"):
    time.sleep(0.05)
value = 41
value += 1
print("native", ext.loop(1))
"""


def test_python_breakpoint_then_native_stop(cext: CExtension, tmp_path: Path, dap_schema: DapSchema) -> None:
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    run = subprocess.Popen([sys.executable, "-m", "mixdbg", "run", "--json", "--port", "0", "-b", "native_step",
                            str(script)], cwd=tmp_path, env=cext.env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    dap = None
    try:
        assert run.stdout is not None
        events = [json.loads(run.stdout.readline())]
        while events[-1]["event"] != "session":
            events.append(json.loads(run.stdout.readline()))
        session = events[-1]
        assert session["adapter_pid"] is None  # debugpy's adapter runs inside the debuggee
        # Given a Python debugger attached with a breakpoint on line 6
        dap = DapClient.connect(session["port"], tmp_path / "dap", dap_schema, host=session["host"])
        dap.request("initialize", adapterID="debugpy", clientID="mixdbg-tests", linesStartAt1=True,
                    columnsStartAt1=True, pathFormat="path")
        dap.send_request("attach", {"justMyCode": False, "connect": {"host": session["host"], "port": session["port"]}})
        dap.wait_event("initialized")
        reply = dap.request("setBreakpoints", source={"path": str(script)}, breakpoints=[{"line": 6}])
        assert reply["body"]["breakpoints"][0]["verified"]
        dap.request("configurationDone")
        # When the script goes on
        (tmp_path / "gate").touch()
        # Then it stops in Python first
        stopped = dap.wait_event("stopped", timeout=60)
        frames = dap.request("stackTrace", threadId=stopped["body"]["threadId"])["body"]["stackFrames"]
        assert (Path(frames[0]["source"]["path"]).name, frames[0]["line"]) == ("app.py", 6)
        # (no waiting for the response: the native stop freezes pydevd)
        resumed = dap.send_request("continue", {"threadId": stopped["body"]["threadId"]})
        # and then in C, reported by mixdbg with the Python caller
        for line in run.stdout:
            event = json.loads(line)
            if event["event"] == "stopped":
                break
        assert event["frames"][0]["function"] == "native_step"
        assert ("<module>", 7) in [(f["function"], f["line"]) for f in event["frames"] if f["kind"] == "python"]
        dap.wait_response(resumed)
        dap.wait_event("terminated", timeout=60)  # the in-process adapter ends with the process
        assert run.wait(60) == 0
    finally:
        if dap is not None:
            dap.close()
        if run.poll() is None:
            run.terminate()
            run.wait(30)
