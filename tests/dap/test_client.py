"""The DAP test client itself, against a fake adapter written here: the start-up sequence,
reverse requests, schema violations both ways, failures, timeouts, a dying adapter, TCP,
and a close() that never hangs. So the client cannot silently pass what it should fail."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import Forky

from .client import AdapterGone, DapClient, DapTimeout, RequestFailed
from .fixtures import forky_command
from .schema import DapSchema, ProtocolViolation
from .transport import port_in

pytestmark = pytest.mark.timeout(60)

#: A fake adapter: stdio, or TCP with --port (it prints "listening on port N").
FAKE_ADAPTER = r'''
import json, os, socket, subprocess, sys, time

if "--port" in sys.argv:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    print(f"listening on port {server.getsockname()[1]}", flush=True)
    conn, _ = server.accept()
    rfile, wfile = conn.makefile("rb"), conn.makefile("wb")
else:
    rfile, wfile = sys.stdin.buffer, sys.stdout.buffer
seq = 0


def send(message):
    global seq
    seq += 1
    body = json.dumps({"seq": seq, **message}).encode()
    wfile.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    wfile.flush()


def read():
    length = None
    while True:
        line = rfile.readline()
        if not line:
            return None
        if line == b"\r\n":
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(rfile.read(length))


def respond(request, body=None, error=None):
    message = {"type": "response", "request_seq": request["seq"], "command": request["command"],
               "success": error is None}
    if error is not None:
        message.update(message=error, body={"error": {"id": 9, "format": error}})
    elif body is not None:
        message["body"] = body
    send(message)


def event(name, body=None):
    send({"type": "event", "event": name, **({"body": body} if body is not None else {})})


seen, launch, deaf = [], None, False
while (message := read()) is not None:
    if message["type"] == "response":  # an answer to our reverse request: report it
        event("output", {"category": "console", "output": json.dumps(message) + "\n"})
        continue
    command, args = message["command"], message.get("arguments", {})
    seen.append(command)
    if command == "initialize":
        respond(message, {"supportsConfigurationDoneRequest": True, "supportsFunctionBreakpoints": True,
                          "exceptionBreakpointFilters": [{"filter": "raised", "label": "Raised"}]})
    elif command == "launch":
        if "program" not in args:
            respond(message, error="launch needs a program")
            continue
        launch, deaf = message, args.get("deaf", False)
        if args.get("terminal"):
            send({"type": "request", "command": "runInTerminal", "arguments": {
                "kind": "integrated", "cwd": "", "env": {"FAKE_TERMINAL": "yes", "HOME": None},
                "args": [sys.executable, "-c", "import os; print('terminal says', os.environ['FAKE_TERMINAL'],"
                         " os.environ.get('HOME'))"]}})
            send({"type": "request", "command": "startDebugging",
                  "arguments": {"request": "attach", "configuration": {"processId": 1}}})
            send({"type": "request", "command": "fancyReverse", "arguments": {}})
        event("initialized")
    elif command in ("setBreakpoints", "setFunctionBreakpoints"):
        specs = args["breakpoints"]
        respond(message, {"breakpoints": [{"id": i, "verified": command != "setBreakpoints", **(
            {"line": spec["line"]} if "line" in spec else {})} for i, spec in enumerate(specs, 1)]})
    elif command == "setExceptionBreakpoints":
        respond(message)
    elif command == "disconnect":
        if not deaf:
            respond(message)
            break
    elif command == "configurationDone":
        respond(message)
        respond(launch)
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        event("process", {"name": "sleeper", "systemProcessId": sleeper.pid, "startMethod": "launch"})
        event("output", {"category": "stdout", "output": "out one\n"})
        event("output", {"category": "stderr", "output": "err one\n"})
        event("output", {"category": "stdout", "output": "out two\n"})
        event("stopped", {"reason": "breakpoint", "threadId": 1, "allThreadsStopped": True})
    elif command == "threads":
        respond(message, {"threads": [{"id": 1, "name": "MainThread"}]})
    elif command == "stackTrace":
        respond(message, {"stackFrames": [{"id": 5, "name": "main", "line": 3, "column": 1,
                                           "source": {"path": "/x/app.py"}}]})
    elif command == "scopes":
        respond(message, {"scopes": [{"name": "Locals", "variablesReference": 7, "expensive": False}]})
    elif command == "variables":
        respond(message, {"variables": [{"name": "x", "value": "41", "variablesReference": 0},
                                        {"name": "p", "value": "{...}", "variablesReference": 8}]}
                if args["variablesReference"] == 7 else {"variables": [{"name": "y", "value": "2",
                                                                        "variablesReference": 0}]})
    elif command == "evaluate":
        respond(message, {"variablesReference": 0} if args["expression"] == "violate" else
                {"result": "42", "variablesReference": 0})
    elif command == "next":
        respond(message)
        time.sleep(0.05)
        event("stopped", {"reason": "step", "threadId": 1})
    elif command == "continue":
        respond(message, {"allThreadsContinued": True})
        event("exited", {"exitCode": 3})
        event("terminated")
    elif command == "seen":
        respond(message, {"commands": seen})
    elif command == "twice":
        respond(message)
        respond(message)
    elif command == "die":
        os._exit(5)
    elif command == "garble":
        wfile.write(b"Content-Length: 7\r\n\r\n{oops}!")
        wfile.flush()
    elif command != "hang" and not deaf:
        respond(message, error=f"the fake adapter has no {command}")
while deaf:
    time.sleep(1)
'''


@pytest.fixture
def fake(tmp_path: Path) -> list[str]:
    """The command that starts the fake adapter."""
    script = tmp_path / "fake_adapter.py"
    script.write_text(FAKE_ADAPTER)
    return [sys.executable, str(script)]


@pytest.fixture
def client(fake: list[str], tmp_path: Path, dap_schema: DapSchema) -> Iterator[DapClient]:
    """A client of the fake adapter over stdio (closed by each test; by the fixture too, if
    the test failed before)."""
    client = DapClient.spawn(fake, tmp_path / "dap", dap_schema, timeout=10)
    yield client
    client.close(grace=0.5)


def ended(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie has)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def commands_seen(client: DapClient) -> list[str]:
    """The requests the fake adapter received, in order."""
    seen: list[str] = client.request("seen")["body"]["commands"]
    return seen


def test_startup_sequence_and_a_stop_as_vscode_does(client: DapClient, tmp_path: Path) -> None:
    # Given a launch with source, function and exception breakpoints
    app = tmp_path / "app.py"
    startup = client.launch({"program": str(app)}, breakpoints={app: [3, {"line": 5, "condition": "x > 1"}]},
                            function_breakpoints=["native_step"], exception_filters=["raised"])
    # Then the requests went in VS Code's order, the launch answered after configurationDone
    assert commands_seen(client) == ["initialize", "launch", "setBreakpoints", "setFunctionBreakpoints",
                                     "setExceptionBreakpoints", "configurationDone", "seen"]
    assert client.capabilities["supportsConfigurationDoneRequest"] is True
    assert [b["line"] for b in startup.breakpoints[str(app)]] == [3, 5]
    assert not startup.breakpoints[str(app)][0]["verified"] and startup.function_breakpoints[0]["verified"]
    assert startup.response["success"] and client.elapsed(startup.response) > 0
    # and the stop is served through the helpers
    stopped = client.wait_stopped(lambda body: body["reason"] == "breakpoint")
    assert client.threads() == [{"id": 1, "name": "MainThread"}]
    frame = client.stack(stopped["threadId"])[0]
    assert (frame["name"], frame["line"]) == ("main", 3)
    variables = client.frame_variables(frame["id"])
    assert variables["x"]["value"] == "41" and client.children(variables["p"])["y"]["value"] == "2"
    assert client.evaluate("x + 1", frame["id"])["result"] == "42"
    assert client.output("stdout") == "out one\nout two\n" and client.output("stderr") == "err one\n"
    assert client.received_at(stopped) > startup.sent_at
    # When stepping, timed
    timed = client.timed("next", threadId=1)
    assert timed.event["body"]["reason"] == "step" and 0 < timed.to_response <= timed.to_event
    assert client.step("next", 1)["reason"] == "step"
    # and continuing to the end
    client.request("continue", threadId=1)
    assert client.wait_exited() == 3
    client.wait_event("terminated")
    # Then close() ends the process the adapter announced, which outlived the session
    [sleeper] = client.processes()
    client.close(grace=0.5)
    assert client.killed == [sleeper] and ended(sleeper)
    assert client.process is not None and client.process.returncode == 0


def test_reverse_requests_are_answered_as_an_editor_does(client: DapClient) -> None:
    # When the adapter asks for a terminal, a child session, and something unknown
    client.launch({"program": "app.py", "terminal": True})
    # Then the terminal's command ran detached, with the environment asked for
    terminal = client.terminals[0]
    assert terminal.wait(10) == 0
    assert terminal.output() == "terminal says yes None\n"
    assert client.start_debugging == [{"request": "attach", "configuration": {"processId": 1}}]
    answers = [json.loads(line) for line in client.output("console").splitlines()]
    assert [(a["command"], a["success"]) for a in answers] == [
        ("runInTerminal", True), ("startDebugging", True), ("fancyReverse", False)]
    assert answers[0]["body"]["processId"] == terminal.process.pid
    client.close(grace=0.5)


def test_a_response_violating_the_schema_fails_the_test(client: DapClient) -> None:
    client.initialize()
    with pytest.raises(ProtocolViolation, match=r"received message violates EvaluateResponse at body.*'result'"):
        client.evaluate("violate")
    client.close()


def test_a_request_violating_the_schema_is_not_sent(client: DapClient) -> None:
    client.initialize()
    with pytest.raises(ProtocolViolation, match="sent message violates SetBreakpointsRequest"):
        client.request("setBreakpoints", breakpoints=[{"line": 1}])  # no source
    assert "setBreakpoints" not in commands_seen(client)
    client.close()


def test_failed_requests_raise_with_the_adapters_message(client: DapClient) -> None:
    with pytest.raises(RequestFailed, match="launch needs a program") as failed:
        client.launch({"noDebug": False})
    assert failed.value.response["command"] == "launch"
    response = client.request_raw("bogus")
    assert not response["success"] and response["message"] == "the fake adapter has no bogus"
    client.close()


def test_a_timeout_says_what_was_awaited_and_what_was_seen(client: DapClient) -> None:
    client.initialize()
    with pytest.raises(DapTimeout, match=r"(?s)0.3 s waiting for the response to hang.*-> .*\"hang\""):
        client.request("hang", timeout=0.3)
    with pytest.raises(DapTimeout, match="event 'stopped'"):
        client.wait_stopped(timeout=0.1)
    client.close()


def test_an_adapter_that_dies_fails_the_wait_at_once(client: DapClient) -> None:
    client.initialize()
    started = time.monotonic()
    with pytest.raises(AdapterGone, match="closed the connection while waiting for the response to die"):
        client.request("die")
    assert time.monotonic() - started < 5
    client.close()
    assert client.process is not None and client.process.returncode == 5


def test_a_second_response_is_a_violation(client: DapClient) -> None:
    client.initialize()
    with pytest.raises(ProtocolViolation, match="a second response to one request"):
        client.request("twice")  # the second may come before the wait ends, or after
        client.request("seen")
    client.close()


def test_a_broken_frame_is_a_violation(client: DapClient) -> None:
    client.initialize()
    with pytest.raises(ProtocolViolation, match="not UTF-8 JSON"):
        client.request("garble")
    client.close()


def test_tcp_transport(fake: list[str], tmp_path: Path, dap_schema: DapSchema) -> None:
    client = DapClient.serve([*fake, "--port"], tmp_path, dap_schema, timeout=10)
    try:
        assert client.initialize()["supportsFunctionBreakpoints"]
    finally:
        client.close()
    assert client.process is not None and client.process.returncode == 0


def test_close_never_hangs_on_a_deaf_adapter(client: DapClient) -> None:
    # Given an adapter that ignores disconnect and the end of its input
    client.launch({"program": "app.py", "deaf": True})
    started = time.monotonic()
    # Then close() reports the unanswered disconnect, having ended the adapter by PID
    with pytest.raises(AssertionError, match="disconnect: timed out"):
        client.close(timeout=1, grace=0.2)
    assert time.monotonic() - started < 10
    assert client.process is not None and client.process.pid in client.killed
    assert client.process.returncode is not None


@pytest.mark.slow
def test_stdio_through_the_forky_chroot(forky: Forky, tmp_path: Path, dap_schema: DapSchema) -> None:
    # Given the fake adapter started inside the chroot (its PID is the adapter's: forky execs)
    (tmp_path / "fake_adapter.py").write_text(FAKE_ADAPTER)
    client = DapClient.spawn(forky_command(forky, tmp_path, ["python3.14", "/project/fake_adapter.py"]),
                             tmp_path / "dap", dap_schema, timeout=60)
    try:
        # Then a session runs through it as through a local pipe
        client.launch({"program": "/project/app.py"})
        assert client.wait_stopped()["reason"] == "breakpoint"
    finally:
        client.close(grace=0.5)
    assert client.process is not None and client.process.returncode == 0


@pytest.mark.parametrize(("stdout", "port"), [
    ('{"port": 4711, "pid": 12}\n', 4711), ("mixdbg dap listening on port 4712\n", 4712),
    ("127.0.0.1:4713\n", 4713), ("4714\n", 4714), ("starting\n", None)])
def test_port_announcements(stdout: str, port: int | None) -> None:
    assert port_in(stdout) == port
