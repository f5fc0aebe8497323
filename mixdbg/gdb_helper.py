"""Runs inside gdb's embedded Python (``source``d by mixdbg): the mixed-stack walker.

It defines the gdb command ``mixdbg-stack MAX_FRAMES OUTFILE`` which walks the selected
thread's frames, innermost first, and writes one JSON document to OUTFILE. Each native
frame of CPython's bytecode loop (``_PyEval_EvalFrameDefault``) is replaced, in its place,
by the Python frames that loop is running, as the interpreter's own gdb script
(``python3.X-gdb.py``, "libpython") reads them. Writing to a file instead of gdb's console
keeps the answer out of MI's stream records, and works on every gdb with Python (the
``gdb.MICommand`` API only exists from gdb 13).

Only the standard library and the ``gdb`` module are used: this file is executed by gdb's
Python, which is not the debuggee's and not mixdbg's.
"""

import io
import json
import re
import sys

import gdb  # type: ignore[import-not-found]

EVAL_LOOP = "_PyEval_EvalFrameDefault"
_TRACEBACK_LINE = re.compile(r'^  File "(?P<file>.*)", line (?P<line>\S+), in (?P<function>.*)$')


def _libpython_frame_class():
    """The ``Frame`` class of the interpreter's gdb script, if it was sourced."""
    main = sys.modules.get("__main__")
    frame_class = getattr(main, "Frame", None)
    if frame_class is None or not hasattr(frame_class, "print_traceback"):
        return None
    return frame_class


def _python_frames(frame_class, gdb_frame):
    """The Python frames one bytecode-loop frame is running, innermost first.

    Uses libpython's own ``print_traceback`` (stable output format across CPython
    versions, while the frame structures it reads change every release)."""
    captured = io.StringIO()
    saved = sys.stdout
    sys.stdout = captured
    try:
        frame_class(gdb_frame).print_traceback()
    finally:
        sys.stdout = saved
    frames = []
    for text in captured.getvalue().splitlines():
        match = _TRACEBACK_LINE.match(text)
        if match:
            line = match.group("line")
            frames.append({
                "kind": "python",
                "function": match.group("function"),
                "file": match.group("file"),
                "line": int(line) if line.isdigit() else None,
                "library": None,
            })
    return frames


def _native_frame(gdb_frame):
    """Describe one native frame: function, source position when known, library."""
    pc = gdb_frame.pc()
    file_name, line = None, None
    try:
        sal = gdb_frame.find_sal()
        if sal.symtab is not None:
            file_name = sal.symtab.fullname()
            line = sal.line or None
    except gdb.error:
        pass
    library = gdb.solib_name(pc)
    if library is None:
        library = gdb.current_progspace().filename
    return {
        "kind": "native",
        "function": gdb_frame.name() or "??",
        "file": file_name,
        "line": line,
        "library": library,
        "address": f"{pc:#x}",
    }


def mixed_stack(max_frames):
    """Walk the selected thread's stack; return ``{"frames": [...], "python": status}``."""
    frame_class = _libpython_frame_class()
    status = "ok" if frame_class is not None else "unavailable: the interpreter's gdb script is not loaded"
    frames = []
    gdb_frame = gdb.newest_frame()
    while gdb_frame is not None and len(frames) < max_frames:
        described = _native_frame(gdb_frame)
        is_eval = described["function"] == EVAL_LOOP and gdb_frame.type() == gdb.NORMAL_FRAME
        python = []
        if is_eval and frame_class is not None:
            try:
                python = _python_frames(frame_class, gdb_frame)
            except Exception as err:  # noqa: BLE001 - report, keep the native frame
                status = f"partial: {err}"
        frames.extend(python if python else [described])
        try:
            gdb_frame = gdb_frame.older()
        except gdb.error:
            break
    return {"frames": frames[:max_frames], "python": status, "truncated": gdb_frame is not None}


class MixdbgStack(gdb.Command):
    """mixdbg-stack MAX_FRAMES OUTFILE: write the selected thread's mixed stack as JSON
    (OUTFILE is the rest of the line, so it may contain spaces)."""

    def __init__(self):
        super().__init__("mixdbg-stack", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        count, _, path = argument.strip().partition(" ")
        max_frames = int(count)
        try:
            result = mixed_stack(max_frames)
        except gdb.error as err:
            result = {"frames": [], "python": "unavailable", "error": str(err), "truncated": False}
        with open(path, "w", encoding="utf-8") as out:
            json.dump(result, out)


MixdbgStack()
