"""Which handler serves which DAP request, and the capabilities they add up to: each
handler module registers its requests with ``@request``, next to the code that serves
them (as gdb's own DAP server does)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter

Handler = Callable[["Adapter", dict[str, Any]], "dict[str, Any] | None"]

HANDLERS: dict[str, Handler] = {}
CAPABILITIES: dict[str, Any] = {}


def request(name: str, **capabilities: Any) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of request ``name``; it returns the
    response body (or None) and raises ``DapError`` for an error response.
    ``capabilities`` are what ``initialize`` announces for it."""

    def register(handler: Handler) -> Handler:
        HANDLERS[name] = handler
        CAPABILITIES.update(capabilities)
        return handler

    return register
