"""Install the mixdbg VS Code extension (the ``.vsix`` shipped in this package) with editor CLIs.

The extension is built from ``editors/vscode/`` and committed as ``mixdbg/editors/mixdbg.vsix``,
so ``pip install mixdbg`` carries it and no Node is needed on the user's machine.

Every editor of the VS Code family has a CLI that installs a ``.vsix``: ``code``,
``code-insiders``, ``codium``, ``cursor``, ``code-server``. In a terminal of a Remote-SSH
window, ``code`` on PATH is VS Code's remote CLI (it talks to the window through
``$VSCODE_IPC_HOOK_CLI``), and it installs into the VS Code server on the remote machine,
where the debug adapter runs.
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

    def label(self) -> str:
        """How messages name it."""
        where = ", VS Code's remote CLI: installs on this machine's VS Code server" if self.remote else ""
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
    of ``EDITOR_CLIS`` on PATH (one per executable). Raises UnavailableError when there is none."""
    remote = bool(os.environ.get("VSCODE_IPC_HOOK_CLI"))
    if editor is not None:
        path = shutil.which(editor)
        if path is None:
            raise UnavailableError(f"editor CLI {editor!r} not found (not an executable, nor on PATH)")
        return [EditorCli(Path(editor).name, path, remote and Path(editor).name == "code")]
    found: dict[str, EditorCli] = {}
    for name in EDITOR_CLIS:
        path = shutil.which(name)
        if path is not None:
            found.setdefault(os.path.realpath(path), EditorCli(name, path, remote and name == "code"))
    if not found:
        raise UnavailableError(f"no editor CLI on PATH (looked for {', '.join(EDITOR_CLIS)})",
                               hint="name one with --editor PATH, or in the editor: Extensions view, '...' menu, "
                                    f"Install from VSIX..., and pick {shipped_extension().vsix}")
    return list(found.values())


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
