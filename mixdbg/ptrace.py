"""Whether this process may ptrace another one, why not, and changing Yama's ``ptrace_scope``.

Stdlib only. (The debuggee's own opt-in to its tracer is ``yama_optin``'s: it runs before the
user's script, and imports less.) Every reader takes the ``/proc``
root (and the ``/``, ``/etc`` roots and the state directory where it needs them) so tests can
point it at a fake tree.

The facts come from the kernel's own rules (``security/yama/yama_lsm.c``,
``kernel/ptrace.c:__ptrace_may_access``); ``assess`` turns them into a cause and remedies,
least privilege first, and ``explain_attach_failure`` does the same for gdb's raw error text.
The module is longer than our usual ~400 lines because the brief keeps facts, diagnosis and
the sysctl fix in one module.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from mixdbg.errors import DebuggerError, MixdbgError, NotFoundError, NotPermittedError

CAP_SYS_PTRACE = 19
CAP_SYS_ADMIN = 21
SCOPE_FILE = Path("sys/kernel/yama/ptrace_scope")  # relative to the proc root
SYSCTL_KEY = "kernel.yama.ptrace_scope"
DROPIN_NAME = "60-mixdbg-ptrace.conf"  # sorts after Ubuntu's 10-ptrace.conf (sysctl.d(5))
STATE_NAME = "ptrace_scope.prev"
SYSCTL_SOURCES = ("/etc/sysctl.conf", "/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d",
                  "/usr/lib/sysctl.d", "/lib/sysctl.d")
SCOPE_MEANING = {
    0: "classic: any process of the same uid may be traced",
    1: "restricted: only descendants, or processes that declared the tracer (PR_SET_PTRACER)",
    2: "admin-only: only with CAP_SYS_PTRACE",
    3: "no attach at all, for anyone, until reboot",
}
SECCOMP_MEANING = {0: "disabled", 1: "strict", 2: "filter"}

# Causes returned by ``assess`` (``Diagnosis.cause``).
OK = "ok"
NO_SUCH_PROCESS = "no-such-process"
ZOMBIE = "zombie"
ALREADY_TRACED = "already-traced"
OTHER_UID = "other-uid"
SCOPE_1 = "yama-scope-1"
SCOPE_2 = "yama-scope-2"
SCOPE_3 = "yama-scope-3"
SCOPE_UNKNOWN = "yama-scope-unreadable"
SECCOMP = "seccomp"
OTHER_LSM = "other-lsm"

Probe = Callable[[int, int], None]


# --------------------------------------------------------------------------- reading /proc

def _read(path: Path) -> str | None:
    """The text of ``path``, or None when it is missing or unreadable."""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def process_status(pid: int, proc_root: Path = Path("/proc")) -> dict[str, str]:
    """``/proc/PID/status`` as a field → value mapping (empty when the process is gone)."""
    return _status(proc_root, pid)


def _status(proc_root: Path, pid: int | str) -> dict[str, str]:
    """``/proc/PID/status`` as a field → value mapping (empty when unreadable)."""
    text = _read(proc_root / str(pid) / "status") or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def _ints(value: str | None) -> tuple[int, ...]:
    """The whitespace-separated integers of a status field (empty when absent)."""
    try:
        return tuple(int(part) for part in (value or "").split())
    except ValueError:
        return ()


def _cap_bit(status: dict[str, str], field: str, bit: int) -> bool:
    """Whether capability ``bit`` is set in the hex mask ``field`` (CapEff, CapBnd)."""
    try:
        return bool(int(status.get(field, "0"), 16) >> bit & 1)
    except ValueError:
        return False


@dataclass(frozen=True)
class TracingFacts:
    """What decides whether this process (and the gdb it starts) may ptrace others."""

    pid: int
    yama_present: bool
    ptrace_scope: int | None  # None: no Yama, or the file exists but is unreadable
    uid: int  # real uid: PTRACE_ATTACH compares it with the target's uids
    euid: int
    cap_sys_ptrace: bool  # in the effective set
    container: bool
    container_signs: tuple[str, ...]
    seccomp_mode: int | None  # 0 disabled, 1 strict, 2 filter (inherited by gdb)
    proc_sys_read_only: bool  # /proc/sys mounted read-only (containers): no sysctl writes
    wsl: bool
    gvisor: bool


def _container_signs(proc_root: Path, fs_root: Path, status: dict[str, str]) -> list[str]:
    """The observable hints that we run inside a container, each as a short sign."""
    signs = [name for name in ("/.dockerenv", "/run/.containerenv")
             if (fs_root / name.lstrip("/")).exists()]
    cgroup = _read(proc_root / "1" / "cgroup") or ""
    signs += [f"/proc/1/cgroup mentions {word}" for word in
              ("docker", "kubepods", "containerd", "libpod", "lxc") if word in cgroup]
    for env_file in (proc_root / "1" / "environ", proc_root / "self" / "environ"):
        for entry in (_read(env_file) or "").split("\0"):
            if entry.startswith(("container=", "KUBERNETES_SERVICE_HOST=")):
                signs.append(f"{env_file.parent.name} environment has {entry.split('=')[0]}")
    if "CapBnd" in status and not _cap_bit(status, "CapBnd", CAP_SYS_ADMIN):
        signs.append("CAP_SYS_ADMIN is missing from the capability bounding set")
    return list(dict.fromkeys(signs))


def _proc_sys_read_only(proc_root: Path) -> bool:
    """Whether /proc/sys is a read-only mount, as Docker makes it (mountinfo field 5 and 6)."""
    for line in (_read(proc_root / "self" / "mountinfo") or "").splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[4] == "/proc/sys" and "ro" in fields[5].split(","):
            return True
    return False


def tracing_facts(proc_root: Path = Path("/proc"), fs_root: Path = Path("/")) -> TracingFacts:
    """Read Yama, our credentials, capabilities, seccomp and container signs from ``proc_root``.

    A missing ``ptrace_scope`` file means the kernel has no Yama (classic rules, like scope 0).
    """
    status = _status(proc_root, "self")
    uids = _ints(status.get("Uid"))
    scope_path = proc_root / SCOPE_FILE
    scope_text = _read(scope_path)
    scope = int(scope_text) if scope_text and scope_text.strip().isdigit() else None
    signs = _container_signs(proc_root, fs_root, status)
    version = _read(proc_root / "version") or ""
    seccomp = _ints(status.get("Seccomp"))
    pid = _ints(status.get("Pid"))
    return TracingFacts(
        pid=pid[0] if pid else os.getpid(),
        yama_present=scope_path.exists(),
        ptrace_scope=scope,
        uid=uids[0] if uids else os.getuid(),
        euid=uids[1] if len(uids) > 1 else os.geteuid(),
        cap_sys_ptrace=_cap_bit(status, "CapEff", CAP_SYS_PTRACE),
        container=bool(signs),
        container_signs=tuple(signs),
        seccomp_mode=seccomp[0] if seccomp else None,
        proc_sys_read_only=_proc_sys_read_only(proc_root),
        wsl="microsoft" in version.lower(),
        # gVisor reports this fixed, fake kernel version in /proc/version.
        gvisor="gvisor" in version.lower() or "4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016" in version,
    )


@dataclass(frozen=True)
class TargetFacts:
    """What decides whether one particular process can be attached to."""

    pid: int
    exists: bool
    signal_denied: bool  # kill(pid, 0) gave EPERM: it exists but belongs to someone else
    name: str | None
    state: str | None  # e.g. "S (sleeping)", "Z (zombie)"
    uids: tuple[int, ...]  # real, effective, saved, filesystem
    same_uid: bool | None  # None when its status is unreadable
    descendant: bool  # of this process (not necessarily of the gdb we start)
    tracer_pid: int  # 0: not traced
    tracer_name: str | None

    @property
    def zombie(self) -> bool:
        """Whether it has exited and only waits to be reaped (Z) or is dead (X)."""
        return self.state is not None and self.state[:1] in ("Z", "X")


def _descends_from(pid: int, ancestor: int, proc_root: Path) -> bool:
    """Whether ``ancestor`` is found walking up ``pid``'s parents (PPid) in ``proc_root``."""
    seen = set()
    current = pid
    while current > 1 and current not in seen:
        seen.add(current)
        parent = _ints(_status(proc_root, current).get("PPid"))
        if not parent:
            return False
        current = parent[0]
        if current == ancestor:
            return True
    return False


def target_facts(pid: int, proc_root: Path = Path("/proc"), probe: Probe = os.kill) -> TargetFacts:
    """Facts about process ``pid``: existence by ``kill(pid, 0)`` (ESRCH vs EPERM), and /proc.

    ``probe`` is ``os.kill`` outside tests; /proc may hide other users' processes (hidepid),
    which is why existence is decided by the signal probe and not by the directory.
    """
    signal_denied = False
    try:
        probe(pid, 0)
        exists = True
    except ProcessLookupError:
        exists = False
    except PermissionError:
        exists, signal_denied = True, True
    status = _status(proc_root, pid)
    ours = _status(proc_root, "self")
    our_uid = (_ints(ours.get("Uid")) or (os.getuid(),))[0]
    our_pid = (_ints(ours.get("Pid")) or (os.getpid(),))[0]
    uids = _ints(status.get("Uid"))
    tracer = (_ints(status.get("TracerPid")) or (0,))[0]
    return TargetFacts(
        pid=pid,
        exists=exists,
        signal_denied=signal_denied,
        name=status.get("Name"),
        state=status.get("State"),
        uids=uids,
        # __ptrace_may_access: our real uid must equal the target's real, effective and saved uid.
        same_uid=all(u == our_uid for u in uids[:3]) if len(uids) >= 3 else None,
        descendant=_descends_from(pid, our_pid, proc_root),
        tracer_pid=tracer,
        tracer_name=_status(proc_root, tracer).get("Name") if tracer else None,
    )


# --------------------------------------------------------------------------- diagnosis

@dataclass(frozen=True)
class Remedy:
    """One way to make attaching work: what to do, and the exact commands or settings."""

    kind: str  # "mixdbg-run", "ptrace-fix", "root", "container", "reboot", "detach", ...
    action: str
    commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class Diagnosis:
    """Whether attaching is possible, the precise cause when it is not, and the remedies."""

    cause: str  # OK or one of the cause constants above
    blocked: bool  # True: it certainly fails; a non-OK cause without it: it depends
    reason: str  # one line
    remedies: tuple[Remedy, ...]  # least privilege first

    def hint(self) -> str | None:
        """The remedies as numbered lines (commands indented below), or None when there are none."""
        lines: list[str] = []
        for number, remedy in enumerate(self.remedies, start=1):
            lines.append(f"{number}. {remedy.action}")
            lines += [f"     {command}" for command in remedy.commands]
        return "\n".join(lines) or None


@dataclass(frozen=True)
class ContainerAdvice:
    """The settings that give a container's processes CAP_SYS_PTRACE (and lift seccomp)."""

    docker_run: str
    compose: str
    devcontainer: str
    kubernetes: str


def container_advice(seccomp: bool = False) -> ContainerAdvice:
    """The docker run / compose / devcontainer.json / Kubernetes settings granting ptrace.

    ``seccomp`` adds the unconfined seccomp profile, needed only when a filter blocks ptrace
    (old Docker < 19.03, kernels < 4.8, other engines).
    """
    flags = "--cap-add=SYS_PTRACE" + (" --security-opt seccomp=unconfined" if seccomp else "")
    compose = 'cap_add: ["SYS_PTRACE"]' + ('   security_opt: ["seccomp:unconfined"]' if seccomp else "")
    dev = '"capAdd": ["SYS_PTRACE"]' + (', "securityOpt": ["seccomp=unconfined"]' if seccomp else "")
    k8s = 'securityContext: {capabilities: {add: ["SYS_PTRACE"]}}' + (
        "   (and seccompProfile: {type: Unconfined})" if seccomp else "")
    return ContainerAdvice(docker_run=f"docker run {flags} ...", compose=f"compose service: {compose}",
                           devcontainer=f"devcontainer.json: {dev}", kubernetes=f"Kubernetes: {k8s}")


def _container_remedy(seccomp: bool) -> Remedy:
    advice = container_advice(seccomp)
    return Remedy("container", "restart the container with CAP_SYS_PTRACE"
                  + (" and without the seccomp filter" if seccomp else "")
                  + " (Yama is host-wide and /proc/sys is read-only inside):",
                  (advice.docker_run, advice.compose, advice.devcontainer, advice.kubernetes))


_RUN = Remedy("mixdbg-run", "start the program with `mixdbg run` instead of attaching to it: it declares"
              " gdb its tracer (PR_SET_PTRACER) before your code runs, no privileges needed",
              ("mixdbg run script.py",))
_FIX = Remedy("ptrace-fix", "lower kernel.yama.ptrace_scope to 0 until reboot"
              " (`mixdbg ptrace --restore` puts the old value back):", ("mixdbg ptrace --fix",))
_ROOT = Remedy("root", "run mixdbg as root (sudo), which has CAP_SYS_PTRACE")


def _scope_remedies(facts: TracingFacts, include_run: bool) -> tuple[Remedy, ...]:
    """Remedies for a Yama refusal: the opt-in, then the sysctl (or the container settings)."""
    remedies = [_RUN] if include_run else []
    if facts.container or facts.proc_sys_read_only:
        remedies.append(_container_remedy(seccomp=facts.seccomp_mode == 2))
    else:
        remedies += [_FIX, _ROOT]
    return tuple(remedies)


def _target_diagnosis(facts: TracingFacts, target: TargetFacts) -> Diagnosis | None:
    """The causes that belong to the target itself: gone, exited, traced, another user's."""
    who = f"process {target.pid}" + (f" ({target.name})" if target.name else "")
    if not target.exists:
        return Diagnosis(NO_SUCH_PROCESS, True, f"process {target.pid} does not exist (no such process)", ())
    if target.zombie:
        return Diagnosis(ZOMBIE, True, f"{who} has already exited: it is a zombie waiting to be reaped", ())
    if target.tracer_pid:
        tracer = f"process {target.tracer_pid}" + (f" ({target.tracer_name})" if target.tracer_name else "")
        return Diagnosis(ALREADY_TRACED, True,
                         f"{who} is already traced by {tracer}; a process can have only one tracer",
                         (Remedy("detach", "detach that debugger (end its debug session), or end it:",
                                 (f"kill {target.tracer_pid}",)),))
    if (target.same_uid is False or target.signal_denied) and not facts.cap_sys_ptrace:
        owner = f"uid {target.uids[0]}" if target.uids else "another user"
        return Diagnosis(OTHER_UID, True,
                         f"{who} runs as {owner} and we run as uid {facts.uid}; tracing another"
                         " user's process needs CAP_SYS_PTRACE",
                         (Remedy("same-user", f"run mixdbg as the process's owner ({owner})"), _ROOT))
    return None


def assess(facts: TracingFacts, target: TargetFacts | None = None) -> Diagnosis:
    """Decide from the facts whether gdb started by us can attach (to ``target``, or in general).

    Without a target the question is "can mixdbg debug a program here?"; scope 1 then is only
    a warning because ``mixdbg run`` opts in. The PR_SET_PTRACER relation is invisible in
    /proc, so attaching to a foreign PID under scope 1 is reported as "depends", not blocked.
    """
    found = _target_diagnosis(facts, target) if target is not None else None
    if found is not None:
        return found
    scope = facts.ptrace_scope
    if scope == 3:
        return Diagnosis(SCOPE_3, True, "kernel.yama.ptrace_scope is 3: nobody, root included, may"
                         " attach, and the value cannot be lowered until reboot",
                         (Remedy("reboot", "find where 3 is set, change it there, and reboot:",
                                 (f"grep -rs {SYSCTL_KEY} {' '.join(SYSCTL_SOURCES)} /proc/cmdline",)),))
    if facts.seccomp_mode == 1:
        return Diagnosis(SECCOMP, True, "this process runs in seccomp strict mode: ptrace is impossible", ())
    if not facts.cap_sys_ptrace and facts.yama_present:
        if scope == 2:
            return Diagnosis(SCOPE_2, True, "kernel.yama.ptrace_scope is 2 (admin-only): attaching needs"
                             " CAP_SYS_PTRACE, which we do not have", _scope_remedies(facts, False))
        if scope is None:
            return Diagnosis(SCOPE_UNKNOWN, False, f"/proc/{SCOPE_FILE} exists but cannot be read;"
                             " assume attaching is restricted", _scope_remedies(facts, True))
        if scope == 1 and target is None:
            return Diagnosis(SCOPE_1, False, "kernel.yama.ptrace_scope is 1 (restricted): programs started"
                             " by `mixdbg run` can be debugged; attaching to other PIDs cannot",
                             _scope_remedies(facts, True))
        if scope == 1 and target is not None:
            how = ("it is our descendant but not gdb's" if target.descendant else "gdb is not its ancestor")
            return Diagnosis(SCOPE_1, False, f"kernel.yama.ptrace_scope is 1 (restricted) and {how}: attaching"
                             f" works only if process {target.pid} declared a tracer (PR_SET_PTRACER)",
                             _scope_remedies(facts, True))
    if facts.seccomp_mode == 2:
        return Diagnosis(SECCOMP, False, "a seccomp filter is active (gdb inherits it); if it forbids"
                         " ptrace, attaching fails", (_container_remedy(seccomp=True),) if facts.container
                         else (Remedy("sandbox", "run mixdbg outside the sandbox that installed the filter"
                                      " (systemd SystemCallFilter=, flatpak, snap)"),))
    return Diagnosis(OK, False, _why_ok(facts), ())


def _why_ok(facts: TracingFacts) -> str:
    """One line saying which rule lets us attach."""
    if facts.cap_sys_ptrace:
        return "attaching is possible: we hold CAP_SYS_PTRACE" + (
            f" (ptrace_scope {facts.ptrace_scope})" if facts.yama_present else " and there is no Yama")
    if not facts.yama_present:
        return "attaching is possible: the kernel has no Yama, so processes of the same uid can be traced"
    return "attaching is possible: ptrace_scope is 0, so processes of the same uid can be traced"


_ALREADY_TRACED = re.compile(r"already traced by process (\d+)")


def _is_ptrace_denial(message: str) -> bool:
    """gdb's refusal texts: a ``ptrace:`` line (errno text varies) or Debian's "Could not attach"."""
    lines = (line.strip() for line in message.splitlines())
    return "could not attach" in message.lower() or any(line.startswith("ptrace:") for line in lines)


def explain_attach_failure(gdb_message: str, pid: int, proc_root: Path = Path("/proc"),
                           probe: Probe = os.kill, fs_root: Path = Path("/")) -> MixdbgError:
    """Turn gdb's raw attach error into our exception: the precise cause in one line, fixes in the hint.

    The text is classified (no such process, zombie, already traced, ptrace denial) and joined
    with the facts, because the errno text alone is unreliable ("Inappropriate ioctl for
    device" is the same refusal). The caller raises what it gets.
    """
    target = target_facts(pid, proc_root, probe)
    facts = tracing_facts(proc_root, fs_root)
    text = gdb_message.lower()
    traced = _ALREADY_TRACED.search(gdb_message)
    # gdb's message may be newer than /proc (the process may have gone or been detached since).
    if "no such process" in text:
        target = replace(target, exists=False)
    elif "zombie" in text:
        target = replace(target, state="Z (zombie)")
    elif traced:
        tracer = int(traced.group(1))
        target = replace(target, tracer_pid=tracer, tracer_name=_status(proc_root, tracer).get("Name"))
    diagnosis = assess(facts, target)
    if diagnosis.cause in (NO_SUCH_PROCESS, ZOMBIE):
        return NotFoundError(f"cannot attach: {diagnosis.reason}", hint=diagnosis.hint())
    if not _is_ptrace_denial(gdb_message) and diagnosis.cause == OK:
        first = next((line.strip() for line in gdb_message.splitlines() if line.strip()), "no message")
        return DebuggerError(f"gdb could not attach to process {pid}: {first}")
    if diagnosis.cause == SCOPE_1:  # it failed, so the target made no PR_SET_PTRACER exception for gdb
        diagnosis = replace(diagnosis, blocked=True, reason=f"kernel.yama.ptrace_scope is 1 (restricted): gdb"
                            f" is not an ancestor of process {pid}, and it did not declare gdb its tracer"
                            " (PR_SET_PTRACER)")
    if diagnosis.cause == OK:
        diagnosis = Diagnosis(OTHER_LSM, True, "the kernel refused although neither Yama, uid nor"
                              " capabilities explain it: another security module (AppArmor, SELinux)",
                              (Remedy("lsm", "look for the denial in the kernel log, and allow ptrace there"
                                      " (SELinux: setsebool deny_ptrace 0; Docker AppArmor:"
                                      " --security-opt apparmor=unconfined)", ("dmesg | grep -i ptrace",)),))
    return NotPermittedError(f"cannot attach to process {pid}: {diagnosis.reason}", hint=diagnosis.hint())

# --------------------------------------------------------------------------- changing the sysctl

CHANGED = "changed"
UNCHANGED = "unchanged"  # already at the wanted value
NO_YAMA = "no-yama"  # nothing to change: classic rules apply
LOCKED = "locked"  # scope 3: only a reboot helps
NEEDS_USER = "needs-user"  # we could not; ScopeChange.user_commands says what to run
READ_ONLY = "read-only"  # /proc/sys is read-only (a container): change it on the host
NOTHING_SAVED = "nothing-saved"  # --restore without an earlier --fix

_DROPIN_TEXT = f"""\
# Written by `mixdbg ptrace --fix --persist`; `mixdbg ptrace --restore` removes it.
# Yama classic mode: a debugger may attach to any process of the same user.
{SYSCTL_KEY} = 0
"""


@dataclass(frozen=True)
class ScopeChange:
    """What fixing or restoring ``ptrace_scope`` did; ``user_commands`` is what is left to the user."""

    outcome: str
    previous: int | None  # the value before
    current: int | None  # the value now
    method: str | None  # "direct" or "sudo" when we wrote something
    dropin: Path | None  # the sysctl.d file written (fix --persist) or removed (restore)
    state_file: Path  # where the previous value is remembered
    user_commands: tuple[str, ...] = ()  # non-empty: not (fully) done, run these
    error: str | None = None  # why we could not
    lock_sources: tuple[str, ...] = ()  # LOCKED: where 3 is set ("file: line")


def default_state_dir() -> Path:
    """The per-user state directory: ``$XDG_STATE_HOME/mixdbg`` or ``~/.local/state/mixdbg``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "mixdbg"


def scope_lock_sources(proc_root: Path = Path("/proc"), etc_root: Path = Path("/etc")) -> tuple[str, ...]:
    """Where ``ptrace_scope`` is set at boot: sysctl files under ``etc_root`` and the kernel command line."""
    files = [etc_root / "sysctl.conf", *sorted((etc_root / "sysctl.d").glob("*.conf"))]
    found = [f"{path}: {line.strip()}" for path in files for line in (_read(path) or "").splitlines()
             if line.strip().startswith(SYSCTL_KEY)]
    cmdline = _read(proc_root / "cmdline") or ""
    found += [f"kernel command line: {word}" for word in cmdline.split() if SYSCTL_KEY in word]
    return tuple(found)


def _run_sudo(argv: list[str], stdin_text: str | None, timeout: float) -> str | None:
    """Run ``sudo -n argv`` without any chance of a password prompt; None on success, else why not.

    ``-n`` makes sudo fail instead of asking; its own session has no controlling terminal, so
    it cannot open /dev/tty either; the whole group is killed when ``timeout`` passes.
    """
    sudo = shutil.which("sudo")
    if sudo is None:
        return "we are not root and sudo is not installed"
    proc = subprocess.Popen([sudo, "-n", *argv], stdin=subprocess.PIPE if stdin_text else subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, err = proc.communicate(stdin_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return f"sudo -n did not finish within {timeout:g} s"
    if proc.returncode != 0:
        lines = err.strip().splitlines()
        return f"sudo -n failed: {lines[-1] if lines else f'exit code {proc.returncode}'}"
    return None


def _privileged(path: Path, text: str | None, privileged: bool, timeout: float) -> tuple[str | None, str | None]:
    """Write ``text`` to ``path`` (or remove it when None): directly when ``privileged``, else by ``sudo -n``.

    Returns (method, error), exactly one of them None.
    """
    if not privileged:
        error = _run_sudo(["rm", "-f", str(path)] if text is None else ["tee", str(path)], text, timeout)
        return (None, error) if error else ("sudo", None)
    try:
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text)
    except OSError as err:  # EROFS, or EINVAL: the kernel refuses to lower scope 3
        return None, f"{path}: {err.strerror}"
    return "direct", None


def _write_command(path: Path, text: str | None) -> str:
    """The shell command a user can run to do what ``_privileged`` could not."""
    if text is None:
        return f"sudo rm -f {path}"
    return f"echo '{text.strip().splitlines()[-1]}' | sudo tee {path}"


def fix_scope(persist: bool = False, proc_root: Path = Path("/proc"), etc_root: Path = Path("/etc"),
              state_dir: Path | None = None, sudo_timeout: float = 5.0) -> ScopeChange:
    """Set ``kernel.yama.ptrace_scope`` to 0, remembering the old value for ``restore_scope``.

    As root (or with CAP_SYS_PTRACE) the file is written directly, otherwise through
    ``sudo -n``, which never prompts; when neither works the result carries the exact commands.
    Inside a container (/proc/sys read-only) nothing is attempted: the setting is the host's.
    ``persist`` also writes ``etc_root/sysctl.d/60-mixdbg-ptrace.conf``; without it the change
    ends at reboot. Scope 3 is never "fixed": the kernel refuses every change until reboot.
    """
    facts = tracing_facts(proc_root)
    state = (state_dir or default_state_dir()) / STATE_NAME
    scope = facts.ptrace_scope
    dropin = etc_root / "sysctl.d" / DROPIN_NAME
    if not facts.yama_present:
        return ScopeChange(NO_YAMA, None, None, None, None, state)
    if scope == 3:
        return ScopeChange(LOCKED, 3, 3, None, None, state,
                           lock_sources=scope_lock_sources(proc_root, etc_root))
    scope_path = proc_root / SCOPE_FILE
    todo: list[tuple[Path, str | None]] = [] if scope == 0 else [(scope_path, "0\n")]
    todo += [(dropin, _DROPIN_TEXT)] if persist else []
    if scope is not None and scope != 0:
        # Saved before writing: if we die in between, --restore still knows the old value.
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(f"{scope}\n")
    return _apply(todo, facts, state, scope, 0, dropin if persist else None, sudo_timeout)


def restore_scope(proc_root: Path = Path("/proc"), etc_root: Path = Path("/etc"),
                  state_dir: Path | None = None, sudo_timeout: float = 5.0) -> ScopeChange:
    """Put back the ``ptrace_scope`` value ``fix_scope`` replaced, and remove its drop-in file.

    The state file is deleted only when everything was undone, so a failed restore can be retried.
    """
    facts = tracing_facts(proc_root)
    state = (state_dir or default_state_dir()) / STATE_NAME
    dropin = etc_root / "sysctl.d" / DROPIN_NAME
    saved_text = (_read(state) or "").strip()
    saved = int(saved_text) if saved_text.isdigit() else None
    todo: list[tuple[Path, str | None]] = []
    if saved is not None and facts.yama_present and facts.ptrace_scope != saved:
        todo.append((proc_root / SCOPE_FILE, f"{saved}\n"))
    if dropin.exists():
        todo.append((dropin, None))
    wanted = saved if saved is not None and facts.yama_present else facts.ptrace_scope
    result = _apply(todo, facts, state, facts.ptrace_scope, wanted, dropin if dropin.exists() else None,
                    sudo_timeout)
    if saved is None or not facts.yama_present:
        result = replace(result, outcome=NOTHING_SAVED if saved is None else NO_YAMA)
    if not result.user_commands:
        state.unlink(missing_ok=True)
    return result


def _apply(todo: list[tuple[Path, str | None]], facts: TracingFacts, state: Path, before: int | None,
           wanted: int | None, dropin: Path | None, timeout: float) -> ScopeChange:
    """Do each write (or removal, text None) in ``todo``; what fails becomes a command for the user."""
    methods: list[str] = []
    errors: list[str] = []
    commands: list[str] = []
    current = before
    privileged = facts.euid == 0 or facts.cap_sys_ptrace
    for path, text in todo:
        method: str | None
        error: str | None
        if facts.proc_sys_read_only and path.name == SCOPE_FILE.name:
            method, error = None, "/proc/sys is read-only here (a container): Yama is set on the host"
        else:
            method, error = _privileged(path, text, privileged, timeout)
        if method:
            methods.append(method)
            current = wanted if path.name == SCOPE_FILE.name else current
        else:
            errors.append(error or "unknown error")
            commands.append(_write_command(path, text))
    if current != wanted and facts.proc_sys_read_only:
        outcome = READ_ONLY
    elif commands:
        outcome = NEEDS_USER
    else:
        outcome = CHANGED if todo else UNCHANGED
    return ScopeChange(outcome, before, current, methods[0] if methods else None,
                       dropin if dropin and not any(str(dropin) in c for c in commands) else None,
                       state, tuple(commands), "; ".join(errors) or None)
