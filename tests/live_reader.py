"""Reads a live interpreter's Python frames with ``mixdbg.pyframes``, outside gdb.

Usage: ``python live_reader.py PYTHON SCRIPT``: starts ``PYTHON SCRIPT block``, waits for
the script's "ready" line, stops it (SIGSTOP), reads every thread and the locals of the
innermost frame of the thread whose frames include ``résumé_данные`` and those of the main
thread's module frame (its globals) through ``/proc/PID/mem`` (with a summary registered for the script's ``Model`` objects, as a
tensor reader registers one for tensors), prints one JSON document, and ends the process it started. A script
(not a test module) so that the same reading runs in the forky chroot too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

from mixdbg.memory import ProcMemory
from mixdbg.pyframes import Unsupported, open_interpreter, register_summary
from mixdbg.pyruntime import find_runtime

READY_TIMEOUT = 60.0


def _read(pid: int) -> dict[str, Any]:
    found = find_runtime(pid)
    with ProcMemory(pid) as memory:
        try:
            interpreter = open_interpreter(memory, found.runtime, found.py_version or None, found.hint)
        except Unsupported as err:
            return {"unsupported": str(err)}
        started = time.perf_counter()
        threads = interpreter.threads()
        elapsed = time.perf_counter() - started
        document: dict[str, Any] = {"version": interpreter.version, "method": interpreter.method,
                                    "read_ms": elapsed * 1000, "threads": [], "locals": None}
        for thread in threads:
            document["threads"].append({
                "native_id": thread.native_id, "problem": thread.problem,
                "runs": [{"marker": run.marker is not None,
                          "frames": [[f.function, f.file, f.line] for f in run.frames]} for run in thread.runs],
            })
            innermost = thread.frames[0] if thread.frames else None
            if innermost is not None and innermost.function == "résumé_данные":
                document["locals"] = interpreter.locals(innermost.address)
            if innermost is not None and thread.frames[-1].function == "<module>" and len(thread.frames) <= 3:
                document["module"] = interpreter.locals(thread.frames[-1].address)
        return document


def main(python: str, script: str) -> None:
    register_summary("Model", lambda read, address: "<a Model, by a registered summary>")
    target = subprocess.Popen([python, script, "block"], stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout is not None
        line = target.stdout.readline()
        if line.strip() != "ready":
            raise SystemExit(f"the target did not get ready: {line!r}")
        time.sleep(0.3)  # from print() to the C call, and the main thread to join()
        os.kill(target.pid, signal.SIGSTOP)
        print(json.dumps(_read(target.pid)))
    finally:
        target.kill()
        os.kill(target.pid, signal.SIGCONT)
        target.wait(READY_TIMEOUT)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
