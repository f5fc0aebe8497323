"""The requests one stopped thread serves (standard library only; docs/dap-design.md):
variables, children, evaluate, setVariable, setExpression, completions.

Loaded by path beside ``agent.py`` as ``_mixdbg_agent_stopsession``. A :class:`StopSession`
lives for one stop of one thread; its variable references are valid until the thread
leaves the stop. Every request runs the user's code (reprs, properties, expressions) and
can be cancelled by the engine (``values.run_cancellable``).
"""

from __future__ import annotations

import builtins
import inspect
import re
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

if TYPE_CHECKING or __name__.startswith("mixdbg."):
    from mixdbg.pyagent import members, values
else:  # loaded by path by the agent, after its siblings
    members, values = sys.modules["_mixdbg_agent_members"], sys.modules["_mixdbg_agent_values"]

#: Containers with more items than this are paged (DAP ``indexedVariables``); fewer are
#: shown whole, as debugpy shows its first 100.
PAGE_OVER = 100
#: What a ``completions`` target's kind is, by the kind of value it names.
_STRING_KINDS = (str, bytes, bytearray)


class Ref(NamedTuple):
    """A value the engine may ask the children of: the expression that reaches it (None:
    none does) and the Python frame (K) expressions about it are evaluated in."""

    value: object
    expression: str | None
    frame: int


class StopSession:
    """The requests served at one stop of one thread. ``returns``: the return values a step
    saw for the stopped frame (frame 0), shown first among its locals as ``(return) name``,
    read-only, as debugpy shows them; ``cancelled``: whether the engine asked to stop the
    request being served; ``signalled``: the engine's signal interrupts a cancelled request
    of this thread (the main thread, where the agent handles it), so none is traced."""

    def __init__(self, frames: list[FrameType], returns: list[tuple[str, object]] | tuple[()] = (),
                 cancelled: Callable[[], bool] = lambda: False, signalled: bool = False) -> None:
        self.frames = frames
        self.returns = list(returns)
        self.refs: list[Ref] = []
        self.cancelled = cancelled
        self.signalled = signalled

    def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        """Answer one request with a reply message (errors are one line)."""
        reply: dict[str, Any] = {"event": "reply", "id": command.get("id")}
        try:
            reply["body"] = values.run_cancellable(lambda: self._answer(command), self.cancelled,
                                                   traced=not self.signalled)
        except values.Cancelled:
            reply["error"] = "cancelled"
        except Exception as err:  # the user's code ran: any error is the answer
            reply["error"] = values.one_line(err)
        return reply

    def _answer(self, command: dict[str, Any]) -> dict[str, Any]:
        name = command.get("command")
        hex_ints = bool((command.get("format") or {}).get("hex"))
        if name == "variables":
            index = self._index(command)
            return {"variables": [self.variable(m, index, hex_ints) for m in self._scope(command, index)]}
        if name == "children":
            ref = self._ref(command)
            found = self._children(ref, command, hex_ints)
            return {"variables": [self.variable(m, ref.frame, hex_ints) for m in found]}
        if name == "evaluate":
            return self._evaluate(command, hex_ints)
        if name == "setVariable":
            return self._set_variable(command, hex_ints)
        if name == "setExpression":
            return self._set_expression(command, hex_ints)
        if name == "completions":
            return {"targets": completions(self.frames[self._index(command)], str(command.get("text", "")),
                                           int(command.get("column", 1)), command.get("line"))}
        if name == "modules":
            return {"modules": values.loaded_modules()}
        raise ValueError(f"unknown command {name!r}")

    # --- where a request points -------------------------------------------------------

    def _index(self, command: dict[str, Any]) -> int:
        index = int(command.get("frame", 0))
        if not 0 <= index < len(self.frames):
            raise IndexError(f"no Python frame {index} at this stop")
        return index

    def _ref(self, command: dict[str, Any]) -> Ref:
        number = int(command["ref"])
        if not 0 < number <= len(self.refs):
            raise KeyError(f"no variable reference {number} at this stop")
        return self.refs[number - 1]

    def _scope(self, command: dict[str, Any], index: int) -> list[members.Member]:
        """A frame's locals (``scope``: ``globals``, its module's globals), as debugpy shows
        them; ``__builtins__`` is among the special variables."""
        frame = self.frames[index]
        if command.get("scope") == "globals":
            return members.scope_members(dict(frame.f_globals), lambda name: _set_global(frame, name))
        returned = [members.Member(f"(return) {name}", value, hint="readOnly") for name, value in self.returns]
        return (returned if index == 0 else []) + members.scope_members(dict(frame.f_locals),
                                                                          lambda name: _set_local(frame, name))

    def _children(self, ref: Ref, command: dict[str, Any], hex_ints: bool) -> list[members.Member]:
        """The members the client asked for: ``filter`` ``indexed`` (a page of items from
        ``start``, ``count``), ``named``, or all of them (the items up to MAX_CHILDREN)."""
        found = members.listing(ref.value, ref.expression, hex_ints)
        which = command.get("filter")
        start, count = int(command.get("start") or 0), int(command.get("count") or 0)
        if which == "indexed":
            return found.items(start, count or found.count)
        if which == "named":
            return found.named
        every = found.all(values.MAX_CHILDREN)
        return every[start:start + count] if count else every[start:]

    # --- what the engine is told --------------------------------------------------------

    def variable(self, member: members.Member, frame: int, hex_ints: bool = False) -> dict[str, Any]:
        """One VAR of the contract: name, value (repr), type, ref (0: no children), and
        ``evaluateName``, ``hint`` (readOnly, rawString, virtual) and, for a paged
        container, ``indexed``/``named`` counts, where they apply."""
        value = member.value
        is_group = isinstance(value, members.Group)
        result: dict[str, Any] = {"name": member.name,
                                  "value": "" if is_group else values.safe_repr(value, hex_ints),
                                  "type": "" if is_group else values.type_name(value),
                                  "ref": self._register(value, member.evaluate, frame)}
        if member.evaluate is not None:
            result["evaluateName"] = member.evaluate
        hint = member.hint
        if isinstance(value, _STRING_KINDS):
            result["hint"] = "rawString" if hint is None else f"rawString {hint}"
        elif hint is not None:
            result["hint"] = hint
        if result["ref"] and _countable(value) and len(value) > PAGE_OVER:  # type: ignore[arg-type]
            listed = members.listing(value, member.evaluate, hex_ints)
            result["indexed"], result["named"] = listed.count, len(listed.named)
        return result

    def _register(self, value: object, expression: str | None, frame: int) -> int:
        if not members.has_members(value):
            return 0
        self.refs.append(Ref(value, expression, frame))
        return len(self.refs)

    # --- evaluation and changes ---------------------------------------------------------

    def _evaluate(self, command: dict[str, Any], hex_ints: bool) -> dict[str, Any]:
        index, context = self._index(command), command.get("context")
        expression = str(command["expression"])
        is_value, value = values.evaluate_in(self.frames[index], expression, statements=context == "repl")
        if not is_value or (context == "repl" and value is None):  # debugpy shows nothing for None there
            return {"result": "", "type": "", "ref": 0}
        shown = self.variable(members.Member(expression, value, expression), index, hex_ints)
        if context == "clipboard":
            shown["value"] = values.full_repr(value, hex_ints)
        return _as_result(shown)

    def _set_variable(self, command: dict[str, Any], hex_ints: bool) -> dict[str, Any]:
        """Set one member (a local, a global, an attribute, an item) to the value of the
        expression ``value``, evaluated in the frame; the member as it now is."""
        name = str(command["name"])
        if "ref" in command:
            ref = self._ref(command)
            frame = ref.frame

            def current() -> members.Member | None:
                return _find(members.listing(ref.value, ref.expression), name)
        else:
            frame = self._index(command)

            def current() -> members.Member | None:
                return next((m for m in self._scope(command, frame) if m.name == name), None)
        member = current()
        if member is None:
            raise KeyError(f"no variable {name} here")
        if member.setter is None:
            raise TypeError(f"{name} cannot be changed")
        member.setter(values.evaluate_in(self.frames[frame], str(command["value"]))[1])
        return self.variable(current() or member, frame, hex_ints)

    def _set_expression(self, command: dict[str, Any], hex_ints: bool) -> dict[str, Any]:
        """``expression = (value)`` run in the frame (debugpy's setExpression); the
        expression's new value."""
        index, expression = self._index(command), str(command["expression"])
        values.evaluate_in(self.frames[index], f"{expression} = ({command['value']})", statements=True)
        value = values.evaluate_in(self.frames[index], expression)[1]
        return self.variable(members.Member(expression, value, expression), index, hex_ints)


def _set_local(frame: FrameType, name: str) -> members.Setter:
    return lambda new: values.set_local(frame, name, new)


def _set_global(frame: FrameType, name: str) -> members.Setter:
    def setter(new: object) -> None:
        frame.f_globals[name] = new
    return setter


def _countable(value: object) -> bool:
    ndarray = getattr(sys.modules.get("numpy"), "ndarray", None)
    if isinstance(ndarray, type) and isinstance(value, ndarray):
        return bool(getattr(value, "ndim", 0))
    return isinstance(value, (list, tuple, dict, set, frozenset)) or type(value).__name__ == "deque"


def _find(listing: members.Listing, name: str) -> members.Member | None:
    """The member named ``name``: a named one, else the item of that index, else (a key's
    repr) the first item of that name, a page at a time."""
    for member in listing.named:
        if member.name == name:
            return member
    try:
        index = int(name, 0) if name.startswith("0x") else int(name)
    except ValueError:
        index = -1
    if 0 <= index < listing.count:
        found = listing.items(index, 1)
        if found and found[0].name == name:
            return found[0]
    for start in range(0, listing.count, 1000):
        for member in listing.items(start, 1000):
            if member.name == name:
                return member
    return None


def _as_result(variable: dict[str, Any]) -> dict[str, Any]:
    """An evaluate reply from a VAR: ``result`` instead of ``value``, no name."""
    result = {key: item for key, item in variable.items() if key not in ("name", "value")}
    result["result"] = variable["value"]
    return result


_TOKEN = re.compile(r"[\w.]*$")
_KEY = re.compile(r"([\w.]+)\[(['\"]?)([^'\"\[\]]*)$")


def completions(frame: FrameType, text: str, column: int, line: int | None = None) -> list[dict[str, Any]]:
    """What the Debug Console offers at ``column`` (1-based) of ``text``, as debugpy: names
    (builtins, globals, locals) for a name, ``dir()`` of the object before a dot; and, in
    ``d[`` or ``d['``, the keys of a dict. ``start``/``length``: the part replaced."""
    lines = text.splitlines() or [""]
    row = min(max((line or 1) - 1, 0), len(lines) - 1)
    before = lines[row][:max(column - 1, 0)]
    namespace = {**frame.f_globals, **frame.f_locals}
    key = _KEY.search(before)
    if key is not None:
        return _key_completions(key, namespace, len(before))
    token = _TOKEN.search(before)
    typed = token.group(0) if token else ""
    owner, _, partial = typed.rpartition(".")
    if owner:
        try:
            found = eval(owner, namespace)
        except Exception:  # an expression that does not evaluate: nothing to offer
            return []
        names = {name: _attribute_kind(found, name) for name in dir(found)}
    else:
        names = {name: _kind(item) for name, item in {**vars(builtins), **namespace}.items()}
    start = len(before) - len(partial)
    return [{"label": name, "type": kind, "start": start, "length": len(partial)}
            for name, kind in sorted(names.items()) if name.lower().startswith(partial.lower())]


def _key_completions(key: re.Match[str], namespace: dict[str, Any], end: int) -> list[dict[str, Any]]:
    try:
        found = eval(key.group(1), namespace)
    except Exception:  # an expression that does not evaluate
        return []
    if not isinstance(found, dict):
        return []
    quote, partial = key.group(2), key.group(3)
    start = end - len(partial) - len(quote)
    labels = [repr(k) for k in list(found)[:1000] if not quote or (isinstance(k, str) and k.startswith(partial))]
    typed = quote + partial
    return [{"label": label, "type": "value", "start": start, "length": len(typed)}
            for label in labels if label.startswith(typed) or not typed]


def _kind(value: object) -> str:
    """A completion's DAP type for a value, as debugpy maps its kinds (anything that is no
    module, class or function is a ``field``)."""
    if inspect.ismodule(value):
        return "module"
    if inspect.isclass(value):
        return "class"
    if inspect.isroutine(value):
        return "function"
    return "field"


def _attribute_kind(owner: object, name: str) -> str:
    try:
        return _kind(inspect.getattr_static(owner, name))
    except AttributeError:
        return "field"
