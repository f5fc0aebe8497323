"""Values at a Python stop (standard library only): their text (a bounded repr, ints in hex
on request, the whole text for the clipboard), evaluation in a frame (assignments to
locals stick), breakpoint hit conditions and logpoint messages.

Loaded by path beside ``agent.py`` as ``_mixdbg_agent_values``; the requests of a stop are
served by ``stopsession.StopSession``.
"""

from __future__ import annotations

import collections
import ctypes
import itertools
import json
import os
import re
import reprlib
import sys
import threading
from types import CodeType, FrameType
from typing import Any

MAX_REPR = 1000
MAX_CHILDREN = 300
#: The clipboard's text must fit the mailbox's ``out`` (1 MiB) as JSON, with the reply around it.
CLIPBOARD_LIMIT = (1 << 20) - 4096
_LOCALS_TO_FAST = getattr(ctypes.pythonapi, "PyFrame_LocalsToFast", None)  # gone in 3.13 (PEP 667)
if _LOCALS_TO_FAST is not None:
    _LOCALS_TO_FAST.argtypes = [ctypes.py_object, ctypes.c_int]
    _LOCALS_TO_FAST.restype = None


def one_line(err: BaseException) -> str:
    """``Type: message`` on one line, for error replies."""
    message = err.msg if isinstance(err, SyntaxError) and err.msg else str(err)
    text = message.strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


_CONTAINERS = (list, tuple, dict, set, frozenset, collections.deque)


class _BoundedRepr(reprlib.Repr):
    """``repr`` for the small, and no full repr of a huge container before truncating it."""

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        """Keys in insertion order, as ``repr`` shows them (reprlib sorts them)."""
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        pieces = [f"{self.repr1(key, level - 1)}: {self.repr1(item, level - 1)}"
                  for key, item in itertools.islice(x.items(), self.maxdict)]
        return "{" + ", ".join(pieces + (["..."] if len(x) > self.maxdict else [])) + "}"

    def repr_instance(self, x: object, level: int) -> str:
        """The object's own repr; its error is the caller's to describe (reprlib hides it).
        A subclass of a built-in container that keeps its repr is bounded as the container."""
        for base in _CONTAINERS:
            if isinstance(x, base) and type(x).__repr__ is base.__repr__:
                return str(getattr(self, f"repr_{base.__name__}")(x, level))
        return repr(x)


class _HexRepr(_BoundedRepr):
    """As :class:`_BoundedRepr`, ints in hex (``0xff``), inside containers too, as debugpy's
    ``format.hex`` shows them."""

    def repr_int(self, x: int, level: int) -> str:
        """``hex(x)``."""
        return hex(x)


def _bounded_repr(kind: type[_BoundedRepr]) -> reprlib.Repr:
    bounded = kind()
    for name in ("maxlist", "maxtuple", "maxdict", "maxset", "maxfrozenset", "maxdeque", "maxarray"):
        setattr(bounded, name, MAX_CHILDREN)
    bounded.maxlevel, bounded.maxstring, bounded.maxlong, bounded.maxother = 8, MAX_REPR, MAX_REPR, MAX_REPR
    return bounded


_REPR, _HEX = _bounded_repr(_BoundedRepr), _bounded_repr(_HexRepr)


def safe_repr(value: object, hex_ints: bool = False) -> str:
    """``repr(value)``, at most MAX_REPR characters (ints in hex with ``hex_ints``); a
    failing repr is described, not raised."""
    try:
        text = (_HEX if hex_ints else _REPR).repr(value)
    except Exception as err:  # the user's __repr__
        text = f"<repr failed: {one_line(err)}>"
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 3] + "..."


def full_repr(value: object, hex_ints: bool = False) -> str:
    """The whole ``repr(value)`` (the clipboard's: "Copy Value" copies all of a long
    string), cut only where its JSON would not fit the mailbox."""
    try:
        text = hex(value) if hex_ints and type(value) is int else repr(value)
    except Exception as err:  # the user's __repr__
        return f"<repr failed: {one_line(err)}>"
    while len(json.dumps(text)) > CLIPBOARD_LIMIT:
        text = text[: len(text) * 3 // 4]
    return text


def type_name(value: object) -> str:
    """The name of the value's type."""
    return type(value).__qualname__


_HIT_CONDITION = re.compile(r"^\s*(==|>=|<=|>|<|%)?\s*(\d+)\s*$")


def hit_condition_met(hit_condition: str, hits: int) -> bool:
    """VS Code's hitCondition as debugpy reads it: ``N`` is the Nth hit; ``>N``, ``>=N``,
    ``<N``, ``<=N``, ``==N`` compare; ``%N`` is every Nth; anything else is a Python
    expression in which ``@HIT@`` is the hit count."""
    match = _HIT_CONDITION.match(hit_condition)
    if match is None:
        return bool(eval(hit_condition.replace("@HIT@", str(hits)), {}, {}))
    operator, number = match.group(1) or "==", int(match.group(2))
    if operator == "%":
        return number != 0 and hits % number == 0
    return {"==": hits == number, ">=": hits >= number, "<=": hits <= number,
            ">": hits > number, "<": hits < number}[operator]


def frame_record(frame: FrameType) -> dict[str, Any]:
    """Where a frame is: function name, file, line."""
    return {"name": frame.f_code.co_name, "file": frame.f_code.co_filename, "line": frame.f_lineno}


def evaluate_in(frame: FrameType, expression: str, statements: bool = False) -> tuple[bool, object]:
    """Evaluate in the frame's globals and locals. With ``statements`` (the repl), code that
    is not an expression is executed, and changed locals stick where the interpreter allows
    it (3.13+: the f_locals proxy writes through; before: PyFrame_LocalsToFast). Returns
    (is a value, value)."""
    local_vars = frame.f_locals
    is_value = True
    try:
        code = compile(expression, "<mixdbg>", "eval")
    except SyntaxError:
        if not statements:
            raise
        code, is_value = compile(expression, "<mixdbg>", "exec"), False
    value = eval(code, frame.f_globals, local_vars)
    if statements and _LOCALS_TO_FAST is not None:
        _LOCALS_TO_FAST(frame, 0)
    return is_value, value


def interpolate(message: str, frame: FrameType) -> str:
    """A logpoint's message with each ``{expression}`` replaced by its value (``str``)."""
    def value(match: re.Match[str]) -> str:
        try:
            return str(evaluate_in(frame, match.group(1))[1])
        except Exception as err:  # the user's expression
            return f"<{one_line(err)}>"
    return re.sub(r"\{([^{}]+)\}", value, message)


def loaded_modules() -> list[dict[str, str]]:
    """The program's imported modules that come from a file, as debugpy describes a module:
    name, path and, where the module has one, its ``__version__`` (mixdbg's agent's own left
    out)."""
    found = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or name.startswith("_mixdbg_agent"):
            continue
        entry = {"name": name, "path": os.path.abspath(path)}
        version = getattr(module, "__version__", None)
        if isinstance(version, (str, int, float)):
            entry["version"] = str(version)
        found.append(entry)
    return found


def set_local(frame: FrameType, name: str, value: object) -> None:
    """Bind a frame's local ``name`` to ``value`` so that the program then uses it (3.13+:
    the f_locals proxy writes through; before, PyFrame_LocalsToFast copies the dict back;
    a module's frame: its globals)."""
    local_vars = frame.f_locals
    local_vars[name] = value
    if _LOCALS_TO_FAST is not None:
        _LOCALS_TO_FAST(frame, 0)


#: id(code) -> (code, how it loops: False, True, or ON_ONE_LINE); see ``_loops``.
_loop_kinds: dict[int, tuple[CodeType, Any]] = {}


class Cancelled(BaseException):
    """The engine cancelled the request being served (a BaseException: the user's
    ``except Exception`` does not swallow it)."""


def run_cancellable(call: Any, cancelled: Any, traced: bool = True) -> Any:
    """``call()``, interrupted once ``cancelled()`` says so (a DAP ``cancel``, or Pause).

    In the main thread the engine's signal interrupts it (``raise_if_cancelled``, from the
    agent's handler: Python runs it at its next instruction, or when a wait in native code
    such as ``sleep`` ends early), at no cost while it runs. Elsewhere (``traced``) a tracer
    of our own checks at each call, and at each line of a frame that loops (code without a
    backward jump cannot run forever by itself: its frames get no line events); that makes
    a request that runs much Python 3 to 10 times slower, as any settrace debugger. A stop
    is served inside the agent's trace function, where Python traces nothing:
    ``sys.call_tracing`` traces again for this thread only, with our tracer, which also keeps
    breakpoints from stopping inside the request."""
    global _serving
    if not traced:
        outer, _serving = _serving, (threading.get_ident(), cancelled)
        try:
            return call()
        finally:
            _serving = outer

    def on_line(frame: FrameType, event: str, arg: object) -> Any:
        if cancelled():
            raise Cancelled("cancelled")
        return on_line

    def on_call(frame: FrameType, event: str, arg: object, known: Any = _loop_kinds.get) -> Any:
        if cancelled():
            raise Cancelled("cancelled")
        code = frame.f_code
        kind = known(id(code))
        loops = _loops(code) if kind is None else kind[1]
        if not loops:
            return None
        if loops is _ON_ONE_LINE:
            frame.f_trace_opcodes = True
        return on_line

    def with_tracer() -> Any:
        global _serving
        previous, outer = sys.gettrace(), _serving
        sys.settrace(on_call)
        _serving = (threading.get_ident(), cancelled)
        try:
            return call()
        finally:
            sys.settrace(previous)
            _serving = outer
    return sys.call_tracing(with_tracer, ())


#: The thread serving a request, and its request's ``cancelled``, while one is served.
_serving: tuple[int, Any] | None = None


def raise_if_cancelled() -> None:
    """From the agent's signal handler (the main thread): end the request the main thread
    serves if it was cancelled (Python runs the handler at the request's next instruction,
    or when a wait in native code, ``sleep``, ends early)."""
    serving = _serving
    if serving is not None and serving[0] == threading.get_ident() and serving[1]():
        raise Cancelled("cancelled")


#: How a code object loops: not at all (False), across lines (True), or back to a line of its
#: own, for which 3.10 and 3.11 send no line event (``while True: pass``): such code is traced
#: per instruction while a request runs (3.12+ send them).
_ON_ONE_LINE = "on one line"
def _loops(code: CodeType) -> Any:
    """Whether ``code`` has a backward jump, and whether 3.10/3.11 would miss its lines
    (remembered by id: a code object's own hash is computed from its contents each time)."""
    import dis  # once a request runs code

    line, lines = 0, {}
    found: Any = False
    for instruction in dis.get_instructions(code):
        if instruction.starts_line is not None:
            line = instruction.starts_line
        lines[instruction.offset] = line
        jumps = instruction.opcode in dis.hasjabs or instruction.opcode in dis.hasjrel
        target = instruction.argval if jumps else None
        if isinstance(target, int) and target <= instruction.offset:
            if lines.get(target) == line and sys.version_info < (3, 12):
                found = _ON_ONE_LINE
                break
            found = True
    _loop_kinds[id(code)] = (code, found)
    return found
