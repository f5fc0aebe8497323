"""A non-editable install (wheel, and wheel built from the sdist) ships and finds the templates."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEMPLATE_FILES = sorted(p.name for p in (REPO / "vscode-templates").iterdir()
                        if p.suffix in (".jsonc", ".json") or p.name == "__init__.py")

CHECK = """
import json, sys
from importlib import resources
from pathlib import Path
import mixdbg
from mixdbg import editor_install, launch_gen
site = Path(sys.argv[1]).resolve()
assert editor_install.shipped_extension().vsix.resolve().is_relative_to(site)
assert Path(mixdbg.__file__).resolve().is_relative_to(site), mixdbg.__file__
folder = resources.files("mixdbg.vscode_templates")
assert Path(str(folder)).resolve().is_relative_to(site), folder
result = launch_gen.ensure_setup(Path(sys.argv[2]), sys.executable, "127.0.0.1", 5678)
print(json.dumps(sorted(p.name for p in folder.iterdir() if not p.name.startswith("__pycache__"))))
print(json.dumps(result.to_json()))
"""


def _build(source: Path, out: Path, kind: str) -> Path:
    """Build a wheel or sdist with setuptools' PEP 517 hooks, without network or isolation."""
    done = subprocess.run(
        [sys.executable, "-c", f"from setuptools import build_meta as b; print(b.build_{kind}({str(out)!r}))"],
        cwd=source, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return out / done.stdout.strip().splitlines()[-1]


def _copy_project(destination: Path) -> Path:
    """Copy what packaging needs, so building never writes into the work tree."""
    shutil.copytree(REPO, destination, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "tests", "benchmarks"))
    return destination


@pytest.mark.timeout(120)
def test_wheel_and_sdist_ship_templates_that_an_installed_mixdbg_finds(tmp_path: Path) -> None:
    pytest.importorskip("setuptools", reason="building without network needs setuptools installed")
    source = _copy_project(tmp_path / "src")
    dist = tmp_path / "dist"
    dist.mkdir()

    sdist = _build(source, dist, "sdist")
    with tarfile.open(sdist) as archive:
        shipped = {Path(n).name for n in archive.getnames() if "/vscode-templates/" in n}
    assert set(TEMPLATE_FILES) <= shipped

    unpacked = tmp_path / "from-sdist"
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    wheel = _build(next(unpacked.iterdir()), dist, "wheel")
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = {Path(n).name for n in archive.namelist() if n.startswith("mixdbg/vscode_templates/")}
        names = set(archive.namelist())
    assert set(TEMPLATE_FILES) <= in_wheel
    assert {"mixdbg/editors/mixdbg.vsix", "mixdbg/dap/configuration.json"} <= names, "pip install carries the extension"

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
                    "--target", str(site), str(wheel)], check=True, timeout=90, capture_output=True)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # PYTHONPATH puts the installed copy ahead of the editable install of the work tree.
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", CHECK, str(site), str(workspace)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    listed, report = (json.loads(line) for line in done.stdout.splitlines())
    assert set(TEMPLATE_FILES) <= set(listed)
    assert report["created"] and (workspace / ".vscode" / "launch.json").is_file()
