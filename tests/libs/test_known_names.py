"""A function breakpoint bound where gdb put it in the previous session (engine/address_breaks.py)
needs no name resolution from gdb before it can stop: gdb resolves every breakpoint's name
again in each library it reads, and the stop waits for that read (bench_scale: six
compilation units of libceph-common expanded for ``ceph::common::CephContext::CephContext``,
7 s of the warm first stop). So the second session deletes the name's own gdb breakpoint
when it binds the known place, gdb reads the library without it, and the breakpoint stops
where it did in the first session, reported the same (issue 25, item 4: warm <= 0.5x cold)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import MixdbgRun
from shipped import ShippedLibrary, installed

pytestmark = pytest.mark.timeout(240)

#: ``mixdbg run`` with the engine's log (every MI command gdb was sent, in order) in a file.
LOGGED = ("import logging, sys; logging.basicConfig(filename=sys.argv[1], level=logging.DEBUG); "
          "from mixdbg.cli import main; sys.exit(main(sys.argv[2:]))")
SPEC = "mx_gi_user"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShippedLibrary]:
    """libmxalias, stripped, its DWARF under /usr/lib/debug/.build-id only."""
    with installed(tmp_path_factory.mktemp("shipped"), debuglink=False) as library:
        yield library


def run_logged(shipped: ShippedLibrary, cache: Path, log: Path) -> tuple[MixdbgRun, list[str]]:
    """``mixdbg run --json -b SPEC`` of the driver calling SPEC, with ``cache`` as the user's
    cache directory; its events and the MI commands it sent gdb."""
    argv = [sys.executable, "-c", LOGGED, str(log), "run", "--json", "--port", "0", "-b", SPEC,
            str(shipped.script), SPEC]
    done = subprocess.run(argv, env=dict(os.environ, XDG_CACHE_HOME=str(cache)), cwd=shipped.directory,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=150, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    commands = [match.group(1) for match in re.finditer(r"mixdbg\.gdbmi:[\d.]+ ms: (.*)", log.read_text())]
    return MixdbgRun(done.returncode, events, done.stdout, done.stderr), commands


def where(result: MixdbgRun) -> list[tuple[int, str, str, int]]:
    """(breakpoint, function, file name, line) of each stop's top frame."""
    return [(stop["breakpoint"], stop["frames"][0]["function"], Path(stop["frames"][0]["file"] or "").name,
             stop["frames"][0]["line"]) for stop in result.of("stopped")]


def test_a_known_place_stops_without_gdb_resolving_the_name(shipped: ShippedLibrary, tmp_path: Path) -> None:
    # Given a session that stopped in mx_gi_user and kept where gdb put it in libmxalias
    cache = tmp_path / "cache"
    first, first_commands = run_logged(shipped, cache, tmp_path / "first.log")
    assert where(first) == [(1, "mx_gi_user", "mxalias.c", shipped.line("gi_user"))], first.stderr[-2000:]
    assert not [command for command in first_commands if command.startswith("-break-delete")]
    # by the identity of the library and of its debug file (gdb places a breakpoint by the
    # line table when it has one, and would not check the known place while it is withheld)
    places = json.loads((cache / "mixdbg" / "breakpoint-places-v2.json").read_text())
    assert [key for key in places if str(shipped.library) in key and str(shipped.debug_file) in key
            and key.endswith(f" {SPEC}")], list(places)
    # When the same breakpoint is set in a second session with that cache
    second, commands = run_logged(shipped, cache, tmp_path / "second.log")
    # Then it stops at the same place, reported as the same breakpoint, always at the place
    # gdb named in the first session (never without its file and line meanwhile)
    assert where(second) == where(first), second.stderr[-2000:]
    bound = [event for event in second.of("breakpoint") if not event["pending"]]
    final = [event for event in first.of("breakpoint") if not event["pending"]][-1]["locations"]
    assert bound and all(event["id"] == 1 and [{**place, "address": None} for place in event["locations"]]
                         == [{**place, "address": None} for place in final] for event in bound), bound
    # and gdb read libmxalias without the name's breakpoint, bound at the known address
    # before (on the old code gdb resolved the name again in the library while the stop waited)
    read = next(index for index, command in enumerate(commands)
                if "sharedlibrary" in command and "libmxalias" in command)
    placed = next(index for index, command in enumerate(commands) if command.startswith("-break-insert -f -g"))
    assert commands.index("-break-delete 1") < read and placed < read, commands
    assert [command for command in commands if SPEC in command and command.startswith("-break-insert")] == \
        [command for command in first_commands if SPEC in command and command.startswith("-break-insert")]
