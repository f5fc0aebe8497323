"""Getting a Python agent's attention from a stop: the engine wrote configuration or armed
a step while the process was stopped, and the agent must apply it before the program runs
another Python line (``docs/dap-design.md``, "Attention"). The agent has no thread of its
own, and its tracer sees only the events it asked for; so the engine, before it resumes:

- adds 1 to ``armed`` beyond the slots in use (``agents.nudge``): any event the agent sees
  applies what is pending;
- on 3.10/3.11 (``sys.settrace``) points every thread whose global trace function is the
  agent's fast one at the agent's armed one (which reads ``armed`` at each call: the fast
  one does not), and writes the agent's attention tracer into the ``f_trace`` of the
  innermost Python frame of every thread that has none (``wake_threads``): the next call
  or line of any thread is then an event, exact in every thread;
- on 3.12+ (``sys.monitoring``, where events are per code object, not per frame) has gdb
  deliver the agent's signal to the main thread, whose handler runs at its next check for
  pending work: exact for the main thread (the call returning into Python, a callback's
  start); another thread that holds the GIL may run on for up to the switch interval
  (5 ms) first.

This module owns those writes; the session decides when (``pystops``).
"""

from __future__ import annotations

import logging
import struct

from mixdbg import pyruntime
from mixdbg.engine import agents
from mixdbg.errors import NotFoundError
from mixdbg.memory import MemoryReadError, ProcMemory, ReadMemory
from mixdbg.pyframes import Unsupported, open_interpreter

log = logging.getLogger(__name__)

#: 3.11: where an interpreter frame keeps its frame object (``_PyInterpreterFrame.frame_obj``).
FRAME_OBJECT_311 = 40
#: 3.11: where a frame object keeps its interpreter frame (``PyFrameObject.f_frame``).
FRAME_BACKLINK_311 = 24


def wake_threads(pid: int, shared: int, write: agents.WriteMemory) -> int:
    """Point the threads of ``pid`` at the agent's armed trace function and their innermost
    frame at its attention tracer (see the module doc); the number of threads woken (0:
    not a 3.10/3.11 agent, or its threads unreadable: the caller falls back to the signal)."""
    fields = agents.attention_fields(pid, shared)
    if not (fields.attend and fields.attend_call and fields.frame_trace and fields.trace_object):
        return 0
    writes: list[tuple[int, int]] = []
    try:
        found = pyruntime.find_runtime(pid)
        with ProcMemory(pid) as read:
            interpreter = open_interpreter(read, found.runtime, found.py_version or None, found.hint)
            for thread in interpreter.threads():
                slot = thread.state + fields.trace_object
                if thread.state and _word(read, slot) == fields.trace_call:
                    writes.append((slot, fields.attend_call))
                frame = _frame_object(read, interpreter.layout.minor, thread.frames[0].address) if thread.frames else 0
                if frame and not _word(read, frame + fields.frame_trace):
                    writes.append((frame + fields.frame_trace, fields.attend))
    except (NotFoundError, Unsupported, MemoryReadError) as err:
        log.info("PID %d: no thread to wake (%s)", pid, err)
        return 0
    for address, value in writes:
        write(pid, address, struct.pack("<Q", value))
    return len(writes)


def _word(read: ReadMemory, address: int) -> int:
    return int(struct.unpack("<Q", read(address, 8))[0])


def _frame_object(read: ReadMemory, minor: int, address: int) -> int:
    """The frame object of the Python frame at ``address`` (3.10: it is one; 3.11: the
    interpreter frame points at it, or 0 when none was made)."""
    if minor == 10:
        return address
    if minor == 11:
        frame = _word(read, address + FRAME_OBJECT_311)
        # Only a frame object that points back at its interpreter frame is written to: a
        # stale pointer would have the attention tracer written into another object.
        return frame if frame and _word(read, frame + FRAME_BACKLINK_311) == address else 0
    return 0
