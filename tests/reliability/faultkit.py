"""Helpers for the reliability suite: run mixdbg under a subreaper, inject faults, read fates.

Every process a scenario starts is known by PID (mixdbg from the subreaper's report; the
debuggee, gdb and the debugpy adapter from mixdbg's ``session`` event), and ``close`` ends
whatever is still running by those PIDs only, SIGCONT first (a stopped process ignores
SIGTERM until continued).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from conftest import CExtension

SUBREAPER = Path(__file__).with_name("subreaper.py")
#: Generous: two cores, and other engineers' suites may run at the same time.
EVENT_TIMEOUT = 60.0


@dataclass(frozen=True)
class Fate:
    """How a process ended."""

    code: int | None
    signal: str | None


class Scenario:
    """``mixdbg ARGS`` started under the subreaper, its JSON events read as they come.

    Standard error (which in ``--json`` mode also carries the debuggee's output) goes to
    ``stderr_path``; ``stdin`` is /dev/null (no terminal)."""

    def __init__(self, args: Sequence[str], env: dict[str, str], workdir: Path) -> None:
        self.report_path = workdir / "fates.jsonl"
        self.stderr_path = workdir / "mixdbg.stderr"
        self.events: list[dict[str, Any]] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        with open(self.stderr_path, "wb") as stderr:
            self.harness = subprocess.Popen(
                [sys.executable, str(SUBREAPER), str(self.report_path), "--",
                 sys.executable, "-m", "mixdbg", *args],
                env=env, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.harness.stdout is not None
        for raw in self.harness.stdout:
            self._lines.put(raw.decode("utf-8", "replace"))
        self._lines.put(None)

    def wait_event(self, kind: str, timeout: float = EVENT_TIMEOUT) -> dict[str, Any]:
        """Read events until one of ``kind`` arrives; return it."""
        deadline = time.monotonic() + timeout
        while True:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                raise AssertionError(f"mixdbg's output ended before a '{kind}' event: {self.stderr()}")
            if line.startswith("{"):
                event = json.loads(line)
                self.events.append(event)
                if event.get("event") == kind:
                    return event

    @property
    def session(self) -> dict[str, Any]:
        return next(e for e in self.events if e.get("event") == "session")

    @property
    def mixdbg_pid(self) -> int:
        for _ in range(100):
            for line in self._report():
                if "command" in line:
                    return int(line["command"])
            time.sleep(0.05)
        raise AssertionError("the subreaper never reported mixdbg's pid")

    def _report(self) -> list[dict[str, Any]]:
        if not self.report_path.exists():
            return []
        return [json.loads(line) for line in self.report_path.read_text().splitlines() if line.strip()]

    def finish(self, timeout: float = EVENT_TIMEOUT) -> dict[int, Fate]:
        """Wait until mixdbg and every process it left have ended; return their fates.

        The subreaper exits only when it has no child left, so this returning at all shows
        that no gdb, adapter or debuggee remains."""
        self.harness.wait(timeout)
        while True:  # drain the remaining events
            try:
                line = self._lines.get(timeout=5)
            except queue.Empty:
                break
            if line is None:
                break
            if line.startswith("{"):
                self.events.append(json.loads(line))
        return {int(e["pid"]): Fate(e["code"], e["signal"]) for e in self._report() if "pid" in e}

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    def close(self) -> None:
        """End what is still running, by PID, and reap the harness."""
        if self.harness.poll() is None:
            pids = [pid for pid in self._known_pids() if pid]
            end_by_pid(pids)
            try:
                self.harness.wait(30)
            except subprocess.TimeoutExpired:
                self.harness.kill()
                self.harness.wait()

    def _known_pids(self) -> Iterator[int]:
        try:
            yield self.mixdbg_pid
        except AssertionError:
            pass
        if any(e.get("event") == "session" for e in self.events):
            for key in ("pid", "gdb_pid", "adapter_pid"):
                yield self.session.get(key) or 0


def end_by_pid(pids: Sequence[int]) -> None:
    """SIGCONT then SIGKILL each PID that still exists (test cleanup only)."""
    for pid in pids:
        for signum in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                break


def json_run_args(*breaks: str, extra: Sequence[str] = ()) -> list[str]:
    """``run --json --port 0`` with the given breakpoints."""
    args = ["run", "--json", "--port", "0", *extra]
    for spec in breaks:
        args += ["-b", spec]
    return args


def write_script(directory: Path, text: str, name: str = "script.py") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.05) -> None:
    """Poll ``predicate()`` until true; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def proc_status(pid: int) -> dict[str, str]:
    """``State``, ``TracerPid`` and ``ShdPnd`` from /proc/PID/status (empty once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {k: fields[k].strip() for k in ("State", "TracerPid", "ShdPnd") if k in fields}


def env_with(cext: CExtension, *paths: Path) -> dict[str, str]:
    """The C extension's environment plus extra PYTHONPATH entries."""
    env = cext.env()
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env["PYTHONPATH"]])
    return env


def stderr_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("mixdbg:")]


def assert_no_traceback(*texts: str | bytes) -> None:
    for text in texts:
        body = text.decode(errors="replace") if isinstance(text, bytes) else text
        assert "Traceback" not in body, body[-3000:]


def open_log(path: Path) -> IO[bytes]:
    return open(path, "wb")


def close_interactive(child: Any, pid: int) -> None:
    """Close a pexpect-driven mixdbg (the subreaper around it outlives the close) and end
    the debuggee, by PID, if a failed test left it running."""
    child.close(force=False)
    if pid and proc_status(pid):
        end_by_pid([pid])
