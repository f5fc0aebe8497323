"""argparse types shared by the verbs: each turns bad text into a usage error (exit 64)."""

from __future__ import annotations

import argparse


def _positive(text: str, what: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"not {what}: '{text}'")
    return int(text)


def positive_number(text: str) -> int:
    """A count or an id: a positive integer."""
    return _positive(text, "a positive number")


def process_id(text: str) -> int:
    """A process id: a positive integer."""
    return _positive(text, "a process id")


def tcp_port(text: str) -> int:
    """A TCP port, 0 (pick a free one) to 65535."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: '{text}'")
    return int(text)
