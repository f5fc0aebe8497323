"""mixdbg's own diagnostic log, for bug reports: every module's records (gdb's MI commands and
their times, the agent's messages, DAP traffic) to the file named by ``--log FILE`` or, for an
editor that starts ``mixdbg dap`` itself, ``$MIXDBG_LOG``. Nothing is logged otherwise."""

from __future__ import annotations

import logging
import os

#: The environment variable naming the log file when ``--log`` is not given.
LOG_ENV = "MIXDBG_LOG"


def log_file(option: str | None) -> str | None:
    """The file to log to: ``--log``'s, else ``$MIXDBG_LOG``'s, else None (no log)."""
    return option or os.environ.get(LOG_ENV) or None


def log_to(option: str | None) -> None:
    """Send every module's records, at debug level and with times and threads, to the file
    ``log_file(option)`` names (appended to, so that a user's earlier log is kept)."""
    path = log_file(option)
    if path is not None:
        logging.basicConfig(filename=path, level=logging.DEBUG,
                            format="%(asctime)s %(threadName)s %(name)s: %(message)s")
