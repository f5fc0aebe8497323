"""Where the source files of native code are on this machine.

A library's DWARF names its sources as they were at build time: an absolute path in a
build folder that may no longer exist (``/build/ceph-16.2.15/src/...``), or a path relative
to a compilation directory that is itself relative (Debian maps its build folder to ``.``:
``./obj-x86_64-linux-gnu/src/librados/./src/librados/librados_c.cc``). The user maps a
build-time prefix to a local folder (``--source-map FROM=TO``, ``sourceMap`` in launch.json,
as CodeLLDB and Seam take it); gdb applies it (``set substitute-path``), both ways: a frame's
file is the local one, and a breakpoint on the local file binds. Relative names are also
looked up from the debuggee's working directory (gdb's source path ``$cdir:$cwd`` and it).

An editor gets an absolute path whenever the file exists here (``local_file``); otherwise
the frame says why there is no source (``missing_reason``) and keeps its address for the
disassembly.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mixdbg.errors import UsageError
from mixdbg.gdbmi import GdbCommandError, GdbMi


@dataclass(frozen=True)
class SourceMap:
    """The user's rules, first match wins (gdb's order): (build-time prefix, local prefix);
    and folders where relative source names are looked up besides gdb's own."""

    rules: tuple[tuple[str, str], ...] = ()
    directories: tuple[str, ...] = ()

    def configure(self, gdb: GdbMi) -> None:
        """Give gdb the rules (``set substitute-path``) and the folders (``directory``)."""
        for build, local in self.rules:
            try:
                gdb.console(f"set substitute-path {_quoted(build)} {_quoted(local)}")
            except GdbCommandError as err:
                raise UsageError(f"source map {build!r} -> {local!r}: {err.gdb_message}") from err
        for directory in self.directories:
            gdb.console(f"directory {directory}")


def _quoted(text: str) -> str:
    """A path as one argument of ``set substitute-path`` (gdb splits at blanks unless quoted)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_rule(text: str) -> tuple[str, str]:
    """``FROM=TO`` (the CLI's ``--source-map``) as a rule; both sides must be given."""
    build, sep, local = text.partition("=")
    if not sep or not build or not local:
        raise UsageError(f"--source-map takes FROM=TO (a build-time folder and yours), not {text!r}")
    return build, _local(local)


def rules_of(mapping: Mapping[str, object], what: str = "sourceMap") -> tuple[tuple[str, str], ...]:
    """A ``sourceMap`` object (``{"/build/ceph": "/home/me/ceph"}``) as rules, in its order."""
    rules = []
    for build, local in mapping.items():
        if not build or not isinstance(local, str) or not local:
            raise UsageError(f"{what}: {build!r} must map to a folder (a non-empty string)")
        rules.append((build, _local(local)))
    return tuple(rules)


def _local(path: str) -> str:
    """The local side of a rule: absolute (``~`` expanded), so that gdb's rewritten paths are."""
    return os.path.abspath(os.path.expanduser(path))


def local_file(file: str | None, directories: Iterable[str] = ()) -> str | None:
    """The absolute path of ``file`` (as gdb names a frame's or a breakpoint's source) if it
    exists here, else None. A relative name (gdb found no file for it) is tried in
    ``directories`` (the debuggee's working directory)."""
    if not file:
        return None
    if os.path.isabs(file):
        return file if os.path.isfile(file) else None
    for directory in directories:
        candidate = os.path.normpath(os.path.join(directory, file))
        if os.path.isfile(candidate):
            return candidate
    return None


def missing_reason(file: str) -> str:
    """One line: why a frame with debug info has no source to show, and the way out."""
    return f"source not found here: {file} (map its build folder to yours: sourceMap / --source-map)"
