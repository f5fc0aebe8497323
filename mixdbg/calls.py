"""Whether gdb can call functions in the debuggee here without harming it.

An inferior call makes gdb save the thread's registers, write new ones, run the function
and write the saved ones back. gdb older than 14 cannot write the XSAVE state of a CPU
with AMX (Intel's tile registers, /proc/cpuinfo flag ``amx_tile``): the call fails with
"Couldn't write extended state status: Bad address", and the registers it could not put
back are lost. Measured on gdb 13.1 here: after a failed ``p (int)getpid()`` in a script
sleeping in ``time.sleep``, continuing made the script die with ``OSError: [Errno 514]``
(the interrupted system call's restart state was gone). gdb 14 writes that state (gdb 18
in the forky chroot calls functions on the same CPU). Where calls are unsafe mixdbg sets
gdb's ``may-call-functions off``: an expression that would call a function then fails
with one line and touches nothing.

This module only returns facts; the session and ``doctor`` word them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mixdbg.gdbmi import GdbMi

#: The first gdb release that writes the AMX XSAVE state (gdb 14 added AMX support).
FIRST_SAFE_GDB = 14
#: CPU flags whose XSAVE components gdb before 14 cannot write back.
UNWRITABLE_FLAGS = ("amx_tile",)
#: ``MIXDBG_FUNCTION_CALLS=off`` forbids calls whatever the facts (tests use it to prove
#: that nothing is called); ``on`` allows them whatever the facts.
OVERRIDE_VARIABLE = "MIXDBG_FUNCTION_CALLS"


@dataclass(frozen=True)
class CallSafety:
    """Whether gdb may call functions in the debuggee, and why (one sentence)."""

    allowed: bool
    reason: str


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The flags of the first CPU in ``cpuinfo`` (empty when it cannot be read)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def assess(gdb_major: int | None, flags: frozenset[str], override: str | None = None) -> CallSafety:
    """Decide whether gdb ``gdb_major`` may call functions on a CPU with ``flags``."""
    if override == "off":
        return CallSafety(False, f"{OVERRIDE_VARIABLE}=off")
    if override == "on":
        return CallSafety(True, f"{OVERRIDE_VARIABLE}=on")
    unwritable = sorted(flag for flag in UNWRITABLE_FLAGS if flag in flags)
    if gdb_major is None:
        return CallSafety(not unwritable, "gdb's version is unknown" + (
            f" and this CPU has {', '.join(unwritable)}" if unwritable else ""))
    if unwritable and gdb_major < FIRST_SAFE_GDB:
        return CallSafety(False, f"gdb {gdb_major} cannot restore the registers of this CPU "
                                 f"({', '.join(unwritable)}) after calling a function in the debuggee")
    return CallSafety(True, f"gdb {gdb_major} can call functions on this CPU")


def assess_here(gdb_major: int | None) -> CallSafety:
    """``assess`` for this machine's CPU and the ``MIXDBG_FUNCTION_CALLS`` override."""
    return assess(gdb_major, cpu_flags(), os.environ.get(OVERRIDE_VARIABLE))


def refusal(safety: CallSafety) -> str:
    """The one line shown when an expression would have called a function."""
    return (f"error: mixdbg does not let gdb call functions in the debuggee here: {safety.reason}; "
            f"reading variables works (gdb {FIRST_SAFE_GDB} or newer can call functions)")


def guard(gdb: GdbMi) -> CallSafety:
    """Forbid gdb to call functions in the debuggee where that could harm it (``assess_here``
    with gdb's own version); the decision, for the ``session`` event to tell. A call that
    is interrupted (a cancelled request) or gets a signal is unwound: the thread is as it
    was before the call, never left inside the called function."""
    gdb.command("-gdb-set unwindonsignal on")  # its name on gdb 13 too
    safety = assess_here(gdb.major_version() or None)
    if not safety.allowed:
        gdb.command("-gdb-set may-call-functions off")
    return safety
