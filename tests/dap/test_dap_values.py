"""Values and editing through a real ``mixdbg dap`` (issue 22, items 2-4): Python values as
debugpy shows them (groups, ``len()``, ``evaluateName``, hints, paging, numpy, hex, the
clipboard, completions), setVariable and setExpression in both languages (the value set is
the value the program then uses: its printed line says so), and the evaluation guarantees:
an evaluation that raises is an error, one that runs forever is cancelled (``cancel`` or
Pause), a native breakpoint hit during one does not deadlock; the program runs on after
each. tests/dap/test_dap_parity_values.py runs the same features against debugpy's adapter
and gdb's own DAP as oracles."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import pyenv_python

from .client import DapClient, RequestFailed
from .natives import NativeSet, NativeSets

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(params=["3.11", *(pytest.param(version, marks=pytest.mark.slow) for version in ("3.10", "3.12", "3.13"))])
def any_natives(request: pytest.FixtureRequest, native_sets: NativeSets) -> NativeSet:
    """The driver scripts for a pyenv Python: 3.11, and 3.10, 3.12, 3.13 in the slow suite
    (each traces and cancels differently: 3.10/3.11 send no line event for a one-line loop)."""
    python = pyenv_python(request.param)
    if python is None:
        pytest.skip(f"no pyenv Python {request.param} here")
    return native_sets.get(str(python))


def _start(dap: DapClient, natives: NativeSet, script: str, breakpoints: dict[Any, list[int]],
           **config: Any) -> tuple[int, dict[str, Any]]:
    """Launch a driver script to its first stop: the thread and its innermost frame."""
    dap.launch({"program": str(natives.script(script)), "cwd": str(natives.directory), "console": "internalConsole",
                "env": natives.env({}), "python": natives.python, **config}, breakpoints=breakpoints)
    thread = dap.wait_stopped()["threadId"]
    return thread, dap.stack(thread)[0]


def _set(dap: DapClient, reference: int, name: str, value: str) -> str:
    result: str = dap.request("setVariable", variablesReference=reference, name=name, value=value)["body"]["value"]
    return result


def _cancelled_after(dap: DapClient, expression: str, frame: int, seconds: float, how: str = "cancel") -> dict:
    """Evaluate ``expression`` in the Debug Console, and after ``seconds`` cancel it (or
    pause); the evaluate response."""
    seq = dap.send_request("evaluate", {"expression": expression, "frameId": frame, "context": "repl"})
    time.sleep(seconds)
    if how == "cancel":
        dap.request("cancel", requestId=seq)
    else:
        dap.request("pause", threadId=1)
    response: dict = dap.wait_response(seq, 30)
    return response


def test_python_values_as_debugpy_shows_them_and_values_set_are_used(dap: DapClient, natives: NativeSet) -> None:
    script = natives.script("values_main.py")
    thread, frame = _start(dap, natives, "values_main.py", {script: [natives.line("values_main.py", "stop")]})
    assert all(dap.capabilities.get(name) for name in (
        "supportsSetVariable", "supportsSetExpression", "supportsCompletionsRequest", "supportsClipboardContext",
        "supportsValueFormattingOptions", "supportsCancelRequest"))
    scopes = {scope["name"]: scope["variablesReference"] for scope in dap.scopes(frame["id"])}
    assert list(scopes) == ["Locals", "Globals"]
    local = dap.frame_variables(frame["id"], "Locals")
    assert list(local) == sorted(local) and local["count"]["evaluateName"] == "count"
    assert local["text"]["presentationHint"] == {"attributes": ["rawString"]}
    # members: debugpy's groups first, then the public ones; len() read-only, with its expression
    box = dap.children(local["box"])
    assert list(box) == ["special variables", "function variables", "kind", "size", "_secret"]
    assert box["special variables"]["presentationHint"] == {"kind": "virtual"}
    assert box["_secret"]["evaluateName"] == "box._secret"
    items = dap.children(local["items"])
    assert [(name, item.get("evaluateName")) for name, item in items.items() if not name.endswith("variables")] == [
        ("0", "items[0]"), ("1", "items[1]"), ("2", "items[2]"), ("len()", "len(items)")]
    assert items["len()"]["presentationHint"] == {"attributes": ["readOnly"]}
    # a large list is paged (VS Code asks for 100 at a time)
    big = local["big"]
    assert (big["indexedVariables"], big["namedVariables"]) == (1000, 3)
    page = dap.request("variables", variablesReference=big["variablesReference"], filter="indexed", start=990,
                       count=3)["body"]["variables"]
    assert [(item["name"], item["value"]) for item in page] == [("990", "990"), ("991", "991"), ("992", "992")]
    # numpy, a dataclass, a namedtuple by field
    grid = dap.children(local["grid"])
    assert (grid["shape"]["value"], grid["min"]["value"], grid["max"]["value"]) == ("(3, 4)", "np.int64(0)",
                                                                                     "np.int64(11)")
    assert [name for name in dap.children(local["config"]) if not name.endswith("variables")] == ["rate", "steps"]
    assert dap.children(local["pair"])["left"]["evaluateName"] == "pair.left"
    # hex, the clipboard, completions
    assert dap.request("evaluate", expression="flags", frameId=frame["id"], context="watch",
                       format={"hex": True})["body"]["result"] == "0xff"
    hexed = dap.request("variables", variablesReference=local["items"]["variablesReference"],
                        format={"hex": True})["body"]["variables"]
    assert [item["value"] for item in hexed if item["name"].startswith("0x")] == ["0x1", "0x2", "0x3"]
    assert len(dap.evaluate("text", frame["id"])["result"]) < 10_000
    assert dap.request("evaluate", expression="text", frameId=frame["id"],
                       context="clipboard")["body"]["result"] == repr("x" * 100_000)
    labels = {t["label"] for t in dap.request("completions", frameId=frame["id"], text="conf",
                                              column=5)["body"]["targets"]}
    assert labels == {"Config", "config"}
    assert [t["label"] for t in dap.request("completions", frameId=frame["id"], text="box.gr",
                                            column=7)["body"]["targets"]] == ["grow"]
    # When every kind of member is set
    assert _set(dap, scopes["Locals"], "count", "40 + 1") == "41"
    assert _set(dap, scopes["Globals"], "COUNTER", "5") == "5"
    assert _set(dap, local["box"]["variablesReference"], "size", "7") == "7"
    assert _set(dap, local["items"]["variablesReference"], "1", "20") == "20"
    assert _set(dap, local["table"]["variablesReference"], "'alpha'", "100") == "100"
    assert _set(dap, grid["1"]["variablesReference"], "2", "60") == "np.int64(60)"
    assert dap.request("setExpression", frameId=frame["id"], expression="config.rate",
                       value="2.5")["body"]["value"] == "2.5"
    # Then the program uses them
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0
    assert ("values total 51 count 41 size 7 item 20 alpha 100 global 5 rate 2.5 flags 255 text 100000 pair 1 "
            "big 1000 grid 60") in dap.output("stdout")


def test_an_evaluation_that_raises_or_runs_forever_ends_and_the_program_runs_on(
        dap: DapClient, any_natives: NativeSet) -> None:
    natives = any_natives
    script = natives.script("values_main.py")
    thread, frame = _start(dap, natives, "values_main.py", {script: [natives.line("values_main.py", "stop")]})
    # An evaluation that raises is an error response with one line
    with pytest.raises(RequestFailed, match="ZeroDivisionError: division by zero"):
        dap.evaluate("1 / 0", frame["id"])
    # One that loops forever, or waits in C (time.sleep), is cancelled; VS Code was shown a
    # cancellable progress notification meanwhile
    response = _cancelled_after(dap, "while True: pass", frame["id"], 1.5)
    assert (response["success"], response["message"]) == (False, "cancelled")
    progress = dap.events("progressStart")[0]["body"]
    assert progress["cancellable"] and progress["title"] == "Evaluating while True: pass"
    assert dap.events("progressEnd")[0]["body"]["progressId"] == progress["progressId"]
    response = _cancelled_after(dap, "slow(1000)", frame["id"], 0.5)
    assert (response["success"], response["message"]) == (False, "cancelled")
    # ... Pause ends one too
    response = _cancelled_after(dap, "while True: pass", frame["id"], 0.5, how="pause")
    assert (response["success"], response["message"]) == (False, "cancelled")
    # a cancel of a request that is over is no error
    dap.request("cancel", requestId=1)
    # Then the stop goes on as before, and the program runs to its end
    assert dap.evaluate("count + 1", frame["id"])["result"] == "2"
    dap.request("continue", threadId=thread)
    assert dap.wait_exited() == 0
    assert "values total 11 count 1 size 1" in dap.output("stdout")


def test_a_request_in_another_thread_is_cancelled_at_its_next_line_or_paused_in_native_code(
        dap: DapClient, natives: NativeSet, tmp_path: Path) -> None:
    script = natives.script("thread_values_main.py")
    thread, frame = _start(dap, natives, "thread_values_main.py",
                           {script: [natives.line("thread_values_main.py", "worker_stop")]})
    assert frame["name"] == "worker"
    # Python that loops forever is cancelled at its next line (no signal reaches this thread)
    response = _cancelled_after(dap, "while True: pass", frame["id"], 0.5)
    assert (response["success"], response["message"]) == (False, "cancelled")
    assert dap.evaluate("out", frame["id"])["result"] == "[]"
    # a wait in native code cannot be: its thread is paused there, and the request cancelled
    # (the wait, opening a FIFO nobody writes yet, lasts until the test ends it: no race)
    release = tmp_path / "release"
    os.mkfifo(release)
    response = _cancelled_after(dap, f"open({str(release)!r}).read()", frame["id"], 0.5)
    assert (response["success"], response["message"]) == (False, "cancelled")
    paused = dap.wait_stopped()
    assert paused["reason"] == "pause" and paused["threadId"] == thread
    # Then the program runs on: the wait ends, the request with it, and the worker goes on
    dap.request("setBreakpoints", source={"path": str(script)}, breakpoints=[])
    dap.request("continue", threadId=thread)
    os.close(os.open(release, os.O_WRONLY))  # its open returns: the request ends at its next call
    assert dap.wait_exited(timeout=60) == 0
    assert "thread done [True]" in dap.output("stdout")


def test_native_values_set_and_a_native_breakpoint_during_a_python_evaluation(
        dap: DapClient, natives: NativeSet) -> None:
    capi, script = natives.capi, natives.script("native_values_main.py")
    thread, frame = _start(dap, natives, "native_values_main.py", {
        capi.source: [capi.line("point")], script: [natives.line("native_values_main.py", "python")]})
    assert frame["name"] == "native_point_sum"
    # the Python frames below show what memory allows: an instance's attributes, a list's
    # length, and a module's frame its globals
    frames = {f["name"]: f for f in dap.stack(thread)}
    local = dap.frame_variables(frames["main"]["id"], "Locals")
    assert [(name, local[name]["value"]) for name in ("box", "sizes", "before")] == [
        ("box", "Box(size=2, label='b')"), ("sizes", "list (len 3)"), ("before", "<unset>")]
    module = dap.frame_variables(frames["<module>"]["id"], "Locals")
    assert module["ext"]["value"] == "<module 'mixdbg_testext'>" and module["Box"]["value"] == "<class 'Box'>"
    scopes = {scope["name"]: scope["variablesReference"] for scope in dap.scopes(frame["id"])}
    assert "Registers" in scopes
    local = dap.frame_variables(frame["id"], "Locals")
    # a member, through VARIABLES; another through a Watch (setExpression); a register
    assert _set(dap, local["point"]["variablesReference"], "x", "100") == "100"
    assert dap.request("setExpression", frameId=frame["id"], expression="point.y", value="5")["body"]["value"] == "5"
    registers = dap.variables(scopes["Registers"])
    assert registers[0]["name"] == "$rax" and _set(dap, scopes["Registers"], "$rax", "1234") == "1234"
    assert dap.evaluate("$rax", frame["id"])["result"] == "1234"
    # hex, completions in C
    assert dap.request("evaluate", expression="point.x", frameId=frame["id"], context="watch",
                       format={"hex": True})["body"]["result"] == "0x64"
    assert {t["label"] for t in dap.request("completions", frameId=frame["id"], text="point.",
                                            column=7)["body"]["targets"]} == {"x", "y"}
    # a call gdb makes that never returns is cancelled (and unwound: the frame is as it was)
    response = _cancelled_after(dap, "native_wait_for_release()", frame["id"], 1.0)
    assert (response["success"], response["message"]) == (False, "cancelled")
    assert dap.evaluate("point.x + point.y", frame["id"])["result"] == "105"
    # When the Python stop evaluates native code that hits a native breakpoint
    dap.request("continue", threadId=thread)
    stop = dap.wait_stopped()
    python = dap.stack(stop["threadId"])[0]
    assert python["line"] == natives.line("native_values_main.py", "python")
    dap.request("setFunctionBreakpoints", breakpoints=[{"name": "native_step"}])
    with pytest.raises(RequestFailed, match="stopped elsewhere"):
        dap.evaluate("ext.loop(2)", python["id"])
    # Then the native stop is reported, nothing deadlocks, and the program runs on
    stop = dap.wait_stopped()
    assert dap.stack(stop["threadId"])[0]["name"] == "native_step"
    dap.request("setFunctionBreakpoints", breakpoints=[])
    dap.request("setBreakpoints", source={"path": str(script)}, breakpoints=[])
    dap.request("continue", threadId=stop["threadId"])
    assert dap.wait_exited() == 0
    assert "native values sum 105 ready 1 loop 6" in dap.output("stdout")
