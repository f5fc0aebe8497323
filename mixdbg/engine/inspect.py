"""What the front ends ask of a stopped tree: its threads, each thread's mixed stack, the
variables of a frame (native ones through gdb's variable objects, Python ones from the
agent at Python stops or from memory elsewhere), expressions evaluated in a frame.

Everything read is kept until the tree runs again (``forget``): a front end may ask for
the same stack many times per stop, and gdb's variable objects live until then.
"""

from __future__ import annotations

import logging
import platform
import re
from dataclasses import dataclass
from typing import Any, Callable

from mixdbg import calls
from mixdbg.engine import agents
from mixdbg.engine.stepping import StepContext
from mixdbg.errors import DebuggerError, UsageError
from mixdbg.gdbmi import GdbCommandError, GdbMi, mi_quote
from mixdbg.proctree import ProcessTree
from mixdbg.stack import Frame, MixedStack
from mixdbg.stopview import StopView

log = logging.getLogger(__name__)

#: The trap's first argument (the mailbox) at its entry.
FIRST_ARGUMENT = "$x0" if platform.machine() in ("aarch64", "arm64") else "$rdi"
_LWP = re.compile(r"LWP (\d+)|process (\d+)")
#: How many children of one value are listed at most.
MAX_CHILDREN = 300

AgentRequest = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class StopPoint:
    """Where the tree is stopped: the process and gdb thread, and at a Python stop the
    agent's mailbox (``answered`` once the agent was told how to go on)."""

    pid: int
    thread: int
    mailbox: agents.Mailbox | None = None
    answered: bool = False


@dataclass(frozen=True)
class ThreadInfo:
    """A thread of a followed process: gdb's id, the process, its LWP and a name."""

    id: int
    pid: int
    lwp: int
    name: str


@dataclass(frozen=True)
class Variable:
    """A value to show: ``children`` is what to ask for its members (None: it has none):
    ``("var", gdb variable object)`` or ``("py", agent reference)``."""

    name: str
    value: str
    type: str | None = None
    children: tuple[str, Any] | None = None


class Inspector:
    """Answers questions about the stopped tree through gdb and memory (see module doc)."""

    def __init__(self, gdb: GdbMi, view: StopView, tree: ProcessTree, hub: agents.AgentHub | None,
                 agent_request: AgentRequest) -> None:
        self.gdb = gdb
        self.view = view
        self.tree = tree
        self.hub = hub
        self.agent_request = agent_request
        self.root_pid: int | None = None
        self.stop: StopPoint | None = None
        self._stacks: dict[int, MixedStack] = {}
        self._varobjs: list[str] = []
        self._lwps: dict[int, int] = {}

    # --- memory -------------------------------------------------------------------------

    def write_memory(self, pid: int, address: int, data: bytes) -> None:
        """Write process ``pid``'s memory, through gdb (allowed wherever gdb may trace), in
        that process's inferior: gdb writes the selected one unless told which, and forked
        processes share their addresses."""
        process = next((p for p in self.tree.table.live() if p.pid == pid), None)
        group = f" --thread-group {process.inferior}" if process is not None else ""
        try:
            self.gdb.command(f"-data-write-memory-bytes{group} {address:#x} {data.hex()}")
        except GdbCommandError as err:
            raise DebuggerError(f"cannot write the debuggee's memory at {address:#x}: {err.gdb_message}") from err

    def trapped_mailbox(self, pid: int) -> agents.Mailbox | None:
        """The mailbox the trap was called with in the stopped thread, if an agent's."""
        try:
            value = self.gdb.command("-data-evaluate-expression " + mi_quote(f"(unsigned long){FIRST_ARGUMENT}"))["value"]
        except GdbCommandError as err:
            log.info("reading the trap's argument: %s", err.gdb_message)
            return None
        return agents.read_mailbox(pid, int(str(value).split()[0], 0))

    # --- threads and stacks -------------------------------------------------------------

    def pid_of(self, thread: int) -> int:
        """The process of gdb thread ``thread``."""
        process = self.tree.table.of_thread(str(thread))
        if process is not None:
            return process.pid
        if self.root_pid is None:
            raise UsageError(f"no thread {thread}")
        return self.root_pid

    def threads(self) -> list[ThreadInfo]:
        """Every thread of every followed process, named with its process for people."""
        result = self.gdb.command("-thread-info")
        threads: list[ThreadInfo] = []
        for raw in result.get("threads", []):
            process = self.tree.table.of_thread(str(raw["id"]))
            if process is not None and (process.quiet or process.ended):
                continue
            match = _LWP.search(str(raw.get("target-id", "")))
            lwp = int(match.group(1) or match.group(2)) if match else 0
            self._lwps[int(raw["id"])] = lwp  # kept for steps: a thread keeps its LWP
            pid = process.pid if process is not None else (self.root_pid or 0)
            own = "MainThread" if lwp == pid else str(raw.get("name") or f"thread {lwp}")
            who = process.label() if process is not None and process is not self.tree.root else "main"
            name = f"{who.replace(f', pid {pid}', '')} (pid {pid}): {own}"
            threads.append(ThreadInfo(id=int(raw["id"]), pid=pid, lwp=lwp, name=name))
        return threads

    def remember(self, thread: int, stack: MixedStack) -> None:
        """Keep the stack a stop report already read."""
        self._stacks[thread] = stack

    def stack(self, thread: int) -> MixedStack:
        """Thread ``thread``'s mixed stack (read once per stop)."""
        if thread not in self._stacks:
            self.select(thread)
            self._stacks[thread] = self.as_stopped(thread, self.view.mixed_stack())
        return self._stacks[thread]

    def stopped_stack(self, all_threads: bool = False) -> MixedStack:
        """The stopped thread's mixed Python + native stack (every thread's with
        ``all_threads``; see ``stopview``), for the prompt."""
        self._require_stop("stacks")
        return self.view.mixed_stack(all_threads)

    def tensor_at(self, address: int) -> dict[str, Any]:
        """The tensor at ``address`` (a TensorImpl or at::Tensor), read from memory only."""
        self._require_stop("tensors")
        return self.view.tensor_at(address)

    def _require_stop(self, what: str) -> None:
        if self.stop is None:
            raise UsageError(f"the debuggee is running; {what} are read while it is stopped")

    def as_stopped(self, thread: int, stack: MixedStack) -> MixedStack:
        """The stack to show for ``thread``: at an uncaught Python exception the agent stops
        in the exception hook, after the frames it went through are gone; their traceback
        is the stack then."""
        message = self.stop.mailbox.message if self.stop and self.stop.mailbox and self.stop.thread == thread else {}
        if message.get("depth") != 0 or not message.get("frames"):
            return stack
        frames = tuple(Frame(kind="python", function=str(raw.get("name")), file=raw.get("file"),
                             line=raw.get("line"), library=None) for raw in message["frames"])
        return MixedStack(frames=frames, python_status="ok (the exception's traceback)", truncated=False)

    def select(self, thread: int, level: int = 0) -> None:
        """Make ``thread`` (and its frame ``level``) gdb's selected one."""
        try:
            self.gdb.command(f"-thread-select {thread}")
            if level:
                self.gdb.command(f"-stack-select-frame {level}")
        except GdbCommandError as err:
            raise UsageError(f"thread {thread}: {err.gdb_message}") from err
        self.view.select(self.pid_of(thread))

    def forget(self) -> None:
        """The tree runs again: stacks and variable objects are stale."""
        self._stacks.clear()
        for name in self._varobjs:
            try:
                self.gdb.command(f"-var-delete {name}")
            except GdbCommandError as err:
                log.debug("deleting %s: %s", name, err.gdb_message)
        self._varobjs.clear()

    def step_context(self, stop: StopPoint | None, thread: int, index: int,
                     native_stop_frame: bool = False) -> StepContext:
        """What a step from frame ``index`` of ``thread`` starts from."""
        pid = self.pid_of(thread)
        mailbox = stop.mailbox if stop is not None and stop.thread == thread else None
        shared = None
        if self.hub is not None:
            shared = self.hub.shared.get(pid) or (self.hub.shared.get(self.root_pid) if self.root_pid else None)
        return StepContext(pid=pid, thread=thread, tid=self.lwp_of(thread), index=index, mailbox=mailbox,
                           shared=shared, read_stack=lambda: self.stack(thread),
                           native_stop_frame=native_stop_frame and mailbox is None and index == 0)

    def lwp_of(self, thread: int) -> int:
        """The kernel's id of gdb thread ``thread`` (kept: a thread keeps its LWP)."""
        if thread not in self._lwps:
            self.threads()
        return self._lwps.get(thread, self.pid_of(thread))

    # --- variables ----------------------------------------------------------------------

    def native_locals(self, thread: int, level: int) -> list[Variable]:
        """A native frame's arguments and locals, each expandable where it has members."""
        try:
            result = self.gdb.command(f"-stack-list-variables --thread {thread} --frame {level} --no-values")
        except GdbCommandError as err:
            raise DebuggerError(f"locals: {err.gdb_message}") from err
        return [self._varobj(thread, level, str(raw["name"]), str(raw["name"]))
                for raw in result.get("variables", [])]

    def children(self, reference: tuple[str, Any]) -> list[Variable]:
        """The members of a value (see ``Variable.children``)."""
        kind, handle = reference
        if kind == "py":
            body = self.agent_request({"command": "children", "ref": handle})
            return [_python_variable(raw) for raw in body.get("variables", [])]
        try:
            result = self.gdb.command(f"-var-list-children --all-values {handle} 0 {MAX_CHILDREN}")
        except GdbCommandError as err:
            raise DebuggerError(f"members: {err.gdb_message}") from err
        variables = []
        for child in result.get("children", []):
            raw = child if "name" in child else child.get("child", {})
            self._varobjs.append(str(raw["name"]))
            has = int(raw.get("numchild", "0") or 0) > 0 or raw.get("dynamic") == "1"
            variables.append(Variable(str(raw.get("exp", "")), str(raw.get("value", "")), raw.get("type"),
                                      ("var", str(raw["name"])) if has else None))
        return variables

    def python_locals(self, thread: int, index: int, stack: MixedStack) -> list[Variable]:
        """A Python frame's locals: full objects from the agent at a Python stop; short
        texts read from memory at a native stop (the interpreter is frozen there)."""
        frame = stack.frames[index]
        if self._at_python_stop(thread):
            body = self.agent_request({"command": "variables", "frame": _python_index(stack, index)})
            return [_python_variable(raw) for raw in body.get("variables", [])]
        self.select(thread)
        return [Variable(name, value) for name, value in self.view.locals_at(frame.address or "0")]

    def evaluate(self, expression: str, thread: int, index: int, context: str) -> Variable:
        """``expression`` in frame ``index`` of ``thread``: Python in Python frames (at
        Python stops), C/C++ in native frames (never calling into the debuggee where gdb
        cannot do so safely)."""
        stack = self.stack(thread)
        if not stack.frames:
            raise UsageError("this thread has no frames")
        frame = stack.frames[min(index, len(stack.frames) - 1)]
        if frame.kind == "python":
            if not self._at_python_stop(thread):
                raise UsageError("Python expressions are evaluated at Python stops; this stop is "
                                 "native (the interpreter is frozen): select a native frame for C/C++")
            body = self.agent_request({"command": "evaluate", "frame": _python_index(stack, index),
                                       "expression": expression, "context": context})
            return _python_variable({"name": expression, "value": body.get("result", ""),
                                     "type": body.get("type"), "ref": body.get("ref", 0)})
        return self._varobj(thread, frame.level or 0, expression, expression)

    def _at_python_stop(self, thread: int) -> bool:
        return self.stop is not None and self.stop.mailbox is not None and self.stop.thread == thread

    def _varobj(self, thread: int, level: int, name: str, expression: str) -> Variable:
        try:
            raw = self.gdb.command(f"-var-create --thread {thread} --frame {level} - * {mi_quote(expression)}")
        except GdbCommandError as err:
            message = err.gdb_message
            if "may-call-functions" in message:
                message = calls.refusal(calls.CallSafety(False, message))
            return Variable(name, f"<{message}>")
        self._varobjs.append(str(raw["name"]))
        has = int(raw.get("numchild", "0") or 0) > 0 or raw.get("dynamic") == "1"
        return Variable(name, str(raw.get("value", "")), raw.get("type"), ("var", str(raw["name"])) if has else None)


def _python_index(stack: MixedStack, index: int) -> int:
    """Frame ``index`` of a stack as the agent counts: its Python frames from the innermost."""
    return sum(1 for frame in stack.frames[:index] if frame.kind == "python")


def _python_variable(raw: dict[str, Any]) -> Variable:
    ref = int(raw.get("ref") or 0)
    return Variable(str(raw.get("name", "")), str(raw.get("value", "")), raw.get("type"),
                    ("py", ref) if ref else None)
