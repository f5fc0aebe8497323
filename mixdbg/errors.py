"""mixdbg's own exceptions, each carrying the exit code the CLI turns it into.

Only ``cli.main`` catches these: it prints ``mixdbg: <message>`` (plus the hint, if any)
on stderr and exits with ``exit_code``. The codes follow BSD sysexits.h so that they do
not collide with the small codes scripts usually return:

====  =====================  ==========================================================
code  class                  meaning
====  =====================  ==========================================================
64    UsageError             bad arguments: unknown option, unparseable breakpoint spec
65    DataError              a file of the user's cannot be parsed (launch.json)
66    NotFoundError          no such script, module, process, library or live session
69    UnavailableError       something needed is missing or busy: gdb, debugpy, a port
70    MixdbgError            an internal error (a bug): please report it
73    CannotWriteError       a file cannot be written (read-only, not a regular file)
75    DebuggerError          gdb died, timed out or answered something unexpected
77    NotPermittedError      the kernel does not allow tracing the process
====  =====================  ==========================================================
"""

from __future__ import annotations


class MixdbgError(Exception):
    """Root of every error mixdbg reports to the user; ``hint`` says what to do about it."""

    exit_code = 70

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(MixdbgError):
    """The command line is wrong (also raised for argparse errors)."""

    exit_code = 64


class DataError(MixdbgError):
    """A file of the user's could not be parsed; it is left untouched."""

    exit_code = 65


class NotFoundError(MixdbgError):
    """A named thing (script, PID, library, session) does not exist."""

    exit_code = 66


class UnavailableError(MixdbgError):
    """A needed tool or resource is missing or busy (gdb, debugpy, a TCP port)."""

    exit_code = 69


class CannotWriteError(MixdbgError):
    """A file cannot be written; nothing was changed."""

    exit_code = 73


class DebuggerError(MixdbgError):
    """gdb died, did not answer in time, or refused a command."""

    exit_code = 75


class GdbTimeoutError(DebuggerError):
    """gdb did not answer a command or produce an awaited event in time."""


class GdbExitedError(DebuggerError):
    """The gdb process ended while mixdbg still needed it."""


class NotPermittedError(MixdbgError):
    """ptrace is not permitted; the hint carries the precise cause and the fix."""

    exit_code = 77
