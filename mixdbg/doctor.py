"""The checks behind ``mixdbg doctor``: everything that decides whether mixed debugging will work.

Each check returns a ``Check`` record: ok / warn / fail, a one-line summary, a one-line fix and
machine-readable details. This module words the advice; ``ptrace`` and ``debuginfo`` only
supply facts. "fail" means something blocks debugging (``exit_code`` turns it into the CLI's
exit code); "warn" means something works only partly (e.g. no ``file:line`` breakpoints).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mixdbg import calls, debugfiles, debuginfo, gdbpath, ptrace, pyframes, pyruntime
from mixdbg.errors import DataError, NotFoundError, NotPermittedError, UnavailableError
from mixdbg.gdbmi import gdb_environment, index_cache_directory

OK = "ok"
WARN = "warn"
FAIL = "fail"

MIN_GDB = (9, 1)  # mixdbg speaks MI3 (--interpreter=mi3), which gdb 9.1 introduced
MIN_DEBUGPY = (1, 8, 22)  # debugpy.listen(in_process_debug_adapter=True) returns the address
_SOURCES = {gdbpath.ARGUMENT: "--gdb", gdbpath.VARIABLE: f"${gdbpath.VARIABLE}",
            gdbpath.BUNDLED: f"the {gdbpath.WHEEL} wheel's", gdbpath.SYSTEM: "the system's"}
#: The first gdb measured to follow pools without dying (13.1 died, 18.1 did not; 14-17 not measured).
MULTIPROCESS_GDB = 18
TORCH_FIX = ("build PyTorch from source with debug info: `DEBUG=1 python setup.py develop`"
             " (or `REL_WITH_DEB_INFO=1` for an optimised build with -g)")


@dataclass(frozen=True)
class Check:
    """The result of one check; ``exit_code`` is what a failure of it makes the CLI return."""

    name: str
    status: str  # OK, WARN or FAIL
    summary: str
    fix: str | None = None
    details: dict[str, object] = field(default_factory=dict)
    exit_code: int = 0

    def as_json(self) -> dict[str, object]:
        """The check as a JSON-ready dict."""
        return asdict(self)


def _version_tuple(text: str) -> tuple[int, ...]:
    """``"13.1"`` → ``(13, 1)``; non-numeric parts end the tuple."""
    parts = []
    for part in text.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def check_gdb(gdb: str | None = None, timeout: float = 15.0) -> Check:
    """Which gdb mixdbg would use (``gdbpath.choose``: ``--gdb``, ``$MIXDBG_GDB``, the
    wheel's, the system's), whether it answers ``--version`` (within ``timeout``), and which
    version. The system's gdb taken as a fallback is a warning saying why."""
    install = f"pip install {gdbpath.WHEEL} (a Python with a shared libpython), or point {gdbpath.VARIABLE} at a gdb"
    try:
        choice = gdbpath.choose(gdb)
    except UnavailableError as err:
        return Check("gdb", FAIL, err.message, install, exit_code=UnavailableError.exit_code)
    path = choice.path
    try:
        done = subprocess.run([path, "-nx", "--version"], capture_output=True, text=True, env=gdb_environment(),
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return Check("gdb", FAIL, f"{path} does not run: {err}", install, {"path": path},
                     UnavailableError.exit_code)
    first = (done.stdout.strip().splitlines() or [""])[0]
    numbers = re.findall(r"\d+\.\d+(?:\.\d+)*", first)
    version = numbers[-1] if numbers else None
    details: dict[str, object] = {"path": path, "version": version, "banner": first, "source": choice.source,
                                  "fallback_reason": choice.fallback_reason}
    if done.returncode != 0 or version is None:
        return Check("gdb", FAIL, f"{path} --version failed: {first or done.stderr.strip()}", install,
                     details, UnavailableError.exit_code)
    if _version_tuple(version) < MIN_GDB:
        return Check("gdb", FAIL, f"{first} at {path} is older than 9.1: it does not speak GDB/MI 3",
                     install, details, UnavailableError.exit_code)
    summary = f"{first} at {path} ({_SOURCES[choice.source]})"
    if choice.fallback_reason is not None:
        return Check("gdb", WARN, f"{summary}: {choice.fallback_reason}", install, details)
    return Check("gdb", OK, summary, None, details)


def check_function_calls(gdb: Check) -> Check:
    """Whether gdb can call functions in the debuggee (``p f()``) without harming it here."""
    version = gdb.details.get("version")
    major = _version_tuple(str(version))[:1] if version else ()
    safety = calls.assess_here(major[0] if major else None)
    details: dict[str, object] = {"allowed": safety.allowed, "reason": safety.reason}
    if safety.allowed:
        return Check("function calls", OK, f"gdb may call functions in the debuggee: {safety.reason}",
                     None, details)
    return Check("function calls", WARN,
                 f"mixdbg forbids gdb to call functions in the debuggee ({safety.reason}); "
                 "reading variables and tensors works", f"install gdb {calls.FIRST_SAFE_GDB} or newer",
                 details)


def check_multiprocess(gdb: Check) -> Check:
    """Whether this gdb follows several processes (DataLoader workers, pools, ranks) reliably:
    gdb 13.1 sometimes dies of its own assertion while it holds several (measured: see
    docs/reliability.md); the session then ends, and the processes run on undebugged."""
    version = gdb.details.get("version")
    major = _version_tuple(str(version))[:1] if version else ()
    details: dict[str, object] = {"reliable": bool(major) and major[0] >= MULTIPROCESS_GDB}
    if not major:
        return Check("multi-process", WARN, "gdb's version is unknown", None, details)
    if major[0] >= MULTIPROCESS_GDB:
        return Check("multi-process", OK, f"gdb {version} follows child processes (no gdb death measured in "
                                          "the spawn/forkserver pool runs)", None, details)
    return Check("multi-process", WARN,
                 f"gdb {version} sometimes dies while it follows several processes (gdb 13.1: "
                 "internal-error in select_event_lwp, a few pool runs in 50); the session then ends "
                 "and the processes run on", f"use gdb {MULTIPROCESS_GDB} or newer (pip install {gdbpath.WHEEL})",
                 details)


def check_debugpy() -> Check:
    """Whether debugpy is importable by this interpreter, and its version."""
    fix = f"{sys.executable} -m pip install 'debugpy>=1.8'"
    try:
        module = importlib.import_module("debugpy")
    except ImportError as err:
        return Check("debugpy", FAIL, f"debugpy is not importable: {err}", fix,
                     exit_code=UnavailableError.exit_code)
    version = str(getattr(module, "__version__", "unknown"))
    details: dict[str, object] = {"version": version, "path": str(getattr(module, "__file__", ""))}
    if _version_tuple(version) < MIN_DEBUGPY:
        return Check("debugpy", FAIL, f"debugpy {version} is older than 1.8.22, which mixdbg needs", fix,
                     details, UnavailableError.exit_code)
    return Check("debugpy", OK, f"debugpy {version}", None, details)


#: Run by the interpreter being checked: its version, build flags, and which file holds
#: ``_PyRuntime`` (libpython when it is mapped, else the executable).
_PYTHON_PROBE = """
import json, os, sys, sysconfig
holder = os.path.realpath(sys.executable)
for line in open("/proc/self/maps"):
    fields = line.split(maxsplit=5)
    if len(fields) == 6 and "/libpython" in fields[5]:
        holder = fields[5].strip()
        break
print(json.dumps({"hexversion": sys.hexversion, "version": sys.version.split()[0], "holder": holder,
                  "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                  "trace_refs": bool(sysconfig.get_config_var("Py_TRACE_REFS"))}))
"""


def python_facts(executable: str, timeout: float = 30.0) -> dict[str, object]:
    """What the interpreter says about itself (see ``_PYTHON_PROBE``)."""
    try:
        done = subprocess.run([executable, "-I", "-c", _PYTHON_PROBE], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise NotFoundError(f"cannot run {executable}: {err}") from err
    if done.returncode != 0:
        raise NotFoundError(f"{executable} failed: {done.stderr.strip().splitlines()[-1:]}")
    facts: dict[str, object] = json.loads(done.stdout)
    return facts


def frames_method(facts: dict[str, object]) -> tuple[str | None, str]:
    """How mixdbg reads this interpreter's Python frames (``debug offsets``, ``known
    layout``) or None, and why not."""
    hexversion = int(str(facts["hexversion"]))
    minor = (hexversion >> 16) & 0xFF
    method = pyframes.reading_method(minor) if hexversion >> 24 == 3 else None
    if method is None:
        return None, "not supported (3.10 to 3.14 are)"
    if facts.get("free_threaded"):
        return None, "not supported: a free-threaded build"
    if facts.get("trace_refs") and minor <= 12:
        return None, "not supported: a Py_TRACE_REFS build (every object is bigger)"
    if (hexversion >> 4) & 0xF not in (0xC, 0xF) and method == "debug offsets":
        return None, "not supported: a pre-release"
    if not pyruntime.exports_runtime(str(facts["holder"])):
        return None, f"not supported: {facts['holder']} does not export _PyRuntime"
    return method, ""


def check_python(executable: str = sys.executable) -> Check:
    """Which interpreter runs, and how mixdbg reads its Python frames at stops (from its
    memory: ``_Py_DebugOffsets`` from 3.13, our own layouts for 3.10-3.12)."""
    interpreter = Path(executable).resolve()
    try:
        facts = python_facts(executable)
    except NotFoundError as err:
        return Check("python", WARN, err.message, None, {"executable": executable})
    method, why = frames_method(facts)
    details: dict[str, object] = {"executable": executable, "realpath": str(interpreter), **facts,
                                  "frames": method}
    head = f"Python {facts['version']} at {interpreter}"
    if method is None:
        return Check("python", WARN, f"{head}: Python frames {why}; stops show native frames only",
                     "use CPython 3.10 to 3.14 (default build) for mixed stacks", details)
    return Check("python", OK, f"{head}: Python frames read from its memory ({method})", None, details)


def check_ptrace(proc_root: Path = Path("/proc"), fs_root: Path = Path("/"), pid: int | None = None,
                 probe: ptrace.Probe = os.kill) -> Check:
    """Whether the kernel lets our gdb attach (to ``pid``, or to a program ``mixdbg run`` starts)."""
    facts = ptrace.tracing_facts(proc_root, fs_root)
    return ptrace_check(facts, ptrace.target_facts(pid, proc_root, probe) if pid is not None else None)


def ptrace_check(facts: ptrace.TracingFacts, target: ptrace.TargetFacts | None = None) -> Check:
    """The ptrace check from facts already read: fail when blocked, warn when it depends."""
    diagnosis = ptrace.assess(facts, target)
    details: dict[str, object] = {
        "facts": asdict(facts), "target": asdict(target) if target else None, "cause": diagnosis.cause,
        "remedies": [asdict(r) for r in diagnosis.remedies],
        "scope_meaning": ptrace.SCOPE_MEANING.get(facts.ptrace_scope) if facts.ptrace_scope is not None
        else None,
    }
    first = diagnosis.remedies[0] if diagnosis.remedies else None
    fix = None if first is None else first.action.rstrip(":") + (
        f": {first.commands[0]}" if first.commands else "")
    if diagnosis.blocked:
        code = NotFoundError.exit_code if diagnosis.cause in (ptrace.NO_SUCH_PROCESS, ptrace.ZOMBIE) \
            else NotPermittedError.exit_code
        return Check("ptrace", FAIL, diagnosis.reason, fix, details, code)
    return Check("ptrace", OK if diagnosis.cause == ptrace.OK else WARN, diagnosis.reason, fix, details)


def torch_libraries() -> list[tuple[Path, Path]]:
    """(torch package dir, library) for ``_C*.so``, ``libtorch_python.so``, ``libtorch_cpu.so``.

    Found through the import system without importing torch, which would take seconds.
    """
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(root.glob("_C*.so"))
    found += [p for p in (root / "lib" / "libtorch_python.so", root / "lib" / "libtorch_cpu.so") if p.exists()]
    return [(root, lib) for lib in found]


def debug_search(gdb: Check, timeout: float = 15.0) -> debugfiles.Search:
    """Where the gdb of the ``gdb`` check looks for separate debug files (its
    ``debug-file-directory``), as a session's gdb is asked (``SymbolReader.start``)."""
    path = gdb.details.get("path")
    if gdb.status == FAIL or not path:
        return debugfiles.Search()
    try:
        done = subprocess.run([str(path), "-nx", "-batch", "-ex", "show debug-file-directory"], capture_output=True,
                              text=True, env=gdb_environment(), timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return debugfiles.Search()
    found = re.search(r'"([^"]*)"', done.stdout)
    return debugfiles.Search.of_gdb(found.group(1) if found else "", debuginfod=False)


def check_index_cache(directory: Path | None = None) -> Check:
    """Where gdb keeps its index of libraries' DWARF between sessions, and how much it holds:
    a first session on a big debug build pays the index (seconds to minutes), the next ones
    read it from there."""
    directory = directory or index_cache_directory()
    files = [entry for entry in directory.glob("*") if entry.is_file()] if directory.is_dir() else []
    size = sum(entry.stat().st_size for entry in files)
    details: dict[str, object] = {"directory": str(directory), "entries": len(files), "bytes": size}
    held = f"{len(files)} librar{'y' if len(files) == 1 else 'ies'}, {size / 1e6:.1f} MB" if files else "empty"
    return Check("index cache", OK, f"on: gdb's index of libraries' DWARF, kept between sessions in {directory} "
                                    f"({held}; a library is indexed after the session that first read it); "
                                    "delete it to free the space", None, details)


def check_library(path: Path, label: str | None = None, fix: str | None = None,
                  debug_root: Path | None = None, search: debugfiles.Search | None = None) -> Check:
    """What breakpoints and variables gdb will offer in ``path``, with the fix when it is not all.

    ``label`` names it in the report (default: the path); ``fix`` replaces the generic advice;
    ``search`` says where gdb looks for separate debug files (``debug_root``: only there).
    """
    name = f"library {label or path}"
    try:
        info = debuginfo.classify(path, debug_root, search)
    except (NotFoundError, DataError) as err:
        return Check(name, FAIL, err.message, "pass the path of a shared library (.so)", {"path": str(path)},
                     err.exit_code)
    details: dict[str, object] = {
        "path": str(path), "debug_info": info.level, "build_id": info.build_id,
        "dwarf_file": str(info.dwarf_file) if info.dwarf_file else None,
        "file_line_breakpoints": info.file_line_breakpoints, "locals": info.locals_visible,
        "function_breakpoints": "all" if info.any_function_by_name else
        "exported" if info.exported_functions_by_name else "none",
    }
    fix = fix or ("rebuild it with -g (CFLAGS=-g, CMAKE_BUILD_TYPE=RelWithDebInfo) or install its debug"
                  " symbols package (-dbg / -debuginfo)")
    if info.level == debuginfo.DWARF:
        where = "" if info.dwarf_file == path else f" (in {info.dwarf_file})"
        return Check(name, OK, f"DWARF debug info{where}: break by file:line and see locals", None, details)
    if info.level == debuginfo.SYMTAB:
        summary = ("symbol table but no DWARF debug info: break by function name works; file:line"
                   " breakpoints and locals do not")
    elif info.level == debuginfo.DYNSYM:
        summary = ("only dynamic symbols (stripped): break on exported functions only; no static"
                   " functions, no file:line, no locals")
    else:
        summary = "no symbols at all: gdb shows only addresses"
    return Check(name, WARN, summary, fix, details)


def run_checks(libs: Sequence[Path] = (), proc_root: Path = Path("/proc"), fs_root: Path = Path("/"),
               include_torch: bool = True, python: str = sys.executable) -> list[Check]:
    """All doctor checks in report order: gdb, debugpy, python, ptrace, function calls,
    multi-process, gdb's index cache, libraries."""
    gdb = check_gdb()
    checks = [gdb, check_debugpy(), check_python(python), check_ptrace(proc_root, fs_root),
              check_function_calls(gdb), check_multiprocess(gdb), check_index_cache()]
    torch = torch_libraries() if include_torch else []
    search = debug_search(gdb) if libs or torch else debugfiles.Search()
    checks += [check_library(Path(lib), search=search) for lib in libs]
    checks += [check_library(lib, f"torch/{lib.relative_to(root)}", TORCH_FIX, search=search) for root, lib in torch]
    return checks


def exit_code(checks: Sequence[Check]) -> int:
    """0 when nothing failed; otherwise 77 if tracing is not permitted, else the first failure's code."""
    codes = [check.exit_code for check in checks if check.status == FAIL]
    if NotPermittedError.exit_code in codes:
        return NotPermittedError.exit_code
    return codes[0] if codes else 0
