"""Placing runs of Python frames on native frames (``mixdbg.pyframes.placement``)."""

from __future__ import annotations

from mixdbg.pyframes.placement import EVAL_LOOP, place
from mixdbg.pyframes.walk import PyFrame, Run


def run(name: str, marker: int | None) -> Run:
    return Run((PyFrame(name, "f.py", 1, 0x1000),), marker)


#: Four native frames, innermost first; frame i's stack range is [sp_i, sp_i+1).
SPS = [0x100, 0x200, 0x300, 0x400]
NAMES = ["leaf", EVAL_LOOP, "??", "main"]


def test_each_run_replaces_the_frame_whose_stack_holds_its_marker() -> None:
    # Given runs whose markers lie in frames 1 and 2 (an unnamed one: stripped)
    inner, outer = run("inner", 0x250), run("outer", 0x300)
    # When they are placed, then by address, names not needed
    owners, tail, how = place(SPS, NAMES, [inner, outer], truncated=False)
    assert owners == {1: inner, 2: outer} and tail == [] and how == "2 by C-stack address"


def test_a_run_without_its_frame_goes_on_the_next_eval_loop_then_at_the_end() -> None:
    # Given a run placed by address, one whose marker no frame holds, and one more
    first, lost, last = run("first", 0x150), run("lost", 0x9999), run("last", None)
    # When placed: by address, then on the next named eval loop, then at the end
    owners, tail, how = place(SPS, NAMES, [first, lost, last], truncated=False)
    assert owners == {0: first, 1: lost} and tail == [last]
    assert how == "1 by C-stack address, 1 by eval-loop name, 1 at the end"


def test_runs_keep_their_order() -> None:
    # Given an older run whose marker points below (inside) the younger run's frame
    young, old = run("young", 0x350), run("old", 0x150)
    # When placed, then the older one never goes above the younger (no later loop: the end)
    owners, tail, _ = place(SPS, NAMES, [young, old], truncated=False)
    assert owners == {2: young} and tail == [old]


def test_runs_beyond_a_truncated_native_stack_are_left_out() -> None:
    owners, tail, how = place(SPS[:2], ["leaf", "??"], [run("a", 0x150), run("b", 0x350)], truncated=True)
    assert list(owners) == [0] and tail == [] and how == "1 by C-stack address"
