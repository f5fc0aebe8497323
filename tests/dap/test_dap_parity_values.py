"""Values and editing against the shipping debuggers as oracles (issue 22, acceptance 2):
one DAP client script runs against debugpy's adapter and ``mixdbg dap`` on the same
program, and what the user sees must be the same: the values set are the ones the program
then prints, hex ``0xff``, the whole clipboard text, the member groups and ``len()``, the
completions. For native setVariable the oracle is gdb's own DAP (``gdb -i dap``) on the C
extension built ``-g`` by the tests."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import pyenv_python

from .client import DapClient
from .fixtures import DapFactory
from .natives import NativeSet, NativeSets
from .oracles import DEBUGPY, GDB, Adapter, against

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(params=["3.11", pytest.param("3.12", marks=pytest.mark.slow),
                        pytest.param("3.13", marks=pytest.mark.slow)])
def python_natives(request: pytest.FixtureRequest, native_sets: NativeSets) -> NativeSet:
    """The driver scripts (and modules) for a pyenv Python: 3.11 by default, 3.12 and 3.13
    in the slow suite (debugpy's adapter runs on the tests' Python and launches it)."""
    python = pyenv_python(request.param)
    if python is None:
        pytest.skip(f"no pyenv Python {request.param} here")
    return native_sets.get(str(python))


def _start(client: DapClient, adapter: Adapter, natives: NativeSet, script: str, line: int,
           source: Any = None) -> tuple[int, dict[str, Any]]:
    client.launch(adapter.config(natives, script), breakpoints={source or natives.script(script): [line]})
    thread = client.wait_stopped(timeout=60)["threadId"]
    return thread, client.stack(thread)[0]


def _visible(member: dict[str, Any]) -> tuple[Any, ...]:
    """What VARIABLES shows of a member: name, value, expression, read-only."""
    return (member["name"], member["value"], member.get("evaluateName"),
            "readOnly" in (member.get("presentationHint") or {}).get("attributes", []))


def python_values_scenario(client: DapClient, adapter: Adapter, natives: NativeSet) -> dict[str, Any]:
    """The user's session at the stop in values_main.work: look at members, copy a value,
    complete, set values of every kind, continue; what each step showed."""
    thread, frame = _start(client, adapter, natives, "values_main.py", natives.line("values_main.py", "stop"))
    seen: dict[str, Any] = {}
    scopes = {scope["name"]: scope["variablesReference"] for scope in client.scopes(frame["id"])}
    local = client.frame_variables(frame["id"], "Locals")
    box, items = client.children(local["box"]), client.children(local["items"])
    seen["box"] = [_visible(member) for member in box.values() if not member["name"].endswith(" variables")]
    seen["box groups"] = [name for name in box if name.endswith(" variables")]
    seen["box functions"] = sorted(client.children(box["function variables"]))
    seen["items"] = [_visible(member) for member in items.values()]
    seen["hex"] = client.request("evaluate", expression="flags", frameId=frame["id"], context="watch",
                                 format={"hex": True})["body"]["result"]
    seen["clipboard"] = client.request("evaluate", expression="text", frameId=frame["id"],
                                       context="clipboard")["body"]["result"]
    seen["completions"] = {text: sorted(t["label"] for t in client.request(
        "completions", frameId=frame["id"], text=text, column=len(text) + 1)["body"]["targets"])
        for text in ("conf", "box.gr", "box.si")}
    for reference, name, value in ((scopes["Locals"], "count", "40 + 1"), (scopes["Globals"], "COUNTER", "5"),
                                   (local["box"]["variablesReference"], "size", "7"),
                                   (local["items"]["variablesReference"], "1", "20"),
                                   (local["table"]["variablesReference"], "'alpha'", "100")):
        seen[f"set {name}"] = client.request("setVariable", variablesReference=reference, name=name,
                                             value=value)["body"]["value"]
    seen["set expression"] = client.request("setExpression", frameId=frame["id"], expression="config.rate",
                                            value="2.5")["body"]["value"]
    client.request("continue", threadId=thread)
    seen["exit"] = client.wait_exited(timeout=60)
    seen["printed"] = next(line for line in client.output("stdout").splitlines() if line.startswith("values total"))
    return seen


def test_python_values_and_editing_as_debugpy(dap_factory: DapFactory, python_natives: NativeSet) -> None:
    # Given the same program, run under debugpy's adapter and under mixdbg dap
    expected, found = against(DEBUGPY, dap_factory,
                              lambda client, adapter: python_values_scenario(client, adapter, python_natives))
    # Then the user saw the same at each step, and the program used the values set
    assert found == expected
    assert expected["printed"].startswith("values total 51 count 41 size 7 item 20 alpha 100 global 5 rate 2.5")
    assert expected["hex"] == "0xff" and expected["clipboard"] == repr("x" * 100_000)
    assert ("len()", "3", "len(items)", True) in expected["items"] and expected["completions"]["box.gr"] == ["grow"]


def native_set_variable_scenario(client: DapClient, adapter: Adapter, natives: NativeSet) -> dict[str, Any]:
    """At the stop in native_point_sum (C), set a member of the struct local through
    VARIABLES; continue; what the program printed."""
    capi = natives.capi
    thread, frame = _start(client, adapter, natives, "native_values_main.py", capi.line("point"), capi.source)
    seen: dict[str, Any] = {"frame": frame["name"]}
    point = client.frame_variables(frame["id"], "Locals")["point"]
    seen["members"] = {name: member["value"] for name, member in client.children(point).items()}
    seen["set"] = client.request("setVariable", variablesReference=point["variablesReference"], name="x",
                                 value="100")["body"]["value"]
    seen["after"] = {name: member["value"] for name, member in client.children(point).items()}
    client.request("setBreakpoints", source={"path": str(capi.source)}, breakpoints=[])
    client.request("continue", threadId=thread)
    seen["exit"] = client.wait_exited(timeout=60)
    seen["printed"] = next(line for line in client.output("stdout").splitlines()
                           if line.startswith("native values"))
    return seen


def test_native_set_variable_as_gdbs_own_dap(dap_factory: DapFactory, natives: NativeSet) -> None:
    # Given the C extension's struct local, under gdb's DAP and under mixdbg dap
    expected, found = against(GDB, dap_factory,
                              lambda client, adapter: native_set_variable_scenario(client, adapter, natives))
    # Then the same member was set, and the program summed the value set
    assert found == expected
    assert expected["set"] == "100" and expected["printed"].startswith("native values sum 102")
