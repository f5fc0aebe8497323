"""A bound breakpoint stops, whatever name it was set on: libmxalias exports aliases of its
functions (a versioned export, an ``alias`` attribute, an ``extern "C"`` wrapper of C++, a
glibc-style hidden ``__GI_`` name), is stripped, and keeps its DWARF in a separate file found
by build id only, as Debian's librados does; a Python extension calls it through its PLT, so
that gdb binds the breakpoint to the caller's PLT stub first (issue 25: ``-b rados_create2``
bound and never stopped)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import MixdbgRun, run_mixdbg
from shipped import ShippedLibrary, installed

pytestmark = pytest.mark.timeout(180)

#: Every function the driver calls (through mxcaller's PLT), in its order.
FUNCTIONS = ["mx_create", "mx_alias", "mx_gi", "mx_gi_user", "mx_static_user", "mx_wrapper"]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShippedLibrary]:
    """libmxalias, stripped, its DWARF under /usr/lib/debug/.build-id only."""
    with installed(tmp_path_factory.mktemp("shipped"), debuglink=False) as library:
        yield library


def run(shipped: ShippedLibrary, specs: list[str], *functions: str) -> MixdbgRun:
    """``mixdbg run --json`` of the driver calling ``functions`` (all by default) with ``specs``."""
    args = ["run", "--json", "--port", "0", "--follow", "none"]
    for spec in specs:
        args += ["-b", spec]
    result = run_mixdbg([*args, str(shipped.script), *functions], timeout=150, cwd=shipped.directory)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def stops_by_breakpoint(result: MixdbgRun) -> dict[int, list[dict[str, Any]]]:
    """The ``stopped`` events of each breakpoint number."""
    found: dict[int, list[dict[str, Any]]] = {}
    for stop in result.of("stopped"):
        found.setdefault(int(stop["breakpoint"]), []).append(stop)
    return found


def python_callers(stop: dict[str, Any]) -> list[tuple[str, str]]:
    """The Python frames of a stop: (function, file name)."""
    return [(frame["function"], Path(frame["file"]).name) for frame in stop["frames"] if frame["kind"] == "python"]


def assert_each_stops(result: MixdbgRun, specs: list[str], tops: dict[str, str], counts: dict[str, int]) -> None:
    """Each spec's breakpoint bound and stopped ``counts`` times (default once), in the
    function ``tops`` names, with the driver's Python caller in the stack."""
    stops = stops_by_breakpoint(result)
    bound = {event["id"]: event for event in result.of("breakpoint") if not event["pending"]}
    for number, spec in enumerate(specs, start=1):
        assert number in bound, f"{spec} never bound: {result.stderr[-2000:]}"
        assert len(stops.get(number, [])) == counts.get(spec, 1), f"{spec}: {len(stops.get(number, []))} stops"
        for stop in stops[number]:
            top = stop["frames"][0]
            assert top["function"] == tops[spec] and top["kind"] == "native", (spec, top)
            assert not top["function"].endswith("@plt")
            assert ("call", "alias_main.py") in python_callers(stop), (spec, python_callers(stop))
    assert "never resolved" not in result.stderr


def test_each_exported_alias_stops_where_the_function_is(shipped: ShippedLibrary) -> None:
    # Given breakpoints on the exported names (the versioned export, the alias attribute,
    # the name glibc-style code calls by __GI_, the extern "C" wrapper), each first bound
    # to mxcaller's PLT stub and then, once libmxalias is read, to the function itself
    specs = ["mx_create", "mx_alias", "mx_gi", "mx_wrapper"]
    # When the driver calls each function once (mx_gi twice: directly, and by __GI_mx_gi)
    result = run(shipped, specs)
    # Then each stops in the function's own body, the Python caller in the stack
    assert_each_stops(result, specs, {"mx_create": "_mx_create", "mx_alias": "_mx_real", "mx_gi": "mx_gi",
                                      "mx_wrapper": "mx_wrapper"}, {"mx_gi": 2})


def test_real_names_only_in_the_debug_file_stop(shipped: ShippedLibrary) -> None:
    # Given the real names, which only the separate debug file's symbol table and DWARF hold
    # (the library's own tables were stripped), and a line of its source
    gi_user = f"mxalias.c:{shipped.line('gi_user')}"
    specs = ["_mx_create", "_mx_real", "__GI_mx_gi", "mx::work", "mx_helper", gi_user]
    # When the driver calls each function once
    result = run(shipped, specs)
    # Then every one bound and stopped
    assert_each_stops(result, specs, {"_mx_create": "_mx_create", "_mx_real": "_mx_real", "__GI_mx_gi": "mx_gi",
                                      "mx::work": "mx::work", "mx_helper": "mx_helper", gi_user: "mx_gi_user"},
                      {"__GI_mx_gi": 2})


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_line_in_a_library_with_a_build_id_file_only_stops_every_time(shipped: ShippedLibrary) -> None:
    # Given a line of the stripped library, whose DWARF only a build-id file holds (no debuglink)
    spec = f"mxalias.c:{shipped.line('gi_user')}"
    # When the same run is made 10 times
    stopped = [len(run(shipped, [spec], "mx_gi_user").of("stopped")) for _ in range(10)]
    # Then every run stops (it was 2 of 6: only when gdb's background read won the race)
    assert stopped == [1] * 10


@pytest.mark.slow
def test_a_debuglink_finds_the_debug_file_too(tmp_path: Path) -> None:
    # Given the library with a .gnu_debuglink beside its build id
    with installed(tmp_path / "linked", debuglink=True) as library:
        # When a line and a debug-only name are broken on
        specs = [f"mxalias.c:{library.line('real')}", "mx_helper"]
        result = run(library, specs, "mx_alias", "mx_static_user")
        # Then both stop
        assert_each_stops(result, specs, {specs[0]: "_mx_real", "mx_helper": "mx_helper"}, {})
