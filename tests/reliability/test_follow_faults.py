"""Followed children under live commands and faults (issue 10): a breakpoint added from
another terminal reaches every worker; mixdbg SIGKILLed with a worker stopped at a
breakpoint leaves every process to finish normally."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pexpect
import psutil
import pytest
from conftest import CExtension, run_mixdbg
from faultkit import SUBREAPER, Fate, Scenario, close_interactive, json_run_args, wait_for, write_script

pytestmark = [pytest.mark.timeout(180), pytest.mark.torch]

#: Two DataLoader workers that wait for the file "gate", then load the C extension (a
#: dlopen: gdb's shared-library breakpoint in ld.so is hit) and call into it once per item;
#: the main process writes the item count to "result".
WORKERS = """\
import os, pathlib, sys, time
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        pathlib.Path(f"waiting-{os.getpid()}").touch()
        deadline = time.monotonic() + 60
        while not os.path.exists("gate") and time.monotonic() < deadline:
            time.sleep(0.01)
        import mixdbg_testext as ext
        return ext.loop(1)


if __name__ == "__main__":
    items = sum(1 for _ in DataLoader(Items(), batch_size=1, num_workers=2))
    pathlib.Path("result").write_text(str(items))
    print("items", items, flush=True)
"""


def workers_of(pid: int) -> list[int]:
    """The DataLoader workers of ``pid`` once torch has named them."""
    try:
        return [c.pid for c in psutil.Process(pid).children() if c.name() == "pt_data_worker"]
    except psutil.NoSuchProcess:
        return []


def test_break_from_another_terminal_stops_every_worker(torch_installed: None, cext: CExtension,
                                                        tmp_path: Path, rundir: Path) -> None:
    # Given a session whose 2 DataLoader workers run, waiting at their gate
    write_script(tmp_path, WORKERS)
    scenario = Scenario([*json_run_args(), "script.py"], cext.env(), tmp_path)
    try:
        main = scenario.wait_event("session")["pid"]
        wait_for(lambda: len(workers_of(main)) == 2, 60, "two DataLoader workers")
        workers = set(workers_of(main))
        # When 'mixdbg break' adds a breakpoint in the extension, then the gate opens
        added = run_mixdbg(["break", "native_step", "--session", str(main)], env=cext.env())
        assert added.returncode == 0, added.stderr
        (tmp_path / "gate").touch()
        fates = scenario.finish(120)
    finally:
        (tmp_path / "gate").touch()
        scenario.close()
    # Then it stops in every worker, and the job ends normally
    assert {stop["pid"] for stop in scenario.of("stopped")} == workers
    assert (tmp_path / "result").read_text() == "4"
    assert fates[scenario.mixdbg_pid] == Fate(0, None)


def test_sigkill_with_a_worker_stopped_at_a_breakpoint(torch_installed: None, cext: CExtension,
                                                       tmp_path: Path) -> None:
    # Given mixdbg at a terminal, one DataLoader worker stopped at a breakpoint, the prompt waiting
    write_script(tmp_path, WORKERS)
    (tmp_path / "gate").touch()
    child = pexpect.spawn(sys.executable, [str(SUBREAPER), str(tmp_path / "fates.jsonl"), "--", sys.executable,
                                           "-m", "mixdbg", "run", "--port", "0", "-b", "native_step", "script.py"],
                          env=cext.env(), cwd=str(tmp_path), timeout=90, encoding="utf-8",
                          codec_errors="replace", dimensions=(50, 200))
    main = 0
    try:
        child.expect(r"debugging PID (\d+):")
        main = int(child.match.group(1))
        child.expect(r"\[DataLoader worker.*, pid (\d+)\] stopped at breakpoint 1")
        stopped = int(child.match.group(1))
        child.expect_exact("(mixdbg) ")
        assert len(workers_of(main)) == 2 and stopped in workers_of(main)
        # When mixdbg is SIGKILLed
        mixdbg = int(next(line for line in (tmp_path / "fates.jsonl").read_text().splitlines()
                          if "command" in line).split(":")[1].strip(" }"))
        os.kill(mixdbg, signal.SIGKILL)
        # Then every process finishes normally: the workers served every item, the main
        # process wrote its result and exited 0
        child.expect("items 4")
        child.expect(pexpect.EOF, timeout=120)
    finally:
        close_interactive(child, main)
    assert (tmp_path / "result").read_text() == "4"
    fates = [line for line in (tmp_path / "fates.jsonl").read_text().splitlines() if f'"pid": {main},' in line]
    assert fates and '"code": 0' in fates[0], fates


def test_gdb_killed_while_workers_are_followed(torch_installed: None, cext: CExtension, tmp_path: Path) -> None:
    # Given a session following 2 DataLoader workers, which wait at their gate
    write_script(tmp_path, WORKERS)
    scenario = Scenario([*json_run_args("native_step"), "script.py"], cext.env(), tmp_path)
    try:
        session = scenario.wait_event("session")
        wait_for(lambda: len(list(tmp_path.glob("waiting-*"))) == 2, 60, "two DataLoader workers at the gate")
        # When gdb is SIGKILLed (while no process is loading a library: one that executes
        # ld.so's breakpoint between gdb's death and the repair dies, the documented window),
        # then the workers go on and load the extension (through that breakpoint)
        os.kill(session["gdb_pid"], signal.SIGKILL)
        wait_for(lambda: "gdb" in scenario.stderr() and "died" in scenario.stderr(), 30, "mixdbg's report")
        (tmp_path / "gate").touch()
        fates = scenario.finish(120)
    finally:
        (tmp_path / "gate").touch()
        scenario.close()
    # Then mixdbg says gdb died, and every process finishes normally: no worker died of SIGTRAP
    assert fates[scenario.mixdbg_pid] == Fate(75, None)
    assert (tmp_path / "result").read_text() == "4", scenario.stderr()[-3000:]
    assert fates[session["pid"]] == Fate(0, None)
