"""gdb's index of DWARF, kept between sessions, written outside the session.

gdb's index cache (``set index-cache enabled on``) saves the index it builds for a
library's DWARF, by build id, so that the next session reads it instead of scanning the
DWARF. But writing it costs the session's gdb: measured on libceph-common's debug file
(95 MB), 1.41 GB of peak memory instead of 0.90 and 30 s instead of 21 to the first stop.
So the session's gdb reads the cache where it has an entry and writes none
(``enabled off`` while it reads a library without one); the libraries it read that way are
indexed once the session has ended, by a gdb of their own, detached and at the lowest CPU
priority (``write_later``).
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from mixdbg import debugfiles
from mixdbg.elfsections import ElfFormatError
from mixdbg.gdbmi import gdb_environment, index_cache_directory

log = logging.getLogger(__name__)

#: The first gdb with ``maint wait-for-index-cache`` (it writes the cache in the background).
WAIT_GDB = 14


def cache_file(build_id: str, directory: Path | None = None) -> Path:
    """Where gdb keeps the index of the DWARF with ``build_id``."""
    return (directory or index_cache_directory()) / f"{build_id}.gdb-index"


def uncached(library: str, search: debugfiles.Search) -> bool:
    """Whether gdb would build and write an index for ``library`` now: it has DWARF (its
    own or a separate debug file's) with a build id, and the cache has no entry for it."""
    try:
        files = debugfiles.symbol_files(Path(library), search)
    except (OSError, ElfFormatError):
        return False
    holder = next((facts for _, facts in files if facts.dwarf), None)
    return holder is not None and holder.build_id is not None and not cache_file(holder.build_id).exists()


def write_later(gdb: str, libraries: Iterable[str], major_version: int) -> None:
    """Have a gdb of their own index ``libraries`` into the cache, detached from this
    process (it outlives the session) and at the lowest CPU priority; a failure only costs
    the next session the scan."""
    files = sorted(set(libraries))
    if not files:
        return
    directory = index_cache_directory()
    command = [gdb, "-nx", "-batch", "-iex", "set debuginfod enabled off",
               "-iex", f"set index-cache directory {directory}", "-iex", "set index-cache enabled on"]
    for library in files:
        command += ["-ex", f"file {library}"]
        if major_version >= WAIT_GDB:
            command += ["-ex", "maint wait-for-index-cache"]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        writer = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=gdb_environment(), start_new_session=True)
        os.setpriority(os.PRIO_PROCESS, writer.pid, 19)
    except OSError as err:
        log.info("indexing %s for later sessions: %s", files, err)
