"""Install the mixdbg VS Code extension (the ``.vsix`` shipped in this package) with editor CLIs.

The extension is built from ``editors/vscode/`` and committed as ``mixdbg/editors/mixdbg.vsix``,
so ``pip install mixdbg`` carries it and no Node is needed on the user's machine.

Every editor of the VS Code family has a CLI that installs a ``.vsix``: ``code``,
``code-insiders``, ``codium``, ``cursor``, ``code-server``. In a terminal of a Remote-SSH
window, ``code`` on PATH is VS Code's remote CLI (it talks to the window through
``$VSCODE_IPC_HOOK_CLI``), and it installs into the VS Code server on the remote machine,
where the debug adapter runs. In a plain SSH shell there is no such CLI, but the servers that
Remote-SSH windows of VS Code, VS Code Insiders, VSCodium and Cursor installed on this machine
have their own CLI (``~/.vscode-server/cli/servers/Stable-COMMIT/server/bin/code-server``, or
``~/.vscode-server/bin/COMMIT/bin/code-server`` before VS Code 1.82): the newest of each
installs into that server's extensions, which its Remote-SSH windows use.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from mixdbg.errors import NotFoundError, UnavailableError

EDITOR_CLIS = ("code", "code-insiders", "codium", "cursor", "code-server")
#: Remote-SSH servers under the home directory: their folder, and their CLI's name.
REMOTE_SERVERS = ((".vscode-server", "code-server"), (".vscode-server-insiders", "code-server-insiders"),
                  (".vscodium-server", "codium-server"), (".cursor-server", "cursor-server"))
#: Where a server keeps its CLI, below its folder: today's layout, and that before VS Code 1.82.
SERVER_LAYOUTS = ("cli/servers/*/server/bin", "bin/*/bin")
CLI_TIMEOUT = 120.0
INSTALLED = "installed"
ALREADY = "already installed"


@dataclass(frozen=True)
class Extension:
    """The shipped ``.vsix`` and the identity VS Code gives it (``publisher.name``) and its version."""

    vsix: Path
    identifier: str
    version: str


@dataclass(frozen=True)
class EditorCli:
    """One editor CLI found: how the user knows it, and the executable."""

    name: str
    path: str
    remote: bool = False
    #: A Remote-SSH server's own CLI (found under the home directory, not on PATH).
    server: bool = False

    def label(self) -> str:
        """How messages name it."""
        where = ""
        if self.server:
            where = ", a Remote-SSH server's CLI: installs for the Remote-SSH windows on this machine"
        elif self.remote:
            where = ", a Remote-SSH window's remote CLI: installs on this machine's server"
        return f"{self.name} ({self.path}{where})"


@dataclass(frozen=True)
class Outcome:
    """What happened with one CLI: ``INSTALLED`` or ``ALREADY``."""

    cli: EditorCli
    action: str


def shipped_extension() -> Extension:
    """The ``.vsix`` inside this installation of mixdbg, with its identifier and version."""
    vsix = Path(str(resources.files("mixdbg").joinpath("editors", "mixdbg.vsix")))
    if not vsix.is_file():
        raise NotFoundError(f"this installation of mixdbg has no VS Code extension ({vsix} is missing)",
                            hint="reinstall mixdbg, or build it: cd editors/vscode && npm ci && npx vsce package")
    with zipfile.ZipFile(vsix) as archive:
        manifest = json.loads(archive.read("extension/package.json"))
    return Extension(vsix, f"{manifest['publisher']}.{manifest['name']}", str(manifest["version"]))


def find_editor_clis(editor: str | None = None) -> list[EditorCli]:
    """The editor CLIs to use: ``editor`` (a name on PATH or a path) when given, else every one
    of ``EDITOR_CLIS`` on PATH (one per executable) and, unless one of those is a remote CLI,
    the newest CLI of each Remote-SSH server in the home directory. Raises UnavailableError
    when there is none."""
    if editor is not None:
        path = shutil.which(editor)
        if path is None:
            raise UnavailableError(f"editor CLI {editor!r} not found (not an executable, nor on PATH)")
        return [EditorCli(Path(editor).name, path, _is_remote_cli(Path(editor).name, path))]
    found: dict[str, EditorCli] = {}
    for name in EDITOR_CLIS:
        path = shutil.which(name)
        if path is not None:
            found.setdefault(os.path.realpath(path), EditorCli(name, path, _is_remote_cli(name, path)))
    if not any(cli.remote for cli in found.values()):
        for cli in remote_servers(Path.home()):
            found.setdefault(os.path.realpath(cli.path), cli)
    if not found:
        raise UnavailableError(f"no editor CLI on PATH (looked for {', '.join(EDITOR_CLIS)}) and no Remote-SSH "
                               f"server in {Path.home()}",
                               hint="name one with --editor PATH, or in the editor: Extensions view, '...' menu, "
                                    f"Install from VSIX..., and pick {shipped_extension().vsix}")
    return list(found.values())


def _is_remote_cli(name: str, path: str) -> bool:
    """Whether a CLI on PATH is a Remote-SSH window's remote CLI: it lives in the server's
    ``remote-cli`` folder (any editor of the family), or is ``code`` while VS Code's IPC hook is set."""
    in_server = f"{os.sep}remote-cli{os.sep}" in os.path.realpath(path)
    return in_server or (name == "code" and bool(os.environ.get("VSCODE_IPC_HOOK_CLI")))


def remote_servers(home: Path) -> list[EditorCli]:
    """The newest CLI of each Remote-SSH server installed under ``home`` (see the module's doc)."""
    servers = []
    for folder, name in REMOTE_SERVERS:
        candidates = [path for layout in SERVER_LAYOUTS for path in (home / folder).glob(f"{layout}/{name}")
                      if os.access(path, os.X_OK)]
        if candidates:
            newest = max(candidates, key=lambda path: path.stat().st_mtime)
            servers.append(EditorCli(name, str(newest), remote=True, server=True))
    return servers


class InstallError(UnavailableError):
    """An editor CLI could not install the extension; ``outcomes`` holds what the others did."""

    def __init__(self, message: str, outcomes: list[Outcome]) -> None:
        super().__init__(message, hint="run that editor's CLI by hand to see why, or install the .vsix "
                                       "from its Extensions view (Install from VSIX...)")
        self.outcomes = outcomes


def install(extension: Extension, clis: Sequence[EditorCli]) -> list[Outcome]:
    """Install ``extension`` with each CLI unless it already has this version.

    Every CLI is tried; if any failed, UnavailableError names them after the others are done
    (the outcomes of those that worked are in its ``outcomes``).
    """
    outcomes: list[Outcome] = []
    failures: list[str] = []
    for cli in clis:
        try:
            if installed_version(cli, extension.identifier) == extension.version:
                outcomes.append(Outcome(cli, ALREADY))
                continue
            _run(cli, ["--install-extension", str(extension.vsix), "--force"])
            outcomes.append(Outcome(cli, INSTALLED))
        except UnavailableError as err:
            failures.append(err.message)
    if failures:
        raise InstallError("; ".join(failures), outcomes)
    return outcomes


def installed_version(cli: EditorCli, identifier: str) -> str | None:
    """The version of ``identifier`` that ``cli``'s editor has, or None."""
    listing = _run(cli, ["--list-extensions", "--show-versions"])
    for line in listing.splitlines():
        name, _, version = line.strip().partition("@")
        if name.lower() == identifier.lower():
            return version
    return None


def _run(cli: EditorCli, args: list[str]) -> str:
    """Run the CLI; its stdout, or UnavailableError with the last line it printed."""
    try:
        done = subprocess.run([cli.path, *args], capture_output=True, text=True, timeout=CLI_TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise UnavailableError(f"{cli.label()} {args[0]} failed: {err}") from err
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or f"exit code {done.returncode}").splitlines()[-1]
        raise UnavailableError(f"{cli.label()} {args[0]} failed: {last}")
    return done.stdout
