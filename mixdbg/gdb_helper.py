"""Runs inside gdb's embedded Python (``source``d by mixdbg): the mixed-stack walker.

Commands (each writes one JSON document to OUTFILE, the rest of the line, so it may
contain spaces; a file keeps the answer out of MI's stream records and works on every
gdb with Python):

- ``mixdbg-python PID RUNTIME PY_VERSION HINT`` / ``mixdbg-python PID unavailable REASON``:
  where process PID's ``_PyRuntime`` (and ``Py_Version``, 0 if none) is, and its ``3.X``
  version (``-`` if unknown), as the outer process found them (``mixdbg.pyruntime``).
  Kept per process: gdb may hold several (followed children), and an exec'd one has its
  interpreter at other addresses.
- ``mixdbg-stack MAX_FRAMES all|one OUTFILE``: the selected thread's mixed stack, and
  with ``all`` every thread's. Each native frame that runs Python frames (the eval
  loop, found as the frame whose C stack holds the run's entry marker, so it works
  where the loop has no symbol) is replaced, in place, by the frames it runs.
- ``mixdbg-locals FRAME_ADDRESS OUTFILE``: a Python frame's locals.
- ``mixdbg-stack`` first reads the symbols of the libraries its frames are in (mixdbg
  keeps ``auto-solib-add off``: see ``mixdbg.solibs``): without them gdb can neither name
  nor unwind their frames. A library mixdbg leaves unread (``mixdbg-unwind-only``, see
  ``mixdbg.gdb_unwind``) is unwound from its stub instead, for that walk only.
- ``mixdbg-warm NAME...``: expand the debug info of the files that define NAMEs (the
  interpreter's call path: ``mixdbg.stopview.CALL_PATH``) ahead of the first stack or Step
  Into that needs it.
- ``mixdbg-libstdcxx PATH``: load the libstdc++ at PATH's pretty printers and xmethods.
- ``mixdbg-fork-symbols``: from now on, gdb reads the libraries of each new inferior (a
  fork child) as it creates it: ``auto-solib-add`` is turned on when the inferior is added,
  before gdb looks for its libraries (it does only under ``on``); mixdbg turns it off again
  at the next library load.

Python frames come from ``mixdbg.pyframes``, which reads the interpreter's memory
(``gdb.Inferior.read_memory``) and never calls into the debuggee. Only the standard
library, ``gdb`` and that package are used: this is gdb's Python, not the debuggee's.
"""

from __future__ import annotations

import json
import os
import sys

import gdb  # type: ignore[import-not-found]

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mixdbg import gdb_unwind
from mixdbg.gdbtext import library_regex
from mixdbg.memory import MemoryReadError
from mixdbg.pyframes import Unsupported, open_interpreter
from mixdbg.pyframes.placement import place

#: Per process (PID): where its interpreter is, or {"error": why its frames are unavailable}.
_INTERPRETERS = {}
#: Times a stack is walked again after reading the symbols of the libraries it went through.
_SYMBOL_ROUNDS = 4


def _read(address, size):
    """``ReadMemory`` over gdb's view of the debuggee (nothing to read: no bytes; gdb
    refuses a read of 0 bytes, e.g. the locals of a frame that has none)."""
    if size == 0:
        return b""
    try:
        return bytes(gdb.selected_inferior().read_memory(address, size))
    except (gdb.MemoryError, gdb.error, OverflowError) as err:
        raise MemoryReadError(f"cannot read {size} bytes at {address:#x}: {err}") from err


def _interpreter():
    """The stopped interpreter, or a status string saying why its frames are unavailable."""
    config = _INTERPRETERS.get(gdb.selected_inferior().pid)
    if config is None:
        return "unavailable: mixdbg did not locate the interpreter"
    if "error" in config:
        return config["error"]
    try:
        return open_interpreter(_read, config["runtime"], config["py_version"] or None, config["hint"])
    except Unsupported as err:
        return f"unavailable: {err}"


def _python_threads():
    """The interpreter and every thread's Python frames, or a status string and none.

    A bug of the reader must not cost the user the stop: whatever it raises is reported
    in the status, in one line, and the stop shows native frames."""
    interpreter = _interpreter()
    if isinstance(interpreter, str):
        return interpreter, []
    try:
        return interpreter, interpreter.threads()
    except Unsupported as err:
        return f"unavailable: {err}", []
    except Exception as err:  # noqa: BLE001 - see the docstring
        return f"unavailable: the frame reader failed ({type(err).__name__}: {err})", []


def _native_frame(gdb_frame, level):
    """Describe one native frame: function, source position when known, library, its gdb
    frame ``level`` (what ``-stack-select-frame`` takes), and whether it was inlined."""
    pc = gdb_frame.pc()
    file_name, line = None, None
    try:
        sal = gdb_frame.find_sal()
        if sal.symtab is not None:
            file_name = sal.symtab.fullname()
            line = sal.line or None
    except gdb.error:
        pass
    library = gdb.solib_name(pc) or gdb.current_progspace().filename
    return {"kind": "native", "function": gdb_unwind.frame_name(gdb_frame) or "??", "file": file_name, "line": line,
            "library": library, "address": f"{pc:#x}", "level": level,
            "inline": gdb_frame.type() == gdb.INLINE_FRAME}


def _python_frame(frame):
    return {"kind": "python", "function": frame.function, "file": frame.file, "line": frame.line,
            "library": None, "address": f"{frame.address:#x}"}


def _has_symbols(path):
    try:
        gdb.lookup_objfile(path)
    except ValueError:
        return False
    return True


def _unread_libraries(max_frames, skip):
    """The libraries of the selected thread's frames whose symbols gdb has not read (but ``skip``)."""
    unread = []
    gdb_frame, count = gdb.newest_frame(), 0
    while gdb_frame is not None and count < max_frames:
        path = gdb.solib_name(gdb_frame.pc())
        if path and path not in unread and path not in skip and not _has_symbols(path):
            unread.append(path)
        try:
            gdb_frame, count = gdb_frame.older(), count + 1
        except gdb.error:
            gdb_frame = None
    return unread


def _read_stack_symbols(max_frames):
    """Read the symbols of every library the selected thread's stack goes through (a
    library's unwind tables come with them: the walk goes further each round). The
    libraries of a round are read by one command, so that gdb re-resolves the breakpoints
    once for them, not once per library. Those mixdbg leaves unread get their unwind stubs
    instead (``gdb_unwind``; ``mixed_stacks`` removes them)."""
    stubbed = []
    for _ in range(_SYMBOL_ROUNDS):
        unread = _unread_libraries(max_frames, stubbed)
        if not unread:
            return
        unwind_only = [path for path in unread if gdb_unwind.unwind_only(path)]
        failed = gdb_unwind.add_stubs(unwind_only)
        stubbed += [path for path in unwind_only if path not in failed]
        read = [path for path in unread if path not in stubbed]
        if read:
            gdb.execute("sharedlibrary " + "\\|".join(library_regex(path) for path in read), to_string=True)


def _native_frames(max_frames):
    """The selected thread's native frames, innermost first: ``(description, sp)``."""
    _read_stack_symbols(max_frames)
    natives = []
    gdb_frame = gdb.newest_frame()
    while gdb_frame is not None and len(natives) < max_frames:
        try:
            sp = int(gdb_frame.read_register("sp"))
        except (gdb.error, ValueError):
            sp = None
        natives.append((_native_frame(gdb_frame, len(natives)), sp))
        try:
            gdb_frame = gdb_frame.older()
        except gdb.error:
            gdb_frame = None
    return natives, gdb_frame is not None


def _thread_runs(threads, gdb_thread):
    """The runs of the thread states that belong to ``gdb_thread`` (matched by LWP, or by
    pthread_t on 3.10, which keeps no LWP)."""
    lwp = gdb_thread.ptid[1]
    handle = None
    try:
        handle = int.from_bytes(gdb_thread.handle(), "little")
    except (gdb.error, AttributeError, TypeError):
        pass
    runs = []
    problems = []
    for thread in threads:
        if thread.native_id == lwp or (thread.native_id is None and thread.thread_id == handle):
            runs.extend(run for run in thread.runs if run.frames)
            if thread.problem:
                problems.append(thread.problem)
    return runs, problems


def _mixed(max_frames, interpreter, threads):
    """The selected thread's mixed stack as the JSON document ``stack.from_helper`` reads."""
    natives, truncated = _native_frames(max_frames)
    if isinstance(interpreter, str):
        return {"frames": [frame for frame, _ in natives], "python": interpreter, "truncated": truncated}
    runs, problems = _thread_runs(threads, gdb.selected_thread())
    owners, tail, how = place([sp for _, sp in natives], [frame["function"] for frame, _ in natives], runs,
                              truncated)
    frames = []
    for index, (native, _) in enumerate(natives):
        run = owners.get(index)
        frames.extend([_python_frame(f) for f in run.frames] if run else [native])
    for run in tail:
        frames.extend(_python_frame(f) for f in run.frames)
    _number_depths(frames)
    status = f"ok (Python {interpreter.version}, {interpreter.method}"
    status += f"; placed {how})" if how else ")"
    if problems:
        status = f"partial: {problems[0]}; {status}"
    return {"frames": frames[:max_frames], "python": status, "truncated": truncated or len(frames) > max_frames}


def _number_depths(frames):
    """Give each Python frame its depth: how many Python frames there are from the
    thread's outermost one to it, that one included (the agent's step requests use it)."""
    depth = sum(1 for frame in frames if frame["kind"] == "python")
    for frame in frames:
        if frame["kind"] == "python":
            frame["depth"] = depth
            depth -= 1


def mixed_stacks(max_frames, every_thread):
    """The selected thread's stack, plus every thread's (``threads``) when asked."""
    interpreter, threads = _python_threads()
    try:
        return _mixed_stacks(max_frames, every_thread, interpreter, threads)
    finally:
        gdb_unwind.remove_stubs()


def _mixed_stacks(max_frames, every_thread, interpreter, threads):
    result = _mixed(max_frames, interpreter, threads)
    if every_thread:
        selected, frame = gdb.selected_thread(), gdb.selected_frame()
        result["threads"] = []
        try:
            for thread in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num):
                thread.switch()
                one = _mixed(max_frames, interpreter, threads)
                one.update(thread=thread.num, lwp=thread.ptid[1], name=thread.name)
                result["threads"].append(one)
        finally:
            selected.switch()
            frame.select()
    return result


def _write(path, document):
    with open(path, "w", encoding="utf-8") as out:
        json.dump(document, out)


class MixdbgPython(gdb.Command):
    """mixdbg-python PID RUNTIME PY_VERSION HINT | PID unavailable REASON: where PID's interpreter is."""

    def __init__(self):
        super().__init__("mixdbg-python", gdb.COMMAND_DATA)

    def invoke(self, argument, from_tty):
        pid, first, rest = argument.strip().split(" ", 2)
        if first == "unavailable":
            _INTERPRETERS[int(pid)] = {"error": f"unavailable: {rest}"}
            return
        py_version, hint = rest.split()
        _INTERPRETERS[int(pid)] = {"runtime": int(first, 0), "py_version": int(py_version, 0),
                                   "hint": None if hint == "-" else hint}


class MixdbgStack(gdb.Command):
    """mixdbg-stack MAX_FRAMES all|one OUTFILE: write mixed stacks as JSON."""

    def __init__(self):
        super().__init__("mixdbg-stack", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        count, which, path = argument.strip().split(" ", 2)
        try:
            result = mixed_stacks(int(count), which == "all")
        except gdb.error as err:
            result = {"frames": [], "python": "unavailable", "error": str(err), "truncated": False}
        _write(path, result)


class MixdbgGlobals(gdb.Command):
    """mixdbg-globals OUTFILE: the global and file-static variables the selected frame's
    compile unit sees (its static and global blocks), as JSON: the Globals scope."""

    def __init__(self):
        super().__init__("mixdbg-globals", gdb.COMMAND_DATA)

    def invoke(self, argument, from_tty):
        names = []
        try:
            block = gdb.selected_frame().block().static_block
        except RuntimeError:  # no debug info for this frame
            block = None
        while block is not None:
            names += [symbol.print_name for symbol in block if symbol.is_variable and not symbol.is_artificial]
            block = block.superblock
        _write(argument.strip(), {"names": sorted(dict.fromkeys(names))})


#: Where a libstdc++'s printers script may be, for the library at PATH (its real path
#: RPATH): beside it (conda, a GCC install), or under the system's auto-load directory.
_LIBSTDCXX_SCRIPTS = ("{path}-gdb.py", "{rpath}-gdb.py", "/usr/share/gdb/auto-load{rpath}-gdb.py")
_LIBSTDCXX_LOADED = set()


class _Library:
    """What a libstdc++ printers script asks of ``gdb.current_objfile()`` (the library's
    name, to find its Python directory from): mixdbg keeps libraries' symbols unread, so
    there may be no objfile yet. What it registers goes to gdb's global lists, which apply
    to every value of every process."""

    def __init__(self, filename):
        self.filename = filename
        self.pretty_printers = gdb.pretty_printers
        self.type_printers = gdb.type_printers
        self.xmethods = gdb.xmethods


class MixdbgLibstdcxx(gdb.Command):
    """mixdbg-libstdcxx PATH: load the pretty printers and xmethods of the libstdc++ at PATH
    (std::vector, std::map, std::string, std::unique_ptr print and index in expressions),
    once per library file. gdb runs with -nx and loads no auto-load script itself."""

    def __init__(self):
        super().__init__("mixdbg-libstdcxx", gdb.COMMAND_DATA)

    def invoke(self, argument, from_tty):
        path = argument.strip()
        rpath = os.path.realpath(path)
        script = next((candidate.format(path=path, rpath=rpath) for candidate in _LIBSTDCXX_SCRIPTS
                       if os.path.isfile(candidate.format(path=path, rpath=rpath))), None)
        if script is None or script in _LIBSTDCXX_LOADED:
            return
        _LIBSTDCXX_LOADED.add(script)
        with open(script, encoding="utf-8") as handle:
            code = compile(handle.read(), script, "exec")
        current = gdb.current_objfile
        gdb.current_objfile = lambda: _Library(rpath)
        try:
            exec(code, {"__file__": script, "__name__": "__mixdbg_libstdcxx__"})  # noqa: S102 - as gdb's auto-load runs it
        except Exception as err:  # noqa: BLE001 - a printers script that fails leaves values raw, never gdb broken
            gdb.write(f"mixdbg: libstdc++ printers from {script}: {err}\n", gdb.STDERR)
        finally:
            gdb.current_objfile = current


def _read_new_inferiors_libraries(event):
    gdb.execute("set auto-solib-add on", to_string=True)


class MixdbgForkSymbols(gdb.Command):
    """mixdbg-fork-symbols: read each new inferior's libraries as gdb creates it."""

    def __init__(self):
        super().__init__("mixdbg-fork-symbols", gdb.COMMAND_FILES)
        self.connected = False

    def invoke(self, argument, from_tty):
        if not self.connected:
            gdb.events.new_inferior.connect(_read_new_inferiors_libraries)
            self.connected = True


class MixdbgWarm(gdb.Command):
    """mixdbg-warm NAME...: expand the debug info of the files defining NAMEs (works while
    the program runs)."""

    def __init__(self):
        super().__init__("mixdbg-warm", gdb.COMMAND_FILES)

    def invoke(self, argument, from_tty):
        # in the interpreter's and the C library's files only: a name looked up everywhere is also looked up in
        # every library read meanwhile (2.3 s in libceph-common's index, delaying the stop
        # that came next: benchmarks/bench_scale.py)
        for objfile in _interpreter_objfiles():
            for name in argument.split():
                try:
                    objfile.lookup_global_symbol(name) or objfile.lookup_static_symbol(name)
                except gdb.error:
                    pass  # no debug info for it: nothing to expand


def _interpreter_objfiles():
    """The selected program's executable, its libpython and the C library: where CPython's
    call path is (the program's start, ``__libc_start_call_main``, is the C library's)."""
    executable = gdb.current_progspace().filename
    return [objfile for objfile in gdb.objfiles() if objfile.is_valid() and objfile.owner is None
            and (objfile.filename == executable
                 or os.path.basename(objfile.filename).startswith(("libpython", "libc.so")))]


class MixdbgLocals(gdb.Command):
    """mixdbg-locals FRAME_ADDRESS OUTFILE: write a Python frame's locals as JSON."""

    def __init__(self):
        super().__init__("mixdbg-locals", gdb.COMMAND_DATA)

    def invoke(self, argument, from_tty):
        address, path = argument.strip().split(" ", 1)
        interpreter = _interpreter()
        if isinstance(interpreter, str):
            _write(path, {"error": interpreter})
            return
        try:
            _write(path, {"locals": interpreter.locals(int(address, 0))})
        except Unsupported as err:
            _write(path, {"error": str(err)})


MixdbgPython()
MixdbgStack()
MixdbgGlobals()
MixdbgLibstdcxx()
MixdbgLocals()
MixdbgForkSymbols()
MixdbgWarm()
