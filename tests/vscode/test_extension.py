"""The VS Code extension as built and shipped: its attributes come from mixdbg dap's one source,
the .vsix in the package holds only what it should and is built from these sources, and
``mixdbg setup --install-extension`` installs it with a real editor CLI (code-server's)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from vscode_real import REPO, REQUIRE, unavailable, vscode_real

import mixdbg
from mixdbg import debug_schema, launch_gen

__all__ = ["vscode_real"]  # a fixture, used by name

EXTENSION = REPO / "editors" / "vscode"
SHIPPED = REPO / "mixdbg" / "editors" / "mixdbg.vsix"
VSIX_FILES = {
    "extension.vsixmanifest", "[Content_Types].xml", "extension/package.json", "extension/readme.md",
    "extension/LICENSE.txt", "extension/out/extension.js", "extension/out/configuration.js",
    "extension/out/interpreter.js", "extension/out/machine.js", "extension/out/picker.js", "extension/out/cli.js",
}


def manifest() -> dict[str, object]:
    loaded: dict[str, object] = json.loads((EXTENSION / "package.json").read_text())
    return loaded


def mixdbg_debugger(package: dict[str, object]) -> dict[str, object]:
    contributes = package["contributes"]
    assert isinstance(contributes, dict)
    found: dict[str, object] = next(d for d in contributes["debuggers"] if d["type"] == "mixdbg")
    return found


def test_package_json_attributes_are_generated_from_configuration_json() -> None:
    generated = debug_schema.configuration_attributes(debug_schema.dap_arguments())
    assert mixdbg_debugger(manifest())["configurationAttributes"] == generated
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH: the generator itself was not run")
    done = subprocess.run(["node", "scripts/gen-attributes.js", "--check"], cwd=EXTENSION, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_the_extension_contributes_what_a_vscode_user_expects() -> None:
    package = manifest()
    debugger = mixdbg_debugger(package)
    assert package["version"] == mixdbg.__version__
    assert package["engines"] == {"vscode": "^1.100.0"}
    contributes = package["contributes"]
    assert isinstance(contributes, dict)
    assert [b["language"] for b in contributes["breakpoints"]] == ["python", "c", "cpp", "cuda-cpp"]
    assert debugger["label"] and debugger["initialConfigurations"] and debugger["configurationSnippets"]
    for configuration in debugger["initialConfigurations"]:  # type: ignore[attr-defined]
        schema = debug_schema.effective_schema("mixdbg", configuration["request"],
                                               debug_schema.dap_arguments()[configuration["request"]])
        pytest.importorskip("jsonschema").validate(configuration, schema)
    commands = {c["command"] for c in contributes["commands"]}
    assert {"mixdbg.checkMachine", "mixdbg.pickProcess"} <= commands
    locked = json.loads((EXTENSION / "package-lock.json").read_text())["packages"]
    assert locked["node_modules/@vscode/vsce"]["version"].startswith("3.")
    assert locked["node_modules/@types/vscode"]["version"].startswith("1.100.")
    assert locked["node_modules/@types/node"]["version"].startswith("20.")


def test_shipped_vsix_holds_only_what_it_should() -> None:
    with zipfile.ZipFile(SHIPPED) as archive:
        assert set(archive.namelist()) == VSIX_FILES
        shipped_manifest = json.loads(archive.read("extension/package.json"))
    assert shipped_manifest == manifest(), "the .vsix is older than editors/vscode/package.json: rebuild it"
    assert SHIPPED.stat().st_size < 64 * 1024


def test_initial_configurations_are_what_mixdbg_setup_writes() -> None:
    """VS Code writes ``initialConfigurations`` into a launch.json it creates: the same entries
    as ``mixdbg setup --kind mixdbg`` (current file, module, attach by picker)."""
    setup_writes = launch_gen.generate_entries("", "", 0, kind=launch_gen.KIND_MIXDBG)
    assert mixdbg_debugger(manifest())["initialConfigurations"] == setup_writes


def extension_sources(into: Path) -> Path:
    """A copy of editors/vscode without what a build makes, beside the one file of the repository
    it reads (mixdbg/dap/configuration.json); the copy's editors/vscode folder."""
    copy = into / "editors" / "vscode"
    shutil.copytree(EXTENSION, copy, ignore=shutil.ignore_patterns("node_modules", "out", "*.vsix"))
    (into / "mixdbg" / "dap").mkdir(parents=True)
    shutil.copy(REPO / "mixdbg" / "dap" / "configuration.json", into / "mixdbg" / "dap")
    return copy


def run_in(folder: Path, command: list[str]) -> None:
    """Runs ``command`` in ``folder``; fails the test with its output's end if it fails."""
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_documented_build_works_offline_and_gives_the_shipped_vsix(tmp_path: Path) -> None:
    """The README's build, ``npm ci && npx vsce package`` in editors/vscode, run with no network
    (``unshare -n``) on a copy of the sources, gives the files of the shipped .vsix one by one;
    ``tsc --strict`` passes there.

    Offline, npm takes the packages from its cache (.npmrc: prefer-offline). A fresh CI machine
    has a cold cache, so a networked ``npm ci`` in a separate scratch copy warms it first.
    """
    if shutil.which("npm") is None:
        unavailable("npm is not on PATH: the extension is built with it")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not on PATH: cannot build without network")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True, timeout=30, check=False)
    if probe.returncode != 0:
        pytest.skip(f"unshare -n is not permitted here (needs root or user namespaces): {probe.stderr.strip()}")
    run_in(extension_sources(tmp_path / "warm"), ["npm", "ci"])
    offline = extension_sources(tmp_path / "offline")
    run_in(offline, ["unshare", "-n", "sh", "-c", "npm ci && npx vsce package"])
    run_in(offline, ["unshare", "-n", "npx", "tsc", "--noEmit", "--strict", "-p", "."])
    built = offline / f"mixdbg-{manifest()['version']}.vsix"
    with zipfile.ZipFile(built) as fresh, zipfile.ZipFile(SHIPPED) as shipped:
        assert sorted(fresh.namelist()) == sorted(shipped.namelist())
        stale = [n for n in fresh.namelist() if fresh.read(n) != shipped.read(n)]
    assert not stale, f"mixdbg/editors/mixdbg.vsix is stale ({stale}): cd editors/vscode && npm run vsix"


def test_ci_fails_instead_of_skipping_when_vscode_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="node is not on PATH"):
        unavailable("node is not on PATH")
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match=f"node is not on PATH \\({REQUIRE}=1"):
        unavailable("node is not on PATH")


def run_install(path: str, *extra: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``mixdbg setup --install-extension`` with only ``path`` (and the system's bin) on PATH,
    and ``home`` as the home directory (where Remote-SSH servers are looked for) when given."""
    env = {**os.environ, "PATH": f"{path}:/usr/bin:/bin", **({"HOME": str(home)} if home else {})}
    env.pop("VSCODE_IPC_HOOK_CLI", None)
    return subprocess.run([sys.executable, "-m", "mixdbg", "setup", "--install-extension", *extra], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
@pytest.mark.vscode
@pytest.mark.timeout(600)
def test_install_extension_with_code_servers_cli(vscode_real: Path, tmp_path: Path) -> None:
    # Given code-server's CLI on PATH, with state folders of this test's own
    bin_dir, extensions = tmp_path / "bin", tmp_path / "extensions"
    bin_dir.mkdir()
    cli = bin_dir / "code-server"
    cli.write_text(f'#!/bin/sh\nexec "{vscode_real}/cs.sh" --user-data-dir "{tmp_path / "user"}" '
                   f'--extensions-dir "{extensions}" "$@"\n')
    cli.chmod(0o755)
    # When setup installs the extension: it says so, and code-server lists it
    first = run_install(str(bin_dir))
    assert first.returncode == 0 and first.stderr == "", first.stderr
    assert first.stdout.startswith(f"code-server ({cli}): installed mixdbg.mixdbg {mixdbg.__version__}")
    listed = subprocess.run([str(cli), "--list-extensions", "--show-versions"], capture_output=True, text=True,
                            timeout=120, check=True).stdout.split()
    assert f"mixdbg.mixdbg@{mixdbg.__version__}" in listed
    # Then a second run has nothing to do, and says so (also as JSON)
    second = run_install(str(bin_dir))
    assert second.returncode == 0 and "already installed, nothing to do" in second.stdout
    report = json.loads(run_install(str(bin_dir), "--json").stdout)
    assert report["editors"] == [{"cli": "code-server", "path": str(cli), "remote": False, "server": False,
                                  "action": "already installed"}]


def test_install_extension_errors_are_one_line_with_an_exit_code(tmp_path: Path) -> None:
    # No editor CLI on PATH: 69, and the hint names the .vsix to install by hand
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_install(str(empty), home=empty)
    assert done.returncode == 69 and done.stdout == ""
    assert done.stderr.startswith("mixdbg: no editor CLI on PATH") and "mixdbg.vsix" in done.stderr
    # A CLI that fails: 69, its last line quoted
    broken = tmp_path / "bin" / "codium"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'cannot reach the extension gallery' >&2\nexit 3\n")
    broken.chmod(0o755)
    done = run_install(str(broken.parent))
    assert done.returncode == 69 and "cannot reach the extension gallery" in done.stderr.splitlines()[0]
    assert "Traceback" not in done.stderr
    # --dry-run and --editor are for one mode each
    assert run_install(str(empty), "--dry-run").returncode == 64
    assert subprocess.run([sys.executable, "-m", "mixdbg", "setup", "--editor", "code", "--workspace", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False).returncode == 64


def test_under_remote_ssh_code_is_vscodes_remote_cli(tmp_path: Path) -> None:
    """In a Remote-SSH terminal, `code` on PATH is the remote CLI ($VSCODE_IPC_HOOK_CLI set): it
    installs on the remote side, and setup says so."""
    bin_dir = tmp_path / "remote-cli"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    fake = bin_dir / "code"
    fake.write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "VSCODE_IPC_HOOK_CLI": str(tmp_path / "vscode-ipc.sock")}
    done = subprocess.run([sys.executable, "-m", "mixdbg", "setup", "--install-extension"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "a Remote-SSH window's remote CLI: installs on this machine's server" in done.stdout
    assert calls.read_text().splitlines() == ["--list-extensions --show-versions",
                                              f"--install-extension {SHIPPED} --force"]


def fake_cli(path: Path, calls: Path) -> Path:
    """An editor CLI that records its arguments (one line per call) and lists no extension."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$0 $@" >> "{calls}"\n')
    path.chmod(0o755)
    return path


def test_in_a_plain_ssh_shell_the_newest_remote_ssh_servers_install(tmp_path: Path) -> None:
    """No editor CLI on PATH (an ssh login, not a Remote-SSH terminal): the CLI of each
    Remote-SSH server under the home directory installs, the newest one of each."""
    home, calls = tmp_path / "home", tmp_path / "calls"
    old = fake_cli(home / ".vscode-server/cli/servers/Stable-0ld/server/bin/code-server", calls)
    new = fake_cli(home / ".vscode-server/cli/servers/Stable-n3w/server/bin/code-server", calls)
    os.utime(old, (1_000_000, 1_000_000))
    cursor = fake_cli(home / ".cursor-server/bin/c0mmit/bin/cursor-server", calls)  # the older layout
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_install(str(empty), home=home)
    assert done.returncode == 0, done.stderr
    assert f"code-server ({new}, a Remote-SSH server's CLI: installs for the Remote-SSH windows" in done.stdout
    assert f"cursor-server ({cursor}, a Remote-SSH server's CLI" in done.stdout
    assert calls.read_text().splitlines() == [
        f"{new} --list-extensions --show-versions", f"{new} --install-extension {SHIPPED} --force",
        f"{cursor} --list-extensions --show-versions", f"{cursor} --install-extension {SHIPPED} --force"]


def test_a_remote_cli_on_path_is_used_instead_of_the_servers(tmp_path: Path) -> None:
    """In a Remote-SSH terminal of Cursor (its remote CLI is ``remote-cli/cursor``) the server's
    own CLI is not used as well: both would install into the same server."""
    home, calls = tmp_path / "home", tmp_path / "calls"
    remote = fake_cli(home / ".cursor-server/bin/c0mmit/bin/remote-cli/cursor", calls)
    fake_cli(home / ".cursor-server/bin/c0mmit/bin/cursor-server", calls)
    done = run_install(str(remote.parent), home=home)
    assert done.returncode == 0, done.stderr
    assert f"cursor ({remote}, a Remote-SSH window's remote CLI: installs on this machine's server)" in done.stdout
    assert [line.split()[0] for line in calls.read_text().splitlines()] == [str(remote), str(remote)]
