"""The members of a Python value at a stop, as debugpy shows them (standard library only).

Loaded by path beside ``agent.py`` as ``_mixdbg_agent_members``. debugpy's facts
(pydevd's resolvers, ``DAPGrouper``): an object's members are ``dir()``'s names, sorted
(plain names first, then ``_x``, ``__x``, ``__x__``); names that are special (``__x__``),
protected (``_x``, ``x__``), functions or classes go into four groups shown first; a
container's items follow, named by their zero-padded index or their key's repr, then a
``len()`` member. Protected names are shown inline (debugpy's default presentation). Every member that an expression reaches carries it (``evaluateName``:
``x.a``, ``x[0]``, ``x['k']``, ``len(x)``), and how to write it (``setVariable``).

Items are listed a page at a time (``items``), so a container of millions is never read
whole; numpy arrays show their dtype, shape, size, min and max and their items along the
first axis; dataclasses and namedtuples their fields in declaration order.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import sys
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

#: The groups, in debugpy's order (``DAPGrouper.SCOPES_SORTED``).
SPECIAL, PROTECTED, FUNCTIONS, CLASSES = ("special variables", "protected variables", "function variables",
                                          "class variables")
GROUPS = (SPECIAL, PROTECTED, FUNCTIONS, CLASSES)
LEN = "len()"
#: Values with no members (debugpy's resolver-less types; bytes too).
LEAVES = (int, float, complex, str, bytes, bytearray, bool, type(None))
#: numpy arrays larger than this have no min/max (debugpy's limit: it would slow debugging).
NUMPY_MIN_MAX_LIMIT = 1024 * 1024
TENSOR_VALUES = 16

Setter = Callable[[object], None]


class Member(NamedTuple):
    """One member to show: its name and value, the expression that reaches it (None: none
    does), how to write it (None: read-only), and a presentation hint (``readOnly``,
    ``virtual`` for a group)."""

    name: str
    value: object
    evaluate: str | None = None
    setter: Setter | None = None
    hint: str | None = None


class Group:
    """A synthetic member holding members of one kind (``special variables``...)."""

    __slots__ = ("members", "title")

    def __init__(self, title: str, members: list[Member]) -> None:
        self.title = title
        self.members = members

    def __repr__(self) -> str:
        return ""


def sort_key(name: str) -> tuple[int, str]:
    """debugpy's order of attribute names: ``x``, ``_x``, ``__x``, ``__x__``."""
    if name.startswith("__"):
        return (3 if name.endswith("__") else 2, name)
    return (1 if name.startswith("_") else 0, name)


def group_of(name: str, value: object) -> str | None:
    """The group a name goes into (None: shown inline), as debugpy's ``get_var_scope``."""
    if name.startswith("__") and name.endswith("__"):
        return SPECIAL
    if name.startswith("_") or name.endswith("__"):
        return PROTECTED
    try:
        if inspect.isroutine(value) or type(value).__name__ == "method-wrapper":
            return FUNCTIONS
        if inspect.isclass(value):
            return CLASSES
    except Exception:  # the user's __class__ or __getattr__
        return None
    return None


#: The groups debugpy shows as groups by default (``variablePresentation``: protected
#: members are ``inline``).
GROUPED = (SPECIAL, FUNCTIONS, CLASSES)


def grouped(members: Iterable[Member], sort: bool = True) -> list[Member]:
    """Members with the grouped ones moved into their groups, the groups first."""
    groups: dict[str, list[Member]] = {}
    inline: list[Member] = []
    for member in members:
        title = group_of(member.name, member.value) if member.hint is None else None
        if title not in GROUPED:
            inline.append(member)
        else:
            groups.setdefault(str(title), []).append(member)
    if sort:
        inline.sort(key=lambda m: sort_key(m.name))
    shown = [Member(title, Group(title, sorted(groups[title], key=lambda m: sort_key(m.name))), hint="virtual")
             for title in GROUPS if title in groups]
    return shown + inline


def has_members(value: object) -> bool:
    """Whether the value can be expanded (everything but plain scalars and strings)."""
    return not isinstance(value, LEAVES)


def _child(parent: str | None, suffix: str) -> str | None:
    return None if parent is None else parent + suffix


def _set_attribute(owner: object, name: str) -> Setter:
    return lambda new: setattr(owner, name, new)


def _set_item(container: Any, key: object) -> Setter:
    def setter(new: object) -> None:
        container[key] = new
    return setter


def attributes(value: object, expression: str | None, skip: frozenset[str] = frozenset()) -> list[Member]:
    """Every attribute ``dir()`` names (debugpy's default resolver): a descriptor that
    raises AttributeError is left out, any other error is shown as the value."""
    try:
        names = dir(value)
    except Exception:  # a hostile __dir__
        names = list(getattr(value, "__dict__", {}) or {})
    found = []
    for name in names:
        if not isinstance(name, str) or name in skip:
            continue
        try:
            item = getattr(value, name)
        except AttributeError:
            continue
        except Exception as err:  # the user's property
            item = f"<{type(err).__name__}: {err}>"
        found.append(Member(name, item, _child(expression, f".{name}"), _set_attribute(value, name)))
    return found


class Listing:
    """The members of one value: the named ones (groups, fields, ``len()``) and the count of
    its items, read a page at a time with :meth:`items`."""

    def __init__(self, named: list[Member], count: int = 0,
                 items: Callable[[int, int], list[Member]] | None = None, items_first: bool = False) -> None:
        self.named = named
        self.count = count
        self._items = items
        #: Whether the items come before the named members when all are shown together
        #: (containers: groups, items, then ``len()``).
        self.items_first = items_first

    def items(self, start: int, count: int) -> list[Member]:
        """Items ``start`` to ``start + count`` (fewer at the end)."""
        if self._items is None or start >= self.count:
            return []
        return self._items(start, min(count, self.count - start))

    def all(self, limit: int) -> list[Member]:
        """Everything, for a client that does not page: at most ``limit`` items."""
        items = self.items(0, limit)
        if not self.items_first:
            return self.named + items
        groups = [m for m in self.named if isinstance(m.value, Group)]
        return groups + items + [m for m in self.named if not isinstance(m.value, Group)]


def _index_name(index: int, size: int, hex_names: bool) -> str:
    """debugpy's item names: zero-padded to the width of the last index (hex: ``0x0a``)."""
    if hex_names:
        return f"0x{index:0{len(f'{size:x}')}x}"
    return f"{index:0{len(str(max(size - 1, 0)))}d}"


def _length(expression: str | None, size: int) -> Member:
    return Member(LEN, size, None if expression is None else f"len({expression})", hint="readOnly")


def _sequence(value: Any, expression: str | None, hex_names: bool, writable: bool) -> Listing:
    size = len(value)

    def items(start: int, count: int) -> list[Member]:
        if isinstance(value, (list, tuple)):
            chunk = value[start:start + count]  # a page, never the whole list
        else:
            chunk = list(itertools.islice(value, start, start + count))
        return [Member(_index_name(i, size, hex_names), item, _child(expression, f"[{i}]"),
                       _set_item(value, i) if writable else None, None if writable else "readOnly")
                for i, item in enumerate(chunk, start)]
    named = grouped(attributes(value, expression)) + [_length(expression, size)]
    return Listing(named, size, items, items_first=True)


def _evaluable(key: object) -> bool:
    """Whether ``repr(key)`` evaluates to an equal key (debugpy's test, for evaluateName)."""
    if isinstance(key, tuple):
        return all(_evaluable(part) for part in key)
    return isinstance(key, (int, float, complex, str, bytes, type(None), bool, frozenset))


def _mapping(value: Any, expression: str | None, key_text: Callable[[object], str]) -> Listing:
    size = len(value)

    def items(start: int, count: int) -> list[Member]:
        found, seen = [], set()
        for key, item in itertools.islice(value.items(), start, start + count):
            name = key_text(key)
            if name in seen:  # two keys with one repr: VS Code shows one row per name
                name = f"{name} (id: {id(key)})"
            seen.add(name)
            evaluate = _child(expression, f"[{key!r}]") if _evaluable(key) else None
            found.append(Member(name, item, evaluate, _set_item(value, key)))
        return found
    named = grouped(attributes(value, expression)) + [_length(expression, size)]
    return Listing(named, size, items, items_first=True)


def _set_member(container: Any, old: object) -> Setter:
    def setter(new: object) -> None:
        container.remove(old)
        container.add(new)
    return setter


def _set(value: Any, expression: str | None, hex_names: bool) -> Listing:
    size = len(value)
    writable = isinstance(value, set)

    def items(start: int, count: int) -> list[Member]:
        return [Member(_index_name(i, size, hex_names), item, None,
                       _set_member(value, item) if writable else None, None if writable else "readOnly")
                for i, item in enumerate(itertools.islice(value, start, start + count), start)]
    named = grouped(attributes(value, expression)) + [_length(expression, size)]
    return Listing(named, size, items, items_first=True)


def _module_type(module: str, name: str) -> type | None:
    """A type of a module the program imported itself (never imported by us)."""
    found = getattr(sys.modules.get(module), name, None)
    return found if isinstance(found, type) else None


def _numpy(value: Any, expression: str | None, hex_names: bool) -> Listing:
    """debugpy's numpy resolver: min, max (numeric arrays up to a million items), shape,
    dtype, size; then the items along the first axis."""
    if value.size > NUMPY_MIN_MAX_LIMIT:
        low = high = "ndarray too big, calculating min/max would slow down debugging"
    elif value.size == 0:
        low = high = "array is empty"
    elif value.dtype.kind in "biufc":
        low, high = value.min(), value.max()
    else:
        low = high = "not a numeric object"
    named = [Member("dtype", value.dtype, _child(expression, ".dtype"), hint="readOnly"),
             Member("shape", value.shape, _child(expression, ".shape"), hint="readOnly"),
             Member("size", value.size, _child(expression, ".size"), hint="readOnly"),
             Member("min", low, _child(expression, ".min()") if not isinstance(low, str) else None, hint="readOnly"),
             Member("max", high, _child(expression, ".max()") if not isinstance(high, str) else None, hint="readOnly")]
    if value.ndim == 0:
        return Listing(named)
    size = len(value)

    def items(start: int, count: int) -> list[Member]:
        return [Member(_index_name(i, size, hex_names), value[i], _child(expression, f"[{i}]"), _set_item(value, i))
                for i in range(start, start + count)]
    return Listing(named, size, items, items_first=True)


def _tensor(value: Any, expression: str | None) -> Listing:
    try:
        first: object = value.detach().reshape(-1)[:TENSOR_VALUES].tolist()
    except Exception as err:  # e.g. a meta tensor has no values
        first = f"<unavailable: {type(err).__name__}: {err}>"
    return Listing([Member("dtype", value.dtype, _child(expression, ".dtype"), hint="readOnly"),
                    Member("shape", tuple(value.shape), _child(expression, ".shape"), hint="readOnly"),
                    Member("device", value.device, _child(expression, ".device"), hint="readOnly"),
                    Member("values", first, None, hint="readOnly")])


def _fields(value: object, expression: str | None, names: tuple[str, ...], writable: bool) -> Listing:
    """A dataclass's or namedtuple's fields in declaration order, after the groups; the
    rest of its public attributes (sorted) after them."""
    rest = grouped(attributes(value, expression, skip=frozenset(names)))
    groups = [m for m in rest if isinstance(m.value, Group)]
    others = [m for m in rest if not isinstance(m.value, Group)]
    fields = []
    for name in names:
        try:
            item = getattr(value, name)
        except AttributeError:
            continue
        fields.append(Member(name, item, _child(expression, f".{name}"),
                             _set_attribute(value, name) if writable else None, None if writable else "readOnly"))
    extra = [_length(expression, len(value))] if isinstance(value, tuple) else []
    return Listing(groups + fields + others + extra)


def listing(value: object, expression: str | None, hex_names: bool = False) -> Listing:
    """The members of ``value``, reached from ``expression`` (None: no expression)."""
    if isinstance(value, Group):
        return Listing(value.members)
    ndarray, tensor = _module_type("numpy", "ndarray"), _module_type("torch", "Tensor")
    if ndarray is not None and isinstance(value, ndarray):
        return _numpy(value, expression, hex_names)
    if tensor is not None and isinstance(value, tensor):
        return _tensor(value, expression)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        writable = not type(value).__dataclass_params__.frozen  # type: ignore[attr-defined]
        return _fields(value, expression, tuple(f.name for f in dataclasses.fields(value)), writable)
    if isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple):
        return _fields(value, expression, tuple(type(value)._fields), writable=False)  # type: ignore[attr-defined]
    if isinstance(value, (list, deque, tuple)):
        return _sequence(value, expression, hex_names, writable=not isinstance(value, tuple))
    if isinstance(value, dict):
        return _mapping(value, expression, lambda key: _key_text(key, hex_names))
    if isinstance(value, (set, frozenset)):
        return _set(value, expression, hex_names)
    return Listing(grouped(attributes(value, expression)))


def _key_text(key: object, hex_names: bool) -> str:
    if hex_names and isinstance(key, int) and not isinstance(key, bool):
        return hex(key)
    try:
        return repr(key)
    except Exception as err:  # the user's __repr__
        return f"<repr failed: {type(err).__name__}>"


def scope_members(names: dict[str, object], setter: Callable[[str], Setter]) -> list[Member]:
    """A frame's locals or globals as debugpy shows them: grouped, sorted by name, each
    reached by its own name."""
    return grouped(Member(str(name), item, str(name), setter(str(name))) for name, item in names.items())
