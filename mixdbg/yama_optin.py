"""The debuggee's opt-in to its tracer under Yama (``prctl(PR_SET_PTRACER)``).

A launched debuggee runs this before anything of the user's, so it imports only ``ctypes``
(``mixdbg.ptrace``, which diagnoses tracing, took 58 ms to import there, on the way to
gdb's attach). The kernel's rule: ``security/yama/yama_lsm.c``.
"""

from __future__ import annotations

import ctypes

PR_SET_PTRACER = 0x59616D61  # "Yama"
PR_SET_PTRACER_ANY = ctypes.c_ulong(-1).value  # (unsigned long)-1


def set_ptracer(tracer: int | None) -> bool:
    """Declare ``tracer`` (``None`` or 0: any process) allowed to ptrace this process.

    This is what lets gdb attach under Yama scope 1 without root: the debuggee names its
    tracer before user code runs (the relation survives ``execve``). It never raises, so it
    can run unconditionally at the start of every debuggee: without Yama the kernel answers
    EINVAL, and any failure only means the opt-in did not take effect (``False``).
    """
    value = tracer or PR_SET_PTRACER_ANY
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        result: int = libc.prctl(ctypes.c_int(PR_SET_PTRACER), ctypes.c_ulong(value),
                                 ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    except (OSError, AttributeError, ValueError):  # no libc / no prctl: not Linux
        return False
    return result == 0  # EINVAL also means: no Yama
