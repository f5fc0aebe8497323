"""``mixdbg setup`` through the real CLI: output, --json, --dry-run, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mixdbg import launch_gen
from mixdbg.launch_gen import (
    COMPOUND_NAME,
    CPPDBG_NAME,
    DEBUGPY_NAME,
    MIXDBG_FILE_NAME,
    MIXDBG_NAMES,
    PAIR_NAMES,
)

cli = pytest.importorskip("mixdbg.cli", reason="the CLI does not import yet (another verb is missing)")

USER = b'// mine\r\n{\r\n\t"configurations": [\r\n\t\t{"name": "own", "type": "node", "request": "launch"},\r\n\t],\r\n}\r\n'


def run_setup(capsys: pytest.CaptureFixture[str], workspace: Path, *extra: str) -> tuple[int, str, str]:
    code = cli.main(["setup", "--workspace", str(workspace), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_given_a_users_file_when_setup_runs_twice_then_second_run_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = launch_gen.launch_json_path(tmp_path)
    path.parent.mkdir()
    path.write_bytes(USER)

    code, out, err = run_setup(capsys, tmp_path)
    assert code == 0 and err == ""
    assert f"updated {path}" in out and f"added: {CPPDBG_NAME}" in out
    assert "launch.json.mixdbg.bak" in out and f"press F5 on '{COMPOUND_NAME}'" in out
    assert f"press F5 on '{MIXDBG_FILE_NAME}'" in out
    first = path.read_bytes()
    kept = USER[:USER.index(b'\t\t{"name": "own"')]
    assert first.startswith(kept) and USER[len(kept):USER.index(b"\t],")] in first

    code, out, _ = run_setup(capsys, tmp_path)
    assert code == 0 and "nothing changed" in out
    assert path.read_bytes() == first


def test_json_output_describes_the_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_setup(capsys, tmp_path, "--json", "--port", "6001", "--source-map", "/b=/s")
    report = json.loads(out)
    assert code == 0 and err == ""
    assert report["created"] and report["changed"] and not report["dry_run"]
    assert report["added"] == [*MIXDBG_NAMES, *PAIR_NAMES]
    assert report["launch_json"] == str(launch_gen.launch_json_path(tmp_path))
    configs = {c["name"]: c for c in launch_gen.read_configurations(Path(report["launch_json"]))}
    assert configs[DEBUGPY_NAME]["connect"]["port"] == 6001 and configs[CPPDBG_NAME]["sourceFileMap"] == {"/b": "/s"}


@pytest.mark.parametrize(("kind", "names"), [("mixdbg", MIXDBG_NAMES), ("pair", PAIR_NAMES)])
def test_kind_writes_one_kind_only(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str,
                                   names: tuple[str, ...]) -> None:
    code, out, err = run_setup(capsys, tmp_path, "--kind", kind, "--json")
    assert code == 0 and err == "" and json.loads(out)["added"] == list(names)
    code, out, _ = run_setup(capsys, tmp_path, "--kind", kind)
    assert code == 0 and "nothing changed" in out


def test_dry_run_prints_a_diff_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_setup(capsys, tmp_path, "--dry-run")
    assert code == 0 and out.startswith("--- a/.vscode/launch.json")
    assert f'+            "name": "{DEBUGPY_NAME}",' in out and "was not written" in out
    assert not (tmp_path / ".vscode").exists()

    code, out, _ = run_setup(capsys, tmp_path, "--dry-run", "--json")
    assert code == 0 and json.loads(out)["diff"].startswith("--- a/")
    assert not (tmp_path / ".vscode").exists()


@pytest.mark.parametrize(
    ("content", "exit_code", "fragment"),
    [
        (b'{"configurations": [,]}', 65, "cannot be parsed"),
        (b"", 65, "is empty"),
        (b"\x00\x01\xff\xfe", 65, "not UTF-8"),
        (b"{" + b" " * (2 * 1024 * 1024) + b"}", 65, "larger than"),
    ],
)
def test_bad_files_give_one_line_and_an_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  content: bytes, exit_code: int, fragment: str) -> None:
    path = launch_gen.launch_json_path(tmp_path)
    path.parent.mkdir()
    path.write_bytes(content)
    code, out, err = run_setup(capsys, tmp_path)
    assert code == exit_code and out == ""
    assert err.startswith("mixdbg: ") and fragment in err.splitlines()[0] and "Traceback" not in err
    assert path.read_bytes() == content and os.listdir(path.parent) == ["launch.json"]


def test_read_only_and_symlink_exit_73(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = launch_gen.launch_json_path(tmp_path)
    path.parent.mkdir()
    path.write_bytes(USER)
    path.chmod(0o444)
    code, _, err = run_setup(capsys, tmp_path)
    assert code == 73 and "read-only" in err
    path.unlink()
    path.symlink_to(tmp_path / "real.json")
    (tmp_path / "real.json").write_bytes(USER)
    code, _, err = run_setup(capsys, tmp_path)
    assert code == 73 and "symbolic link" in err and path.is_symlink()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--source-map", "nope"], "FROM=TO"),
        (["--port", "70000"], "not a TCP port"),
        (["--port", "x"], "invalid int"),
        (["--host", ""], "host"),
    ],
)
def test_usage_errors_exit_64(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                              fragment: str) -> None:
    code, _, err = run_setup(capsys, tmp_path, *args)
    assert code == 64 and fragment in err
    assert not (tmp_path / ".vscode").exists()


def test_missing_python_exits_66(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_setup(capsys, tmp_path, "--python", str(tmp_path / "no-python"))
    assert code == 66 and "no executable Python interpreter" in err


def test_as_a_subprocess(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mixdbg", "setup", "--workspace", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["changed"] is True
    help_text = subprocess.run([sys.executable, "-m", "mixdbg", "setup", "--help"], capture_output=True,
                               text=True, timeout=60, check=False).stdout
    assert "--source-map FROM=TO" in help_text and "--dry-run" in help_text
    assert "--kind {mixdbg,pair,both}" in help_text and "only in Microsoft's VS Code" in help_text
    assert "--install-extension" in help_text and "exit codes:" in help_text


def test_without_workspace_the_current_directory_is_the_workspace(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mixdbg", "setup", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["launch_json"] == str(launch_gen.launch_json_path(tmp_path))
    assert launch_gen.launch_json_path(tmp_path).is_file()


NOBODY = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3")  # reachable by uid 65534, unlike root's pyenv


@pytest.mark.skipif(os.geteuid() != 0 or not SYSTEM_PYTHON.exists(),
                    reason="needs root, to run setup as another uid, and a system python3")
def test_read_only_vscode_dir_as_an_unprivileged_user(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a workspace owned by uid 65534 whose .vscode/ is read-only (root could write in it:
    # setup runs in a child that is uid 65534, with every module it needs already imported)
    assert run_setup(capsys, tmp_path, "--python", str(SYSTEM_PYTHON))[0] == 0
    base = Path(tempfile.mkdtemp(prefix="mixdbg-test-", dir="/tmp"))
    try:
        base.chmod(0o755)
        vscode = base / ".vscode"
        vscode.mkdir()
        (vscode / "launch.json").write_bytes(USER)
        for path in (base, vscode, vscode / "launch.json"):
            os.chown(path, NOBODY, NOBODY)
        vscode.chmod(0o555)
        # When setup runs as that user
        code, err = _setup_as_nobody(base)
        # Then one line, exit 73, and nothing in .vscode/ changed
        assert code == 73, err
        assert err.startswith("mixdbg: ") and err.count("\n") == 1 and "Permission denied" in err
        assert os.listdir(vscode) == ["launch.json"] and (vscode / "launch.json").read_bytes() == USER
    finally:
        shutil.rmtree(base)


def _setup_as_nobody(workspace: Path) -> tuple[int, str]:
    """Exit code and stderr of ``mixdbg setup`` run by a forked child as uid 65534."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 70
        try:
            os.close(read_end)
            sys.stderr = os.fdopen(write_end, "w")  # pytest's capture stands in for fd 2 here
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            code = cli.main(["setup", "--workspace", str(workspace), "--python", str(SYSTEM_PYTHON)])
            sys.stderr.flush()
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        err = reader.read().decode()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), err
