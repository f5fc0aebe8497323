"""The requests a stopped thread serves, in this process (the agent's ``stopsession``,
``members`` and ``values``): values as debugpy shows them (groups, ``len()``,
``evaluateName``, hints, numpy, dataclasses, namedtuples, hex, the clipboard), paging,
setVariable and setExpression (the value set is the one the code then uses), completions,
and cancellation. tests/dap/test_dap_values.py runs them through a real ``mixdbg dap``."""

from __future__ import annotations

import collections
import dataclasses
import sys
import threading
import time
import types
from typing import Any

import pytest

from mixdbg.pyagent import members, stopsession, values

SPECIAL, FUNCTIONS = members.SPECIAL, members.FUNCTIONS


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self) -> None:
        self.a = 1


class Plain:
    kind = int

    def __init__(self) -> None:
        self.x = [1, 2]
        self._hidden = 3

    def method(self) -> None:
        """A method: a function variable."""


@dataclasses.dataclass
class Point:
    y: int
    x: int = 2


Pair = collections.namedtuple("Pair", "right left")


def _session() -> stopsession.StopSession:
    return stopsession.StopSession([sys._getframe(1)])


def _ask(session: stopsession.StopSession, **command: Any) -> Any:
    reply = session.handle({"id": 1, **command})
    assert "error" not in reply, reply
    return reply["body"]


def _by_name(listed: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {var["name"]: var for var in listed}


def _children(session: stopsession.StopSession, var: dict[str, Any], **page: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = _ask(session, command="children", ref=var["ref"], **page)["variables"]
    return found


def test_members_as_debugpy_shows_them() -> None:
    numbers, table, plain, slotted = [10, 20], {"k": 1, (1, 2): "t", Plain: 0}, Plain(), Slotted()  # noqa: F841
    point, pair, text, empty = Point(1), Pair(3, 4), "abc", []  # noqa: F841
    session = _session()
    scope = _ask(session, command="variables", frame=0)["variables"]
    # locals: sorted by name, each reached by its own name, strings marked raw
    names = [var["name"] for var in scope]
    assert names == sorted(names) and _by_name(scope)["numbers"]["evaluateName"] == "numbers"
    assert _by_name(scope)["text"]["hint"] == "rawString"
    local = _by_name(scope)
    # a list: its groups first, items by index, then len() (read-only)
    kids = _children(session, local["numbers"])
    assert [kid["name"] for kid in kids] == [SPECIAL, FUNCTIONS, "0", "1", "len()"]
    assert [kid.get("evaluateName") for kid in kids[2:]] == ["numbers[0]", "numbers[1]", "len(numbers)"]
    assert kids[0]["hint"] == "virtual" and kids[-1]["hint"] == "readOnly" and kids[-1]["value"] == "2"
    assert "append" in _by_name(_children(session, kids[1]))
    # a dict: keys by repr, an expression only where the repr evaluates to the key
    kids = _by_name(_children(session, local["table"]))
    assert kids["'k'"]["evaluateName"] == "table['k']" and kids["(1, 2)"]["evaluateName"] == "table[(1, 2)]"
    assert "evaluateName" not in kids[repr(Plain)] and kids["len()"]["evaluateName"] == "len(table)"
    # an object: its attributes inline, protected ones last; class, special and function ones grouped
    kids = _by_name(_children(session, local["plain"]))
    assert list(kids) == [SPECIAL, FUNCTIONS, members.CLASSES, "x", "_hidden"]
    assert kids["x"]["evaluateName"] == "plain.x" and kids["_hidden"]["evaluateName"] == "plain._hidden"
    assert "method" in _by_name(_children(session, kids[FUNCTIONS]))
    assert "a" in _by_name(_children(session, local["slotted"])) and "b" not in _by_name(
        _children(session, local["slotted"]))  # b is unset
    # a dataclass and a namedtuple: fields in declaration order, after the groups
    kids = [kid["name"] for kid in _children(session, local["point"]) if kid["name"] not in members.GROUPS]
    assert kids == ["y", "x"]
    kids = [kid for kid in _children(session, local["pair"]) if kid["name"] not in members.GROUPS
            and not kid["name"].startswith("_")]
    assert [(kid["name"], kid.get("evaluateName")) for kid in kids] == [
        ("right", "pair.right"), ("left", "pair.left"), ("len()", "len(pair)")]
    assert kids[0]["hint"] == "readOnly"  # a tuple's field cannot be set
    # an empty container can still be expanded (its groups, len() 0); a string cannot
    assert _by_name(_children(session, local["empty"]))["len()"]["value"] == "0" and local["text"]["ref"] == 0


def test_return_values_come_first_read_only() -> None:
    local = 1  # noqa: F841
    session = stopsession.StopSession([sys._getframe()], returns=[("compute", 42)])
    shown = _ask(session, command="variables", frame=0)["variables"]
    assert [(var["name"], var["value"], var.get("hint")) for var in shown][:2] == [
        ("(return) compute", "42", "readOnly"), ("local", "1", None)]


def test_item_names_are_zero_padded_and_hex_on_request() -> None:
    twelve = list(range(12))  # noqa: F841
    session = _session()
    var = _by_name(_ask(session, command="variables", frame=0)["variables"])["twelve"]
    assert [kid["name"] for kid in _children(session, var)][2:5] == ["00", "01", "02"]
    hexed = _children(session, var, format={"hex": True})
    assert [kid["name"] for kid in hexed][2:4] == ["0x0", "0x1"] and hexed[13]["value"] == "0xb"
    assert _ask(session, command="evaluate", frame=0, expression="255", context="watch",
                format={"hex": True})["result"] == "0xff"
    assert _ask(session, command="evaluate", frame=0, expression="[255, 'a']", context="watch",
                format={"hex": True})["result"] == "[0xff, 'a']"


def test_a_huge_container_is_paged_never_read_whole() -> None:
    class Counted(list):  # type: ignore[type-arg]
        reads = 0

        def __getitem__(self, index: Any) -> Any:
            found = super().__getitem__(index)
            Counted.reads += len(found) if isinstance(index, slice) else 1
            return found

    huge = Counted(range(3_000_000))  # noqa: F841
    session = _session()
    var = _by_name(_ask(session, command="variables", frame=0)["variables"])["huge"]
    assert var["indexed"] == 3_000_000 and var["named"] == 4  # two groups, the class's reads, len()
    assert var["value"].startswith("[0, 1, 2") and len(var["value"]) <= values.MAX_REPR
    page = _children(session, var, filter="indexed", start=2_000_000, count=3)
    assert [(kid["name"], kid["evaluateName"]) for kid in page] == [
        ("2000000", "huge[2000000]"), ("2000001", "huge[2000001]"), ("2000002", "huge[2000002]")]
    assert [kid["name"] for kid in _children(session, var, filter="named")] == [SPECIAL, FUNCTIONS, "reads", "len()"]
    assert Counted.reads == 3
    # a client that does not page gets the first MAX_CHILDREN items
    assert len(_children(session, var)) == values.MAX_CHILDREN + 4


def test_numpy_arrays_show_dtype_shape_min_max_and_items() -> None:
    numpy = pytest.importorskip("numpy")
    grid = numpy.arange(12, dtype=numpy.int32).reshape(3, 4)
    session = _session()
    var = _by_name(_ask(session, command="variables", frame=0)["variables"])["grid"]
    kids = _by_name(_children(session, var))
    assert (kids["dtype"]["value"], kids["shape"]["value"], kids["size"]["value"]) == ("dtype('int32')", "(3, 4)", "12")
    assert (kids["min"]["value"], kids["max"]["value"]) == ("np.int32(0)", "np.int32(11)")
    assert kids["1"]["evaluateName"] == "grid[1]" and kids["1"]["value"] == "array([4, 5, 6, 7], dtype=int32)"
    assert [kid["value"] for kid in _children(session, kids["1"]) if kid["name"] in ("0", "3")] == [
        "np.int32(4)", "np.int32(7)"]
    _ask(session, command="setVariable", ref=kids["1"]["ref"], name="2", value="60")
    assert int(grid[1][2]) == 60


class _Flat(list):  # type: ignore[type-arg]
    """What ``tensor.detach().reshape(-1)[:16]`` is enough like for the agent."""

    def __getitem__(self, index: Any) -> Any:
        return _Flat(super().__getitem__(index)) if isinstance(index, slice) else super().__getitem__(index)

    def tolist(self) -> list[float]:
        return list(self)


class FakeTensor:
    dtype, shape, device = "torch.float32", (2, 20), "cpu"

    def detach(self) -> FakeTensor:
        return self

    def reshape(self, *shape: int) -> _Flat:
        return _Flat(float(index) for index in range(40))


def test_tensor_children_only_when_the_program_imported_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    tensor = FakeTensor()
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert "values" not in {m.name for m in members.listing(tensor, "t").all(10)}  # an ordinary object
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=FakeTensor))
    assert {m.name: m.value for m in members.listing(tensor, "t").all(10)} == {
        "dtype": "torch.float32", "shape": (2, 20), "device": "cpu", "values": [float(i) for i in range(16)]}


def test_the_clipboard_gets_the_whole_value() -> None:
    long = "x" * 200_000  # noqa: F841
    session = _session()
    shown = _ask(session, command="evaluate", frame=0, expression="long", context="watch")["result"]
    copied = _ask(session, command="evaluate", frame=0, expression="long", context="clipboard")["result"]
    assert len(shown) == values.MAX_REPR and copied == repr("x" * 200_000)
    assert _ask(session, command="evaluate", frame=0, expression="None", context="repl")["result"] == ""


def _count_after_a_stop(commands: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """Serve ``commands`` at a 'stop' in a frame whose local ``count`` is 1; the value the
    frame's code sees afterwards, and the replies."""
    count = 1
    session = stopsession.StopSession([sys._getframe()])
    replies = [session.handle({"id": n, **command}) for n, command in enumerate(commands)]
    return count, replies


def test_set_variable_is_the_value_the_code_then_uses() -> None:
    count, replies = _count_after_a_stop([
        {"command": "setVariable", "frame": 0, "scope": "locals", "name": "count", "value": "count + 41"}])
    assert count == 42 and replies[0]["body"]["value"] == "42"
    box, items, tags, point = Plain(), [1, 2], {"a"}, Point(1)
    session = _session()
    local = _by_name(_ask(session, command="variables", frame=0)["variables"])
    assert _ask(session, command="setVariable", ref=local["box"]["ref"], name="x", value="'set'")["value"] == "'set'"
    assert _ask(session, command="setVariable", ref=local["items"]["ref"], name="1", value="20")["value"] == "20"
    assert _ask(session, command="setVariable", ref=local["tags"]["ref"], name="0", value="'b'")["value"] == "'b'"
    assert _ask(session, command="setVariable", ref=local["point"]["ref"], name="x", value="7")["value"] == "7"
    assert (box.x, items, tags, point.x) == ("set", [1, 20], {"b"}, 7)
    refused = session.handle({"command": "setVariable", "ref": local["items"]["ref"], "name": "len()", "value": "1"})
    assert refused["error"] == "TypeError: len() cannot be changed"


def test_set_expression_and_globals() -> None:
    box = Plain()
    session = _session()
    assert _ask(session, command="setExpression", frame=0, expression="box.x[0]", value="100 + 1")["value"] == "101"
    assert box.x == [101, 2]
    _ask(session, command="setVariable", frame=0, scope="globals", name="GLOBAL_FOR_TEST", value="5")
    assert GLOBAL_FOR_TEST == 5


GLOBAL_FOR_TEST = 0


def test_completions_names_attributes_and_keys() -> None:
    settings = {"alpha": 1, "beta": 2}  # noqa: F841
    plain = Plain()  # noqa: F841
    session = _session()

    def labels(text: str) -> dict[str, dict[str, Any]]:
        found = _ask(session, command="completions", frame=0, text=text, column=len(text) + 1)["targets"]
        return {target["label"]: target for target in found}
    found = labels("sett")
    assert found["settings"] == {"label": "settings", "type": "field", "start": 0, "length": 4}
    assert "setattr" in labels("seta") and labels("seta")["setattr"]["type"] == "function"
    found = labels("x = plain.me")
    assert found == {"method": {"label": "method", "type": "function", "start": 10, "length": 2}}
    assert "x" in labels("plain.") and labels("plain.")["kind"]["type"] == "class"
    assert set(labels("settings['a")) == {"'alpha'"} and set(labels("settings[")) == {"'alpha'", "'beta'"}
    assert labels("undefined_name.") == {}


def test_a_request_is_cancelled_at_its_next_line() -> None:
    flag, tracing = threading.Event(), sys.gettrace()
    session = stopsession.StopSession([sys._getframe()], cancelled=flag.is_set)
    threading.Timer(0.2, flag.set).start()
    started = time.monotonic()
    reply = session.handle({"id": 1, "command": "evaluate", "frame": 0, "expression": "while True: pass",
                            "context": "repl"})
    assert reply["error"] == "cancelled" and time.monotonic() - started < 5
    # the user's own ``except Exception`` does not swallow it
    reply = session.handle({"id": 2, "command": "evaluate", "frame": 0, "context": "repl", "expression":
                            "while True:\n  try:\n    pass\n  except Exception:\n    pass"})
    assert reply["error"] == "cancelled"
    # and the tracing of this thread is what it was
    assert sys.gettrace() is tracing


def test_errors_are_one_line() -> None:
    session = _session()
    errors = [session.handle(command)["error"] for command in (
        {"command": "evaluate", "id": 5, "frame": 0, "expression": "nope", "context": "watch"},
        {"command": "evaluate", "id": 6, "frame": 0, "expression": "x = 1", "context": "hover"},
        {"command": "children", "id": 7, "ref": 99},
        {"command": "variables", "id": 8, "frame": 5},
        {"command": "setVariable", "id": 9, "frame": 0, "scope": "locals", "name": "missing", "value": "1"},
        {"command": "teleport", "id": 10})]
    assert errors == ["NameError: name 'nope' is not defined", errors[1],
                      "KeyError: 'no variable reference 99 at this stop'", "IndexError: no Python frame 5 at this stop",
                      "KeyError: 'no variable missing here'", "ValueError: unknown command 'teleport'"]
    assert errors[1].startswith("SyntaxError")
