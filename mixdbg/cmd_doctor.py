"""Placeholder: this verb module is being written."""

from __future__ import annotations

import argparse
from typing import Any


def register(verbs: "argparse._SubParsersAction[Any]") -> None:
    """Add this module's verbs to the top-level parser."""
