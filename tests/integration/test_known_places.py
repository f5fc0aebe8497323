"""Function breakpoints put where gdb put them in a previous session (issue 25, item 6):
the second run of the same script binds them at their addresses when a library loads,
without gdb reading it then, and must stop where the first did, with the same location
text, in every process it follows (a fork child, a spawned interpreter)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import CExtension, MixdbgRun, run_mixdbg

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "testdebug.py"
SEEDS = ["PyInit__C", "THPModule_initExtension", "at::native::randn"]
CHILDREN = """\
import multiprocessing
import os

import torch


def spawned():
    torch.randn(2)


if __name__ == "__main__":
    child = os.fork()
    if child == 0:
        torch.randn(3)
        os._exit(0)
    os.waitpid(child, 0)
    process = multiprocessing.get_context("spawn").Process(target=spawned)
    process.start()
    process.join()
    torch.randn(4)
"""

pytestmark = [pytest.mark.torch, pytest.mark.timeout(600)]


def run_twice(args: list[str], cache: Path, cwd: Path) -> tuple[MixdbgRun, MixdbgRun]:
    """The same ``mixdbg run --json`` twice, with one cache of mixdbg's (and gdb's) of its own."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    runs = []
    for _ in range(2):
        result = run_mixdbg(["run", "--json", "--port", "0", *args], env=env, timeout=280, cwd=cwd)
        assert result.returncode == 0, result.stderr[-3000:]
        runs.append(result)
    return runs[0], runs[1]


def final_locations(result: MixdbgRun) -> dict[int, list[tuple[str, Any, Any]]]:
    """Each breakpoint's places in its last event (function, file, line), each place once:
    the same place in several processes is listed per process, and which processes are
    still listed when the last change is reported depends on the order of their exits."""
    last = {event["id"]: event for event in result.of("breakpoint")}
    return {number: sorted({(loc["function"], loc["file"], loc["line"]) for loc in event["locations"]})
            for number, event in last.items()}


def stops(result: MixdbgRun) -> list[tuple[int, str, str | None]]:
    """(breakpoint, top function, which process) of each stop, in order."""
    return [(stop["breakpoint"], stop["frames"][0]["function"], (stop.get("process") or "main").split(",")[0])
            for stop in result.of("stopped")]


def full_stack(stop: dict[str, Any]) -> list[tuple[str, str | None, Any, Any]]:
    """Every frame of a stop: kind, function, library or file, line."""
    return [(frame["kind"], frame["function"], frame["library"] or frame["file"], frame["line"])
            for frame in stop["frames"]]


def places_known(cache: Path) -> dict[str, list[Any]]:
    path = cache / "mixdbg" / "breakpoint-places-v2.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_the_seed_run_again_stops_where_it_stopped(torch_installed: None, tmp_path: Path) -> None:
    # Given the README's seed run, made twice with a cache of its own
    args = [argument for spec in SEEDS for argument in ("-b", spec)] + [str(EXAMPLE)]
    first, second = run_twice(args, tmp_path / "cache", tmp_path)
    # Then the first kept where gdb put randn in libtorch_cpu.so
    known = places_known(tmp_path / "cache")
    randn = [places for key, places in known.items() if "libtorch_cpu.so" in key and key.endswith(" at::native::randn")]
    assert randn and len(randn[0]) == 2, known.keys()
    # and the second, bound there, stopped at the same places with the same text
    assert stops(second) == stops(first) and len(stops(first)) >= 4
    assert final_locations(second) == final_locations(first)
    assert all(function for places in final_locations(second).values() for function, _, _ in places)
    # without gdb reading libtorch_cpu.so (a run that reports its stops and goes on): its
    # frames unwound from the stub of its unwind tables and named from its ELF symbol
    # table are the frames of the first run, where gdb read it; randn's arguments too
    assert list((tmp_path / "cache" / "mixdbg" / "unwind-stubs").glob("libtorch_cpu.so-*"))
    assert [full_stack(stop) for stop in second.of("stopped")] == [full_stack(stop) for stop in first.of("stopped")]
    assert [stop.get("arguments") for stop in second.of("stopped")] == \
        [stop.get("arguments") for stop in first.of("stopped")]


@pytest.mark.slow
def test_known_places_hold_in_a_fork_child_and_a_spawned_interpreter(torch_installed: None, tmp_path: Path) -> None:
    # Given a script whose fork child, spawned interpreter and main process each call randn
    script = tmp_path / "children.py"
    script.write_text(CHILDREN)
    first, second = run_twice(["-b", "at::native::randn", str(script)], tmp_path / "cache", tmp_path)
    # Then both runs stop in each of the three processes (in both of randn's places: the
    # overload without a generator calls the other), at the same places
    roles = sorted(process for _, _, process in stops(first))
    assert len({s["pid"] for s in first.of("stopped")}) == 3 and set(roles) == {"main", "child"}, stops(first)
    assert sorted(process for _, _, process in stops(second)) == roles
    assert {function for _, function, _ in stops(second)} == {function for _, function, _ in stops(first)}
    assert final_locations(second) == final_locations(first), (first.of('breakpoint'), second.of('breakpoint'))


def test_a_conditional_function_breakpoint_stops_the_same_in_the_second_run(cext: CExtension,
                                                                               tmp_path: Path) -> None:
    # Given a function breakpoint with a condition on the function's argument, run twice with
    # one cache (the second run knows where gdb put native_step, before gdb reads the library)
    script = tmp_path / "three.py"
    script.write_text("import mixdbg_testext as ext\nprint('total', ext.loop(3), flush=True)\n")
    env = dict(cext.env(), XDG_CACHE_HOME=str(tmp_path / "cache"))
    runs = [run_mixdbg(["run", "--json", "--port", "0", "--no-prompt", "-b", "native_step if i == 1", str(script)],
                       env=env, timeout=120, cwd=tmp_path) for _ in range(2)]
    # Then each run stops once, at i == 1, and finishes (the condition is gdb's, never parsed
    # at a bare address: that ended the second session, the program running on untraced)
    for result in runs:
        assert result.returncode == 0, result.stderr[-3000:]
        assert [stop["frames"][0]["function"] for stop in result.of("stopped")] == ["native_step"], result.stderr
        assert "total 6" in result.stdout + result.stderr
