"""Which gdb mixdbg runs: ``--gdb PATH``, ``$MIXDBG_GDB``, the gdb of the ``gdb-for-pwndbg``
wheel installed with mixdbg, else the system's.

The wheel (a dependency on Linux x86_64 and aarch64) brings gdb 18.1, whatever the machine
has (Debian 12: 13.1, Ubuntu 22.04: 12.1, RHEL 8: 8.2), with no root. Its ``gdb`` is a
console script next to the interpreter that runs the bundled binary, which embeds this
interpreter's libpython: without a shared libpython (a static build, Debian's python3
without ``libpython3.X``) the wheel's gdb fails ("missing libpython"). That is decided here
from files alone, without running anything, so the choice costs microseconds; the reason
for falling back is kept for the one line the front end shows.

``PATH`` is not where the wheel's gdb is looked for: pyenv puts a shim called ``gdb`` there
that runs whatever the *current* Python has, and a venv's ``bin`` is on it only when
activated. The installed distribution's file list says where its script is.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import platform
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from mixdbg.errors import UnavailableError

#: The PyPI distribution that brings gdb, and the machines it has wheels for.
WHEEL = "gdb-for-pwndbg"
WHEEL_MACHINES = ("x86_64", "aarch64")
#: Where the system's gdb usually is, when no ELF ``gdb`` is on PATH.
SYSTEM_GDB = "/usr/bin/gdb"

ARGUMENT = "--gdb"
VARIABLE = "MIXDBG_GDB"
BUNDLED = "wheel"
SYSTEM = "system"


@dataclass(frozen=True)
class GdbChoice:
    """The gdb to run, where the choice came from (``--gdb``, ``MIXDBG_GDB``, ``wheel``,
    ``system``), and, for the system's, why the wheel's was not taken."""

    path: str
    source: str
    fallback_reason: str | None = None

    def fallback_line(self) -> str | None:
        """The one line telling the user that the system's gdb is used, and why."""
        if self.fallback_reason is None:
            return None
        return f"using the system's gdb ({self.path}): {self.fallback_reason}"


def choose(explicit: str | None = None) -> GdbChoice:
    """The gdb to run: ``explicit`` (``--gdb``), ``$MIXDBG_GDB``, the wheel's, the system's."""
    for source, name in ((ARGUMENT, explicit), (VARIABLE, os.environ.get(VARIABLE))):
        if name:
            path = shutil.which(name)
            if path is None:
                raise UnavailableError(f"gdb not found: {source} names '{name}', which is not an "
                                       "executable file or on PATH")
            return GdbChoice(os.path.abspath(path), source)
    bundled, reason = _bundled()
    if bundled is not None:
        return GdbChoice(bundled, BUNDLED)
    system = system_gdb()
    if system is None:
        raise UnavailableError(f"gdb not found: {reason}, and there is no gdb on PATH",
                               hint=f"point {VARIABLE} at a gdb (9.1 or newer), or install one")
    return GdbChoice(system, SYSTEM, reason)


@functools.cache
def _bundled() -> tuple[str | None, str]:
    """The wheel's gdb script, or None and why it cannot be used (decided once a process)."""
    machine = platform.machine()
    if not sys.platform.startswith("linux") or machine not in WHEEL_MACHINES:
        return None, f"{WHEEL} has no gdb for this platform ({sys.platform} {machine})"
    script = wheel_script()
    if script is None:
        return None, f"{WHEEL} is not installed for {sys.executable}"
    if shared_libpython() is None:
        return None, (f"the gdb of {WHEEL} needs a shared libpython, and {sys.executable} has none "
                      "(a Python built with --enable-shared, conda's, or Debian's libpython3.X package has one)")
    return script, ""


def wheel_script() -> str | None:
    """The ``gdb`` console script the wheel installed for this interpreter, if any."""
    try:
        files = metadata.distribution(WHEEL).files or []
    except metadata.PackageNotFoundError:
        return None
    for entry in files:
        if entry.name == "gdb" and entry.parent.name == "bin":
            path = Path(str(entry.locate())).resolve()
            if os.access(path, os.X_OK):
                return str(path)
    return None


@dataclass(frozen=True)
class Launch:
    """How to start a gdb: the words before gdb's own arguments, and the variables set over
    its environment."""

    argv: tuple[str, ...]
    env: dict[str, str]


def launch(path: str) -> Launch:
    """How to start the gdb at ``path``. The wheel's ``gdb`` is a Python script that only
    execs the binary it bundles, with the data directory and this interpreter's paths: that
    binary is run directly, exactly as the script runs it, which saves the script's own
    Python start (60-80 ms of every session's first stop, more on a loaded machine). When
    the script would first have work to do (linking libpython into a new venv), or the
    wheel's layout is not the one known here, the script runs as it is."""
    if path != _bundled()[0]:
        return Launch((path,), {})
    vendored = _vendored()
    if vendored is None:
        return Launch((path,), {})
    binary, data = vendored
    loader = _loader()
    env = {"PYTHONNOUSERSITE": "1", "PYTHONHOME": f"{sys.prefix}:{sys.exec_prefix}",
           "PYTHONPATH": os.pathsep.join([os.path.dirname(path), *_default_module_path()])}
    return Launch((*((loader,) if loader else ()), binary, "--data-directory", data), env)


@functools.cache
def _vendored() -> tuple[str, str] | None:
    """The wheel's gdb binary and data directory, when the script may be bypassed: they
    exist, and this interpreter's shared libpython is where the binary's RUNPATH finds it
    (in a venv, the script links it there on its first run)."""
    spec = importlib.util.find_spec("gdb_for_pwndbg")
    name = sysconfig.get_config_var("INSTSONAME") or ""
    if spec is None or spec.origin is None or not (Path(sys.exec_prefix) / "lib" / name).exists():
        return None
    vendor = Path(spec.origin).parent / "_vendor"
    binary, data = vendor / "bin" / "gdb", vendor / "share" / "gdb"
    if not (os.access(binary, os.X_OK) and data.is_dir()):
        return None
    return str(binary), str(data)


def _loader() -> str | None:
    """The dynamic loader this process runs under, which the wheel's script runs its binary
    with (the binary's own interpreter path may not exist on every system)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                fields = line.split()
                if len(fields) >= 6 and "x" in fields[1] and os.path.basename(fields[5]).startswith("ld-linux"):
                    return fields[5]
    except OSError:
        return None
    return None


def _default_module_path() -> list[str]:
    """This interpreter's module path as a program started without ``PYTHONPATH`` sees it
    (what the wheel's script, started so, passes on to gdb's Python): ``sys.path`` without
    this program's own directory and without the user's ``PYTHONPATH`` entries."""
    own = sys.path if sys.flags.isolated or sys.flags.safe_path else sys.path[1:]
    user = {os.path.abspath(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry}
    return [entry for entry in own if entry and os.path.abspath(entry) not in user]


def shared_libpython() -> str | None:
    """The shared libpython this interpreter was built with, where the wheel's gdb looks
    for it (the prefix's ``lib``, the base prefix's, ``LIBDIR``); None for a static build."""
    name = sysconfig.get_config_var("INSTSONAME") or ""
    if ".so" not in name:
        return None
    for directory in (Path(sys.exec_prefix) / "lib", Path(sys.base_exec_prefix) / "lib",
                      Path(sysconfig.get_config_var("LIBDIR") or "/nonexistent")):
        if (directory / name).exists():
            return str(directory / name)
    return None


def system_gdb() -> str | None:
    """The first ``gdb`` on PATH that is a program (pyenv's shims and the wheel's script
    are not), else ``/usr/bin/gdb`` if it exists."""
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(directory or ".", "gdb")
        if os.access(candidate, os.X_OK) and _is_elf(candidate):
            return os.path.abspath(candidate)
    return SYSTEM_GDB if os.access(SYSTEM_GDB, os.X_OK) else None


def _is_elf(path: str) -> bool:
    """Whether ``path`` is an ELF file (a compiled program, not a script)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False
