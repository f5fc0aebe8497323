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
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
#: The C API module's source, shared with the terminal tests.
CAPI_SOURCE = HERE.parent / "cext" / "mixdbg_testext.c"
GEOM_SOURCE = HERE / "native" / "geom.cpp"
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
    """One compiled module: its import name, the shared library, and the source copy its
    debug info names (the ``.c``, ``.cpp`` or ``.pyx`` in the build directory)."""

    name: str
    library: Path
    source: Path

    def line(self, marker: str) -> int:
        """The 1-based line of the source carrying the marker."""
        return marker_line(self.source, marker)


def _compiler(name: str) -> str:
    """A compiler from PATH, or skip."""
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"no {name} compiler on PATH")
    return found


def _run(command: list[str], cwd: Path) -> None:
    """Run one build step; a failure fails the test with the tool's own message."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)
    if done.returncode != 0:
        pytest.fail(f"build step failed: {' '.join(command)}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


class NativeSet:
    """The three modules and the driver scripts for one interpreter, in one directory
    (which is also the scripts' ``sys.path[0]``). Each module is built on first access."""

    def __init__(self, python: str | Path, directory: Path) -> None:
        self.python = str(python)
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        facts = subprocess.run([self.python, "-c", _FACTS], capture_output=True, text=True, check=True, timeout=60)
        self.ext_suffix, self.include, self.version = json.loads(facts.stdout)
        for script in SCRIPTS.glob("*.py"):
            shutil.copyfile(script, directory / script.name)

    def script(self, name: str) -> Path:
        """The copy of driver script ``name`` (e.g. ``geom_main.py``) in the build directory."""
        path = self.directory / name
        if not path.is_file():
            raise FileNotFoundError(f"no driver script {name} in {SCRIPTS}")
        return path

    def line(self, name: str, marker: str) -> int:
        """The line of ``marker`` in the file ``name`` of the build directory (a driver script
        or a module's source)."""
        return marker_line(self.directory / name, marker)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with the build directory first on
        PYTHONPATH, so that the modules import from anywhere."""
        env = dict(os.environ if base is None else base)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.directory), env.get("PYTHONPATH")]))
        return env

    def _copy(self, source: Path) -> Path:
        target = self.directory / source.name
        shutil.copyfile(source, target)
        return target

    @cached_property
    def capi(self) -> NativeModule:
        """The C API module ``mixdbg_testext`` (``tests/cext/mixdbg_testext.c``)."""
        source = self._copy(CAPI_SOURCE)
        library = self.directory / f"mixdbg_testext{self.ext_suffix}"
        _run([_compiler("cc"), "-g", "-O0", "-shared", "-fPIC", f"-I{self.include}", source.name,
              "-o", library.name], self.directory)
        return NativeModule("mixdbg_testext", library, source)

    @cached_property
    def geom(self) -> NativeModule:
        """The pybind11 module ``geom`` (``tests/dap/native/geom.cpp``); pybind11's headers
        are the test environment's (they are the same for every interpreter)."""
        try:
            import pybind11
        except ImportError:
            pytest.skip("pybind11 is not installed (pip install '.[test]')")
        source = self._copy(GEOM_SOURCE)
        library = self.directory / f"geom{self.ext_suffix}"
        _run([_compiler("c++"), "-g", "-O0", "-std=c++17", "-shared", "-fPIC", f"-I{self.include}",
              f"-I{pybind11.get_include()}", source.name, "-o", library.name], self.directory)
        return NativeModule("geom", library, source)

    @cached_property
    def cython(self) -> NativeModule:
        """The Cython module ``cyloop`` (``tests/dap/native/cyloop.pyx``). Cython (the test
        environment's) writes ``#line`` directives, so gdb sees the ``.pyx`` lines."""
        try:
            import Cython  # noqa: F401
        except ImportError:
            pytest.skip("Cython is not installed (pip install '.[test]')")
        source = self._copy(CYTHON_SOURCE)
        library = self.directory / f"cyloop{self.ext_suffix}"
        _run([sys.executable, "-m", "cython", "-3", "--line-directives", source.name, "-o", "cyloop.c"],
             self.directory)
        _run([_compiler("cc"), "-g", "-O0", "-shared", "-fPIC", f"-I{self.include}", "cyloop.c",
              "-o", library.name], self.directory)
        return NativeModule("cyloop", library, source)


class NativeSets:
    """One :class:`NativeSet` per interpreter, each built once per test session."""

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
