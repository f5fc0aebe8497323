"""Placeholder: the per-session control socket (being written)."""

from __future__ import annotations

from typing import Any


class _NoServer:
    def close(self) -> None:
        """Nothing to close."""


def start_server(session: Any, target: str, port: int | None) -> _NoServer:
    """Serve the session's control socket (placeholder)."""
    return _NoServer()
