"""``mixdbg ptrace`` and ``mixdbg doctor`` end to end: as subprocesses on this machine, and
in-process (``mixdbg.cli.main``) against a fake /proc tree for the cases this machine cannot show."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mixdbg import cmd_doctor
from mixdbg.cli import main
from mixdbg.errors import UnavailableError
from mixdbg.gdbmi import find_gdb, gdb_environment

REPO = Path(__file__).resolve().parents[2]
CAP_SYS_PTRACE = 19


def mixdbg(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m mixdbg ARGS`` from the repository."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "mixdbg", *args], capture_output=True, text=True,
                          timeout=50, cwd=REPO, env=env, check=False)


def real_gdb_version() -> str:
    """The version of the gdb mixdbg uses (``find_gdb``) as this test reads it (last number
    on the first line of ``gdb --version``)."""
    try:
        gdb = find_gdb()
    except UnavailableError:
        pytest.skip("no gdb here")
    first = subprocess.run([gdb, "--version"], capture_output=True, text=True, timeout=30,
                           env=gdb_environment(), check=True).stdout.splitlines()[0]
    return re.findall(r"\d+\.\d+", first)[-1]


def attach_permitted_here() -> bool:
    """True when this machine trivially permits attaching: no Yama or scope 0, or CAP_SYS_PTRACE."""
    scope_file = Path("/proc/sys/kernel/yama/ptrace_scope")
    status = Path("/proc/self/status").read_text()
    cap_eff = re.search(r"CapEff:\s*([0-9a-f]+)", status)
    has_cap = cap_eff is not None and bool(int(cap_eff.group(1), 16) >> CAP_SYS_PTRACE & 1)
    seccomp = re.search(r"Seccomp:\s*(\d)", status)
    scope = scope_file.read_text().strip() if scope_file.exists() else None
    if scope == "3" or (seccomp is not None and seccomp.group(1) != "0"):
        return False
    return scope in (None, "0") or has_cap


def sections(library: Path) -> set[str]:
    """Section names per binutils' readelf, as an independent check of what doctor says."""
    readelf = shutil.which("readelf") or pytest.skip("readelf is not installed")
    out = subprocess.run([str(readelf), "-S", "-W", str(library)], capture_output=True, text=True,
                         timeout=50, check=True).stdout
    return set(re.findall(r"\]\s+(\.\S+)", out))


# --------------------------------------------------------------------------- this machine

@pytest.mark.timeout(60)
def test_ptrace_human_output_on_this_machine() -> None:
    if not attach_permitted_here():
        pytest.skip("attaching is restricted here; covered by the fake-tree tests")
    done = mixdbg("ptrace")
    assert done.returncode == 0, done.stderr
    assert "attaching is possible" in done.stdout
    assert real_gdb_version() in done.stdout
    yama = Path("/proc/sys/kernel/yama/ptrace_scope").exists()
    assert ("Yama:            absent" in done.stdout) is not yama


@pytest.mark.timeout(60)
def test_ptrace_json_is_one_document_of_facts() -> None:
    done = mixdbg("ptrace", "--json")
    document = json.loads(done.stdout)  # fails on anything but exactly one JSON document
    assert document["facts"]["euid"] == os.geteuid()
    assert document["facts"]["yama_present"] == Path("/proc/sys/kernel/yama/ptrace_scope").exists()
    assert document["gdb"]["details"]["version"] == real_gdb_version()
    assert document["ok"] is (done.returncode == 0)


@pytest.mark.timeout(60)
def test_ptrace_pid_of_a_missing_process_is_not_found() -> None:
    pid = 4_000_000  # above the kernel's pid_max limit (2^22), so it cannot exist
    done = mixdbg("ptrace", "--pid", str(pid))
    assert done.returncode == 66
    assert f"{pid}: no such process" in done.stdout


@pytest.mark.timeout(60)
def test_doctor_human_output_on_this_machine() -> None:
    if not attach_permitted_here():
        pytest.skip("attaching is restricted here; covered by the fake-tree tests")
    done = mixdbg("doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    gdb_line = next(line for line in lines if line.startswith("ok    gdb:"))
    assert real_gdb_version() in gdb_line
    assert any(line.startswith("ok    ptrace: attaching is possible") for line in lines)
    assert any(line.startswith("ok    debugpy: debugpy ") for line in lines)


@pytest.mark.timeout(60)
def test_doctor_json_is_one_document() -> None:
    done = mixdbg("doctor", "--json")
    document = json.loads(done.stdout)
    names = [check["name"] for check in document["checks"]]
    assert names[:4] == ["gdb", "debugpy", "python", "ptrace"]
    assert document["exit_code"] == done.returncode
    assert all(check["status"] in ("ok", "warn", "fail") for check in document["checks"])


@pytest.mark.timeout(60)
def test_doctor_reports_torch_libraries_as_symbols_without_dwarf(torch_installed: None) -> None:
    document = json.loads(mixdbg("doctor", "--json").stdout)
    torch_checks = {c["name"]: c for c in document["checks"] if c["name"].startswith("library torch/")}
    short = {name.rsplit("/", 1)[-1] for name in torch_checks}
    assert {"libtorch_python.so", "libtorch_cpu.so"} <= short
    assert any(name.startswith("_C") for name in short)
    for check in torch_checks.values():
        found = sections(Path(check["details"]["path"]))
        assert ".debug_info" not in found and ".symtab" in found  # what the wheel really ships
        assert check["status"] == "warn" and check["details"]["debug_info"] == "symtab"
        assert check["details"]["function_breakpoints"] == "all"
        assert check["details"]["file_line_breakpoints"] is False
        assert "DEBUG=1" in check["fix"] and "REL_WITH_DEB_INFO=1" in check["fix"]
    human = mixdbg("doctor").stdout
    assert "torch/lib/libtorch_cpu.so: symbol table but no DWARF debug info: break by function name works;" \
        " file:line breakpoints and locals do not" in human


@pytest.mark.timeout(60)
def test_doctor_lib_with_debug_info(cext: Any) -> None:
    library = Path(cext.library)
    assert ".debug_info" in sections(library)
    done = mixdbg("doctor", "--lib", str(library))
    line = next(line for line in done.stdout.splitlines() if str(library) in line)
    assert line.startswith("ok    library") and "DWARF debug info: break by file:line and see locals" in line


@pytest.mark.timeout(60)
def test_doctor_missing_lib_fails_with_not_found(tmp_path: Path) -> None:
    done = mixdbg("doctor", "--lib", str(tmp_path / "missing.so"))
    assert done.returncode == (66 if attach_permitted_here() else 77)  # 77 wins when ptrace is blocked
    assert f"fail  library {tmp_path / 'missing.so'}: no such library" in done.stdout


# --------------------------------------------------------------------------- fake /proc, in process

def fake_tree(base: Path, *, scope: int | None, uid: int, cap_eff: int = 0, mountinfo: str = "") -> Path:
    """A minimal fake /proc (we are pid 500) with Yama at ``scope``; returns the proc root."""
    proc = base / "proc"
    status = (f"Name:\tpython\nState:\tR (running)\nPid:\t500\nPPid:\t1\nTracerPid:\t0\n"
              f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}\nCapEff:\t{cap_eff:016x}\nCapBnd:\t000001ffffffffff\n"
              f"Seccomp:\t0\n")
    for pid in ("self", "500"):
        (proc / pid).mkdir(parents=True)
        (proc / pid / "status").write_text(status)
    (proc / "self" / "mountinfo").write_text(mountinfo)
    if scope is not None:
        (proc / "sys" / "kernel" / "yama").mkdir(parents=True)
        (proc / "sys" / "kernel" / "yama" / "ptrace_scope").write_text(f"{scope}\n")
    (base / "fs").mkdir()
    (base / "etc" / "sysctl.d").mkdir(parents=True)
    return proc


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the verbs at ``tmp_path``'s fake tree and state directory; the tree is built by the test."""
    monkeypatch.setattr(cmd_doctor, "PROC_ROOT", tmp_path / "proc")
    monkeypatch.setattr(cmd_doctor, "FS_ROOT", tmp_path / "fs")
    monkeypatch.setattr(cmd_doctor, "ETC_ROOT", tmp_path / "etc")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


@pytest.mark.timeout(60)
def test_scope_1_without_root_warns_and_offers_run_first(fake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_tree(fake, scope=1, uid=1000)
    assert main(["ptrace"]) == 0
    out = capsys.readouterr().out
    assert "ptrace_scope 1: restricted" in out and "warn: kernel.yama.ptrace_scope is 1" in out
    remedies = [line.strip() for line in out.splitlines() if re.match(r"\s+\d\. ", line)]
    assert remedies[0].startswith("1. start the program with `mixdbg run`")
    assert remedies[1].startswith("2. lower kernel.yama.ptrace_scope to 0")


@pytest.mark.timeout(60)
def test_scope_2_without_root_blocks_doctor(fake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_tree(fake, scope=2, uid=1000)
    assert main(["doctor", "--json"]) == 77
    document = json.loads(capsys.readouterr().out)
    ptrace_check = next(c for c in document["checks"] if c["name"] == "ptrace")
    assert (document["ok"], ptrace_check["status"]) == (False, "fail")
    assert "mixdbg ptrace --fix" in ptrace_check["fix"]


@pytest.mark.timeout(60)
def test_fix_as_root_then_restore(fake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proc = fake_tree(fake, scope=1, uid=0, cap_eff=1 << CAP_SYS_PTRACE)
    scope_file = proc / "sys" / "kernel" / "yama" / "ptrace_scope"
    assert main(["ptrace", "--fix"]) == 0
    out = capsys.readouterr().out
    assert scope_file.read_text().strip() == "0"
    assert "kernel.yama.ptrace_scope: 1 -> 0" in out and "ends at reboot" in out
    assert main(["ptrace", "--restore"]) == 0
    assert scope_file.read_text().strip() == "1"
    assert "kernel.yama.ptrace_scope: 0 -> 1" in capsys.readouterr().out


@pytest.mark.timeout(60)
def test_fix_persist_says_where(fake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_tree(fake, scope=1, uid=0, cap_eff=1 << CAP_SYS_PTRACE)
    assert main(["ptrace", "--fix", "--persist"]) == 0
    dropin = fake / "etc" / "sysctl.d" / "60-mixdbg-ptrace.conf"
    assert f"persisted in {dropin}" in capsys.readouterr().out and dropin.exists()
    assert main(["ptrace", "--restore"]) == 0
    assert f"removed {dropin}" in capsys.readouterr().out and not dropin.exists()


@pytest.mark.timeout(60)
def test_fix_without_root_or_sudo_prints_the_command(fake: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    proc = fake_tree(fake, scope=1, uid=1000)
    empty = fake / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert main(["ptrace", "--fix"]) == 77
    err = capsys.readouterr().err
    assert f"echo '0' | sudo tee {proc}/sys/kernel/yama/ptrace_scope" in err
    assert main(["ptrace", "--fix", "--json"]) == 77
    document = json.loads(capsys.readouterr().out)
    assert document["outcome"] == "needs-user" and document["previous"] == 1 and document["ok"] is False


@pytest.mark.timeout(60)
def test_fix_scope_3_never_pretends(fake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proc = fake_tree(fake, scope=3, uid=0, cap_eff=1 << CAP_SYS_PTRACE)
    (fake / "etc" / "sysctl.d" / "99-lock.conf").write_text("kernel.yama.ptrace_scope=3\n")
    assert main(["ptrace", "--fix"]) == 77
    err = capsys.readouterr().err
    assert "is 3" in err and "reboot" in err and "99-lock.conf" in err
    assert (proc / "sys" / "kernel" / "yama" / "ptrace_scope").read_text().strip() == "3"


@pytest.mark.timeout(60)
def test_fix_in_container_gives_container_settings(fake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_tree(fake, scope=1, uid=0, cap_eff=1 << CAP_SYS_PTRACE,
              mountinfo="650 640 0:60 /sys /proc/sys ro,relatime - proc proc rw\n")
    assert main(["ptrace", "--fix"]) == 77
    err = capsys.readouterr().err
    assert "docker run --cap-add=SYS_PTRACE" in err and '"capAdd": ["SYS_PTRACE"]' in err
    assert 'cap_add: ["SYS_PTRACE"]' in err


@pytest.mark.timeout(60)
def test_persist_without_fix_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ptrace", "--persist"]) == 64
    assert "--persist only goes with --fix" in capsys.readouterr().err
