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
from mixdbg.memory import MemoryReadError, ProcMemory
from mixdbg.proctree import ProcessTree
from mixdbg.stack import Frame, MixedStack
from mixdbg.stopview import StopView

log = logging.getLogger(__name__)

#: The trap's first argument (the mailbox) at its entry.
FIRST_ARGUMENT = "$x0" if platform.machine() in ("aarch64", "arm64") else "$rdi"
_LWP = re.compile(r"LWP (\d+)|process (\d+)")
#: A pointer's value as gdb prints it (``0x55d0... "text"`` for a char *).
_ADDRESS = re.compile(r"(?:^|\) )(0x[0-9a-fA-F]+)")
#: An array type (``char [16]``, ``double [2][3]``).
_ARRAY = re.compile(r"\[\d+\]$")
#: Memory is mapped in pages: a range that cannot be read whole is read up to its first
#: unmapped page.
PAGE = 4096
#: What -var-create says for every expression it cannot evaluate, whatever the reason.
VAROBJ_REFUSED = "-var-create: unable to create variable object"
#: How many children of one value are listed at most (for a client that does not page).
MAX_CHILDREN = 300
#: Arrays with more elements than this are paged (DAP ``indexedVariables``).
PAGE_OVER = 100
#: Where the general registers end in gdb's register list (x86-64, aarch64).
FIRST_FLOAT_REGISTERS = frozenset({"st0", "v0", "d0", "fpsr"})

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
    ``("var", gdb variable object)`` or ``("py", agent reference)``; ``evaluate``: the
    expression that reaches it; ``hint``: ``readOnly``, ``rawString``, ``virtual`` (a
    group), space-separated; ``indexed``/``named``: its children's counts when they are
    paged."""

    name: str
    value: str
    type: str | None = None
    children: tuple[str, Any] | None = None
    evaluate: str | None = None
    hint: str | None = None
    indexed: int | None = None
    named: int | None = None
    #: Where its bytes are, for a memory view (a pointer's target, an array's first
    #: element), as ``(pid, address)``; None for other values.
    memory: tuple[int, int] | None = None


@dataclass(frozen=True)
class Page:
    """Which children a client asks for: ``which`` ``indexed`` (from ``start``, ``count`` of
    them), ``named``, or None (all); ``hex``: integers in hexadecimal."""

    start: int = 0
    count: int = 0
    which: str | None = None
    hex: bool = False


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
        self._varobj_pids: dict[str, int] = {}  # variable object -> the process it reads
        self._memory_pids: dict[int, int] = {}  # address handed out -> its process
        self._varobj_frames: dict[str, tuple[int, int]] = {}  # variable object -> (thread, level)
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

    def read_memory(self, pid: int, address: int, count: int) -> tuple[bytes, int]:
        """Up to ``count`` bytes of process ``pid`` at ``address``, read from
        ``/proc/PID/mem`` (gdb's round trip costs more than the read), and how many bytes
        after them could not be read (the rest of the range: from the first unreadable
        page on, DAP's ``unreadableBytes``)."""
        self._require_stop("memory")
        try:
            reader = ProcMemory(pid)
        except MemoryReadError as err:
            raise DebuggerError(str(err)) from err
        with reader:
            try:
                return reader(address, count), 0
            except MemoryReadError:
                pass  # part of it is unmapped: the readable pages before it
            data = b""
            while len(data) < count:
                at = address + len(data)
                size = min(count - len(data), PAGE - at % PAGE)
                try:
                    data += reader(at, size)
                except MemoryReadError:
                    break
            return data, count - len(data)

    def memory_process(self, address: int) -> int:
        """The process whose memory ``address`` was handed out from at this stop (a value
        shown in a frame of a fork child is in that child), else the stopped one's."""
        pid = self._memory_pids.get(address)
        if pid is not None:
            return pid
        if self.stop is not None:
            return self.stop.pid
        if self.root_pid is None:
            raise UsageError("no process to read memory from")
        return self.root_pid

    def lvalue(self, thread: int, level: int, expression: str) -> tuple[int, int, str]:
        """Where the value of ``expression`` in that frame lives: (address, size in bytes,
        type), for a data breakpoint; an error when it is not in memory (a register, a
        constant)."""
        where = f"-data-evaluate-expression --thread {thread} --frame {level} "
        try:
            pointer = str(self.gdb.command(where + mi_quote(f"&({expression})"))["value"])
            size = int(str(self.gdb.command(where + mi_quote(f"sizeof({expression})"))["value"]).split()[0], 0)
        except (GdbCommandError, ValueError) as err:
            reason = err.gdb_message if isinstance(err, GdbCommandError) else str(err)
            raise UsageError(f"{expression} is not a value in memory: {reason}") from err
        match = _ADDRESS.search(pointer)
        if match is None:
            raise UsageError(f"{expression} is not a value in memory ({pointer})")
        return int(match.group(1), 16), size, self._type_of(where.replace("-data-evaluate-expression", "-var-create"),
                                                            expression)

    def _type_of(self, create: str, expression: str) -> str:
        """The type of ``expression`` as gdb names it ('' if it cannot say): a pointer to a
        global prints without its type (``0x... <memlab_last>``), so it is asked of a
        variable object. A watch then compares values of that type, not bytes."""
        try:
            made = self.gdb.command(f"{create}- * {mi_quote(expression)}")
        except GdbCommandError as err:
            log.info("the type of %s: %s", expression, err.gdb_message)
            return ""
        self.gdb.command(f"-var-delete {made['name']}")
        return str(made.get("type", ""))

    def child_expression(self, reference: tuple[str, Any], name: str) -> tuple[int, int, str]:
        """The frame (thread, level) and expression of member ``name`` of a native value
        (see ``Variable.children``), as ``lvalue`` takes them."""
        kind, handle = reference
        frame = self._varobj_frames.get(str(handle)) if kind == "var" else None
        if frame is None:
            raise UsageError("data breakpoints are for C/C++ values")
        try:
            listed = self.gdb.command(f"-var-list-children {handle} 0 {MAX_CHILDREN}").get("children", [])
        except GdbCommandError as err:
            raise DebuggerError(f"members: {err.gdb_message}") from err
        for child in listed:
            raw = child if "name" in child else child.get("child", {})
            if str(raw.get("exp")) == name:
                path = self.gdb.command(f"-var-info-path-expression {raw['name']}")["path_expr"]
                return frame[0], frame[1], str(path)
        raise UsageError(f"no member {name!r} here")

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

    def inferiors(self) -> list[str | None]:
        """gdb's inferiors of the followed processes still alive (``[None]``: only gdb's
        selected one, before the tree knows its processes)."""
        found: list[str | None] = [p.inferior for p in self.tree.table.live() if not p.quiet]
        return found or [None]

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
        self._varobj_pids.clear()
        self._memory_pids.clear()
        self._varobj_frames.clear()

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

    def native_locals(self, thread: int, level: int, hex_ints: bool = False) -> list[Variable]:
        """A native frame's arguments and locals, each expandable where it has members."""
        self.view.prepare_printers(self.pid_of(thread))
        try:
            result = self.gdb.command(f"-stack-list-variables --thread {thread} --frame {level} --no-values")
        except GdbCommandError as err:
            raise DebuggerError(f"locals: {err.gdb_message}") from err
        return [self.native_value(thread, level, str(raw["name"]), hex_ints=hex_ints)
                for raw in result.get("variables", [])]

    def registers(self, thread: int, level: int, hex_ints: bool = False) -> list[Variable]:
        """A native frame's general registers (those before the first floating-point one:
        rax..gs on x86-64, x0..cpsr on aarch64), each a gdb variable object (``$rax``) that
        ``setVariable`` writes."""
        try:
            names = self.gdb.command("-data-list-register-names")["register-names"]
        except GdbCommandError as err:
            raise DebuggerError(f"registers: {err.gdb_message}") from err
        general = []
        for name in names:
            if name in FIRST_FLOAT_REGISTERS:
                break
            if name:
                general.append(name)
        return [self.native_value(thread, level, f"${name}", hex_ints=hex_ints) for name in general]

    def native_globals(self, thread: int, level: int) -> list[Variable]:
        """The globals and file statics a native frame's source file sees (gdb's DAP shows
        them as its Globals scope): where "Break When Value Changes" finds a C global."""
        self.select(thread, level)
        try:
            names = self.view.global_names()
        except GdbCommandError as err:
            raise DebuggerError(f"globals: {err.gdb_message}") from err
        return [self.native_value(thread, level, name) for name in names[:MAX_CHILDREN]]

    def children(self, reference: tuple[str, Any], page: Page | None = None) -> list[Variable]:
        """The members of a value (see ``Variable.children``): those ``page`` asks for."""
        page = page or Page()
        kind, handle = reference
        if kind == "py":
            body = self.agent_request({"command": "children", "ref": handle, **_page_request(page)})
            return [python_variable(raw) for raw in body.get("variables", [])]
        if page.which == "named":
            return []  # a paged native value has only items
        first = page.start
        last = first + (page.count or MAX_CHILDREN)
        try:
            result = self.gdb.command(f"-var-list-children --all-values {handle} {first} {last}")
        except GdbCommandError as err:
            raise DebuggerError(f"members: {err.gdb_message}") from err
        variables = []
        pid = self._varobj_pids.get(str(handle))
        for child in result.get("children", []):
            raw = child if "name" in child else child.get("child", {})
            self._varobjs.append(str(raw["name"]))
            if pid is not None:
                self._varobj_pids[str(raw["name"])] = pid
            if str(handle) in self._varobj_frames:
                self._varobj_frames[str(raw["name"])] = self._varobj_frames[str(handle)]
            variables.append(self._native_variable(str(raw.get("exp", "")), raw, page.hex, pid, None))
        return variables

    def _has_members(self, raw: dict[str, Any]) -> bool:
        """Whether a gdb variable object has members to list. A pretty-printed one
        (``dynamic``) says so in ``has_more`` when created; as a member of another, gdb does
        not say: its first member is asked for."""
        if raw.get("dynamic") != "1":
            return int(raw.get("numchild", "0") or 0) > 0
        if "has_more" in raw:
            return raw.get("has_more") == "1"
        try:
            first = self.gdb.command(f"-var-list-children {raw['name']} 0 1")
        except GdbCommandError as err:
            log.debug("members of %s: %s", raw["name"], err.gdb_message)
            return False
        return int(first.get("numchild", "0") or 0) > 0 or first.get("has_more") == "1"

    def python_locals(self, thread: int, index: int, stack: MixedStack, scope: str = "locals",
                      hex_ints: bool = False) -> list[Variable]:
        """A Python frame's locals (``scope`` ``globals``: its module's globals): full objects
        from the agent at a Python stop; short texts read from memory at a native stop (the
        interpreter is frozen there)."""
        frame = stack.frames[index]
        if self.at_python_stop(thread):
            body = self.agent_request({"command": "variables", "frame": _python_index(stack, index), "scope": scope,
                                       "format": {"hex": hex_ints}})
            return [python_variable(raw) for raw in body.get("variables", [])]
        self.select(thread)
        return [Variable(name, value) for name, value in self.view.locals_at(frame.address or "0")]

    def evaluate(self, expression: str, thread: int, index: int, context: str, hex_ints: bool = False) -> Variable:
        """``expression`` in frame ``index`` of ``thread``: Python in Python frames (at
        Python stops), C/C++ in native frames (never calling into the debuggee where gdb
        cannot do so safely). ``context`` ``clipboard``: the whole value, untruncated."""
        frame = self.frame_at(thread, index)
        if frame.kind == "python":
            self.require_python_stop(thread)
            body = self.agent_request({"command": "evaluate", "frame": _python_index(self.stack(thread), index),
                                       "expression": expression, "context": context, "format": {"hex": hex_ints}})
            return python_variable({**body, "name": expression, "value": body.get("result", "")})
        if context == "clipboard":
            return Variable(expression, self.native_text(thread, frame.level or 0, expression, hex_ints))
        value = self.native_value(thread, frame.level or 0, expression, hex_ints=hex_ints)
        if value.children is None and value.type is None and value.value.startswith("<"):
            where = f"frame #{index}, {frame.function}" + (f" at {frame.file}:{frame.line}" if frame.line else "")
            return Variable(name=expression, value=f"<{value.value[1:-1]} ({where})>")
        return value

    def frame_at(self, thread: int, index: int) -> Frame:
        """Frame ``index`` of ``thread``'s mixed stack (its outermost if there are fewer)."""
        stack = self.stack(thread)
        if not stack.frames:
            raise UsageError("this thread has no frames")
        return stack.frames[min(index, len(stack.frames) - 1)]

    def python_modules(self) -> list[dict[str, str]] | None:
        """The stopped program's imported Python modules (name, path, version), asked of the
        agent at a Python stop; None at a native stop (the interpreter is frozen there and
        its ``sys.modules`` is not read from memory yet)."""
        if self.stop is None or self.stop.mailbox is None:
            return None
        return [dict(raw) for raw in self.agent_request({"command": "modules"}).get("modules", [])]

    def require_python_stop(self, thread: int) -> None:
        """Python values are the agent's: only at a Python stop of that thread."""
        if not self.at_python_stop(thread):
            raise UsageError("Python expressions are evaluated at Python stops; this stop is "
                             "native (the interpreter is frozen): select a native frame for C/C++")

    def python_index(self, thread: int, index: int) -> int:
        """Frame ``index`` of ``thread``'s stack as the agent counts its frames (K)."""
        return _python_index(self.stack(thread), index)

    def at_python_stop(self, thread: int) -> bool:
        """Whether ``thread`` is the one at a Python stop (its agent answers requests)."""
        return self.stop is not None and self.stop.mailbox is not None and self.stop.thread == thread

    def native_value(self, thread: int, level: int, expression: str, name: str | None = None,
                     hex_ints: bool = False) -> Variable:
        """``expression`` in native frame ``level`` of ``thread`` as a gdb variable object
        (gdb's refusal as the value, in ``<>``)."""
        try:
            raw = self.native_varobj(thread, level, expression)
        except DebuggerError as err:
            return Variable(name or expression, f"<{err.message}>")
        return self._native_variable(name or expression, raw, hex_ints, self.pid_of(thread),
                                     (thread, level, expression))

    def native_varobj(self, thread: int, level: int, expression: str) -> dict[str, Any]:
        """A new gdb variable object for ``expression`` in native frame ``level`` (deleted
        when the tree runs again): gdb's ``-var-create`` answer (PyTorch values through
        mixdbg's printers)."""
        self.view.prepare_printers(self.pid_of(thread))
        try:
            raw = self.gdb.command(f"-var-create --thread {thread} --frame {level} - * {mi_quote(expression)}")
        except GdbCommandError as err:
            reason = gdb_refusal(err)
            if reason == VAROBJ_REFUSED:  # gdb's reason is behind it: ask as its CLI's print does
                reason = self._evaluation_error(thread, level, expression) or reason
            raise DebuggerError(reason) from err
        handle = str(raw["name"])
        self._varobjs.append(handle)
        self._varobj_pids[handle] = self.pid_of(thread)
        self._varobj_frames[handle] = (thread, level)
        return raw

    def _native_variable(self, name: str, raw: dict[str, Any], hex_ints: bool, pid: int | None,
                         where: tuple[int, int, str] | None) -> Variable:
        """A variable object as shown: paged when it is a large array, with where its bytes
        are for a memory view (see ``_memory_of``)."""
        handle = str(raw["name"])
        count = int(raw.get("numchild", "0") or 0)
        value = str(raw.get("value", ""))
        if hex_ints:
            value = self._hex(handle, value)
        paged = count > PAGE_OVER and (str(raw.get("type", "")).endswith("]") or raw.get("displayhint") == "array")
        return Variable(name, value, raw.get("type"), ("var", handle) if self._has_members(raw) else None,
                        indexed=count if paged else None, named=0 if paged else None,
                        memory=self._memory_of(pid, raw, where))

    def _hex(self, handle: str, value: str) -> str:
        try:
            return str(self.gdb.command(f"-var-evaluate-expression -f hexadecimal {handle}").get("value", value))
        except GdbCommandError as err:
            log.info("hex value of %s: %s", handle, err.gdb_message)
            return value

    def native_text(self, thread: int, level: int, expression: str, hex_ints: bool = False) -> str:
        """The whole value of ``expression`` as text (no limit on elements or repeats: the
        clipboard's), from native frame ``level`` of ``thread``."""
        option = "-f x " if hex_ints else ""
        try:
            self.gdb.command("-gdb-set print elements unlimited")
            self.gdb.command("-gdb-set print repeats unlimited")
            value = self.gdb.command(f"-data-evaluate-expression --thread {thread} --frame {level} {option}"
                                     f"{mi_quote(expression)}")
        except GdbCommandError as err:
            raise DebuggerError(gdb_refusal(err)) from err
        finally:
            self.gdb.command("-gdb-set print elements 200")
            self.gdb.command("-gdb-set print repeats 10")
        return str(value.get("value", ""))

    def _memory_of(self, pid: int | None, raw: dict[str, Any], where: tuple[int, int, str] | None
                   ) -> tuple[int, int] | None:
        """Where a variable object's bytes are: a pointer's value, an array's address
        (asked of gdb: ``&`` of its expression in its frame, ``where``, or of its path)."""
        if pid is None:
            return None
        kind = str(raw.get("type") or "")
        address = None
        if kind.endswith("*"):
            match = _ADDRESS.match(str(raw.get("value", "")))
            address = int(match.group(1), 16) if match else None
        elif _ARRAY.search(kind):
            address = self._array_address(raw, where)
        if not address:
            return None
        self._memory_pids.setdefault(address, pid)
        return pid, address

    def _array_address(self, raw: dict[str, Any], where: tuple[int, int, str] | None) -> int | None:
        try:
            if where is None:
                path = self.gdb.command(f"-var-info-path-expression {raw['name']}")["path_expr"]
                value = self.gdb.command("-data-evaluate-expression " + mi_quote(f"&({path})"))["value"]
            else:
                thread, level, expression = where
                value = self.gdb.command(f"-data-evaluate-expression --thread {thread} --frame {level} "
                                         + mi_quote(f"&({expression})"))["value"]
        except GdbCommandError as err:
            log.debug("the address of %s: %s", raw.get("name"), err.gdb_message)
            return None
        match = _ADDRESS.search(str(value))
        return int(match.group(1), 16) if match else None

    def _evaluation_error(self, thread: int, level: int, expression: str) -> str | None:
        """Why gdb cannot evaluate ``expression`` in that frame, in its CLI's words
        (``No symbol "total" in current context.``); None if it can after all."""
        try:
            self.gdb.command(f"-data-evaluate-expression --thread {thread} --frame {level} {mi_quote(expression)}")
        except GdbCommandError as err:
            return err.gdb_message
        return None



def _python_index(stack: MixedStack, index: int) -> int:
    """Frame ``index`` of a stack as the agent counts: its Python frames from the innermost."""
    return sum(1 for frame in stack.frames[:index] if frame.kind == "python")


def python_variable(raw: dict[str, Any]) -> Variable:
    """A VAR of the agent's reply as a ``Variable`` (its ``ref`` asks for its children)."""
    ref = int(raw.get("ref") or 0)
    return Variable(str(raw.get("name", "")), str(raw.get("value", "")), raw.get("type"),
                    ("py", ref) if ref else None, raw.get("evaluateName"), raw.get("hint"),
                    raw.get("indexed"), raw.get("named"))


def _page_request(page: Page) -> dict[str, Any]:
    """A page as the agent's request fields."""
    request: dict[str, Any] = {"start": page.start, "count": page.count, "format": {"hex": page.hex}}
    if page.which:
        request["filter"] = page.which
    return request


def gdb_refusal(err: GdbCommandError) -> str:
    """gdb's message, or mixdbg's line when gdb refused to call a function."""
    if "may-call-functions" in err.gdb_message:
        return calls.refusal(calls.CallSafety(False, err.gdb_message))
    return err.gdb_message
