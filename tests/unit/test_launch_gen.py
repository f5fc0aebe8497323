"""launch_gen: our entries are valid, the merge keeps the user's bytes, bad files are never touched."""

from __future__ import annotations

import difflib
import functools
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixdbg import debug_schema, jsonc, launch_gen
from mixdbg.errors import CannotWriteError, DataError, MixdbgError, NotFoundError, UsageError
from mixdbg.launch_gen import COMPOUND_NAME, CPPDBG_NAME, DEBUGPY_NAME, MIXDBG_NAMES, PAIR_NAMES

OURS = MIXDBG_NAMES + PAIR_NAMES
REPO = Path(__file__).resolve().parents[2]
VSCODE_SCHEMAS = REPO.parent / "shared" / "vscode-schemas"
EXTENSION_MANIFEST = REPO / "editors" / "vscode" / "package.json"
PY = sys.executable

USER_FILE = """\
// My launch.json: keep this comment.
{
    /* version block comment */
    "version": "0.2.0",
    "configurations": [
        {
            // my own config
            "name": "Python: current file",
            "type": "debugpy",
            "request": "launch",
            "program": "${file}",   // trailing comment
        },
        {"name": "node thing", "type": "node", "request": "launch", "program": "app.js",},
    ],
    "compounds": [
        { "name": "mine", "configurations": ["Python: current file", "node thing"], },
    ],
    "inputs": [ { "id": "x", "type": "promptString", "description": "d" } ]
}
"""


def variants() -> dict[str, bytes]:
    """The user's file in the layouts the merge must keep: CRLF, tabs, BOM, no lists yet."""
    tabs = USER_FILE.replace("    ", "\t")
    return {
        "lf-spaces": USER_FILE.encode(),
        "crlf-tabs": tabs.replace("\n", "\r\n").encode(),
        "bom-crlf": b"\xef\xbb\xbf" + USER_FILE.replace("\n", "\r\n").encode(),
        "no-lists": b'// nothing yet\n{\n  "version": "0.2.0", // v\n}\n',
        "empty-lists": b'{"version": "0.2.0", "configurations": [], "compounds": [/* none */]}',
        "one-line": b'{"configurations": [{"name": "a", "type": "node", "request": "launch"}]}',
    }


def write(workspace: Path, data: bytes) -> Path:
    path = launch_gen.launch_json_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def setup(workspace: Path, **kwargs: Any) -> launch_gen.SetupResult:
    return launch_gen.ensure_setup(workspace, PY, "127.0.0.1", 5678, **kwargs)


def our_spans(text: str) -> list[tuple[int, int]]:
    """Spans of our three entries in ``text``."""
    root = jsonc.parse(text)
    spans = []
    for key in ("configurations", "compounds"):
        member = root.member(key)
        for item in member.value.items if member else ():
            if item.kind == "object" and item.value.get("name") in OURS:
                spans.append((item.start, item.end))
    return spans


def without_ours(text: str) -> str:
    for start, end in sorted(our_spans(text), reverse=True):
        text = text[:start] + "<ours>" + text[end:]
    return text


def only_insertions(old: str, new: str) -> bool:
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return all(tag in ("equal", "insert") for tag, *_ in matcher.get_opcodes())


def dir_snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes() if p.is_file() else b"", p.lstat().st_mode)
            for p in sorted(directory.iterdir())}


# --- merging ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(variants()))
def test_merge_keeps_user_bytes_and_is_idempotent(tmp_path: Path, name: str) -> None:
    original = variants()[name]
    path = write(tmp_path, original)
    first = setup(tmp_path)
    assert first.changed and not first.created
    assert set(first.added) == set(OURS)
    new_bytes = path.read_bytes()
    bom = original.startswith(b"\xef\xbb\xbf")
    assert new_bytes.startswith(b"\xef\xbb\xbf") == bom
    old_text, new_text = original.decode("utf-8-sig"), new_bytes.decode("utf-8-sig")
    assert only_insertions(old_text, new_text), "user content must be kept byte for byte"
    if b"\r\n" in original:
        assert "\n" not in new_text.replace("\r\n", ""), "inserted lines must use CRLF too"
    if b"\t" in original:
        assert "\n    " not in new_text, "inserted lines must be indented with tabs"
    assert first.backup is not None and first.backup.read_bytes() == original
    names = [c["name"] for c in launch_gen.read_configurations(path)]
    assert all(names.count(n) == 1 for n in OURS if n != COMPOUND_NAME)
    assert names[:3] == list(MIXDBG_NAMES), "type-mixdbg entries go first, so F5 picks them"

    before = dir_snapshot(path.parent)
    second = setup(tmp_path)
    assert not second.changed and second.backup is None
    assert set(second.unchanged) == set(OURS)
    assert dir_snapshot(path.parent) == before


def test_new_file_is_created_with_our_entries_only(tmp_path: Path) -> None:
    result = setup(tmp_path)
    assert result.created and result.changed and result.backup is None
    text = result.launch_json.read_text()
    assert text.startswith("// ") and jsonc.loads(text)["version"] == "0.2.0"
    assert [c["name"] for c in launch_gen.read_configurations(result.launch_json)] == [
        *MIXDBG_NAMES, DEBUGPY_NAME, CPPDBG_NAME]
    assert not setup(tmp_path).changed


def test_stale_entries_are_replaced_and_the_rest_kept(tmp_path: Path) -> None:
    path = write(tmp_path, USER_FILE.encode())
    setup(tmp_path, source_map={"/build": "/src"})
    with_map = path.read_text()
    result = setup(tmp_path)
    assert set(result.updated) == {CPPDBG_NAME} and set(result.unchanged) == set(OURS) - {CPPDBG_NAME}
    assert without_ours(path.read_text()) == without_ours(with_map)
    assert "sourceFileMap" not in launch_gen.read_configurations(path)[-1]


def test_port_and_host_changes_update_only_debugpy(tmp_path: Path) -> None:
    setup(tmp_path)
    result = launch_gen.ensure_setup(tmp_path, PY, "localhost", 6000)
    assert result.updated == (DEBUGPY_NAME,)
    connect = next(c for c in launch_gen.read_configurations(result.launch_json)
                   if c["name"] == DEBUGPY_NAME)["connect"]
    assert connect == {"host": "localhost", "port": 6000}


def test_dry_run_writes_nothing_and_shows_the_diff(tmp_path: Path) -> None:
    path = write(tmp_path, USER_FILE.encode())
    before = dir_snapshot(path.parent)
    result = setup(tmp_path, dry_run=True)
    assert result.changed and result.backup is None and dir_snapshot(path.parent) == before
    assert f'+            "name": "{CPPDBG_NAME}",' in result.diff()
    assert set(result.to_json()["added"]) == set(OURS)


def test_backups_are_never_overwritten(tmp_path: Path) -> None:
    path = write(tmp_path, USER_FILE.encode())
    earlier = path.with_name("launch.json.mixdbg.bak")
    earlier.write_bytes(b"an older backup")
    result = setup(tmp_path)
    assert earlier.read_bytes() == b"an older backup"
    assert result.backup == path.with_name("launch.json.mixdbg.bak.1")
    assert result.backup.read_bytes() == USER_FILE.encode()


def test_mode_is_preserved_and_no_temp_files_remain(tmp_path: Path) -> None:
    path = write(tmp_path, USER_FILE.encode())
    path.chmod(0o640)
    setup(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in path.parent.iterdir()) == ["launch.json", "launch.json.mixdbg.bak"]


def test_duplicate_entries_of_ours_are_an_error(tmp_path: Path) -> None:
    setup(tmp_path)
    path = launch_gen.launch_json_path(tmp_path)
    text = path.read_text().replace('"configurations": [', f'"configurations": [{{"name": "{CPPDBG_NAME}"}},', 1)
    path.write_text(text)
    with pytest.raises(DataError, match="2 entries named"):
        setup(tmp_path)
    assert path.read_text() == text


# --- files that must never be touched ---------------------------------------------------------

BROKEN: dict[str, bytes] = {
    "missing comma": b'{"configurations": [] "compounds": []}',
    "unterminated comment": b'{"configurations": [] /* oops',
    "empty": b"",
    "blank": b" \n\t\n",
    "binary": bytes(range(256)) * 4,
    "not utf-8": b'{"a": "\xff"}',
    "root is a list": b"[]",
    "configurations not a list": b'{"configurations": {}}',
    "compounds not a list": b'{"configurations": [], "compounds": 3}',
    "huge": b'{"configurations": [' + b'{"name": "x"},\n' * (10 * 1024 * 1024 // 15) + b"]}",
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_unusable_files_are_left_untouched(tmp_path: Path, case: str) -> None:
    path = write(tmp_path, BROKEN[case])
    before = dir_snapshot(path.parent)
    with pytest.raises(DataError) as info:
        setup(tmp_path)
    assert "\n" not in info.value.message
    assert dir_snapshot(path.parent) == before
    with pytest.raises(DataError):
        launch_gen.set_attach_target(tmp_path, 1234, PY, 5678)
    assert dir_snapshot(path.parent) == before


def test_symlinked_launch_json_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_bytes(USER_FILE.encode())
    link = launch_gen.launch_json_path(tmp_path)
    link.parent.mkdir()
    link.symlink_to(target)
    with pytest.raises(CannotWriteError, match="symbolic link"):
        setup(tmp_path)
    with pytest.raises(CannotWriteError, match="symbolic link"):
        launch_gen.set_attach_target(tmp_path, 1234, PY, 5678)
    assert link.is_symlink() and target.read_bytes() == USER_FILE.encode()
    assert sorted(p.name for p in link.parent.iterdir()) == ["launch.json"]
    assert launch_gen.read_configurations(link)[0]["name"] == "Python: current file"


def test_read_only_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, USER_FILE.encode())
    path.chmod(0o444)
    with pytest.raises(CannotWriteError, match="read-only"):
        setup(tmp_path)
    assert path.read_bytes() == USER_FILE.encode()
    assert sorted(p.name for p in path.parent.iterdir()) == ["launch.json"]


def test_directory_in_place_of_the_file_is_refused(tmp_path: Path) -> None:
    launch_gen.launch_json_path(tmp_path).mkdir(parents=True)
    with pytest.raises(CannotWriteError, match="not a regular file"):
        setup(tmp_path)


def test_missing_workspace_and_interpreter(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="workspace"):
        setup(tmp_path / "nope")
    with pytest.raises(NotFoundError, match="interpreter"):
        launch_gen.ensure_setup(tmp_path, str(tmp_path / "python"), "127.0.0.1", 5678)
    with pytest.raises(NotFoundError):
        launch_gen.read_configurations(tmp_path / "launch.json")


@pytest.mark.parametrize("port", [0, 65536, -1, True])
def test_bad_ports_are_usage_errors(tmp_path: Path, port: int) -> None:
    with pytest.raises(UsageError):
        launch_gen.ensure_setup(tmp_path, PY, "127.0.0.1", port)
    with pytest.raises(UsageError):
        launch_gen.set_attach_target(tmp_path, 1234, PY, port)


# --- set_attach_target -------------------------------------------------------------------------

def test_set_attach_target_creates_then_edits_only_the_volatile_values(tmp_path: Path) -> None:
    path = launch_gen.set_attach_target(tmp_path, 4321, PY, 5679)
    configs = {c["name"]: c for c in launch_gen.read_configurations(path)}
    assert configs[CPPDBG_NAME]["processId"] == 4321 and configs[CPPDBG_NAME]["program"] == PY
    assert configs[DEBUGPY_NAME]["connect"]["port"] == 5679
    before = path.read_text()
    assert launch_gen.set_attach_target(tmp_path, 4321, PY, 5679) == path
    assert path.read_text() == before, "same target twice changes nothing"

    launch_gen.set_attach_target(tmp_path, 99, "/usr/bin/env", 5680)
    after = path.read_text()
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert len(before.splitlines()) == len(after.splitlines()) and len(changed) == 3
    assert all(any(k in b for k in ('"processId"', '"program"', '"port"')) for _, b in changed)


def test_set_attach_target_keeps_user_content_and_tweaks(tmp_path: Path) -> None:
    path = write(tmp_path, USER_FILE.replace("\n", "\r\n").encode())
    launch_gen.set_attach_target(tmp_path, 1000, os.path.realpath(PY), 5678)
    text = path.read_bytes().decode()
    assert only_insertions(USER_FILE.replace("\n", "\r\n"), text.replace('"processId": 1000', '"processId": '
                                                                          '"${command:pickProcess}"'))
    # A user tweak inside our cppdbg entry survives the surgical edit.
    node = jsonc.parse(text)
    cpp = next(i for i in node.value["configurations"] if i["name"] == CPPDBG_NAME)
    assert cpp["processId"] == 1000
    tweaked = text.replace('"MIMode": "gdb",', '"MIMode": "gdb",\r\n\t\t\t"additionalSOLibSearchPath": "/x",')
    path.write_bytes(tweaked.encode())
    launch_gen.set_attach_target(tmp_path, 2000, PY, 5678)
    cpp = next(c for c in launch_gen.read_configurations(path) if c["name"] == CPPDBG_NAME)
    assert cpp["processId"] == 2000 and cpp["additionalSOLibSearchPath"] == "/x"


def test_set_attach_target_adds_only_what_is_missing(tmp_path: Path) -> None:
    launch_gen.ensure_setup(tmp_path, PY, "10.0.0.1", 7000)
    path = launch_gen.launch_json_path(tmp_path)
    root = jsonc.parse(path.read_text())
    compounds = root.member("compounds")
    assert compounds is not None
    text = path.read_text()
    path.write_text(text[:compounds.value.start] + "[]" + text[compounds.value.end:])
    launch_gen.set_attach_target(tmp_path, 5, PY, 7001)
    loaded = jsonc.loads(path.read_text())
    assert [c["name"] for c in loaded["compounds"]] == [COMPOUND_NAME]
    debugpy = next(c for c in loaded["configurations"] if c["name"] == DEBUGPY_NAME)
    assert debugpy["connect"] == {"host": "10.0.0.1", "port": 7001}


@pytest.mark.parametrize("pid", [0, -5, True, "12"])
def test_set_attach_target_rejects_bad_pids(tmp_path: Path, pid: Any) -> None:
    with pytest.raises(UsageError):
        launch_gen.set_attach_target(tmp_path, pid, PY, 5678)


# --- what we generate ------------------------------------------------------------------------

def test_setup_commands(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    entries = {e["name"]: e for e in launch_gen.generate_entries(PY, "127.0.0.1", 5678)}
    texts = [c["text"] for c in entries[CPPDBG_NAME]["setupCommands"]]
    assert texts[:2] == ["-enable-pretty-printing", "-gdb-set breakpoint pending on"]
    script = launch_gen.python_gdb_script(PY)
    if script:
        assert texts[2] == f'-interpreter-exec console "source {script}"'
    assert not any("SIGINT" in t for t in texts)
    assert entries[CPPDBG_NAME]["debuginfod"] == {"enabled": False}
    assert entries[CPPDBG_NAME]["program"] == os.path.realpath(PY)

    monkeypatch.setattr(launch_gen, "python_gdb_script", lambda python: None)
    entries = {e["name"]: e for e in launch_gen.generate_entries(PY, "127.0.0.1", 5678)}
    assert [c["text"] for c in entries[CPPDBG_NAME]["setupCommands"]] == texts[:2]


def test_gdb_script_path_is_quoted_for_mi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch_gen, "python_gdb_script", lambda python: '/we ird/"q"\\py-gdb.py')
    cpp = launch_gen.generate_entries(PY, "127.0.0.1", 5678, kind="pair")[1]
    assert cpp["setupCommands"][2]["text"] == '-interpreter-exec console "source /we ird/\\"q\\"\\\\py-gdb.py"'


def test_our_schema_rejects_what_we_must_never_write() -> None:
    cpp = launch_gen.generate_entries(PY, "127.0.0.1", 5678, kind="pair")[1]
    for bad in (
        {**cpp, "setupCommands": cpp["setupCommands"] + [{"text": "handle SIGINT pass"}]},
        {**cpp, "processId": "1234"},
        {**cpp, "mixdbg": True},
        {k: v for k, v in cpp.items() if k != "program"},
    ):
        with pytest.raises(MixdbgError, match="internal error"):
            launch_gen.validate_entry(bad)


def test_c_cpp_properties_written_only_when_useful_and_absent(tmp_path: Path) -> None:
    assert setup(tmp_path).c_cpp_properties_action == "none"
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "compile_commands.json").write_text("[]")
    result = setup(tmp_path)
    assert result.c_cpp_properties_action == "created" and result.c_cpp_properties is not None
    assert json.loads(result.c_cpp_properties.read_text())["configurations"][0]["compileCommands"] == (
        "${workspaceFolder}/build/compile_commands.json")
    result.c_cpp_properties.write_text("// mine\n{}")
    assert setup(tmp_path).c_cpp_properties_action == "kept"
    assert result.c_cpp_properties.read_text() == "// mine\n{}"


# --- against the VS Code extensions' own schemas ----------------------------------------------

def vscode_schema(name: str) -> dict[str, Any]:
    path = VSCODE_SCHEMAS / name
    if not path.is_file():
        pytest.skip(f"VS Code reference schemas not found at {VSCODE_SCHEMAS} (expected beside the repo)")
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def extension_schema(request: str) -> dict[str, Any]:
    """What VS Code checks a ``type: mixdbg`` entry against, from our extension's package.json."""
    manifest = json.loads(EXTENSION_MANIFEST.read_text())
    debugger = next(d for d in manifest["contributes"]["debuggers"] if d["type"] == "mixdbg")
    return debug_schema.effective_schema("mixdbg", request, debugger["configurationAttributes"][request])


def toplevel_schema() -> dict[str, Any]:
    """launch.json's schema as VS Code has it with our extension installed beside debugpy and cpptools."""
    schema = vscode_schema("launch-toplevel.schema.json")
    for request in ("launch", "attach"):
        schema["definitions"][f"mixdbg-{request}"] = extension_schema(request)
        schema["properties"]["configurations"]["items"]["oneOf"].append({"$ref": f"#/definitions/mixdbg-{request}"})
    return schema


@functools.cache
def validator(kind: str, name: str) -> Any:
    """A validator of the extension's schema for request ``name`` (``kind`` "mixdbg") or of
    VS Code's schema file ``name``, checked once: ``jsonschema.validate`` checks the schema
    itself at each call, 3 s of every example of the property test below."""
    schema = extension_schema(name) if kind == "mixdbg" else vscode_schema(name)
    checker = jsonschema.validators.validator_for(schema)
    checker.check_schema(schema)
    return checker(schema)


def check_against_vscode(text: str) -> None:
    """Every entry of ours validates against the extension's effective schema; the file too."""
    document = jsonc.loads(text)
    by_type = {"debugpy": "debugpy-attach.vscode-effective.schema.json",
               "cppdbg": "cppdbg-attach.vscode-effective.schema.json"}
    for config in document["configurations"]:
        if config["type"] == "mixdbg":
            validator("mixdbg", config["request"]).validate(config)
        elif config["name"] in OURS:
            validator("vscode", by_type[config["type"]]).validate(config)
            validator("vscode", by_type[config["type"]].replace(".vscode-effective", "")).validate(config)
    names = {c["name"] for c in document["configurations"]}
    for compound in document["compounds"]:
        assert set(compound["configurations"]) <= names


def test_fresh_file_validates_against_vscode_toplevel_schema(tmp_path: Path) -> None:
    result = setup(tmp_path, source_map={"/__w/pytorch/pytorch": "/home/me/pytorch"})
    check_against_vscode(result.new_text)
    jsonschema.validate(jsonc.loads(result.new_text), toplevel_schema())
    launch_gen.set_attach_target(tmp_path, 1234, PY, 5679)
    attached = result.launch_json.read_text()
    check_against_vscode(attached)
    jsonschema.validate(jsonc.loads(attached), toplevel_schema())


hosts = st.one_of(st.sampled_from(["127.0.0.1", "localhost", "::1", "0.0.0.0"]),
                  st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20))
paths = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00="), min_size=1,
                max_size=15).map(lambda s: "/" + s)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(host=hosts, port=st.integers(1, 65535), pid=st.integers(1, 2**31 - 1),
       source_map=st.dictionaries(paths, paths, max_size=3), gdb=st.one_of(st.none(), paths))
def test_every_generated_entry_validates(tmp_path_factory: pytest.TempPathFactory, host: str, port: int,
                                         pid: int, source_map: dict[str, str], gdb: str | None) -> None:
    workspace = tmp_path_factory.mktemp("ws")
    result = launch_gen.ensure_setup(workspace, PY, host, port, source_map=source_map, gdb=gdb)
    check_against_vscode(result.new_text)
    launch_gen.set_attach_target(workspace, pid, PY, port)
    check_against_vscode(result.launch_json.read_text())
    cpp = next(c for c in launch_gen.read_configurations(result.launch_json) if c["name"] == CPPDBG_NAME)
    assert cpp["processId"] == pid and cpp.get("sourceFileMap", {}) == source_map


def test_shims_and_scripts_are_not_accepted_as_the_interpreter(tmp_path: Path) -> None:
    shim = tmp_path / "python"
    shim.write_text("#!/bin/sh\nexec python3 \"$@\"\n")
    shim.chmod(0o755)
    if not sys.platform.startswith("linux"):
        pytest.skip("the ELF check applies on Linux only")
    with pytest.raises(UsageError, match="shim"):
        launch_gen.ensure_setup(tmp_path, str(shim), "127.0.0.1", 5678)
    assert not (tmp_path / ".vscode").exists()


def test_default_python_prefers_the_active_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    assert launch_gen.default_python() == sys.executable
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path))
    assert launch_gen.default_python() == str(tmp_path / "bin" / "python")


def test_repeated_attach_targets_do_not_pile_up_backups(tmp_path: Path) -> None:
    path = write(tmp_path, USER_FILE.encode())
    setup(tmp_path)
    for pid in range(100, 110):
        launch_gen.set_attach_target(tmp_path, pid, PY, 5678)
    backups = sorted(p.name for p in path.parent.iterdir() if p.name != "launch.json")
    assert backups == ["launch.json.mixdbg.bak", "launch.json.mixdbg.bak.1"]
    assert (path.parent / "launch.json.mixdbg.bak").read_bytes() == USER_FILE.encode()
    # A change of the user's own content is backed up again before the next edit.
    path.write_text(path.read_text().replace("keep this comment", "edited comment"))
    launch_gen.set_attach_target(tmp_path, 999, PY, 5678)
    newest = path.parent / "launch.json.mixdbg.bak.2"
    assert "edited comment" in newest.read_text() and '"processId": 109' in newest.read_text()


# --- type: mixdbg entries and --kind ---------------------------------------------------------

def test_each_kind_writes_only_its_entries_and_keeps_the_other(tmp_path: Path) -> None:
    path = write(tmp_path, USER_FILE.encode())
    pair = setup(tmp_path, kind="pair")
    assert pair.added == PAIR_NAMES
    assert not {c["name"] for c in launch_gen.read_configurations(path)} & set(MIXDBG_NAMES)
    with_pair = path.read_text()
    mixdbg = setup(tmp_path, kind="mixdbg")
    assert mixdbg.added == MIXDBG_NAMES
    assert only_insertions(with_pair, path.read_text()), "the pair and the user's entries stay as they were"
    names = [c["name"] for c in launch_gen.read_configurations(path)]
    assert names[:3] == list(MIXDBG_NAMES) and names[-2:] == [DEBUGPY_NAME, CPPDBG_NAME]
    assert not setup(tmp_path).changed, "both kinds are now there"
    with pytest.raises(UsageError, match="unknown kind"):
        setup(tmp_path, kind="cppdbg")


def test_a_removed_mixdbg_entry_comes_back_first_and_the_rest_stays(tmp_path: Path) -> None:
    setup(tmp_path)
    path = launch_gen.launch_json_path(tmp_path)
    node = next(i for i in jsonc.parse(path.read_text()).member("configurations").value.items  # type: ignore[union-attr]
                if i.value["name"] == MIXDBG_NAMES[0])
    text = path.read_text()
    path.write_text(text[:node.start] + '{"name": "mine", "type": "node", "request": "launch"}' + text[node.end:])
    result = setup(tmp_path)
    assert result.added == (MIXDBG_NAMES[0],)
    assert [c["name"] for c in launch_gen.read_configurations(path)][:2] == [MIXDBG_NAMES[0], "mine"]


def test_mixdbg_entries_launch_the_file_a_module_and_attach_by_picker() -> None:
    entries = {e["name"]: e for e in launch_gen.generate_entries("/no/python/needed", "", 0, kind="mixdbg")}
    assert list(entries) == list(MIXDBG_NAMES)
    current, module, attach = entries.values()
    assert (current["type"], current["request"], current["program"]) == ("mixdbg", "launch", "${file}")
    assert module["request"] == "launch" and module["module"] == "${command:mixdbg.askModule}"
    assert attach["request"] == "attach" and attach["processId"] == "${command:mixdbg.pickProcess}"


@pytest.mark.parametrize(("name", "change"), [
    (MIXDBG_NAMES[0], {"follow": "children"}),
    (MIXDBG_NAMES[0], {"args": "--epochs 1"}),
    (MIXDBG_NAMES[0], {"stopOnEntry": "yes"}),
    (MIXDBG_NAMES[0], {"programm": "typo.py"}),
    (MIXDBG_NAMES[0], {"type": "debugpy"}),
    (MIXDBG_NAMES[2], {"processId": 12.5}),
    (MIXDBG_NAMES[2], {"request": "launch"}),
])
def test_wrong_attributes_are_rejected_by_the_extensions_schema(name: str, change: dict[str, Any]) -> None:
    entry = next(e for e in launch_gen.generate_entries(PY, "127.0.0.1", 5678) if e["name"] == name)
    request = entry["request"]
    jsonschema.validate(entry, extension_schema(request))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**entry, **change}, extension_schema(request))
    with pytest.raises(MixdbgError, match="internal error"):
        launch_gen.validate_entry({**entry, **change})


def test_our_copy_of_vscodes_schema_processing_matches_the_reference() -> None:
    """debug_schema.effective_schema, applied to debugpy's and cpptools' attributes, gives the
    effective schemas ../shared/vscode-schemas derived from microsoft/vscode's code."""
    for kind in ("debugpy-attach", "debugpy-launch", "cppdbg-attach", "cppdbg-launch"):
        attributes = vscode_schema(f"{kind}.schema.json")
        reference = vscode_schema(f"{kind}.vscode-effective.schema.json")
        platform = reference.pop("definitions", {}).get("platform")
        for system in ("windows", "osx", "linux"):
            if "$ref" in reference["properties"][system]:
                reference["properties"][system] = platform
        debug_type, request = kind.split("-")
        ours = debug_schema.effective_schema(debug_type, request, {
            k: v for k, v in attributes.items() if k not in ("$schema", "title", "$comment")})
        assert _shape(ours) == _shape(reference), kind


def _shape(value: Any) -> Any:
    """A schema without its texts for people (descriptions, defaults, titles)."""
    texts = {"description", "default", "enumDescriptions", "$comment", "title", "$schema", "markdownDescription",
             "deprecationMessage"}
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items() if k not in texts}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


@pytest.mark.parametrize("name", sorted(n for n in MIXDBG_NAMES + PAIR_NAMES if n != COMPOUND_NAME))
def test_each_entrys_schema_is_a_valid_schema(name: str) -> None:
    # setup checks entries without checking the schema itself (_schema_problem): it is checked here
    schema = launch_gen.entry_schema(name)
    jsonschema.validators.validator_for(schema).check_schema(schema)
