"""gdb's index of a library's DWARF is kept between sessions in mixdbg's cache, by build id,
and written after the session that first read the library, by a gdb of its own
(mixdbg/indexcache.py, issue 25): the library here is libmxalias as distributions ship a
library (stripped, its DWARF in a build-id file), read for a ``FILE:LINE`` breakpoint."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import run_mixdbg
from shipped import ShippedLibrary, installed

from mixdbg import debugfiles, doctor, indexcache

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShippedLibrary]:
    with installed(tmp_path_factory.mktemp("indexed"), debuglink=False) as library:
        yield library


def indexers(cache: Path) -> list[psutil.Process]:
    """The gdbs indexing into ``cache`` (started by the session this test ran)."""
    found = []
    for process in psutil.process_iter():
        try:
            if any(str(cache) in arg for arg in process.cmdline()[1:]) and process.pid != os.getpid():
                found.append(process)
        except psutil.Error:
            continue
    return found


def wait_indexed(entry: Path, cache: Path, timeout: float = 120.0) -> bool:
    """Wait until the indexing gdbs have exited; whether ``entry`` was written. Any still
    running at the end are ended by pid."""
    deadline = time.monotonic() + timeout
    while indexers(cache) and time.monotonic() < deadline:
        time.sleep(0.2)
    for process in indexers(cache):
        process.send_signal(signal.SIGKILL)
    return entry.exists()


def test_a_session_leaves_the_index_for_the_next(shipped: ShippedLibrary, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an empty cache: gdb would index the library's DWARF (its debug file's) afresh
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    search = debugfiles.Search.of_gdb("/usr/lib/debug", debuginfod=False)
    entry = indexcache.cache_file(shipped.build_id)
    assert entry.parent == cache / "mixdbg" / "gdb-index"
    assert indexcache.uncached(str(shipped.library), search)
    # When a session stops at a line of the library (gdb reads it there)
    spec = f"mxalias.c:{shipped.line('gi_user')}"
    result = run_mixdbg(["run", "--json", "--port", "0", "--follow", "none", "-b", spec, str(shipped.script),
                         "mx_gi_user"], env=dict(os.environ, XDG_CACHE_HOME=str(cache)), timeout=150,
                        cwd=shipped.directory)
    assert result.returncode == 0 and len(result.of("stopped")) == 1, result.stderr[-3000:]
    # Then once it has ended, the index of the library's DWARF is in the cache, by build id
    assert wait_indexed(entry, cache), sorted(path.name for path in entry.parent.glob("*"))
    assert not indexcache.uncached(str(shipped.library), search)
    # and the doctor says the cache is on, where it is, and what it holds
    check = doctor.check_index_cache()
    held = len(list(entry.parent.glob("*.gdb-index")))
    assert check.summary.startswith(f"on: gdb's index of libraries' DWARF, kept between sessions in {entry.parent} "
                                    f"({held} librar"), check.summary
    assert check.details["entries"] == held
