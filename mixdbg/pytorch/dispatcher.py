"""The operators a process's PyTorch dispatcher has registered, read from its memory.

Every operator any library registers (``TORCH_LIBRARY``, ``TORCH_LIBRARY_IMPL``, a user's
extension, torchvision's, Python's ``torch.library``) is an ``OperatorEntry`` in the list
``c10::Dispatcher::operators_``, whatever its namespace: its name, its schema (argument
names), and a dispatch table holding, per backend, the kernel that computes it (a functor
object, its boxed function, its unboxed function). ``layout_probe.py`` measures where
these are for one torch build (its ``dispatcher`` section): the entry's name and overload
are its first two ``std::string``s; the schema's arguments a ``std::vector`` whose elements
begin with their name; each backend's slot an offset in the entry.

New operators are appended to the list, so a later walk goes on from where the last one
ended (``after``); the list's size tells when some were removed (a walk starts over then).

Standard library only, Python 3.9-compatible: gdb's Python runs it (``gdb_commands.py``).
"""

from __future__ import annotations

from typing import Any

from mixdbg.memory import MemoryReadError, ReadMemory, read_i64, read_u64

#: Operators walked at most in one walk (torch 2.13 registers about 3,600).
MAX_OPERATORS = 200000
#: Arguments read at most from one schema.
MAX_ARGUMENTS = 256
#: A ``std::list``'s size follows its head's next and previous pointers.
_LIST_SIZE = 16


class DispatcherUnreadable(Exception):
    """The dispatcher's memory does not read as the layout says (the message says why)."""


def std_string(read: ReadMemory, address: int) -> str:
    """A libstdc++ ``std::string`` at ``address`` (data pointer, then length)."""
    data, length = read_u64(read, address), read_i64(read, address + 8)
    if not 0 <= length <= 4096:
        raise DispatcherUnreadable(f"implausible string length {length} at {address:#x}")
    return read(data, length).decode("utf-8", "replace")


def operator_count(read: ReadMemory, dispatcher: int) -> int:
    """How many operators the dispatcher's list holds."""
    return read_i64(read, dispatcher + _LIST_SIZE)


def walk(read: ReadMemory, dispatcher: int, layout: dict[str, Any], after: int | None = None,
         ) -> tuple[list[tuple[str, str, int]], int | None]:
    """The operators registered after node ``after`` (all, when None): ``(name, overload,
    entry address)`` each, and the last node (where the next walk goes on from)."""
    try:
        node = read_u64(read, after if after is not None else dispatcher)
        found: list[tuple[str, str, int]] = []
        last = after
        while node != dispatcher:
            if len(found) >= MAX_OPERATORS or node == 0:
                raise DispatcherUnreadable("the operator list does not end where it began")
            entry = node + int(layout["entry"])
            found.append((std_string(read, entry), std_string(read, entry + 32), entry))
            last, node = node, read_u64(read, node)
        return found, last
    except MemoryReadError as err:
        raise DispatcherUnreadable(f"memory unreadable: {err}") from err


def argument_names(read: ReadMemory, entry: int, layout: dict[str, Any]) -> list[str] | None:
    """The names of an operator's schema arguments; None when it has no schema (only
    kernels registered so far) or it does not read as one."""
    size = int(layout["argument_size"])
    try:
        begin = read_u64(read, entry + int(layout["arguments"]))
        end = read_u64(read, entry + int(layout["arguments"]) + 8)
        if begin == 0 or end < begin or (end - begin) % size or (end - begin) // size > MAX_ARGUMENTS:
            return None
        return [std_string(read, begin + index * size) for index in range((end - begin) // size)]
    except (MemoryReadError, DispatcherUnreadable):
        return None


def kernels(read: ReadMemory, entry: int, layout: dict[str, Any]) -> list[dict[str, Any]]:
    """The kernels of an operator, one per functor (a CompositeImplicitAutograd kernel
    fills several backends' slots): ``{"keys", "functor", "boxed", "unboxed"}``."""
    found: dict[int, dict[str, Any]] = {}
    for key, slot in layout["slots"].items():
        try:
            functor, boxed, unboxed = (read_u64(read, entry + int(slot) + 8 * i) for i in range(3))
        except MemoryReadError:
            continue
        if functor == 0:
            continue  # no kernel for this backend (a fallthrough, a fallback, or none)
        kernel = found.setdefault(functor, {"keys": [], "functor": functor, "boxed": boxed, "unboxed": unboxed})
        kernel["keys"].append(key)
    return list(found.values())
