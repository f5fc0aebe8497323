"""A real VS Code for the tests: code-server (VS Code 1.100) and headless Chromium, from
``../shared/vscode-real`` beside the repository (CI clones main with shared/ beside it).

Each test gets its own code-server (own port, settings, extensions folder) with only our
``.vsix`` installed, installed by ``mixdbg setup --install-extension`` as a user would; the
server is ended by its process group id when the test ends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SHARED = REPO.parent / "shared" / "vscode-real"
R = Path(os.environ.get("R") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vscode-real")
SETUP_TIMEOUT = 900
SERVER_START_TIMEOUT = 90


@dataclass(frozen=True)
class CodeServer:
    """A running code-server: its URL, its user settings file and the folder for this test's output."""

    url: str
    settings: Path
    shots: Path


@pytest.fixture(scope="session")
def vscode_real() -> Path:
    """The folder setup.sh installed code-server, Chromium's driver and vsce into (set up if needed)."""
    if not SHARED.is_dir():
        pytest.skip(f"no real VS Code to drive: {SHARED} is absent (CI has it beside the repository)")
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH: the VS Code driver is a node script")
    if not (R / "cs.sh").is_file() or not (R / "drive" / "node_modules" / "playwright-core").is_dir():
        done = subprocess.run(["bash", str(SHARED / "setup.sh")], env={**os.environ, "R": str(R)},
                              capture_output=True, text=True, timeout=SETUP_TIMEOUT, check=False)
        assert done.returncode == 0, f"{SHARED / 'setup.sh'} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return R


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_healthy(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"code-server exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"code-server did not answer on {url} within {SERVER_START_TIMEOUT} s")


def _end(server: subprocess.Popen[bytes]) -> None:
    """End code-server and what it started (its own process group: extension host, adapters)."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            return
        try:
            server.wait(wait)
            time.sleep(0.5)  # let the group's other members go too
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def code_server(vscode_real: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[CodeServer]:
    """A code-server of this test's own, with the mixdbg extension installed and
    ``mixdbg.python`` set to this interpreter (the one mixdbg is installed in)."""
    state = tmp_path / "code-server"
    user, extensions = state / "user", state / "extensions"
    (user / "User").mkdir(parents=True)
    (user / "User" / "settings.json").write_text(json.dumps({
        "mixdbg.python": sys.executable, "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": False, "extensions.autoCheckUpdates": False,
    }))
    cli = state / "code-server"
    cli.write_text(f'#!/bin/sh\nexec "{vscode_real}/cs.sh" --user-data-dir "{user}" '
                   f'--extensions-dir "{extensions}" "$@"\n')
    cli.chmod(0o755)
    installed = subprocess.run([sys.executable, "-m", "mixdbg", "setup", "--install-extension", "--editor", str(cli)],
                               capture_output=True, text=True, timeout=180, check=False)
    assert installed.returncode == 0, installed.stderr
    port = _free_port()
    log = state / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [str(cli), "--bind-addr", f"127.0.0.1:{port}", "--auth", "none", "--disable-telemetry",
             "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, server, log)
        shots = Path(os.environ.get("MIXDBG_VSCODE_SHOTS") or tmp_path / "shots") / request.node.name
        yield CodeServer(url, user / "User" / "settings.json", shots)
    finally:
        _end(server)


def drive(server: CodeServer, driver: str, folder: Path, timeout: float, **arguments: Any) -> dict[str, Any]:
    """Run a driver script of this folder against ``server`` with ``folder`` open; the steps it saw.

    The driver's log goes to stderr (shown by pytest on failure); its last stdout line is JSON.
    """
    payload = {"R": str(R), "url": server.url, "folder": str(folder), "shots": str(server.shots), **arguments}
    done = subprocess.run(["node", str(HERE / driver), json.dumps(payload)], capture_output=True, text=True,
                          timeout=timeout, check=False, cwd=HERE)
    sys.stderr.write(done.stderr)
    print(f"screenshots: {server.shots}")
    lines = done.stdout.strip().splitlines()
    assert lines, f"{driver} printed nothing (exit code {done.returncode})"
    result: dict[str, Any] = json.loads(lines[-1])
    assert result["ok"], f"{driver}: {result.get('error')}; steps: {json.dumps(result['steps'], indent=1)}"
    steps: dict[str, Any] = result["steps"]
    return steps


def marker_line(path: Path, marker: str) -> int:
    """The 1-based line of ``path`` that carries the comment ``@marker``."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.rstrip().endswith(f"@{marker}"):
            return number
    raise AssertionError(f"no @{marker} in {path}")
