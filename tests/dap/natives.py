"""The native test modules of the DAP tests (the C API module, a pybind11 module, a Cython
module), built with ``-g -O0`` for one interpreter into one directory, beside the driver
scripts that use them.

Lines are found by marker comments (``/* @name */`` in C and C++, ``# @name`` in Python
and Cython), never by number. Everything is built on first use and skips, with the
reason, when this machine lacks the compiler, pybind11 or Cython."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
#: The C API module's source, shared with the terminal tests.
CAPI_SOURCE = HERE.parent / "cext" / "mixdbg_testext.c"
GEOM_SOURCE = HERE / "native" / "geom.cpp"
MEMLAB_SOURCE = HERE / "native" / "memlab.c"
CYTHON_SOURCE = HERE / "native" / "cyloop.pyx"
#: The driver scripts, copied beside the modules (so ``import geom`` works from them).
SCRIPTS = HERE / "scripts"
#: Seconds one compiler or Cython run may take (pybind11 at -O0 needs about 15 s).
BUILD_TIMEOUT = 300

_FACTS = ("import json, sys, sysconfig; print(json.dumps([sysconfig.get_config_var('EXT_SUFFIX'),"
          " sysconfig.get_paths()['include'], '%d.%d' % sys.version_info[:2]]))")


def marker_line(path: Path, marker: str) -> int:
    """The 1-based line of ``path`` carrying ``/* @marker */`` or ``# @marker`` (exactly that
    marker: ``@call`` does not match ``@call_apply``)."""
    tokens = (f"/* @{marker} */", f"# @{marker}")
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for token in tokens:
            at = text.find(token)
            end = at + len(token)
            if at >= 0 and (token.endswith("*/") or end == len(text) or not text[end].isidentifier()):
                return number
    raise KeyError(f"no marker @{marker} in {path}")


@dataclass(frozen=True)
class NativeModule:
    """One compiled module: its import name, and its shared library and source as the
    debuggee and the debugger see them (the source copy its debug info names: the
    ``.c``, ``.cpp`` or ``.pyx`` in the build directory)."""

    name: str
    library: Path
    source: Path
    #: The same source file on this machine (differs from ``source`` in a chroot).
    local_source: Path

    def line(self, marker: str) -> int:
        """The 1-based line of the source carrying the marker."""
        return marker_line(self.local_source, marker)


#: Runs a command in the build directory, as the debuggee's platform runs it.
Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def _check(done: subprocess.CompletedProcess[str], command: Sequence[str]) -> None:
    """A failed build step fails the test with the tool's own message."""
    if done.returncode != 0:
        pytest.fail(f"build step failed: {' '.join(command)}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


class NativeSet:
    """The three modules and the driver scripts for one interpreter, in one directory
    (which is also the scripts' ``sys.path[0]``). Each module is built on first access.

    By default everything runs on this machine. For another platform (the forky chroot),
    ``run`` runs a command there with the directory as its working directory, and ``mount``
    is where the directory appears there: paths this set hands out are the platform's."""

    def __init__(self, python: str | Path, directory: Path, *, run: Runner | None = None,
                 mount: Path | None = None) -> None:
        self.python = str(python)
        self.directory = directory
        self.mount = mount or directory
        self._remote = run is not None
        self._run_there: Runner = run or self._run_here
        directory.mkdir(parents=True, exist_ok=True)
        facts = self.run([self.python, "-c", _FACTS])
        _check(facts, ["python", "-c", _FACTS])
        self.ext_suffix, self.include, self.version = json.loads(facts.stdout)
        for script in SCRIPTS.glob("*.py"):
            shutil.copyfile(script, directory / script.name)

    def _run_here(self, command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(command), cwd=self.directory, capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT, stdin=subprocess.DEVNULL, check=False)

    def run(self, command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        """Run ``command`` on the set's platform, in the build directory, to its end."""
        return self._run_there(command)

    def run_script(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run a driver script to its end under the set's interpreter, without a debugger."""
        return self.run([self.python, str(self.script(name)), *args])

    def path(self, name: str) -> Path:
        """The file ``name`` of the build directory, as the set's platform sees it."""
        return self.mount / name

    def script(self, name: str) -> Path:
        """Driver script ``name`` (e.g. ``geom_main.py``) in the build directory."""
        if not (self.directory / name).is_file():
            raise FileNotFoundError(f"no driver script {name} in {SCRIPTS}")
        return self.path(name)

    def run_beating(self, setup: str, step: str, beat: Path) -> subprocess.Popen[bytes]:
        """A process of this set's interpreter (this machine's) that runs ``setup``, then
        ``step`` forever, touching ``beat`` after each and sleeping 20 ms: a program to attach
        to. Returned once it has beaten (30 s at most); the caller ends it."""
        program = (f"import sys, time\n{setup}\nwhile True:\n    {step}\n    open(sys.argv[1], 'w').close()\n"
                   "    time.sleep(0.02)\n")
        process = subprocess.Popen([self.python, "-c", program, str(beat)], env=self.env())
        deadline = time.monotonic() + 30
        while not beat.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        return process

    def line(self, name: str, marker: str) -> int:
        """The line of ``marker`` in the file ``name`` of the build directory (a driver script
        or a module's source)."""
        return marker_line(self.directory / name, marker)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with the build directory first on
        PYTHONPATH, so that the modules import from anywhere."""
        env = dict(os.environ if base is None else base)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.mount), env.get("PYTHONPATH")]))
        return env

    def _compiler(self, name: str) -> str:
        """A compiler on the platform's PATH (checked here when the platform is this machine)."""
        if not self._remote and shutil.which(name) is None:
            pytest.skip(f"no {name} compiler on PATH")
        return name

    def _build(self, name: str, source: Path, compile_command: list[str]) -> NativeModule:
        local = self.directory / source.name
        if not local.exists():
            shutil.copyfile(source, local)
        done = self.run(compile_command)
        _check(done, compile_command)
        return NativeModule(name, self.path(f"{name}{self.ext_suffix}"), self.path(source.name), local)

    def _c_module(self, name: str, source: Path) -> NativeModule:
        """A C API module built from one C file."""
        return self._build(name, source, [
            self._compiler("cc"), "-g", "-O0", "-shared", "-fPIC", f"-I{self.include}", source.name,
            "-o", f"{name}{self.ext_suffix}"])

    @cached_property
    def capi(self) -> NativeModule:
        """The C API module ``mixdbg_testext`` (``tests/cext/mixdbg_testext.c``)."""
        return self._c_module("mixdbg_testext", CAPI_SOURCE)

    @cached_property
    def memlab(self) -> NativeModule:
        """The C API module ``memlab`` (``tests/dap/native/memlab.c``): a buffer, its
        checksum, a global bumped in a loop."""
        return self._c_module("memlab", MEMLAB_SOURCE)

    @cached_property
    def geom(self) -> NativeModule:
        """The pybind11 module ``geom`` (``tests/dap/native/geom.cpp``), with the test
        environment's pybind11 headers (copied into the directory for another platform)."""
        try:
            import pybind11
        except ImportError:
            pytest.skip("pybind11 is not installed (pip install '.[test]')")
        headers = pybind11.get_include()
        if self._remote:
            shutil.copytree(headers, self.directory / "pybind11-include", dirs_exist_ok=True)
            headers = str(self.path("pybind11-include"))
        return self._build("geom", GEOM_SOURCE, [
            self._compiler("c++"), "-g", "-O0", "-std=c++17", "-shared", "-fPIC", f"-I{self.include}",
            f"-I{headers}", GEOM_SOURCE.name, "-o", f"geom{self.ext_suffix}"])

    @cached_property
    def cython(self) -> NativeModule:
        """The Cython module ``cyloop`` (``tests/dap/native/cyloop.pyx``). Cython (the test
        environment's: its C is the same for every interpreter) writes ``#line``
        directives, so gdb sees the ``.pyx`` lines."""
        try:
            import Cython  # noqa: F401
        except ImportError:
            pytest.skip("Cython is not installed (pip install '.[test]')")
        shutil.copyfile(CYTHON_SOURCE, self.directory / CYTHON_SOURCE.name)
        generate = [sys.executable, "-m", "cython", "-3", "--line-directives", CYTHON_SOURCE.name, "-o", "cyloop.c"]
        _check(self._run_here(generate), generate)
        return self._build("cyloop", CYTHON_SOURCE, [
            self._compiler("cc"), "-g", "-O0", "-shared", "-fPIC", f"-I{self.include}", "cyloop.c",
            "-o", f"cyloop{self.ext_suffix}"])


class NativeSets:
    """One :class:`NativeSet` per interpreter of this machine, each built once per test session."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._sets: dict[str, NativeSet] = {}

    def get(self, python: str | Path = sys.executable) -> NativeSet:
        """The set for ``python`` (an interpreter's path; default: the one running the tests)."""
        key = str(python)
        if key not in self._sets:
            if not Path(key).exists():
                pytest.skip(f"no interpreter {key}")
            self._sets[key] = NativeSet(key, self.base / f"natives-{len(self._sets)}")
        return self._sets[key]
