"""Run a command as a child subreaper and report the fate of every process it leaves.

Usage: ``python subreaper.py REPORT -- COMMAND [ARGS...]``

The command (mixdbg) is started with this process's stdin/stdout/stderr. This process
declares itself the child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so when mixdbg dies,
its orphans (the debuggee, gdb, the double-forked debugpy adapter) become our children
instead of init's. We reap every one of them and append one JSON line per process to
REPORT: ``{"pid": N, "code": C, "signal": S}``; the first line is ``{"command": PID}``.
We exit when no child is left, so a harness that does not exit means something was left
running: the test's timeout catches it.
"""

import ctypes
import json
import os
import signal
import subprocess
import sys

PR_SET_CHILD_SUBREAPER = 36


def main(argv):
    report_path, command = argv[0], argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    child = subprocess.Popen(command)
    # Set after the start, so the command keeps the default handlers: a terminal's Ctrl-C
    # and hangup are the command's to handle; we must outlive it to reap its orphans.
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    with open(report_path, "a") as report:
        report.write(json.dumps({"command": child.pid}) + "\n")
        report.flush()
        while True:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            if os.WIFSIGNALED(status):
                fate = {"pid": pid, "code": None, "signal": signal.Signals(os.WTERMSIG(status)).name}
            else:
                fate = {"pid": pid, "code": os.WEXITSTATUS(status), "signal": None}
            report.write(json.dumps(fate) + "\n")
            report.flush()
    child.returncode = 0  # reaped above; keep Popen from warning


if __name__ == "__main__":
    main(sys.argv[1:])
