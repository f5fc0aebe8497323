"""The Python agent's pure parts, in this process: the memory layout of the contract, hit
conditions, justMyCode, evaluation (test_pyagent_values.py: variables and the requests of a
stop; tests/integration/test_pyagent.py runs the agent in real debuggees)."""

from __future__ import annotations

import ctypes
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from mixdbg.pyagent import agent, exception_stops, jumps, layout, values


def test_layout_is_the_contracts() -> None:
    assert layout.MAGIC.to_bytes(8, "little") == b"MMXDBGAG"
    assert [(name, getattr(layout.Shared, name).offset) for name in ("magic", "version", "armed", "slots")] == [
        ("magic", 0), ("version", 8), ("armed", 12), ("slots", 16)]
    assert ctypes.sizeof(layout.Slot) == 16 and layout.Slot.mode.offset == 8 and layout.Slot.depth.offset == 12
    assert ctypes.sizeof(layout.Shared) == 16 + 16 * 16 + 32
    assert [getattr(layout.Shared, name).offset for name in ("attend", "trace_call", "attend_call", "frame_trace",
                                                            "trace_object")] == [272, 280, 288, 296, 300]
    offsets = [getattr(layout.Mailbox, name).offset for name in ("magic", "shared", "tid", "out_len", "in_len",
                                                                "out", "in_")]
    assert offsets == [0, 8, 16, 24, 28, 32, 32 + (1 << 20)]
    assert ctypes.sizeof(layout.Mailbox) == 32 + (1 << 20) + (64 << 10)


@pytest.mark.parametrize(("condition", "stops_at"), [
    ("3", [3]), ("==3", [3]), (" >= 4 ", [4, 5, 6]), (">5", [6]), ("<3", [1, 2]), ("<=1", [1]),
    ("%2", [2, 4, 6]), ("@HIT@ in (1, 5)", [1, 5]),
])
def test_hit_conditions_as_debugpy_reads_them(condition: str, stops_at: list[int]) -> None:
    assert [hits for hits in range(1, 7) if values.hit_condition_met(condition, hits)] == stops_at


def test_just_my_code(tmp_path: Path) -> None:
    mine = str(tmp_path / "mine.py")
    assert agent.is_user_code(mine)
    assert not agent.is_user_code(os.__file__)  # the standard library
    assert not agent.is_user_code(pytest.__file__)  # site-packages
    assert not agent.is_user_code(agent.__file__) and not agent.is_user_code(str(Path(agent.__file__).parents[1] / "cli.py"))
    assert not agent.is_user_code("<frozen runpy>") and not agent.is_user_code("<string>")
    # justMyCode false: any real file but mixdbg's own
    assert agent.is_user_code(os.__file__, just_my_code=False)
    assert not agent.is_user_code(agent.__file__, just_my_code=False)
    assert not agent.is_user_code("<string>", just_my_code=False)


def test_depth_counts_every_frame() -> None:
    frame = sys._getframe()
    depth = agent.depth_of(frame)
    assert depth == agent.depth_of(frame.f_back) + 1 >= 2
    assert agent._depth_at_most(frame, depth) and not agent._depth_at_most(frame, depth - 1)


def _frame_with_local() -> tuple[types.FrameType, int]:
    x = 1
    frame = sys._getframe()
    assert values.evaluate_in(frame, "x = 42", statements=True) == (False, None)
    return frame, x


def test_statements_change_locals() -> None:
    _, x = _frame_with_local()
    assert x == 42


def test_logpoint_interpolation() -> None:
    n = 3  # noqa: F841 (read through the frame)
    frame = sys._getframe()
    assert values.interpolate("n={n} sq={n * n} bad={missing}", frame) == (
        "n=3 sq=9 bad=<NameError: name 'missing' is not defined>")


def test_the_step_signal_is_taken_only_when_nothing_handles_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    number = agent.STEP_SIGNAL
    assert signal.SIGRTMIN < number <= signal.SIGRTMAX
    before = signal.getsignal(number)
    try:
        # Given a program that handles that signal itself: the agent leaves it, and says none
        def mine(signum: int, frame: Any) -> None:
            pass
        signal.signal(number, mine)
        monkeypatch.setattr(agent, "_step_signal", None)
        agent._take_step_signal()
        assert agent._step_signal is None and signal.getsignal(number) is mine
        # Given nobody handles it: the agent's handler, announced in its hello
        signal.signal(number, signal.SIG_DFL)
        agent._take_step_signal()
        assert agent._step_signal == number and signal.getsignal(number) is agent._on_step_signal
        # ...which does nothing when no step waits on this thread (a late or stray delivery)
        signal.raise_signal(number)
    finally:
        signal.signal(number, before)


def test_exception_rules_match_a_class_or_its_bases() -> None:
    rules = exception_stops.ExceptionRules(raised=frozenset({"LookupError"}), user=frozenset({"BaseException"}))
    assert exception_stops.ExceptionRules.matches(KeyError, rules.raised)  # a base named
    assert not exception_stops.ExceptionRules.matches(ValueError, rules.raised)
    assert exception_stops.ExceptionRules.matches(ValueError, rules.user)
    assert exception_stops.ExceptionRules.matches(KeyError, frozenset({"builtins.KeyError"}))
    assert not exception_stops.ExceptionRules.matches(KeyError, rules.uncaught)  # nothing named: never


def test_step_in_targets_are_the_lines_calls_in_the_order_python_makes_them() -> None:
    def inner(n: int) -> int:
        return n

    def last(*values: Any) -> Any:
        return values[-1]

    targets = last(inner(1), inner(2), jumps.call_targets(sys._getframe()))
    assert [(t["label"], t["name"], t["skip"]) for t in targets] == [
        ("inner(1)", "inner", 0), ("inner(2)", "inner", 1), ("sys._getframe()", "_getframe", 0),
        ("jumps.call_targets(sys._getframe())", "call_targets", 0),
        ("last(inner(1), inner(2), jumps.call_targets(sys._getframe()))", "last", 0)]
    assert [t["id"] for t in targets] == [1, 2, 3, 4, 5]


def test_goto_targets_stay_in_the_stopped_function() -> None:
    frame = sys._getframe()
    here = frame.f_lineno
    assert jumps.goto_targets(frame, here) == [{"id": here, "label": f"line {here}", "line": here}]
    with pytest.raises(ValueError, match="jumps only within the running function"):
        jumps.goto_targets(frame, 1)
    with pytest.raises(ValueError, match="only from a stop at a line"):
        jumps.jump(frame, here, "exception")


def test_the_scopes_holding_breakpoint_lines_are_named(tmp_path: Path) -> None:
    from mixdbg.pyagent import settrace

    source = tmp_path / "scopes.py"
    source.write_text("class A:\n    def f(self):\n        return [x for x in ()]\n\n\ndef g():\n    return 1\n")
    names = settrace._scope_names({str(source): {3: []}})
    assert names == frozenset({"<module>", "A", "f", "<listcomp>"})
    assert isinstance(settrace._scope_names({str(tmp_path / "gone.py"): {1: []}}), settrace._EveryName)
