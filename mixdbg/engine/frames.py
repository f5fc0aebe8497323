"""What kind of code a frame of a mixed stack is: the user's (Python, or native with
source of the user's own), or glue (CPython's eval loop and call paths, binding
libraries' headers, the C and C++ runtimes). Front ends show glue quietly; stepping
passes through it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mixdbg.stack import Frame, MixedStack

#: Source paths of code that binds or runs Python rather than being the user's: binding
#: libraries' headers, CPython's own sources and headers, system and C++ library headers.
_GLUE_SOURCE = re.compile(
    r"/pybind11/|/nanobind/|/Cython/|/include/python3|/usr/include/|/c\+\+/\d|/bits/"
    r"|/Python-3\.\d+\.\d+[^/]*/|(^|/)(Objects|Python|Modules|Parser|Include)/[^/]+\.[ch]$"
)
#: Libraries that are the interpreter or the runtimes under it.
_RUNTIME_LIBRARY = re.compile(r"^(libpython\d|python\d|libc\.so|libc-|libstdc\+\+|ld-linux|libffi|_ctypes|libm\.so"
                              r"|libpthread|libgcc_s)")


def is_runtime_library(library: str | None) -> bool:
    """Whether ``library`` is the interpreter, the C/C++ runtime or the dynamic loader."""
    return bool(library) and bool(_RUNTIME_LIBRARY.match(Path(str(library)).name))


def is_glue_source(file: str | None) -> bool:
    """Whether a source file is binding or interpreter code rather than the user's."""
    return bool(file) and bool(_GLUE_SOURCE.search(str(file)))


def is_user_native(frame: Frame) -> bool:
    """A native frame with source that is the user's (an extension's own code)."""
    return (frame.kind == "native" and frame.file is not None and frame.line is not None
            and not is_glue_source(frame.file) and not is_runtime_library(frame.library))


def is_glue(frame: Frame) -> bool:
    """A native frame the user did not write: the interpreter, bindings, runtimes."""
    if frame.kind != "native":
        return False
    return is_runtime_library(frame.library) or is_glue_source(frame.file)


def outer_visible(stack: MixedStack, index: int) -> tuple[int, Frame] | None:
    """The first frame outside frame ``index`` that a user steps back to: a Python frame
    or a user native frame (glue and source-less frames are passed)."""
    for number in range(index + 1, len(stack.frames)):
        frame = stack.frames[number]
        if frame.kind == "python" or is_user_native(frame):
            return number, frame
    return None


def first_visible(stack: MixedStack) -> int | None:
    """The innermost frame a step should report: Python or user native (None: none)."""
    for number, frame in enumerate(stack.frames):
        if frame.kind == "python" or is_user_native(frame):
            return number
    return None


def is_users_frame_record(raw: dict[str, Any]) -> bool:
    """Whether an MI frame record (a stop's ``frame``) is in the user's native code: a step
    that ended there is reported without reading the whole stack."""
    line = str(raw.get("line", ""))
    frame = Frame(kind="native", function=str(raw.get("func", "")), file=raw.get("fullname"),
                  line=int(line) if line.isdigit() else None, library=raw.get("from"))
    return is_user_native(frame)
