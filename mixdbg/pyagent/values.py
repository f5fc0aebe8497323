"""Variables and evaluation at a Python stop (standard library only).

Loaded by path beside ``agent.py`` as ``_mixdbg_agent_values``. A :class:`StopSession` serves
the engine's requests for one stop of one thread; its variable references are valid until
the thread leaves the stop.
"""

from __future__ import annotations

import ctypes
import re
import sys
from types import FrameType
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


def safe_repr(value: object) -> str:
    """``repr(value)``, at most MAX_REPR characters; a failing repr is described, not raised."""
    try:
        text = repr(value)
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


def _attributes(value: object) -> list[tuple[str, object]]:
    """Instance attributes: ``__dict__`` and ``__slots__``."""
    found: list[tuple[str, object]] = []
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        found += [(str(name), item) for name, item in list(attrs.items())]
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
        items = [(safe_repr(key), item) for key, item in list(value.items())[:MAX_CHILDREN]]
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
        return _is_tensor(value) or bool(_attributes(value))
    except Exception:  # a hostile __getattr__: shown without children
        return False


def frame_record(frame: FrameType) -> dict[str, Any]:
    """Where a frame is: function name, file, line."""
    return {"name": frame.f_code.co_name, "file": frame.f_code.co_filename, "line": frame.f_lineno}


def evaluate_in(frame: FrameType, expression: str, statements: bool = False) -> tuple[bool, object]:
    """Evaluate in the frame's globals and locals; with ``statements``, code that is not an
    expression is executed. Returns (is a value, value). Changed locals stick where the
    interpreter allows it (3.13+: the f_locals proxy writes through; before: LocalsToFast)."""
    local_vars = frame.f_locals
    try:
        code = compile(expression, "<mixdbg>", "eval")
    except SyntaxError:
        if not statements:
            raise
        exec(compile(expression, "<mixdbg>", "exec"), frame.f_globals, local_vars)
        _write_back(frame)
        return False, None
    value = eval(code, frame.f_globals, local_vars)
    _write_back(frame)
    return True, value


def _write_back(frame: FrameType) -> None:
    if _LOCALS_TO_FAST is not None:
        _LOCALS_TO_FAST(frame, 0)


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

    def __init__(self, frames: list[FrameType]) -> None:
        self.frames = frames
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
