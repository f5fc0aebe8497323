"""The process tree's pure parts: /proc facts, tags, the table, the worker-id seam."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mixdbg.proctree import procfs
from mixdbg.proctree.table import Process, ProcessTable, tag
from mixdbg.proctree.workers import PythonFrame, worker_id_from_frames

WORKER_FILE = "/site-packages/torch/utils/data/_utils/worker.py"


def fake_stat(root: Path, pid: int, state: str, exit_code: int) -> None:
    """A /proc/PID/stat with a comm holding spaces and parentheses, as the kernel may write."""
    fields = [state, "1"] + ["0"] * 47 + [str(exit_code)]
    (root / str(pid)).mkdir(parents=True)
    (root / str(pid) / "stat").write_text(f"{pid} (a) b (c) " + " ".join(fields) + "\n")


def test_exit_status_of_zombies_and_the_gone(tmp_path: Path) -> None:
    fake_stat(tmp_path, 10, "Z", 3 << 8)
    fake_stat(tmp_path, 11, "Z", 11)
    fake_stat(tmp_path, 12, "S", 0)
    assert procfs.exit_status(10, tmp_path) == (True, 3, None)
    assert procfs.exit_status(11, tmp_path) == (True, None, "11")
    assert procfs.exit_status(12, tmp_path) == (False, None, None)
    assert procfs.exit_status(13, tmp_path) == (True, None, None)
    assert procfs.parent_pid(12, tmp_path) == 1


def test_environ_vars(tmp_path: Path) -> None:
    (tmp_path / "5").mkdir()
    (tmp_path / "5" / "environ").write_bytes(b"RANK=1\0LOCAL_RANK=0\0OTHER=x=y\0WORLD_SIZE=\xff\0")
    assert procfs.environ_vars(5, ("RANK", "LOCAL_RANK", "WORLD_SIZE"), tmp_path) == {
        "RANK": "1", "LOCAL_RANK": "0", "WORLD_SIZE": "\ufffd"}
    assert procfs.environ_vars(6, ("RANK",), tmp_path) == {}


def test_python_executables() -> None:
    assert procfs.is_python_executable(sys.executable)
    assert procfs.is_python_executable("/usr/bin/python3.14t")
    assert not procfs.is_python_executable("/bin/bash")
    assert not procfs.is_python_executable("/nonexistent/uname")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A real process with torchrun's variables, that renames itself when told to."""
    code = ("import sys, time\nsys.stdin.readline()\nopen('/proc/self/comm', 'w').write('pt_data_worker')\n"
            "print(flush=True)\ntime.sleep(60)\n")
    env = {**os.environ, "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        time.sleep(0.1)
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_tags_from_proc(sleeper: subprocess.Popen[bytes]) -> None:
    # Given a process with RANK in the environment it was exec'd with
    table = ProcessTable()
    root = table.started("i1", os.getpid())
    child = table.started("i2", sleeper.pid)
    assert root.role == "main" and child.ppid == os.getpid() and child.argv[0] == sys.executable
    # When it is tagged as a fork child, then as an exec'd process
    tag(child)
    assert child.role == "child" and child.rank == {"RANK": 1, "LOCAL_RANK": 1, "WORLD_SIZE": 2}
    child.execed = True
    tag(child)
    assert child.role == "rank" and child.label() == f"rank 1, pid {sleeper.pid}"
    # and once torch has named it a DataLoader worker
    assert sleeper.stdin is not None and sleeper.stdout is not None
    sleeper.stdin.write(b"\n")
    sleeper.stdin.flush()
    sleeper.stdout.readline()
    tag(child)
    assert child.role == "dataloader-worker" and child.label() == f"DataLoader worker, pid {sleeper.pid}"
    child.worker_id = 1
    assert child.label() == f"DataLoader worker 1, pid {sleeper.pid}"
    assert child.to_json()["rank"] == 1 and child.to_json()["worker_id"] == 1
    tag(root)
    assert root.role == "main"


def test_table_threads_and_ends() -> None:
    table = ProcessTable()
    root = table.started("i1", os.getpid())
    child = Process(inferior="i2", pid=os.getpid() + 10_000_000, ppid=os.getpid(), argv=[])
    table.by_inferior["i2"] = child
    table.thread_created("1", "i1")
    table.thread_created("2", "i2")
    table.thread_created("3", "i2")
    assert table.of_thread("2") is child and table.of_thread("9") is None and table.of_thread(None) is None
    table.thread_exited("3")
    assert table.live_threads() == ["1", "2"]
    table.ended(child)
    assert table.live() == [root] and table.live_threads() == ["1"] and table.of_thread("2") is None


def test_children_of_a_quiet_process_are_quiet(sleeper: subprocess.Popen[bytes]) -> None:
    table = ProcessTable()
    table.started("i1", os.getppid())
    assert not table.started("i2", sleeper.pid).quiet
    parent = table.by_inferior["i1"]
    table.by_inferior["i0"] = Process(inferior="i0", pid=os.getpid(), ppid=os.getppid(), argv=[], quiet=True)
    assert table.started("i3", sleeper.pid).quiet  # forked by the quiet process
    assert not parent.quiet


def test_worker_id_from_frames() -> None:
    loop = PythonFrame("_worker_loop", WORKER_FILE, "0x10")
    getitem = PythonFrame("__getitem__", "/work/dl.py", "0x20")
    locals_by_frame = {"0x10": {"worker_id": "1", "done_event": "Event"}, "0x20": {"worker_id": "7"}}
    read: list[str] = []

    def locals_of(address: str) -> dict[str, str]:
        read.append(address)
        return locals_by_frame[address]

    assert worker_id_from_frames([getitem, loop], locals_of) == 1
    assert read == ["0x10"]  # only the worker loop's locals are read
    assert worker_id_from_frames([getitem], locals_of) is None
    elsewhere = PythonFrame("_worker_loop", "/elsewhere/worker.py", "0x10")
    assert worker_id_from_frames([elsewhere], locals_of) is None
    locals_by_frame["0x10"]["worker_id"] = "True"
    assert worker_id_from_frames([loop], locals_of) is None
