"""ptrace facts, diagnosis and the ptrace_scope fix, driven against a fake /proc (and /etc) tree."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mixdbg import ptrace
from mixdbg.errors import DebuggerError, NotFoundError, NotPermittedError

SELF_PID = 500
FULL_CAPS = (1 << 41) - 1
ONLY_SYS_PTRACE = 1 << ptrace.CAP_SYS_PTRACE


@dataclass
class FakeSystem:
    """A fake /, /proc and /etc under ``base``; processes are added with ``process``."""

    base: Path
    foreign: set[int] = field(default_factory=set)  # pids kill(pid, 0) answers EPERM for

    @property
    def proc(self) -> Path:
        return self.base / "proc"

    @property
    def etc(self) -> Path:
        return self.base / "etc"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def scope_file(self) -> Path:
        return self.proc / "sys" / "kernel" / "yama" / "ptrace_scope"

    def process(self, pid: int | str, *, ppid: int = 1, uid: int = 1000, name: str = "python",
                state: str = "S (sleeping)", tracer: int = 0, cap_eff: int = 0,
                cap_bnd: int = FULL_CAPS, seccomp: int = 0) -> None:
        directory = self.proc / str(pid)
        directory.mkdir(parents=True, exist_ok=True)
        real_pid = SELF_PID if pid == "self" else pid
        (directory / "status").write_text(
            f"Name:\t{name}\nState:\t{state}\nPid:\t{real_pid}\nPPid:\t{ppid}\nTracerPid:\t{tracer}\n"
            f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}\nCapEff:\t{cap_eff:016x}\nCapBnd:\t{cap_bnd:016x}\n"
            f"Seccomp:\t{seccomp}\n")

    def scope(self, value: int | None) -> None:
        if value is None:
            self.scope_file.unlink(missing_ok=True)
        else:
            self.scope_file.parent.mkdir(parents=True, exist_ok=True)
            self.scope_file.write_text(f"{value}\n")

    def probe(self, pid: int, sig: int) -> None:
        """A fake ``os.kill``: ESRCH unless the pid is in the tree, EPERM for ``foreign`` pids."""
        assert sig == 0
        if pid in self.foreign:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        if not (self.proc / str(pid)).is_dir():
            raise ProcessLookupError(errno.ESRCH, "No such process")


def make_system(tmp_path: Path, *, scope: int | None = 1, uid: int = 1000, cap_eff: int = 0,
                seccomp: int = 0, cap_bnd: int = FULL_CAPS) -> FakeSystem:
    """A host (no container signs) where we are pid 500, child of 1."""
    system = FakeSystem(tmp_path)
    (tmp_path / "fs").mkdir(parents=True)
    system.etc.mkdir()
    system.process("self", uid=uid, cap_eff=cap_eff, cap_bnd=cap_bnd, seccomp=seccomp)
    system.process(SELF_PID, uid=uid, cap_eff=cap_eff, cap_bnd=cap_bnd, seccomp=seccomp)
    system.process(1, ppid=0, uid=0, name="systemd")
    (system.proc / "1" / "cgroup").write_text("0::/init.scope\n")
    (system.proc / "version").write_text("Linux version 6.8.0-45-generic (buildd@lcy02) #45-Ubuntu SMP\n")
    (system.proc / "self" / "mountinfo").write_text(
        "22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n")
    system.scope(scope)
    return system


def facts(system: FakeSystem) -> ptrace.TracingFacts:
    return ptrace.tracing_facts(system.proc, system.base / "fs")


# --------------------------------------------------------------------------- tracing facts

def test_yama_absent_means_classic_rules_and_attaching_is_possible(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=None)
    result = facts(system)
    assert (result.yama_present, result.ptrace_scope) == (False, None)
    diagnosis = ptrace.assess(result)
    assert (diagnosis.cause, diagnosis.blocked) == (ptrace.OK, False)
    assert "no Yama" in diagnosis.reason


@pytest.mark.parametrize(("scope", "cause", "blocked", "remedies"), [
    (0, ptrace.OK, False, []),
    (1, ptrace.SCOPE_1, False, ["mixdbg-run", "ptrace-fix", "root"]),
    # PR_SET_PTRACER exceptions do not apply from scope 2 on, so `mixdbg run` is not offered.
    (2, ptrace.SCOPE_2, True, ["ptrace-fix", "root"]),
    (3, ptrace.SCOPE_3, True, ["reboot"]),
])
def test_each_scope_without_capability(tmp_path: Path, scope: int, cause: str, blocked: bool,
                                       remedies: list[str]) -> None:
    system = make_system(tmp_path, scope=scope)
    result = facts(system)
    assert (result.yama_present, result.ptrace_scope, result.cap_sys_ptrace) == (True, scope, False)
    diagnosis = ptrace.assess(result)
    assert (diagnosis.cause, diagnosis.blocked) == (cause, blocked)
    assert [r.kind for r in diagnosis.remedies] == remedies


@pytest.mark.parametrize(("scope", "cause"), [(1, ptrace.OK), (2, ptrace.OK), (3, ptrace.SCOPE_3)])
def test_cap_sys_ptrace_overrides_scopes_1_and_2_but_not_3(tmp_path: Path, scope: int, cause: str) -> None:
    system = make_system(tmp_path, scope=scope, cap_eff=ONLY_SYS_PTRACE)
    result = facts(system)
    assert result.cap_sys_ptrace
    assert ptrace.assess(result).cause == cause


def test_capability_bit_is_read_from_the_effective_set(tmp_path: Path) -> None:
    every_other_cap = FULL_CAPS & ~ONLY_SYS_PTRACE
    assert not facts(make_system(tmp_path / "a", cap_eff=every_other_cap)).cap_sys_ptrace
    assert facts(make_system(tmp_path / "b", cap_eff=ONLY_SYS_PTRACE)).cap_sys_ptrace


def test_credentials_and_seccomp_come_from_self_status(tmp_path: Path) -> None:
    result = facts(make_system(tmp_path, uid=1234, seccomp=2))
    assert (result.pid, result.uid, result.euid, result.seccomp_mode) == (SELF_PID, 1234, 1234, 2)


def test_unreadable_scope_is_reported_as_unknown_and_treated_as_restricted(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=None)
    system.scope_file.parent.mkdir(parents=True)
    system.scope_file.write_text("garbage\n")
    result = facts(system)
    assert (result.yama_present, result.ptrace_scope) == (True, None)
    assert ptrace.assess(result).cause == ptrace.SCOPE_UNKNOWN


# --------------------------------------------------------------------------- containers

def test_host_without_signs_is_not_a_container(tmp_path: Path) -> None:
    result = facts(make_system(tmp_path))
    assert (result.container, result.container_signs) == (False, ())


def test_container_signs_are_each_named(tmp_path: Path) -> None:
    system = make_system(tmp_path, cap_bnd=FULL_CAPS & ~(1 << ptrace.CAP_SYS_ADMIN))
    (tmp_path / "fs" / ".dockerenv").write_text("")
    (system.proc / "1" / "cgroup").write_text("12:pids:/docker/0123abcd\n")
    (system.proc / "1" / "environ").write_bytes(b"PATH=/bin\0container=podman\0")
    result = facts(system)
    assert result.container
    assert result.container_signs == (
        "/.dockerenv", "/proc/1/cgroup mentions docker", "1 environment has container",
        "CAP_SYS_ADMIN is missing from the capability bounding set")


def test_container_without_capability_under_scope_1_gets_container_settings(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=1)
    (tmp_path / "fs" / ".dockerenv").write_text("")
    diagnosis = ptrace.assess(facts(system))
    assert [r.kind for r in diagnosis.remedies] == ["mixdbg-run", "container"]
    commands = diagnosis.remedies[1].commands
    assert any("docker run --cap-add=SYS_PTRACE" in c for c in commands)
    assert any("cap_add" in c and "SYS_PTRACE" in c for c in commands)
    assert any("devcontainer.json" in c and '"capAdd": ["SYS_PTRACE"]' in c for c in commands)
    assert not any("seccomp" in c for c in commands)


def test_seccomp_filter_in_container_suggests_unconfined_profile(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=None, seccomp=2)
    (tmp_path / "fs" / ".dockerenv").write_text("")
    diagnosis = ptrace.assess(facts(system))
    assert (diagnosis.cause, diagnosis.blocked) == (ptrace.SECCOMP, False)
    assert any("seccomp=unconfined" in c for c in diagnosis.remedies[0].commands)


def test_seccomp_strict_mode_blocks(tmp_path: Path) -> None:
    diagnosis = ptrace.assess(facts(make_system(tmp_path, scope=0, seccomp=1)))
    assert (diagnosis.cause, diagnosis.blocked) == (ptrace.SECCOMP, True)


def test_read_only_proc_sys_is_detected_from_mountinfo(tmp_path: Path) -> None:
    system = make_system(tmp_path)
    with (system.proc / "self" / "mountinfo").open("a") as mountinfo:
        mountinfo.write("650 640 0:60 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw\n")
    assert facts(system).proc_sys_read_only


@pytest.mark.parametrize(("version", "wsl", "gvisor"), [
    ("Linux version 5.15.153.1-microsoft-standard-WSL2 (root@...) #1 SMP", True, False),
    ("Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016", False, True),
    ("Linux version 6.8.0-45-generic #45-Ubuntu SMP", False, False),
])
def test_wsl_and_gvisor_from_proc_version(tmp_path: Path, version: str, wsl: bool, gvisor: bool) -> None:
    system = make_system(tmp_path)
    (system.proc / "version").write_text(version + "\n")
    result = facts(system)
    assert (result.wsl, result.gvisor) == (wsl, gvisor)


# --------------------------------------------------------------------------- target facts

def test_target_same_uid_descendant_untraced(tmp_path: Path) -> None:
    system = make_system(tmp_path)
    system.process(600, ppid=SELF_PID)  # our child
    system.process(601, ppid=600)  # our grandchild
    target = ptrace.target_facts(601, system.proc, system.probe)
    assert (target.exists, target.same_uid, target.descendant, target.tracer_pid) == (True, True, True, 0)
    assert target.uids == (1000, 1000, 1000, 1000)


def test_target_of_another_uid_not_descendant(tmp_path: Path) -> None:
    system = make_system(tmp_path)
    system.process(700, ppid=1, uid=0, name="sshd")
    target = ptrace.target_facts(700, system.proc, system.probe)
    assert (target.same_uid, target.descendant, target.name) == (False, False, "sshd")
    diagnosis = ptrace.assess(facts(system), target)
    assert (diagnosis.cause, diagnosis.blocked) == (ptrace.OTHER_UID, True)
    assert "uid 0" in diagnosis.reason and "uid 1000" in diagnosis.reason


def test_other_uid_is_fine_with_capability(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=1, cap_eff=ONLY_SYS_PTRACE)
    system.process(700, uid=0)
    target = ptrace.target_facts(700, system.proc, system.probe)
    assert ptrace.assess(facts(system), target).cause == ptrace.OK


def test_eperm_from_kill_means_exists_but_foreign(tmp_path: Path) -> None:
    system = make_system(tmp_path)
    system.foreign.add(800)  # hidepid: no /proc entry, but the process exists
    target = ptrace.target_facts(800, system.proc, system.probe)
    assert (target.exists, target.signal_denied, target.same_uid) == (True, True, None)
    assert ptrace.assess(facts(system), target).cause == ptrace.OTHER_UID


def test_esrch_from_kill_means_no_such_process(tmp_path: Path) -> None:
    system = make_system(tmp_path)
    target = ptrace.target_facts(4242, system.proc, system.probe)
    assert not target.exists
    assert ptrace.assess(facts(system), target).cause == ptrace.NO_SUCH_PROCESS


def test_target_already_traced_names_the_tracer(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=0)
    system.process(900, name="gdb")
    system.process(901, ppid=SELF_PID, tracer=900)
    target = ptrace.target_facts(901, system.proc, system.probe)
    assert (target.tracer_pid, target.tracer_name) == (900, "gdb")
    diagnosis = ptrace.assess(facts(system), target)
    assert (diagnosis.cause, diagnosis.blocked) == (ptrace.ALREADY_TRACED, True)
    assert diagnosis.remedies[0].commands == ("kill 900",)


def test_zombie_target(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=0)
    system.process(902, state="Z (zombie)")
    target = ptrace.target_facts(902, system.proc, system.probe)
    assert target.zombie
    assert ptrace.assess(facts(system), target).cause == ptrace.ZOMBIE


def test_scope_1_target_depends_on_opt_in(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=1)
    system.process(600, ppid=SELF_PID)
    system.process(610, ppid=1)
    ours = ptrace.assess(facts(system), ptrace.target_facts(600, system.proc, system.probe))
    foreign = ptrace.assess(facts(system), ptrace.target_facts(610, system.proc, system.probe))
    assert (ours.cause, ours.blocked, foreign.cause, foreign.blocked) == (
        ptrace.SCOPE_1, False, ptrace.SCOPE_1, False)
    assert "our descendant" in ours.reason and "not its ancestor" in foreign.reason


# --------------------------------------------------------------------------- gdb's error text

DEBIAN_DENIAL = """\
Could not attach to process.  If your uid matches the uid of the target
process, check the setting of /proc/sys/kernel/yama/ptrace_scope, or try
again as the root user.  For more details, see /etc/sysctl.d/10-ptrace.conf
ptrace: Operation not permitted."""


@pytest.mark.parametrize("message", [DEBIAN_DENIAL, "ptrace: Inappropriate ioctl for device."])
def test_scope_1_denial_becomes_not_permitted_with_run_first(tmp_path: Path, message: str) -> None:
    system = make_system(tmp_path, scope=1)
    system.process(610, ppid=1)
    error = ptrace.explain_attach_failure(message, 610, system.proc, system.probe, tmp_path / "fs")
    assert isinstance(error, NotPermittedError) and error.exit_code == 77
    assert "ptrace_scope is 1" in error.message and "610" in error.message
    assert "did not declare gdb its tracer" in error.message
    assert error.hint is not None and error.hint.startswith("1. start the program with `mixdbg run`")
    assert "mixdbg ptrace --fix" in error.hint


def test_scope_3_denial_says_reboot(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=3, uid=0, cap_eff=FULL_CAPS)
    system.process(610, uid=0)
    error = ptrace.explain_attach_failure(DEBIAN_DENIAL, 610, system.proc, system.probe, tmp_path / "fs")
    assert isinstance(error, NotPermittedError)
    assert "is 3" in error.message and error.hint is not None and "reboot" in error.hint
    assert "--fix" not in error.hint


def test_already_traced_message_wins_over_stale_proc(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=0)
    system.process(60, name="code-gdb")
    system.process(50, ppid=SELF_PID, tracer=0)  # /proc already shows it detached
    message = "warning: process 50 is already traced by process 60\nptrace: Operation not permitted."
    error = ptrace.explain_attach_failure(message, 50, system.proc, system.probe, tmp_path / "fs")
    assert isinstance(error, NotPermittedError)
    assert "already traced by process 60 (code-gdb)" in error.message
    assert error.hint is not None and "kill 60" in error.hint


def test_no_such_process_and_zombie_become_not_found(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=0)
    system.process(70, state="Z (zombie)")
    gone = ptrace.explain_attach_failure("ptrace: No such process.", 71, system.proc, system.probe, tmp_path / "fs")
    zombie = ptrace.explain_attach_failure(
        "process 70 is a zombie - the process has already terminated\nptrace: Operation not permitted.",
        70, system.proc, system.probe, tmp_path / "fs")
    assert isinstance(gone, NotFoundError) and "71 does not exist" in gone.message
    assert isinstance(zombie, NotFoundError) and "zombie" in zombie.message


def test_other_uid_denial_names_both_uids(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=0)
    system.process(80, uid=33, name="www")
    error = ptrace.explain_attach_failure("ptrace: Operation not permitted.", 80, system.proc, system.probe, tmp_path / "fs")
    assert isinstance(error, NotPermittedError)
    assert "uid 33" in error.message and "uid 1000" in error.message


def test_unexplained_denial_points_at_other_security_modules(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=0)
    system.process(81)
    error = ptrace.explain_attach_failure("ptrace: Operation not permitted.", 81, system.proc, system.probe, tmp_path / "fs")
    assert isinstance(error, NotPermittedError)
    assert "AppArmor" in error.message and error.hint is not None and "deny_ptrace" in error.hint


def test_unrelated_gdb_error_is_not_called_a_permission_problem(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=0)
    system.process(82)
    error = ptrace.explain_attach_failure("Don't know how to attach.  Try \"help target\".", 82,
                                          system.proc, system.probe, tmp_path / "fs")
    assert type(error) is DebuggerError and "Don't know how to attach" in error.message


# --------------------------------------------------------------------------- set_ptracer

@pytest.mark.timeout(60)
def test_set_ptracer_reports_whether_yama_took_it_and_never_breaks_the_process() -> None:
    yama = Path("/proc/sys/kernel/yama/ptrace_scope").exists()
    code = ("import os, mixdbg.yama_optin as p\n"
            "print(p.set_ptracer(None), p.set_ptracer(os.getppid()), p.set_ptracer(0))\n"
            "print('still running')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          cwd=Path(__file__).parents[2], check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [f"{yama} {yama} {yama}", "still running"]


# --------------------------------------------------------------------------- fix / restore

def fake_sudo(tmp_path: Path, body: str) -> Path:
    """A directory holding a ``sudo`` script with ``body``; its argv is logged to sudo.log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "sudo"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {tmp_path}/sudo.log\n{body}\n')
    script.chmod(0o755)
    return bin_dir


def test_fix_and_restore_as_root_write_directly(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=1, uid=0, cap_eff=FULL_CAPS)
    fixed = ptrace.fix_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state)
    assert (fixed.outcome, fixed.previous, fixed.current, fixed.method) == (ptrace.CHANGED, 1, 0, "direct")
    assert system.scope_file.read_text().strip() == "0"
    assert (system.state / ptrace.STATE_NAME).read_text().strip() == "1"
    assert fixed.dropin is None and not (system.etc / "sysctl.d").exists()
    restored = ptrace.restore_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state)
    assert (restored.outcome, restored.previous, restored.current) == (ptrace.CHANGED, 0, 1)
    assert system.scope_file.read_text().strip() == "1"
    assert not (system.state / ptrace.STATE_NAME).exists()


def test_fix_persist_writes_dropin_and_restore_removes_it(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=2, uid=0, cap_eff=FULL_CAPS)
    (system.etc / "sysctl.d").mkdir()
    fixed = ptrace.fix_scope(persist=True, proc_root=system.proc, etc_root=system.etc,
                             state_dir=system.state)
    dropin = system.etc / "sysctl.d" / "60-mixdbg-ptrace.conf"
    assert fixed.dropin == dropin
    assert "kernel.yama.ptrace_scope = 0" in dropin.read_text().splitlines()
    restored = ptrace.restore_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state)
    assert (restored.current, restored.dropin) == (2, dropin)
    assert not dropin.exists() and system.scope_file.read_text().strip() == "2"


def test_fix_when_already_0_changes_nothing_and_saves_nothing(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=0, uid=0, cap_eff=FULL_CAPS)
    fixed = ptrace.fix_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state)
    assert fixed.outcome == ptrace.UNCHANGED and not system.state.exists()


def test_fix_without_yama_has_nothing_to_do(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=None, uid=0, cap_eff=FULL_CAPS)
    assert ptrace.fix_scope(proc_root=system.proc, etc_root=system.etc,
                            state_dir=system.state).outcome == ptrace.NO_YAMA
    assert not system.scope_file.exists()


def test_scope_3_is_never_fixed_and_its_source_is_found(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=3, uid=0, cap_eff=FULL_CAPS)
    (system.etc / "sysctl.d").mkdir()
    (system.etc / "sysctl.d" / "99-hardening.conf").write_text("# locked\nkernel.yama.ptrace_scope = 3\n")
    fixed = ptrace.fix_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state)
    assert fixed.outcome == ptrace.LOCKED and system.scope_file.read_text().strip() == "3"
    assert fixed.lock_sources == (f"{system.etc}/sysctl.d/99-hardening.conf: kernel.yama.ptrace_scope = 3",)
    assert not system.state.exists()


def test_restore_without_earlier_fix(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=1, uid=0, cap_eff=FULL_CAPS)
    result = ptrace.restore_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state)
    assert result.outcome == ptrace.NOTHING_SAVED and system.scope_file.read_text().strip() == "1"


def test_container_with_read_only_proc_sys_is_not_attempted(tmp_path: Path) -> None:
    system = make_system(tmp_path, scope=1, uid=0, cap_eff=FULL_CAPS)
    with (system.proc / "self" / "mountinfo").open("a") as mountinfo:
        mountinfo.write("650 640 0:60 /sys /proc/sys ro,relatime - proc proc rw\n")
    fixed = ptrace.fix_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state)
    assert (fixed.outcome, fixed.current) == (ptrace.READ_ONLY, 1)
    assert system.scope_file.read_text().strip() == "1"


def test_not_root_without_sudo_returns_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = make_system(tmp_path, scope=1)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    fixed = ptrace.fix_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state)
    assert fixed.outcome == ptrace.NEEDS_USER and fixed.current == 1
    assert fixed.user_commands == (f"echo '0' | sudo tee {system.scope_file}",)
    assert fixed.error is not None and "sudo is not installed" in fixed.error
    assert (system.state / ptrace.STATE_NAME).read_text().strip() == "1"  # --restore will know


def test_sudo_needing_a_password_fails_fast_with_the_command(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    system = make_system(tmp_path, scope=1)
    bin_dir = fake_sudo(tmp_path, 'echo "sudo: a password is required" >&2\nexit 1')
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    fixed = ptrace.fix_scope(persist=True, proc_root=system.proc, etc_root=system.etc,
                             state_dir=system.state)
    assert fixed.outcome == ptrace.NEEDS_USER
    assert fixed.error is not None and "a password is required" in fixed.error
    assert len(fixed.user_commands) == 2 and "60-mixdbg-ptrace.conf" in fixed.user_commands[1]
    assert all(line.startswith("-n ") for line in (tmp_path / "sudo.log").read_text().splitlines())


@pytest.mark.timeout(30)
def test_hanging_sudo_is_killed_after_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = make_system(tmp_path, scope=1)
    bin_dir = fake_sudo(tmp_path, "sleep 60")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    started = time.monotonic()
    fixed = ptrace.fix_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state,
                             sudo_timeout=1.0)
    assert time.monotonic() - started < 10
    assert fixed.outcome == ptrace.NEEDS_USER and fixed.error is not None and "within 1 s" in fixed.error


def test_working_sudo_is_used_non_interactively(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = make_system(tmp_path, scope=1)
    bin_dir = fake_sudo(tmp_path, '[ "$1" = -n ] || exit 9\nshift\nexec "$@"')
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    fixed = ptrace.fix_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state)
    assert (fixed.outcome, fixed.method, fixed.current) == (ptrace.CHANGED, "sudo", 0)
    assert system.scope_file.read_text().strip() == "0"
    restored = ptrace.restore_scope(proc_root=system.proc, etc_root=system.etc, state_dir=system.state)
    assert (restored.outcome, restored.method) == (ptrace.CHANGED, "sudo")
    assert system.scope_file.read_text().strip() == "1"


def test_default_state_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert ptrace.default_state_dir() == tmp_path / "mixdbg"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert ptrace.default_state_dir() == Path(os.path.expanduser("~/.local/state/mixdbg"))
