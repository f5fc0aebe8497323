"""The tests' custom PyTorch operators (``tests/torchext``), built as a user builds them
(``torch.utils.cpp_extension.load(..., extra_cflags=["-O0", "-g"])``, about a minute) once
per source, torch and Python: the build is kept in pytest's cache (``.pytest_cache``), in a
directory named after a hash of all three, and reused by later runs."""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from dap.natives import marker_line

HERE = Path(__file__).resolve().parent / "torchext"
SOURCE = HERE / "myops.cpp"
SCRIPT = HERE / "myops_main.py"
LIBRARY = "mixdbg_myops.so"
#: Marks a finished build (a build killed half-way is done again).
_DONE = ".built"


@dataclass(frozen=True)
class TorchExtension:
    """The built operators: the library, and the source its debug info names (a copy in
    the build directory, so that a checkout touching the original does not rebuild it)."""

    directory: Path
    library: Path
    source: Path
    script: Path = SCRIPT

    def line(self, marker: str) -> int:
        """The line of the C++ source carrying ``/* @marker */``."""
        return marker_line(self.source, marker)

    def script_line(self, marker: str) -> int:
        """The line of the driver script carrying ``# @marker``."""
        return marker_line(self.script, marker)

    def argv(self) -> list[str]:
        """The driver script and its argument: what ``python`` runs."""
        return [str(self.script), str(self.library)]


def _key() -> str:
    digest = hashlib.sha256()
    for part in (SOURCE.read_bytes(), SCRIPT.read_bytes(), importlib.metadata.version("torch").encode(),
                 sys.version.encode()):
        digest.update(part)
    return digest.hexdigest()[:16]


def build(cache: Path) -> TorchExtension:
    """The extension built under ``cache`` (built now if it is not there yet)."""
    directory = cache / f"myops-{_key()}"
    found = TorchExtension(directory, directory / LIBRARY, directory / SOURCE.name)
    if (directory / _DONE).is_file():
        return found
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    shutil.copyfile(SOURCE, found.source)
    done = subprocess.run([sys.executable, "-W", "ignore", str(SCRIPT), str(directory), "--build"],
                          capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        pytest.fail(f"building the custom operators failed: {done.stderr[-3000:]}")
    (directory / _DONE).touch()
    return found


@pytest.fixture(scope="session")
def torch_extension(request: pytest.FixtureRequest, torch_installed: None) -> TorchExtension:
    """The custom operators ``myops::scaled_add`` and ``vision_like::shrink``, built with
    ``-O0 -g`` (cached across runs: see the module doc)."""
    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("no C++ compiler: the custom operators cannot be built")
    return build(request.config.cache.mkdir("torchext"))


@pytest.fixture(scope="session")
def torch_cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment variables giving the session's torch tests one mixdbg cache of their own
    (the tensor layout is measured once for all of them, not read from the user's cache)."""
    return {"XDG_CACHE_HOME": str(tmp_path_factory.mktemp("mixdbg-cache"))}
