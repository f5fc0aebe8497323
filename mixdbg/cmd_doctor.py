"""The ``ptrace`` and ``doctor`` verbs: say why attaching would fail, and fix it where we can.

Human output by default (one line per fact or check), ``--json`` for exactly one JSON document
on stdout. Exit codes: 0 when debugging can work (warnings included), 77 when tracing is not
permitted, 66 when the PID or a ``--lib`` does not exist, 65 when a ``--lib`` is not ELF,
69 when gdb or debugpy is missing.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mixdbg import argtypes, attach, doctor, ptrace
from mixdbg.errors import NotPermittedError, UsageError

# Module-level so that in-process tests can point the verbs at a fake tree.
PROC_ROOT = Path("/proc")
FS_ROOT = Path("/")
ETC_ROOT = Path("/etc")

PTRACE_HELP = """\
Show whether gdb may attach to processes here, the precise reason if not, and the fix.

Facts shown: Yama present or absent and its ptrace_scope (0 classic, 1 restricted to
descendants, 2 admin only, 3 no attach until reboot), our uid, CAP_SYS_PTRACE, container
signs, seccomp mode; with --pid also the target: exists, its uid, whether it is already traced.

Fixes, least privilege first:
  1. nothing: 'mixdbg run' starts the program itself and the program declares gdb its
     tracer (PR_SET_PTRACER), which is enough under ptrace_scope 1
  2. 'mixdbg ptrace --fix': set ptrace_scope to 0 (as root directly, else through 'sudo -n',
     which never prompts; if that cannot work, the exact command is printed for you).
     It lasts until reboot unless --persist writes /etc/sysctl.d/60-mixdbg-ptrace.conf.
     'mixdbg ptrace --restore' puts the previous value back and removes that file.
  3. ptrace_scope 3 cannot be lowered until reboot: the command shows where it is set
  4. in a container: the docker run / compose / devcontainer.json settings that grant it
"""

PTRACE_EPILOG = """\
examples:
  mixdbg ptrace                 can gdb attach here?
  mixdbg ptrace --pid 4242      ... to this process?
  mixdbg ptrace --fix           lower ptrace_scope to 0 until reboot
  mixdbg ptrace --restore       put the old value back

exit codes: 0 attaching can work (also when it depends, e.g. on the target's opt-in),
77 not permitted, 66 no such process; --fix/--restore: 0 done, 77 left to you (see stderr).
"""

DOCTOR_HELP = """\
Check everything that decides whether mixed Python + C/C++ debugging works here, one line each
(ok / warn / fail, with a one-line fix): gdb (which one and why), its version, debugpy, the Python
interpreter (--python) and how its Python frames are read (debug offsets / known layout / not
supported), ptrace permission (see 'mixdbg ptrace'), whether gdb may call functions and follow
several processes here, and for each
--lib (and torch's libraries when torch is installed) how much debug info it has:
  DWARF             break by file:line and see locals
  symbol table      break by function name only
  dynamic symbols   only exported functions
"""

DOCTOR_EPILOG = """\
examples:
  mixdbg doctor
  mixdbg doctor --lib build/my_ext.cpython-311-x86_64-linux-gnu.so --json
  mixdbg doctor --python /usr/bin/python3.12

exit codes: 0 nothing blocks debugging (warnings allowed), 77 tracing not permitted,
69 gdb or debugpy missing, 66 a --lib does not exist, 65 a --lib is not an ELF file.
"""


def register(verbs: argparse._SubParsersAction[Any]) -> None:
    """Add the ``ptrace`` and ``doctor`` verbs."""
    raw = argparse.RawDescriptionHelpFormatter
    p = verbs.add_parser("ptrace", help="why attaching would fail, and the least-privilege fix",
                         description=PTRACE_HELP, epilog=PTRACE_EPILOG, formatter_class=raw)
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    action = p.add_mutually_exclusive_group()
    action.add_argument("--pid", type=argtypes.process_id, help="also check whether gdb may attach to this process")
    action.add_argument("--fix", action="store_true", help="set kernel.yama.ptrace_scope to 0 (until reboot)")
    action.add_argument("--restore", action="store_true", help="put back the value --fix replaced")
    p.add_argument("--persist", action="store_true",
                   help="with --fix: also write /etc/sysctl.d/60-mixdbg-ptrace.conf so it survives reboot")
    p.set_defaults(func=run_ptrace)

    d = verbs.add_parser("doctor", help="check gdb, debugpy, Python, ptrace and libraries' debug info",
                         description=DOCTOR_HELP, epilog=DOCTOR_EPILOG, formatter_class=raw)
    d.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    d.add_argument("--lib", action="append", default=[], type=Path, metavar="PATH",
                   help="a shared library to check for debug info (repeatable)")
    d.add_argument("--python", default=attach.default_python(), metavar="PATH",
                   help="the interpreter to check, as 'mixdbg run --python' takes it (default: mixdbg's own)")
    d.set_defaults(func=run_doctor)


def _line(check: doctor.Check) -> list[str]:
    """A check as one line (plus its one-line fix)."""
    lines = [f"{check.status:<5} {check.name}: {check.summary}"]
    if check.fix:
        lines.append(f"      fix: {check.fix}")
    return lines


def run_doctor(args: argparse.Namespace) -> int:
    """``mixdbg doctor``: run every check, print them, return non-zero if something blocks debugging."""
    checks = doctor.run_checks(args.lib, PROC_ROOT, FS_ROOT, python=args.python)
    code = doctor.exit_code(checks)
    if args.json:
        print(json.dumps({"ok": code == 0, "exit_code": code, "checks": [c.as_json() for c in checks]},
                         default=str, indent=2))
    else:
        for check in checks:
            print("\n".join(_line(check)))
    return code


def run_ptrace(args: argparse.Namespace) -> int:
    """``mixdbg ptrace``: facts and verdict, or ``--fix`` / ``--restore``."""
    if args.persist and not args.fix:
        raise UsageError("--persist only goes with --fix")
    if args.fix or args.restore:
        return _change_scope(args)
    facts = ptrace.tracing_facts(PROC_ROOT, FS_ROOT)
    target = ptrace.target_facts(args.pid, PROC_ROOT) if args.pid is not None else None
    check = doctor.ptrace_check(facts, target)
    gdb = doctor.check_gdb()
    if args.json:
        print(json.dumps({"ok": check.status != doctor.FAIL, "status": check.status, "reason": check.summary,
                          **check.details, "gdb": gdb.as_json()}, default=str, indent=2))
        return check.exit_code
    lines = _fact_lines(facts, target) + [f"gdb:             {gdb.summary}", f"{check.status}: {check.summary}"]
    hint = ptrace.assess(facts, target).hint()
    lines += [f"  {line}" for line in hint.splitlines()] if hint else []
    print("\n".join(lines))
    return check.exit_code


def _fact_lines(facts: ptrace.TracingFacts, target: ptrace.TargetFacts | None) -> list[str]:
    """The tracing facts (and the target's) as aligned human lines."""
    if not facts.yama_present:
        yama = "absent (no ptrace_scope file): classic rules, same uid may trace"
    elif facts.ptrace_scope is None:
        yama = "present, ptrace_scope unreadable"
    else:
        yama = f"present, ptrace_scope {facts.ptrace_scope}: {ptrace.SCOPE_MEANING.get(facts.ptrace_scope, '?')}"
    seccomp = facts.seccomp_mode
    lines = [
        f"Yama:            {yama}",
        f"uid:             {facts.uid} (effective {facts.euid})",
        f"CAP_SYS_PTRACE:  {'yes' if facts.cap_sys_ptrace else 'no'}",
        "container:       " + ("yes: " + "; ".join(facts.container_signs) if facts.container else "no"),
        "seccomp:         " + (f"{seccomp} ({ptrace.SECCOMP_MEANING.get(seccomp, '?')})"
                               if seccomp is not None else "unknown"),
    ]
    if facts.wsl or facts.gvisor:
        lines.append(f"kernel:          {'WSL' if facts.wsl else 'gVisor'}")
    if target is not None and not target.exists:
        lines.append(f"target:          {target.pid}: no such process")
    elif target is not None:
        traced = f"traced by {target.tracer_pid} ({target.tracer_name})" if target.tracer_pid else "not traced"
        owner = f"uid {target.uids[0]}" if target.uids else "uid unknown"
        lines.append(f"target:          {target.pid} ({target.name}), {owner}, {traced},"
                     f" {'our descendant' if target.descendant else 'not our descendant'}")
    return lines


def _change_scope(args: argparse.Namespace) -> int:
    """``--fix`` / ``--restore``: report what changed; when something is left to the user, say exactly what."""
    if args.fix:
        result = ptrace.fix_scope(persist=args.persist, proc_root=PROC_ROOT, etc_root=ETC_ROOT)
    else:
        result = ptrace.restore_scope(proc_root=PROC_ROOT, etc_root=ETC_ROOT)
    left_to_user = result.outcome in (ptrace.NEEDS_USER, ptrace.READ_ONLY, ptrace.LOCKED)
    if args.json:
        print(json.dumps({"ok": not left_to_user, **asdict(result)}, default=str, indent=2))
        return NotPermittedError.exit_code if left_to_user else 0
    if left_to_user:
        raise _left_to_user(result)
    print("\n".join(_change_lines(result, args.fix, args.persist)))
    return 0


def _change_lines(result: ptrace.ScopeChange, fixing: bool, persist: bool) -> list[str]:
    """What a successful --fix or --restore did, including how long it lasts."""
    key = ptrace.SYSCTL_KEY
    if result.outcome == ptrace.NO_YAMA:
        lines = ["this kernel has no Yama (no ptrace_scope file): classic ptrace rules apply, nothing to change"]
    elif result.outcome == ptrace.NOTHING_SAVED:
        lines = [f"nothing to restore: no earlier 'mixdbg ptrace --fix' saved a value in {result.state_file}"]
    elif result.previous == result.current:
        lines = [f"{key} is already {result.current}: nothing to change"]
    else:
        how = "directly" if result.method == "direct" else "through sudo -n"
        lines = [f"{key}: {result.previous} -> {result.current} (written {how})"]
        if fixing:
            lines.append(f"the previous value is saved in {result.state_file}; 'mixdbg ptrace --restore'"
                         " puts it back")
    if fixing and result.outcome != ptrace.NO_YAMA:
        lines.append(f"persisted in {result.dropin}: it survives reboot" if persist and result.dropin else
                     "not persisted: the change ends at reboot (add --persist to keep it)")
    elif not fixing and result.dropin:
        lines.append(f"removed {result.dropin}")
    return lines


def _left_to_user(result: ptrace.ScopeChange) -> NotPermittedError:
    """The error for a change we could not make, with the exact way forward as its hint."""
    key = ptrace.SYSCTL_KEY
    if result.outcome == ptrace.LOCKED:
        where = "\n".join(result.lock_sources) or (
            f"not in /etc; look in: grep -rs {key} {' '.join(ptrace.SYSCTL_SOURCES)} /proc/cmdline")
        return NotPermittedError(f"{key} is 3: no one, root included, can lower it until reboot",
                                 hint=f"it is set here:\n{where}\nchange that setting, then reboot")
    if result.outcome == ptrace.READ_ONLY:
        advice = ptrace.container_advice()
        return NotPermittedError(
            f"cannot change {key} from inside a container: /proc/sys is read-only and Yama is the host's",
            hint="\n".join(["give the container CAP_SYS_PTRACE instead (least privilege):", advice.docker_run,
                            advice.compose, advice.devcontainer, advice.kubernetes,
                            "or on the host:", *result.user_commands]))
    return NotPermittedError(f"could not change {key}: {result.error}",
                             hint="\n".join(["run this yourself:", *result.user_commands]))
