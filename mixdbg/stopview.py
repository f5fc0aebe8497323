"""What a stopped process looks like: its mixed stack, Python locals and tensors.

Everything here reads, through gdb's helpers (``gdb_helper.py``, ``pytorch/gdb_commands.py``)
and the stopped process's memory: nothing resumes the process, nothing calls a function in
it. The session owns the gdb and decides when the process is stopped; a ``StopView``
answers questions about the process gdb has selected (the one the last stop was in).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from mixdbg import pyruntime, stack
from mixdbg.errors import DebuggerError, NotFoundError, UsageError
from mixdbg.gdbmi import SLOW_COMMAND_TIMEOUT, GdbCommandError, GdbMi
from mixdbg.proctree import procfs, workers
from mixdbg.pytorch import views

log = logging.getLogger(__name__)

#: Functions of CPython's call path, one or more per source file, in nearly every stack, and
#: the C library's start of the program: the first look up of each expands its file's debug
#: info, which gdb otherwise does while it unwinds the first stack (ceval.c alone: 15 ms).
#: Measured at a stop under 200 Python frames: the first unwind took 28-34 ms, 7.7-9.3 ms
#: after these look-ups; in Polygon::area (pybind11), 71-153 ms, 28-53 ms after (2 loaded cores).
CALL_PATH = ("_PyEval_EvalFrameDefault", "PyObject_Vectorcall", "cfunction_call", "method_vectorcall_VARARGS",
             "slot_tp_call", "_PyRun_SimpleFileObject", "Py_RunMain", "Py_BytesMain", "main",
             "__libc_start_call_main")


class StopView:
    """Reads the process gdb has stopped and selected; ``pid`` is that process."""

    def __init__(self, gdb: GdbMi, warn: Callable[[str], None], max_frames: int, python: str | None) -> None:
        self._gdb = gdb
        self._warn = warn
        self.max_frames = max_frames
        self.python = python  # the debuggee's interpreter (the tensor layout probe runs it)
        self.pid: int | None = None
        self._runtimes: dict[int, str] = {}  # PID -> where its interpreter is, as gdb's helper knows
        self._layouts: dict[int, tuple[str, ...] | None] = {}  # PID -> its image's layout then
        self._to_warm: list[str] = []  # call-path functions whose files gdb has yet to expand
        self.torch = views.TorchViews(gdb)

    def locate_python(self, pid: int) -> None:
        """Tell gdb's helper where process ``pid``'s ``_PyRuntime`` is (stops read its
        Python frames from memory there), or why it is not known. Looked up again (1.5 ms)
        only when the process's image moved: a process that execs a new interpreter keeps
        its PID but not its addresses."""
        layout = procfs.image_layout(pid)
        if layout is not None and self._layouts.get(pid) == layout:
            return
        try:
            found = pyruntime.find_runtime(pid)
            where = f"{found.runtime:#x} {found.py_version:#x} {found.hint or '-'}"
            self._layouts[pid] = layout  # found: not looked for again in this image
        except NotFoundError as err:
            where = f"unavailable {err.message}"
            if pid not in self._runtimes:
                self._warn(f"stops in PID {pid} will show native frames only: {err.message}")
        if self._runtimes.get(pid) != where:
            self._runtimes[pid] = where
            self._gdb.console(f"mixdbg-python {pid} {where}")

    def start_warming(self) -> None:
        """The interpreter's symbols are read: from now on ``warm_next`` has work (see
        ``CALL_PATH``)."""
        self._to_warm = list(CALL_PATH)

    @property
    def warming(self) -> bool:
        """Whether ``warm_next`` has work left."""
        return bool(self._to_warm)

    def warm_next(self) -> bool:
        """Have gdb expand the debug info of the next file of CPython's call path, which the
        first stack or Step Into would otherwise wait for (65 ms for all of them; one file at
        a time, while gdb has nothing to report: it works while the program runs). Whether
        there was one."""
        if not self._to_warm:
            return False
        if not self._warm_command(f"mixdbg-warm {self._to_warm.pop(0)}"):
            self._to_warm.clear()
        return True

    def _warm_command(self, command: str) -> bool:
        """Run a warm-up in gdb; False if gdb refused it (the selected process just died, at
        the prompt's ``kill``): warm-ups only save time, they never end a session."""
        try:
            self._gdb.console(command, SLOW_COMMAND_TIMEOUT)
        except GdbCommandError as err:
            log.info("warming gdb up: %s", err.gdb_message)
            return False
        return True

    def select(self, pid: int) -> None:
        """A stop in process ``pid`` (gdb selected it): read that process from now on."""
        self.pid = pid
        self.locate_python(pid)

    def mixed_stack(self, all_threads: bool = False) -> stack.MixedStack:
        """The selected thread's mixed Python + native stack, and with ``all_threads``
        every thread's."""
        which = "all" if all_threads else "one"
        return stack.from_helper(self._helper(f"mixdbg-stack {self.max_frames} {which}"))

    def locals_at(self, address: str) -> list[tuple[str, str]]:
        """The locals of the Python frame at ``address`` of the selected process, as
        ``(name, short value)`` pairs (torch tensors summarised once torch is loaded)."""
        if self.pid is not None:
            self.torch.summarise_python_tensors(self.pid, views.interpreter(self.pid, self.python))
        data = self._helper(f"mixdbg-locals {address}")
        if "error" in data:
            raise DebuggerError(f"locals: {data['error']}")
        return [(str(name), str(value)) for name, value in data["locals"]]

    def python_frames(self, pid: int) -> list[workers.PythonFrame]:
        """The Python frames of the stopped thread of process ``pid`` (gdb selected it)."""
        self.select(pid)
        return [workers.PythonFrame(frame.function, frame.file or "", frame.address or "")
                for frame in self.mixed_stack().frames if frame.kind == "python"]

    def frame_locals(self, address: str) -> dict[str, str]:
        """The locals of the Python frame at ``address`` as short texts ({} if unreadable)."""
        data = self._helper(f"mixdbg-locals {address}")
        return {str(name): str(value) for name, value in data.get("locals", [])}

    def native_arguments(self, stack_now: stack.MixedStack, names: list[str] | None,
                         returns: str | None) -> list[dict[str, Any]] | None:
        """The innermost frame's tensor, list and scalar arguments: from its debug info, or
        from registers and memory at its entry (None when it has none; see
        ``pytorch.views``); ``names``: the parameters' names when known (an operator's
        schema), ``returns``: its return type when known."""
        frames = stack_now.frames
        if self.pid is None or not frames or frames[0].kind != "native":
            return None
        return self.torch.arguments(self.pid, views.interpreter(self.pid, self.python), frames[0].function, names,
                                    returns, debug_info=frames[0].file is not None)

    def torch_layout(self, pid: int) -> dict[str, Any] | None:
        """The tensor (and dispatcher) layout of the torch process ``pid`` runs, once loaded."""
        return self.torch.layout(pid, views.interpreter(pid, self.python))

    def prepare_printers(self, pid: int) -> None:
        """Before gdb shows native values of process ``pid``: its tensor printers get the
        layout of the debuggee's torch build, once torch is loaded (see ``pytorch.views``)."""
        self.torch.prepare_printers(pid, views.interpreter(pid, self.python))

    def tensor_at(self, address: int) -> dict[str, Any]:
        """The tensor at ``address`` (a TensorImpl or at::Tensor), read from memory only."""
        if self.pid is None:
            raise UsageError("no stop yet: tensors are read while the debuggee is stopped")
        return self.torch.tensor(self.pid, views.interpreter(self.pid, self.python), address)

    def demangle(self, symbols: list[str]) -> list[str]:
        """The C++ names of mangled ``symbols``, as gdb demangles them."""
        names: list[str] = views.ask_gdb(self._gdb, "mixdbg-demangle", {"symbols": symbols})["names"]
        return names

    def global_names(self) -> list[str]:
        """The global and file-static variables the selected frame's compile unit sees."""
        return [str(name) for name in self._helper("mixdbg-globals").get("names", [])]

    def _helper(self, command: str) -> dict[str, Any]:
        """Run a command of ``gdb_helper.py``; return the JSON document it wrote."""
        fd, name = tempfile.mkstemp(prefix="mixdbg-helper-", suffix=".json")
        os.close(fd)
        try:
            # The path last: the helper takes the rest of the line, spaces included.
            self._gdb.console(f"{command} {name}", SLOW_COMMAND_TIMEOUT)
            data: dict[str, Any] = json.loads(Path(name).read_text())
        finally:
            os.unlink(name)
        return data
