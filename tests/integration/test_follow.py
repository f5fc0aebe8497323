"""Following the processes a job starts (issue 10): DataLoader workers, multiprocessing
spawn/forkserver, subprocess, torchrun ranks; real gdb, real torch, the tests' C extension."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest
from conftest import CEXT_SOURCE, CExtension, Forky, MixdbgRun, run_mixdbg, xfail_known_gdb_death

pytestmark = [pytest.mark.timeout(240)]

#: DataLoader(num_workers=N) over 8 items whose __getitem__ calls torch.randn; with "crash",
#: item 5 reads address 0 first.
DATALOADER = """\
import ctypes, sys
import torch
from torch.utils.data import DataLoader, Dataset

CRASH = sys.argv[2:] == ["crash"]


class Items(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if CRASH and i == 5:
            ctypes.string_at(0)  # @crash
        return torch.randn(2)


if __name__ == "__main__":
    loader = DataLoader(Items(), batch_size=2, num_workers=int(sys.argv[1]))
    print("items", sum(batch.shape[0] for batch in loader), flush=True)
"""

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

#: A Pool(2) of the given start method; each worker calls into the C extension when it
#: starts, and waits for the other (so that neither is terminated before it started).
POOL = (SCRIPTS / "pool.py").read_text()
#: The line of ``started`` that calls into the extension (where the workers stop).
POOL_CALL_LINE = POOL.splitlines().index("    ext.loop(1)") + 1

SUBPROCESSES = """\
import subprocess, sys
subprocess.run([sys.executable, "-c", "import mixdbg_testext as ext; print('python child', ext.loop(1))"], check=True)
out = subprocess.run(["bash", "-c", "echo bash child $$"], check=True, capture_output=True, text=True).stdout
print(out.strip(), "ran untouched", flush=True)
"""

TRAIN = """\
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
total = torch.ones(2) * (dist.get_rank() + 1)
dist.all_reduce(total)
os.write(1, f"rank {dist.get_rank()} sum {total.tolist()}\\n".encode())  # one write: ranks interleave
dist.destroy_process_group()
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def python_frames(stop: dict[str, Any]) -> list[tuple[str, int | None]]:
    return [(f["function"], f["line"]) for f in stop["frames"] if f["kind"] == "python"]


def processes(result: MixdbgRun) -> dict[int, dict[str, Any]]:
    return {event["pid"]: event for event in result.of("process")}


def follow_run(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
               timeout: float = 200) -> MixdbgRun:
    return run_mixdbg(["run", "--json", "--no-prompt", "--port", "0", *args], env=env, cwd=cwd, timeout=timeout)


@pytest.mark.torch
def test_dataloader_workers_stop_tagged(torch_installed: None, tmp_path: Path) -> None:
    # Given a DataLoader with 2 fork workers, whose randn runs only in the workers
    script = write(tmp_path, "dl.py", DATALOADER)
    # When it runs under mixdbg with a breakpoint on randn
    result = follow_run(["-b", "at::native::randn", str(script), "2"])
    # Then randn stops in both workers, each tagged as a DataLoader worker of the main process
    assert result.returncode == 0, result.stderr[-3000:]
    main = result.of("session")[0]["pid"]
    tagged = processes(result)
    assert tagged[main]["role"] == "main"
    stopped_in = {stop["pid"] for stop in result.of("stopped")}
    assert len(stopped_in) == 2 and main not in stopped_in
    for pid in stopped_in:
        assert tagged[pid]["role"] == "dataloader-worker" and tagged[pid]["ppid"] == main
    # with the worker ids torch gave them (read from its _worker_loop frame's locals)
    assert sorted(tagged[pid]["worker_id"] for pid in stopped_in) == [0, 1]
    # every process shows the command line the user ran, not mixdbg's launcher (workers share it)
    assert all(tagged[pid]["argv"][1:] == [str(script), "2"] for pid in {main} | stopped_in)
    assert {stop["process"] for stop in result.of("stopped")} == {
        f"DataLoader worker {tagged[pid]['worker_id']}, pid {pid}" for pid in stopped_in}
    # the breakpoint resolved in every process, and said in which
    assert any({main} | stopped_in <= set(b["pids"]) for b in result.of("breakpoint"))
    # and each worker's exit is its own event (gdb 13 loses some exits: found gone in /proc
    # after its parent reaped it, the status is unknown), the script's output complete
    exits = {event["pid"]: (event["code"], event["signal"]) for event in result.of("exited") if "pid" in event}
    assert set(exits) == stopped_in and set(exits.values()) <= {(0, None), (None, None)}
    assert "items 8" in result.stderr


@pytest.mark.torch
def test_dataloader_worker_crash(torch_installed: None, tmp_path: Path) -> None:
    # Given a DataLoader whose item 5 reads address 0 in a worker
    script = write(tmp_path, "dl.py", DATALOADER)
    plain = subprocess.run([sys.executable, str(script), "2", "crash"], capture_output=True, timeout=120,
                           check=False)
    # When it runs under mixdbg
    result = follow_run([str(script), "2", "crash"])
    # Then the crash is one stop in the worker, with its Python line, and mixdbg exits as python did
    crashes = [stop for stop in result.of("stopped") if stop["signal"] == "SIGSEGV"]
    assert len(crashes) == 1, result.stderr[-3000:]
    worker = processes(result)[crashes[0]["pid"]]
    assert worker["role"] == "dataloader-worker"
    crash_line = next(n for n, text in enumerate(DATALOADER.splitlines(), 1) if "@crash" in text)
    assert ("__getitem__", crash_line) in python_frames(crashes[0])
    assert {"event": "exited", "code": None, "signal": "SIGSEGV", "pid": worker["pid"],
            "process": crashes[0]["process"]} in result.of("exited")
    assert result.returncode == plain.returncode == 1
    assert "DataLoader worker" in result.stderr  # the parent's own error, unchanged


SPAWN_RANDN = """\
import torch
import torch.multiprocessing as mp


def work(i):
    x = torch.randn(2, 3)  # @child
    print("child", i, tuple(x.shape), flush=True)


if __name__ == "__main__":
    torch.randn(1)  # @parent
    mp.spawn(work, nprocs=2)
    print("parent done", flush=True)
"""


@pytest.mark.torch
def test_operator_breakpoint_in_spawned_children(torch_installed: None, tmp_path: Path) -> None:
    # Given torch.multiprocessing.spawn: children that exec a new interpreter and load torch
    # at addresses of their own
    script = write(tmp_path, "sp.py", SPAWN_RANDN)
    # When it runs with an operator breakpoint
    result = follow_run(["-b", "op:aten::randn", str(script)])
    # Then each process stops once in randn, at its own Python line, and all finish normally
    assert result.returncode == 0, result.stderr[-3000:]
    lines = {marker: next(n for n, text in enumerate(SPAWN_RANDN.splitlines(), 1) if f"@{marker}" in text)
             for marker in ("child", "parent")}
    main = result.of("session")[0]["pid"]
    stops = result.of("stopped")
    assert all(stop["op"] == "aten::randn" for stop in stops)
    assert [python_frames(s)[0] for s in stops if s["pid"] == main] == [("<module>", lines["parent"])]
    children = [s for s in stops if s["pid"] != main]
    assert len({s["pid"] for s in children}) == 2 and len(children) == 2
    assert all(python_frames(s)[0] == ("work", lines["child"]) for s in children)
    assert "child 0 (2, 3)" in result.stderr and "child 1 (2, 3)" in result.stderr
    assert "parent done" in result.stderr


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_pool_children_stop(cext: CExtension, tmp_path: Path, method: str) -> None:
    # Given a Pool(2) whose workers call into the C extension
    script = write(tmp_path, "pool.py", POOL)
    # When it runs under mixdbg with a breakpoint in the extension
    result = follow_run(["-b", "native_step", str(script), method], env=cext.env())
    # Then both pool workers (exec'd Python children) stop there
    xfail_known_gdb_death(result)
    assert result.returncode == 0, result.stderr[-3000:]
    main = result.of("session")[0]["pid"]
    stopped_in = {stop["pid"] for stop in result.of("stopped")}
    assert len(stopped_in) == 2 and main not in stopped_in
    assert all(processes(result)[pid]["role"] == "child" for pid in stopped_in)
    assert "results [1, 2]" in result.stderr


def test_subprocess_python_followed_bash_untouched(cext: CExtension, tmp_path: Path) -> None:
    # Given a script running a Python child, then a bash child
    script = write(tmp_path, "sub.py", SUBPROCESSES)
    # When it runs under mixdbg with a breakpoint in the extension
    result = follow_run(["-b", "native_step", str(script)], env=cext.env())
    # Then the Python child stops and is followed; bash is never reported and runs untouched
    assert result.returncode == 0, result.stderr[-3000:]
    stops = result.of("stopped")
    assert len(stops) == 1
    child = processes(result)[stops[0]["pid"]]
    assert child["argv"][1] == "-c" and child["ppid"] == result.of("session")[0]["pid"]
    assert not any("bash" in " ".join(event["argv"]) for event in result.of("process"))
    assert "python child 0" in result.stderr and "ran untouched" in result.stderr


#: A thread blocks in accept() (as torchrun's store does) while the main thread starts two
#: Python children with subprocess (vfork on Python >= 3.10), then needs the thread's answer.
VFORK_WHILE_THREADED = (SCRIPTS / "vfork_threaded.py").read_text()


def test_vfork_from_a_threaded_parent_does_not_hang(tmp_path: Path) -> None:
    # gdb 13.1 in all-stop with detach-on-fork off left the server thread in ptrace-stop
    # forever (4 runs in 4), unless target-non-stop is off (research/multiprocess.md)
    script = write(tmp_path, "vf.py", VFORK_WHILE_THREADED)
    result = follow_run([str(script)], timeout=60)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "parent got b'PARENT' [0, 0]" in result.stderr
    assert result.stderr.count("child got b'CHILD'") == 2
    assert len([e for e in result.of("process") if e["role"] == "child"]) == 2


@pytest.mark.parametrize(("follow", "vfork"), [("python", False), ("none", True)])
def test_subprocess_forks_rather_than_vforks_while_children_are_followed(tmp_path: Path, follow: str,
                                                                         vfork: bool) -> None:
    script = write(tmp_path, "flags.py", "import subprocess\nprint('vfork', subprocess._USE_VFORK, "
                                         "'posix_spawn', subprocess._USE_POSIX_SPAWN)\n")
    result = follow_run(["--follow", follow, str(script)], timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"vfork {vfork} posix_spawn" in result.stderr
    if not vfork:
        assert "posix_spawn False" in result.stderr


def test_follow_all_reports_bash_too(cext: CExtension, tmp_path: Path) -> None:
    script = write(tmp_path, "sub.py", SUBPROCESSES)
    result = follow_run(["--follow", "all", "-b", "native_step", str(script)], env=cext.env())
    assert result.returncode == 0, result.stderr[-3000:]
    bash = [e for e in result.of("process") if e["argv"][:1] == ["bash"]]
    assert len(bash) == 1 and {"event": "exited", "code": 0, "signal": None, "pid": bash[0]["pid"],
                               "process": f"child, pid {bash[0]['pid']}"} in result.of("exited")


def test_follow_none_keeps_to_the_debuggee(cext: CExtension, tmp_path: Path) -> None:
    script = write(tmp_path, "sub.py", SUBPROCESSES)
    result = follow_run(["--follow", "none", "-b", "native_step", str(script)], env=cext.env())
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.of("stopped") == [] and result.of("process") == []
    assert "python child 0" in result.stderr


FORKS = """\
import os, mixdbg_testext as ext
children = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        ext.loop(1)
        os._exit(0)
    children.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
print(f"children {codes}", flush=True)  # one write: mixdbg's own lines share the terminal
"""


def at_a_terminal(cext: CExtension, script: Path) -> pexpect.spawn:
    """``mixdbg run -b native_step SCRIPT`` at a terminal (a pty), in the script's directory."""
    return pexpect.spawn(sys.executable, ["-m", "mixdbg", "run", "--port", "0", "-b", "native_step", str(script)],
                         env=cext.env(), cwd=str(script.parent), encoding="utf-8", timeout=60,
                         dimensions=(50, 200))


def test_prompt_takes_the_stops_of_children_one_at_a_time(cext: CExtension, tmp_path: Path) -> None:
    # Given two fork children that each call into the extension, at a terminal
    child = at_a_terminal(cext, write(tmp_path, "forks.py", FORKS))
    try:
        # When each stop is continued at the prompt
        stopped_in = []
        for _ in range(2):
            child.expect(r"\[child, pid (\d+)\] stopped at breakpoint 1 in thread \d+:")
            stopped_in.append(int(child.match.group(1)))
            child.expect_exact("(mixdbg) ")
            child.sendline("c")
        # Then each child's stop came on its own, named, and the run ended normally
        child.expect(r"children \[0, 0\]")
        child.expect("the debuggee exited with code 0")
        child.expect(pexpect.EOF)
        assert len(set(stopped_in)) == 2
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_kill_at_the_prompt_ends_every_followed_process(cext: CExtension, tmp_path: Path) -> None:
    # Given a fork child stopped at a breakpoint, the other child and the parent waiting
    child = at_a_terminal(cext, write(tmp_path, "forks.py", FORKS.replace(
        "os._exit(0)", "open(f'done-{os.getpid()}', 'w').close()\n        os._exit(0)")))
    try:
        child.expect(r"\[child, pid (\d+)\] stopped at breakpoint 1")
        child.expect_exact("(mixdbg) ")
        # When the user kills
        child.sendline("kill")
        # Then every process ends, none finishing its work, and mixdbg exits 128+SIGKILL
        child.expect("the debuggee was killed by SIGKILL")
        child.expect(pexpect.EOF)
        child.close()
        assert (child.exitstatus, list(tmp_path.glob("done-*"))) == (128 + 9, [])
    finally:
        if child.isalive():
            child.terminate(force=True)


#: Reports its pid, waits for the file "gate", then forks a child that calls into C.
ATTACHED = """\
import os, sys, time, mixdbg_testext as ext
print(os.getpid(), flush=True)
while not os.path.exists("gate"):
    time.sleep(0.05)
pid = os.fork()
if pid == 0:
    ext.loop(1)
    os._exit(3)
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


def test_attach_follows_children_started_after_it(cext: CExtension, tmp_path: Path) -> None:
    # Given a running process that will fork once a gate opens
    write(tmp_path, "attached.py", ATTACHED)
    target = subprocess.Popen([sys.executable, "attached.py"], env=cext.env(), cwd=tmp_path,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout is not None
        pid = int(target.stdout.readline())
        # When mixdbg attaches with a breakpoint, and the gate opens once the session is up
        mixdbg = subprocess.Popen([sys.executable, "-m", "mixdbg", "attach", "--json", "-b", "native_step", str(pid)],
                                  env=cext.env(), stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        assert mixdbg.stdout is not None
        events = []
        for line in mixdbg.stdout:
            events.append(json.loads(line))
            if events[-1]["event"] == "session":
                (tmp_path / "gate").touch()
        assert mixdbg.wait(60) == 0
        # Then the child stops, is tagged, exits with its own code, and the target ends normally
        stops = [e for e in events if e["event"] == "stopped"]
        assert len(stops) == 1 and stops[0]["pid"] != pid
        child = next(e for e in events if e["event"] == "process" and e["pid"] == stops[0]["pid"])
        assert child["role"] == "child" and child["ppid"] == pid
        assert {"event": "exited", "code": 3, "signal": None, "pid": child["pid"],
                "process": stops[0]["process"]} in events
        assert target.stdout.readline().strip() == "child 3"
    finally:
        (tmp_path / "gate").touch()
        try:
            target.wait(30)
        except subprocess.TimeoutExpired:
            target.kill()
            target.wait()


@pytest.mark.torch
def test_torchrun_ranks_stop_tagged(torch_installed: None, tmp_path: Path) -> None:
    # Given a 2-rank gloo job started by torchrun
    write(tmp_path, "train.py", TRAIN)
    # When it runs under mixdbg with a breakpoint on gloo's allreduce
    result = follow_run(["-b", "c10d::ProcessGroupGloo::allreduce", "-m", "torch.distributed.run",
                         "--nproc-per-node", "2", "train.py"], cwd=tmp_path)
    # Then each rank stops once, tagged with its rank, and the job completes
    assert result.returncode == 0, result.stderr[-3000:]
    stops = result.of("stopped")
    tagged = processes(result)
    ranks = sorted(tagged[stop["pid"]]["rank"] for stop in stops)
    assert ranks == [0, 1]
    for stop in stops:
        rank = tagged[stop["pid"]]
        assert rank["role"] == "rank" and rank["world_size"] == 2 and rank["local_rank"] == rank["rank"]
        assert stop["process"] == f"rank {rank['rank']}, pid {stop['pid']}"
    assert "rank 0 sum [3.0, 3.0]" in result.stderr and "rank 1 sum [3.0, 3.0]" in result.stderr


@pytest.mark.slow
def test_follow_on_forky_gdb18_python314(forky: Forky, tmp_path: Path) -> None:
    # Given Python 3.14 (forkserver by default, stripped) and gdb 18, the extension built there
    # (subprocess from the multi-threaded debuggee is not run here: 3.14 always vforks, and
    # gdb 18 hung on such a vfork about 1 run in 8; the README says so)
    shutil.copy(CEXT_SOURCE, tmp_path)
    write(tmp_path, "pool.py", POOL)
    build = ("gcc -g -O0 -shared -fPIC $(python3.14-config --includes) mixdbg_testext.c "
             "-o mixdbg_testext$(python3.14-config --extension-suffix)")
    mixdbg = f"PYTHONPATH=/project {forky.python} -m mixdbg run --json --no-prompt --port 0 -b native_step"
    script = f"set -e; cd /project; {build}; {mixdbg} pool.py forkserver > pool.json"
    # When the pool script runs under mixdbg there
    done = forky.run(tmp_path, ["bash", "-c", script], timeout=200)
    # Then both forkserver children stop, with their Python frames, and the pool completes
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    pool = [json.loads(line) for line in (tmp_path / "pool.json").read_text().splitlines()]
    main = next(e["pid"] for e in pool if e["event"] == "session")
    stops = [e for e in pool if e["event"] == "stopped" and e["pid"] != main]
    assert len({e["pid"] for e in stops}) == 2
    assert all(("started", POOL_CALL_LINE) in python_frames(e) for e in stops), stops
    assert "results [1, 2]" in done.stderr