"""A real VS Code for the tests: code-server and headless Chromium, from ``../shared/vscode-real``
beside the repository (CI clones main with shared/ beside it). VS Code 1.100 (code-server 4.100.3)
for every test; the seed run and the pybind11 scenario also on 1.139 (code-server 4.139.1, in
a folder of its own) where ``MIXDBG_VSCODE_NEWER`` is set, as CI does.

Each test gets its own code-server (own port, settings, extensions folder) with only our
``.vsix`` installed, installed by ``mixdbg setup --install-extension`` as a user would; the
server is ended by its process group id when the test ends. With ``MIXDBG_REQUIRE_VSCODE=1``
(CI) a missing ``../shared/vscode-real`` or node fails these tests instead of skipping them.
"""

from __future__ import annotations

import functools
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
from typing import Any, NoReturn

import pytest

HERE = Path(__file__).resolve().parent
#: The memory view's editor: VS Code's "View Binary Data" opens the debuggee's memory in it.
HEX_EDITOR = HERE / "vendor" / "ms-vscode.hexeditor-1.11.1.vsix"
REPO = HERE.parents[1]
SHARED = REPO.parent / "shared" / "vscode-real"
R = Path(os.environ.get("R") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vscode-real")
SETUP_TIMEOUT = 900
SERVER_START_TIMEOUT = 90
REQUIRE = "MIXDBG_REQUIRE_VSCODE"


@dataclass(frozen=True)
class Build:
    """A VS Code that setup.sh installs: its version, the code-server release that brings it
    (setup.sh's ``CS_VERSION``) and the folder it goes to (setup.sh's ``R``)."""

    vscode: str
    code_server: str
    folder: Path


#: The versions the tests run on: the oldest the extension supports (``engines``), and a newer one.
BUILDS = {build.vscode: build for build in (
    Build("1.100", "4.100.3", R),
    Build("1.139", "4.139.1", Path(os.environ.get("R_139") or R.with_name(f"{R.name}-139"))),
)}
OLDEST = "1.100"


@dataclass(frozen=True)
class ServerOptions:
    """How a test's code-server differs from the usual one (pass as the ``code_server``
    fixture's indirect parameter): the VS Code version; whether the user settings set
    ``mixdbg.python`` to this interpreter; whether ``python3`` on the server's PATH is an
    interpreter without mixdbg for the extension host (see ``bare_python``); which other
    extensions are installed."""

    vscode: str = OLDEST
    mixdbg_python: bool = True
    bare_python3: bool = False
    #: Other extensions' ``.vsix`` files to install beside ours (e.g. the Hex Editor).
    extensions: tuple[Path, ...] = ()


#: Runs a test that takes ``code_server`` once on each VS Code of ``BUILDS``: the newer ones
#: only where ``MIXDBG_VSCODE_NEWER`` is set (CI sets it): their setup takes minutes that the
#: default suite does not have.
ON_EVERY_VSCODE = pytest.mark.parametrize(
    "code_server",
    [pytest.param(ServerOptions(vscode=v), id=f"vscode-{v}", marks=() if v == OLDEST else pytest.mark.skipif(
        not os.environ.get("MIXDBG_VSCODE_NEWER"), reason=f"VS Code {v}: set MIXDBG_VSCODE_NEWER=1 (CI does)"))
     for v in BUILDS],
    indirect=True)


@dataclass(frozen=True)
class CodeServer:
    """A running code-server: its URL, its VS Code's setup folder, its user settings file and
    the folder for this test's screenshots."""

    url: str
    folder: Path
    settings: Path
    shots: Path


def unavailable(reason: str) -> NoReturn:
    """Skips the test because ``reason`` keeps it from running here, or fails it under
    ``MIXDBG_REQUIRE_VSCODE=1``, so that CI cannot pass without running it."""
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{reason} ({REQUIRE}=1: these tests must run here)")
    pytest.skip(reason)


def bare_python(path: Path) -> Path:
    """Writes at ``path`` an interpreter that cannot import mixdbg: this one, without
    site-packages and ignoring PYTHONPATH."""
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "$@"\n')
    path.chmod(0o755)
    return path


@functools.cache
def set_up(build: Build) -> Path:
    """``build``'s folder, after running setup.sh into it unless it holds that code-server already."""
    package = build.folder / "cs" / "node_modules" / "code-server" / "package.json"
    ready = (build.folder / "cs.sh").is_file() and (build.folder / "drive" / "node_modules" / "playwright-core").is_dir()
    if not (ready and package.is_file() and json.loads(package.read_text())["version"] == build.code_server):
        done = subprocess.run(["bash", str(SHARED / "setup.sh")],
                              env={**os.environ, "R": str(build.folder), "CS_VERSION": build.code_server},
                              capture_output=True, text=True, timeout=SETUP_TIMEOUT, check=False)
        assert done.returncode == 0, f"{SHARED / 'setup.sh'} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return build.folder


@pytest.fixture(scope="session")
def vscode_real() -> Path:
    """The folder setup.sh installed code-server (VS Code 1.100), Chromium's driver and vsce
    into (set up if needed)."""
    if not SHARED.is_dir():
        unavailable(f"no real VS Code to drive: {SHARED} is absent (CI has it beside the repository)")
    if shutil.which("node") is None:
        unavailable("node is not on PATH: the VS Code driver is a node script")
    return set_up(BUILDS[OLDEST])


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


def _server_command(folder: Path, state: Path) -> Path:
    """A code-server CLI (the build's ``cs.sh``) with this test's state folders."""
    cli = state / "code-server"
    cli.write_text(f'#!/bin/sh\nexec "{folder / "cs.sh"}" --user-data-dir "{state / "user"}" '
                   f'--extensions-dir "{state / "extensions"}" "$@"\n')
    cli.chmod(0o755)
    return cli


def _home_with_bare_python3(state: Path) -> dict[str, str]:
    """The environment changes that make ``python3`` an interpreter without mixdbg for the
    extension host. VS Code's server takes PATH from the user's login shell (``$SHELL -i -l``,
    once per extension host), so this is a home whose ``.profile`` puts it first, as a user's
    own profile would."""
    home, bin_dir = state / "home", state / "bin"
    home.mkdir()
    bin_dir.mkdir()
    bare_python(bin_dir / "python3")
    (home / ".profile").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    return {"HOME": str(home), "SHELL": "/bin/sh"}


@pytest.fixture
def code_server(vscode_real: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[CodeServer]:
    """A code-server of this test's own, with the mixdbg extension installed and, unless the
    test's ``ServerOptions`` say otherwise, VS Code 1.100 and ``mixdbg.python`` set to this
    interpreter (the one mixdbg is installed in)."""
    options: ServerOptions = getattr(request, "param", ServerOptions())
    folder = set_up(BUILDS[options.vscode])
    state = tmp_path / "code-server"
    user = state / "user"
    (user / "User").mkdir(parents=True)
    # (1.139 opens a Chat side bar by default: hidden, for the views' room; trees' sticky rows
    # copy CALL STACK rows and lie over the top of the list: off, so a row is found once)
    settings = {"workbench.startupEditor": "none", "security.workspace.trust.enabled": False,
                "extensions.autoCheckUpdates": False, "workbench.secondarySideBar.defaultVisibility": "hidden",
                "chat.disableAIFeatures": True, "workbench.tree.enableStickyScroll": False}
    if options.mixdbg_python:
        settings["mixdbg.python"] = sys.executable
    (user / "User" / "settings.json").write_text(json.dumps(settings))
    cli = _server_command(folder, state)
    env = {**os.environ, **(_home_with_bare_python3(state) if options.bare_python3 else {})}
    installed = subprocess.run([sys.executable, "-m", "mixdbg", "setup", "--install-extension", "--editor", str(cli)],
                               capture_output=True, text=True, timeout=180, check=False)
    assert installed.returncode == 0, installed.stderr
    for extension in options.extensions:
        subprocess.run([str(cli), "--install-extension", str(extension), "--force"], capture_output=True, text=True,
                       timeout=180, check=True)
    port = _free_port()
    log = state / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [str(cli), "--bind-addr", f"127.0.0.1:{port}", "--auth", "none", "--disable-telemetry",
             "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, server, log)
        shots = Path(os.environ.get("MIXDBG_VSCODE_SHOTS") or tmp_path / "shots") / request.node.name
        yield CodeServer(url, folder, user / "User" / "settings.json", shots)
    finally:
        _end(server)


def drive(server: CodeServer, driver: str, folder: Path, timeout: float, **arguments: Any) -> dict[str, Any]:
    """Run a driver script of this folder against ``server`` with ``folder`` open; the steps it saw.

    The driver's log goes to stderr (shown by pytest on failure); its last stdout line is JSON.
    """
    payload = {"R": str(server.folder), "url": server.url, "folder": str(folder), "shots": str(server.shots), **arguments}
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
