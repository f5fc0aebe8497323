"""The memory the agent shares with the engine (docs/dap-design.md): the shared block, one
mailbox per stopping thread, and the exchange at a trap.

Standard library only; loaded by path beside ``agent.py`` as ``_mixdbg_agent_layout``.
"""

from __future__ import annotations

import ctypes
import json
from typing import Any, Callable

MAGIC = 0x4741474244584D4D  # b"MMXDBGAG" read as a little-endian u64; Shared and Mailbox
VERSION = 2
STEP_IN, STEP_TO_DEPTH, STEP_OUT = 1, 2, 3  # Slot.mode (0: a free slot)
OUT_SIZE, IN_SIZE = 1 << 20, 64 << 10


class Slot(ctypes.Structure):
    """A step armed on one thread (by the engine while all is stopped, or by the agent)."""

    _fields_ = [("tid", ctypes.c_uint64), ("mode", ctypes.c_uint32), ("depth", ctypes.c_uint32)]


class Shared(ctypes.Structure):
    """The process's one shared block; the engine finds it through the hello message.
    The last fields (3.10/3.11, else 0) are how the engine gets the agent's attention (see
    docs/dap-design.md, "Attention"): the addresses of the agent's frame tracer
    (``attend``), of its global trace function and of the one it takes while something is
    armed (``trace_call``, ``attend_call``), and where a frame object keeps ``f_trace`` and
    a thread state its trace function's object."""

    _fields_ = [("magic", ctypes.c_uint64), ("version", ctypes.c_uint32), ("armed", ctypes.c_uint32),
                ("slots", Slot * 16), ("attend", ctypes.c_uint64), ("trace_call", ctypes.c_uint64),
                ("attend_call", ctypes.c_uint64), ("frame_trace", ctypes.c_uint32),
                ("trace_object", ctypes.c_uint32)]


class Mailbox(ctypes.Structure):
    """One thread's stop conversation: ``out`` is the agent's JSON, ``in_`` the engine's."""

    _fields_ = [("magic", ctypes.c_uint64), ("shared", ctypes.c_uint64), ("tid", ctypes.c_uint64),
                ("out_len", ctypes.c_uint32), ("in_len", ctypes.c_uint32),
                ("out", ctypes.c_char * OUT_SIZE), ("in_", ctypes.c_char * IN_SIZE)]


def exchange(mailbox: Mailbox, message: dict[str, Any], trap: Callable[[int], object]) -> dict[str, Any] | None:
    """Write ``message`` to ``out``, call the trap, read ``in`` (None: the engine let go)."""
    data = json.dumps(message).encode()
    if len(data) > OUT_SIZE:
        data = json.dumps({"event": "reply", "id": message.get("id"), "error": "reply larger than 1 MiB"}).encode()
    ctypes.memmove(ctypes.addressof(mailbox) + Mailbox.out.offset, data, len(data))
    mailbox.out_len = len(data)
    mailbox.in_len = 0
    trap(ctypes.addressof(mailbox))
    size = min(mailbox.in_len, IN_SIZE)
    if size == 0:
        return None
    raw = ctypes.string_at(ctypes.addressof(mailbox) + Mailbox.in_.offset, size)
    mailbox.in_len = 0
    try:
        command: dict[str, Any] = json.loads(raw)
    except ValueError:
        return None
    return command
