"""Malformed messages (issue 23): every one gets an answer or a one-line reason, and the
adapter never goes silent. A body that is not a DAP message (not JSON, not an object, a
request without ``command`` or ``seq``) is said in an ``output`` event (an error response
too when it had a ``seq``) and the session goes on; broken framing (no Content-Length)
ends the session with its reason, and the debuggee runs on."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from .client import DapClient, RequestFailed
from .natives import NativeSet

pytestmark = pytest.mark.timeout(120)


def framed(body: bytes) -> bytes:
    """``body`` with DAP's header."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def said(dap: DapClient, text: str) -> str:
    """The next ``important`` output event containing ``text``: its line."""
    event = dap.wait_event("output", lambda e: e["body"].get("category") == "important"
                           and text in e["body"]["output"], timeout=10)
    line: str = event["body"]["output"]
    assert line.endswith("\n") and line.count("\n") == 1, line
    return line


def test_bad_bodies_are_said_and_the_session_goes_on(dap: DapClient) -> None:
    # Given an initialized adapter
    dap.initialize()
    # When it gets a body that is not JSON, then threads is still answered
    dap.send_bytes(framed(b"{this is not json"))
    assert "not JSON" in said(dap, "not JSON")
    assert dap.threads() == []
    # ... a JSON body that is not an object
    dap.send_bytes(framed(b"[1, 2, 3]"))
    said(dap, "not a JSON object")
    # ... a request without seq
    dap.send_bytes(framed(json.dumps({"type": "request", "command": "threads"}).encode()))
    said(dap, "without an integer 'seq'")
    # ... a request without command: answered by its seq, as a failed response
    seq = dap.next_seq()
    dap.send_bytes(framed(json.dumps({"seq": seq, "type": "request"}).encode()), command="")
    failed = dap.wait_response(seq)
    assert not failed["success"] and "without a 'command'" in failed["message"]
    # ... arguments that are not an object
    seq = dap.next_seq()
    dap.send_bytes(framed(json.dumps({"seq": seq, "type": "request", "command": "threads",
                                      "arguments": [1]}).encode()), command="threads")
    assert not dap.wait_response(seq)["success"]
    # Then every later request is served
    assert dap.threads() == []
    assert not dap.request_raw("launch", program="/no/such/file.py")["success"]


def test_broken_framing_ends_the_session_with_its_reason_and_the_program_runs_on(
        dap: DapClient, natives: NativeSet) -> None:
    # Given a program stopped at a breakpoint
    capi = natives.capi
    dap.launch({"program": str(natives.script("capi_main.py")), "cwd": str(natives.directory),
                "console": "internalConsole", "env": natives.env({})},
               breakpoints={capi.source: [capi.line("step")]})
    dap.wait_stopped()
    pid = dap.processes()[0]
    # When a message comes without a Content-Length
    dap.send_bytes(b"Content-Type: application/json\r\n\r\n{}")
    # Then the session ends saying why, and the program runs on to its end
    assert "Content-Length" in said(dap, "session ends")
    dap.wait_event("terminated", timeout=30)
    assert dap.process is not None and dap.process.wait(30) == 0
    try:
        assert psutil.Process(pid).status() != psutil.STATUS_STOPPED
    except psutil.NoSuchProcess:
        pass  # it ran to its end


def test_a_launch_argument_of_the_wrong_type_ends_the_held_program(dap: DapClient, natives: NativeSet,
                                                                   tmp_path: Path) -> None:
    # Given a program that would leave a file behind, launched with justMyCode as a string
    ran = tmp_path / "ran"
    script = tmp_path / "leaves_a_file.py"
    script.write_text(f"open({str(ran)!r}, 'w').close()\n")
    dap.initialize()
    with pytest.raises(RequestFailed) as failed:
        dap.launch({"program": str(script), "cwd": str(tmp_path), "console": "internalConsole",
                    "justMyCode": "yes"})
    # Then the launch fails saying which argument, in one line (the schema's reason: it is
    # checked while the program's interpreter starts), and the program never ran a line
    message = failed.value.response["message"]
    assert "justMyCode" in message and "\n" not in message
    assert not ran.exists()
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(script) in " ".join(p.info["cmdline"] or [])]
