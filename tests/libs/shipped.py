"""libmxalias built as distributions ship a library: optimised (-O2 -g), stripped, its DWARF
in a separate file found by build id under gdb's debug directory (``/usr/lib/debug``), with
or without a ``.gnu_debuglink``, and a Python extension (``mxcaller``) that calls it through
its PLT, as Debian's Cython ``rados`` module calls librados.

Each build gets a build id of its own (``--build-id=0x...``), so that builds of other test
sessions on this machine never share a debug file with it; the debug file is removed at the
end of the session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from dap.natives import marker_line

HERE = Path(__file__).resolve().parent
#: gdb's default debug directory (``show debug-file-directory``), where distributions put debug files.
DEBUG_ROOT = Path("/usr/lib/debug")
_FACTS = ("import json, sysconfig; print(json.dumps([sysconfig.get_config_var('EXT_SUFFIX'),"
          " sysconfig.get_paths()['include']]))")


@dataclass(frozen=True)
class ShippedLibrary:
    """One build: the stripped library, its debug file, the caller extension and the driver."""

    directory: Path
    library: Path
    debug_file: Path
    build_id: str
    source: Path

    def line(self, marker: str) -> int:
        """The 1-based line of the library's C source carrying ``/* @marker */``."""
        return marker_line(self.source, marker)

    @property
    def script(self) -> Path:
        """The driver: calls each function named on its command line through ``mxcaller``."""
        return self.directory / "alias_main.py"

    def remove(self) -> None:
        """Remove the debug file from the debug directory."""
        self.debug_file.unlink(missing_ok=True)


@contextmanager
def installed(directory: Path, debuglink: bool) -> Iterator[ShippedLibrary]:
    """``build``, its debug file taken out of the system's debug directory afterwards."""
    library = build(directory, debuglink)
    try:
        yield library
    finally:
        library.remove()


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        pytest.fail(f"build step failed: {' '.join(command)}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def build(directory: Path, debuglink: bool, python: str = sys.executable) -> ShippedLibrary:
    """Build libmxalias.so.1 (stripped; DWARF under ``DEBUG_ROOT/.build-id`` only, plus a
    ``.gnu_debuglink`` if asked) and the ``mxcaller`` extension for ``python``."""
    for tool in ("gcc", "g++", "objcopy", "strip"):
        if shutil.which(tool) is None:
            pytest.skip(f"no {tool} on PATH")
    if not os.access(DEBUG_ROOT, os.W_OK) and not (not DEBUG_ROOT.exists() and os.access(DEBUG_ROOT.parent, os.W_OK)):
        pytest.skip(f"{DEBUG_ROOT} is not writable here: the separate debug file goes there, as packages put it")
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("mxalias.c", "mxwrap.cpp", "mxalias.map", "mxcaller.c", "alias_main.py"):
        shutil.copyfile(HERE / name, directory / name)
    build_id = uuid.uuid4().hex + "0badc0de"
    _run(["gcc", "-g", "-O2", "-fPIC", "-c", "mxalias.c", "-o", "mxalias.o"], directory)
    _run(["g++", "-g", "-O2", "-fPIC", "-c", "mxwrap.cpp", "-o", "mxwrap.o"], directory)
    _run(["g++", "-shared", "-Wl,--version-script=mxalias.map", f"-Wl,--build-id=0x{build_id}",
          "-Wl,-soname,libmxalias.so.1", "-o", "libmxalias.so.1", "mxalias.o", "mxwrap.o"], directory)
    # as dh_strip does it: the debug file (compressed sections), then the stripped library
    _run(["objcopy", "--only-keep-debug", "--compress-debug-sections", "libmxalias.so.1", "libmxalias.debug"],
         directory)
    _run(["strip", "--remove-section=.comment", "--remove-section=.note", "--strip-unneeded", "libmxalias.so.1"],
         directory)
    if debuglink:
        _run(["objcopy", "--add-gnu-debuglink=libmxalias.debug", "libmxalias.so.1"], directory)
    debug_file = DEBUG_ROOT / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    debug_file.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(directory / "libmxalias.debug"), debug_file)
    facts = subprocess.run([python, "-c", _FACTS], capture_output=True, text=True, check=True)
    suffix, include = json.loads(facts.stdout)
    _run(["gcc", "-g", "-O0", "-shared", "-fPIC", f"-I{include}", "mxcaller.c", "-L.", "-l:libmxalias.so.1",
          f"-Wl,-rpath,{directory}", "-o", f"mxcaller{suffix}"], directory)
    return ShippedLibrary(directory, directory / "libmxalias.so.1", debug_file, build_id, directory / "mxalias.c")
