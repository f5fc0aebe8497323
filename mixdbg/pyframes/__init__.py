"""Python frames read from a stopped CPython's memory, with no debug info and no gdb script.

The entry point is ``open_interpreter(read, runtime, py_version, hint)``: ``read`` gives
bytes of the stopped process (``mixdbg.memory.ReadMemory``: gdb's ``read_memory`` inside
gdb, ``/proc/PID/mem`` outside), ``runtime`` is the address of the exported
``_PyRuntime``, ``py_version`` that of ``Py_Version`` (exported from 3.11) if any, and
``hint`` the ``"3.X"`` version of the executable when the caller knows it (3.10 keeps
its version nowhere in memory). It returns an ``Interpreter`` whose ``threads()`` lists
every thread's Python frames in runs, one per eval-loop invocation, each with the
address of its entry marker on the C stack so a native stack can place them, and whose
``locals(frame)`` summarises a frame's variables. Versions: 3.10-3.12 from our own
layout tables, 3.13 and 3.14 from the interpreter's ``_Py_DebugOffsets``; anything else
raises ``Unsupported`` with a one-line reason. Standard library only, Python 3.9 syntax:
gdb's embedded Python imports this package.
"""

from __future__ import annotations

import struct

from mixdbg.memory import MemoryReadError, ReadMemory
from mixdbg.pyframes.layouts import (
    DEBUG_COOKIE,
    KNOWN,
    Layout,
    LayoutError,
    debug_offsets_size,
    from_debug_offsets,
)
from mixdbg.pyframes.objects import ObjectError, register_summary
from mixdbg.pyframes.walk import PyFrame, PyThread, Run, Walker

__all__ = ["Interpreter", "PyFrame", "PyThread", "Run", "Unsupported", "open_interpreter", "reading_method",
           "register_summary"]

#: ``PY_VERSION_HEX`` release levels a reader accepts: candidate and final.
_RELEASED = (0xC, 0xF)


class Unsupported(Exception):
    """This interpreter's frames cannot be read; the message says why, in one line."""


def reading_method(minor: int) -> str | None:
    """How frames of CPython 3.``minor`` are read: ``"debug offsets"``, ``"known layout"``,
    or None when that version is not supported."""
    if minor in KNOWN:
        return KNOWN[minor].method
    return "debug offsets" if debug_offsets_size(minor) else None


class Interpreter:
    """One stopped interpreter whose layout is known."""

    def __init__(self, read: ReadMemory, runtime: int, layout: Layout, version: str) -> None:
        self.version = version
        self.layout = layout
        self._walker = Walker(read, layout, runtime)

    @property
    def method(self) -> str:
        """How its frames are read (``debug offsets`` or ``known layout``)."""
        return self.layout.method

    def threads(self) -> list[PyThread]:
        """Every thread state's Python frames; ``Unsupported`` if the states are unreadable."""
        try:
            return self._walker.threads()
        except (MemoryReadError, ObjectError, struct.error) as err:
            raise Unsupported(f"the interpreter's thread states are unreadable ({err})") from err

    def locals(self, frame: int) -> list[tuple[str, str]]:
        """``(name, short value)`` of the local variables of the Python frame at ``frame``."""
        try:
            return self._walker.locals(frame)
        except (MemoryReadError, ObjectError, struct.error) as err:
            raise Unsupported(f"the frame's locals are unreadable ({err})") from err


def _version_text(hexversion: int) -> str:
    level = {0xA: "a", 0xB: "b", 0xC: "rc"}.get((hexversion >> 4) & 0xF, "")
    serial = str(hexversion & 0xF) if level else ""
    return f"{hexversion >> 24}.{(hexversion >> 16) & 0xFF}.{(hexversion >> 8) & 0xFF}{level}{serial}"


def _check_hint(minor: int, version: str, hint: str | None) -> None:
    if hint and hint != f"3.{minor}":
        raise Unsupported(f"version mismatch: memory says {version}, the executable {hint}")


def open_interpreter(read: ReadMemory, runtime: int, py_version: int | None = None,
                     hint: str | None = None) -> Interpreter:
    """The interpreter whose ``_PyRuntime`` is at ``runtime``; ``Unsupported`` with the
    reason when its version, build or memory cannot be read."""
    try:
        head = read(runtime, 16)
        if head[:8] == DEBUG_COOKIE:  # 3.13+: _Py_DebugOffsets leads _PyRuntime
            hexversion = struct.unpack_from("<Q", head, 8)[0]
            minor = (hexversion >> 16) & 0xFF
            version = _version_text(hexversion)
            _check_hint(minor, version, hint)
            if hexversion >> 24 != 3 or not debug_offsets_size(minor):
                raise Unsupported(f"Python {version} is not supported (3.10 to 3.14 are)")
            if (hexversion >> 4) & 0xF not in _RELEASED:
                raise Unsupported(f"Python {version} is a pre-release; its layout may differ")
            layout = from_debug_offsets(minor, read(runtime, debug_offsets_size(minor)))
            return Interpreter(read, runtime, layout, version)
        if py_version:  # 3.11, 3.12: the exported Py_Version
            hexversion = struct.unpack("<Q", read(py_version, 8))[0]
            version, minor = _version_text(hexversion), (hexversion >> 16) & 0xFF
            _check_hint(minor, version, hint)
        elif hint:
            version, minor = hint, int(hint.split(".")[1])
        else:
            raise Unsupported("the Python version is unknown (3.10 and older do not record it in memory)")
    except MemoryReadError as err:
        raise Unsupported(f"_PyRuntime is unreadable ({err})") from err
    except LayoutError as err:
        raise Unsupported(str(err)) from err
    if minor not in KNOWN:
        raise Unsupported(f"Python {version} is not supported (3.10 to 3.14 are)")
    return Interpreter(read, runtime, KNOWN[minor], version)
