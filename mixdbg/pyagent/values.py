"""Variables and evaluation at a Python stop (standard library only).

Loaded by path beside ``agent.py`` as ``_mixdbg_agent_values``. A :class:`StopSession` serves
the engine's requests for one stop of one thread; its variable references are valid until
the thread leaves the stop.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import reprlib
import sys
from types import FrameType, MappingProxyType
from typing import Any

MAX_REPR = 1000
MAX_CHILDREN = 300
TENSOR_VALUES = 16
_LOCALS_TO_FAST = getattr(ctypes.pythonapi, "PyFrame_LocalsToFast", None)  # gone in 3.13 (PEP 667)
if _LOCALS_TO_FAST is not None:
    _LOCALS_TO_FAST.argtypes = [ctypes.py_object, ctypes.c_int]
    _LOCALS_TO_FAST.restype = None


def one_line(err: BaseException) -> str:
    """``Type: message`` on one line, for error replies."""
    message = err.msg if isinstance(err, SyntaxError) and err.msg else str(err)
    text = message.strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


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
        """The object's own repr; its error is the caller's to describe (reprlib hides it)."""
        return repr(x)


def _bounded_repr() -> reprlib.Repr:
    bounded = _BoundedRepr()
    for name in ("maxlist", "maxtuple", "maxdict", "maxset", "maxfrozenset", "maxdeque", "maxarray"):
        setattr(bounded, name, MAX_CHILDREN)
    bounded.maxlevel, bounded.maxstring, bounded.maxlong, bounded.maxother = 8, MAX_REPR, MAX_REPR, MAX_REPR
    return bounded


_REPR = _bounded_repr()


def safe_repr(value: object) -> str:
    """``repr(value)``, at most MAX_REPR characters; a failing repr is described, not raised."""
    try:
        text = _REPR.repr(value)
    except Exception as err:  # the user's __repr__
        text = f"<repr failed: {one_line(err)}>"
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 3] + "..."


def type_name(value: object) -> str:
    """The name of the value's type."""
    return type(value).__qualname__


def _is_tensor(value: object) -> bool:
    torch = sys.modules.get("torch")  # only when the program imported it itself
    tensor = getattr(torch, "Tensor", None)
    return isinstance(tensor, type) and isinstance(value, tensor)


def _tensor_children(value: Any) -> list[tuple[str, object]]:
    try:
        first = value.detach().reshape(-1)[:TENSOR_VALUES].tolist()
    except Exception as err:  # e.g. a meta tensor has no values
        first = f"<unavailable: {one_line(err)}>"
    return [("dtype", value.dtype), ("shape", tuple(value.shape)), ("device", value.device), ("values", first)]


def _namespace(value: object) -> Any:
    """The object's ``__dict__`` (a class's too), if it has one."""
    attrs = getattr(value, "__dict__", None)
    return attrs if isinstance(attrs, (dict, MappingProxyType)) else None


def _attributes(value: object) -> list[tuple[str, object]]:
    """Attributes: ``__dict__`` (the first MAX_CHILDREN) and ``__slots__``."""
    attrs = _namespace(value)
    found = [(str(name), item) for name, item in itertools.islice(attrs.items(), MAX_CHILDREN)] if attrs else []
    for klass in type(value).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(value, name):
                found.append((name, getattr(value, name)))
    return found


def children_of(value: object) -> list[tuple[str, object]]:
    """The named parts of a value (empty: it has none)."""
    if _is_tensor(value):
        return _tensor_children(value)
    if isinstance(value, dict):
        items = [(safe_repr(key), item) for key, item in itertools.islice(value.items(), MAX_CHILDREN)]
    elif isinstance(value, (list, tuple)):
        items = [(str(index), item) for index, item in enumerate(value[:MAX_CHILDREN])]
    elif isinstance(value, (set, frozenset)):
        items = [(str(index), item) for index, item in zip(range(MAX_CHILDREN), value)]
    else:
        return _attributes(value)
    return items + [("len()", len(value))] if items else []


def _has_children(value: object) -> bool:
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        return len(value) > 0
    if isinstance(value, (str, bytes, int, float, complex, bool, type(None))):
        return False
    try:
        return _is_tensor(value) or bool(_namespace(value)) or any(
            klass.__dict__.get("__slots__") for klass in type(value).__mro__)
    except Exception:  # a hostile __getattr__: shown without children
        return False


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


class StopSession:
    """The requests served at one stop of one thread."""

    def __init__(self, frames: list[FrameType], returns: list[tuple[str, object]] | tuple[()] = ()) -> None:
        """``returns``: the return values a step saw for the stopped frame (frame 0), shown
        first among its locals as ``(return) name``, as debugpy shows them."""
        self.frames = frames
        self.returns = list(returns)
        self.refs: list[object] = []

    def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        """Answer one request with a reply message (errors are one line)."""
        reply: dict[str, Any] = {"event": "reply", "id": command.get("id")}
        try:
            reply["body"] = self._answer(command)
        except Exception as err:  # the user's code ran: any error is the answer
            reply["error"] = one_line(err)
        return reply

    def _answer(self, command: dict[str, Any]) -> dict[str, Any]:
        name = command.get("command")
        if name == "variables":
            frame = self._frame(command)
            scope = frame.f_globals if command.get("scope") == "globals" else frame.f_locals
            names = [(str(key), item) for key, item in list(scope.items()) if key != "__builtins__"]
            if command.get("scope") != "globals" and int(command.get("frame", 0)) == 0:
                names = [(f"(return) {name}", value) for name, value in self.returns] + names
            return {"variables": [self.variable(key, item) for key, item in names]}
        if name == "children":
            ref = int(command["ref"])
            if not 0 < ref <= len(self.refs):
                raise KeyError(f"no variable reference {ref} at this stop")
            return {"variables": [self.variable(key, item) for key, item in children_of(self.refs[ref - 1])]}
        if name == "evaluate":
            is_value, value = evaluate_in(self._frame(command), command["expression"],
                                          statements=command.get("context") == "repl")
            if not is_value:
                return {"result": "", "type": "", "ref": 0}
            return {"result": safe_repr(value), "type": type_name(value), "ref": self._ref(value)}
        raise ValueError(f"unknown command {name!r}")

    def _frame(self, command: dict[str, Any]) -> FrameType:
        index = int(command.get("frame", 0))
        if not 0 <= index < len(self.frames):
            raise IndexError(f"no Python frame {index} at this stop")
        return self.frames[index]

    def _ref(self, value: object) -> int:
        if not _has_children(value):
            return 0
        self.refs.append(value)
        return len(self.refs)

    def variable(self, name: str, value: object) -> dict[str, Any]:
        """One VAR of the contract: name, value (repr), type, ref (0: no children)."""
        return {"name": name, "value": safe_repr(value), "type": type_name(value), "ref": self._ref(value)}
