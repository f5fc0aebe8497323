"""Fixtures shared by all tests: the compiled C extension and scripts that use it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

CEXT_SOURCE = Path(__file__).parent / "cext" / "mixdbg_testext.c"


@dataclass(frozen=True)
class CExtension:
    """The tests' own C extension, built with ``-g -O0`` into a temporary directory."""

    directory: Path
    library: Path
    source: Path

    def line(self, marker: str) -> int:
        """The 1-based line of the source carrying ``/* @marker */``."""
        for number, text in enumerate(self.source.read_text().splitlines(), start=1):
            if f"/* @{marker} */" in text:
                return number
        raise KeyError(marker)

    def env(self) -> dict[str, str]:
        """An environment in which ``import mixdbg_testext`` works."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.directory), env.get("PYTHONPATH")]))
        return env


def build_cext(out_dir: Path) -> CExtension:
    """Compile the test extension with debug info and no optimisation."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler on PATH")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    library = out_dir / f"mixdbg_testext{suffix}"
    source = out_dir / CEXT_SOURCE.name
    shutil.copyfile(CEXT_SOURCE, source)
    include = sysconfig.get_paths()["include"]
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
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("torch is not installed")
