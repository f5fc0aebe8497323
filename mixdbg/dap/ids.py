"""DAP ids for things that live until the debuggee runs again (frames, variable
references): handed out per stop, all invalid after ``reset``, as clients expect."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

from mixdbg.dap.protocol import StaleReference

T = TypeVar("T", bound=Hashable)


class Handles(Generic[T]):
    """Small integer ids for values of one stop; the same value gets the same id."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._items: dict[int, T] = {}
        self._ids: dict[T, int] = {}
        self._next = 1

    def add(self, item: T) -> int:
        """The id of ``item`` (a new one the first time this stop)."""
        if item not in self._ids:
            self._ids[item] = self._next
            self._items[self._next] = item
            self._next += 1
        return self._ids[item]

    def get(self, number: int) -> T:
        """The value behind an id; a stale id (from before the last resume) is an error."""
        try:
            return self._items[number]
        except KeyError:
            raise StaleReference(f"{self.what} {number} is not valid any more (the program ran since)") from None

    def reset(self) -> None:
        """The debuggee runs again: every id handed out so far is invalid. Ids keep growing,
        so that a stale one is never mistaken for a new one."""
        self._items.clear()
        self._ids.clear()
