"""VS Code launch.json for mixdbg: generate our configurations, merge them safely, validate.

The configurations come from the commented templates in ``vscode-templates/`` (installed
as ``mixdbg.vscode_templates``) and are validated against our own JSON Schemas there
before anything is written. mixdbg owns six entries, recognised by name only (VS Code
flags unknown keys, so there is no marker key), of two kinds:

* ``mixdbg`` (``MIXDBG_NAMES``): ``type: mixdbg`` configurations served by ``mixdbg dap``
  through our extension, validated against the schema VS Code derives from the extension's
  attributes (``debug_schema``); new ones go first in the list, so F5 picks them;
* ``pair``: ``DEBUGPY_NAME``, ``CPPDBG_NAME`` and the compound ``COMPOUND_NAME``, for
  Microsoft's VS Code without our extension; new ones go last.

Safety rules for the user's file (reading, backups and atomic writes live in
``user_files``; see also ``ensure_setup``):

* it is edited as text with ``mixdbg.jsonc``: every byte outside the entries we own stays
  as it was, BOM and line endings included; an unparseable file is never written;
* a change is preceded by a backup (``launch.json.mixdbg.bak``, then ``.bak.1``, ... so an
  older backup is never overwritten; skipped when the newest backup already holds the same
  content outside our entries, so per-run ``processId`` edits do not pile up copies) and
  written atomically (temp file, fsync, replace), keeping the file's mode;
* a symlinked launch.json is refused rather than edited through the link: writing through
  it would change a file outside the workspace (often shared by several), and replacing it
  would silently break the link. Read-only, empty, binary and oversized files are refused.
"""

from __future__ import annotations

import difflib
import glob
import json
import os
import re
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from mixdbg import debug_schema, jsonc, user_files
from mixdbg.errors import DataError, MixdbgError, NotFoundError, UsageError
from mixdbg.gdbmi import find_gdb, mi_escape

DEBUGPY_NAME = "mixdbg: Python (debugpy attach)"
CPPDBG_NAME = "mixdbg: C++ (gdb attach)"
COMPOUND_NAME = "mixdbg: Python + C++"
MIXDBG_FILE_NAME = "mixdbg: current file"
MIXDBG_MODULE_NAME = "mixdbg: module"
MIXDBG_ATTACH_NAME = "mixdbg: attach to a process"
MIXDBG_NAMES = (MIXDBG_FILE_NAME, MIXDBG_MODULE_NAME, MIXDBG_ATTACH_NAME)
PAIR_NAMES = (DEBUGPY_NAME, CPPDBG_NAME, COMPOUND_NAME)
KIND_MIXDBG = "mixdbg"
KIND_PAIR = "pair"
KIND_BOTH = "both"
KIND_NAMES = {KIND_MIXDBG: MIXDBG_NAMES, KIND_PAIR: PAIR_NAMES, KIND_BOTH: MIXDBG_NAMES + PAIR_NAMES}
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5678
PICK_PROCESS = "${command:pickProcess}"
TEMPLATES_PACKAGE = "mixdbg.vscode_templates"
_SCHEMAS = {
    DEBUGPY_NAME: "debugpy-attach.schema.json",
    CPPDBG_NAME: "cppdbg-attach.schema.json",
    COMPOUND_NAME: "compound.schema.json",
}
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_DROP = object()
_DROP_ITEM = object()
_NEW_FILE_HEADER = (
    "// VS Code debug configurations. mixdbg manages the entries named \"mixdbg: ...\" (see\n"
    "// `mixdbg setup --help`); everything else in this file is yours and is left as it is.\n"
)


@dataclass(frozen=True)
class SetupResult:
    """What ``ensure_setup`` did (or, with ``dry_run``, would do) to the workspace.

    ``backup`` is the backup that holds the user's previous content (None when nothing was
    written or the file is new); ``added``/``updated``/``unchanged`` name our entries.
    """

    launch_json: Path
    created: bool
    changed: bool
    dry_run: bool
    backup: Path | None
    added: tuple[str, ...]
    updated: tuple[str, ...]
    unchanged: tuple[str, ...]
    old_text: str | None = field(repr=False)
    new_text: str = field(repr=False)
    c_cpp_properties: Path | None = None
    c_cpp_properties_action: str = "none"

    def diff(self) -> str:
        """A unified diff from the previous launch.json (empty if none) to the new one."""
        old = (self.old_text or "").splitlines(keepends=True)
        new = self.new_text.splitlines(keepends=True)
        name = ".vscode/launch.json"
        return "".join(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"))

    def to_json(self) -> dict[str, Any]:
        """The result as plain JSON values, for ``mixdbg setup --json``."""
        return {
            "launch_json": str(self.launch_json), "created": self.created, "changed": self.changed,
            "dry_run": self.dry_run, "backup": str(self.backup) if self.backup else None,
            "added": list(self.added), "updated": list(self.updated), "unchanged": list(self.unchanged),
            "c_cpp_properties": str(self.c_cpp_properties) if self.c_cpp_properties else None,
            "c_cpp_properties_action": self.c_cpp_properties_action,
        }


def launch_json_path(workspace: Path) -> Path:
    """Where VS Code reads the workspace's launch configurations."""
    return workspace / ".vscode" / "launch.json"


def template_text(name: str) -> str:
    """The text of one file of ``vscode-templates/`` as installed with the package."""
    return resources.files(TEMPLATES_PACKAGE).joinpath(name).read_text(encoding="utf-8")


def schema(name: str) -> dict[str, Any]:
    """One of our JSON Schemas from ``vscode-templates/`` (e.g. ``cppdbg-attach.schema.json``)."""
    loaded: dict[str, Any] = json.loads(template_text(name))
    return loaded


def entry_schema(name: str) -> dict[str, Any]:
    """The schema one of our entries must satisfy: for a ``type: mixdbg`` entry, the one VS Code
    checks it against (from ``mixdbg dap``'s arguments); for the pair, our strict ones."""
    if name in MIXDBG_NAMES:
        request = "attach" if name == MIXDBG_ATTACH_NAME else "launch"
        attributes = debug_schema.configuration_attributes(debug_schema.dap_arguments())
        return debug_schema.effective_schema(debug_schema.DEBUG_TYPE, request, attributes[request])
    if name in _SCHEMAS:
        return schema(_SCHEMAS[name])
    raise MixdbgError(f"internal error: no schema for configuration {name!r}")


def validate_entry(entry: Mapping[str, Any]) -> None:
    """Check one of our entries against its schema; a failure is a mixdbg bug."""
    name = str(entry.get("name"))
    problem = _schema_problem(dict(entry), entry_schema(name))
    if problem is not None:
        raise MixdbgError(f"internal error: generated {name!r} is invalid: {problem}")


def _schema_problem(document: Any, schema_document: dict[str, Any]) -> str | None:
    """Why ``document`` does not follow the JSON schema, or None. (jsonschema is imported
    here: at start-up it would cost every mixdbg command 40-70 ms.) The schemas are ours and
    are not checked against their meta-schema at each call, as ``jsonschema.validate`` does:
    that took 0.24 s of each entry's check, 2.9 s of a ``mixdbg setup``."""
    import jsonschema

    checker = jsonschema.validators.validator_for(schema_document)(schema_document)
    error = jsonschema.exceptions.best_match(checker.iter_errors(document))
    return None if error is None else str(error.message)


def python_gdb_script(python: str) -> str | None:
    """The interpreter's gdb helper (``<python>-gdb.py`` or ``<libpython>-gdb.py``), if any.

    Loading it gives gdb ``py-bt`` and friends. Only files next to the interpreter or its
    library are considered; running another interpreter to ask would start a process.
    """
    real = os.path.realpath(python)
    candidates = [real + "-gdb.py", "/usr/share/gdb/auto-load" + real + "-gdb.py"]
    if real == os.path.realpath(sys.executable):
        libdir = str(sysconfig.get_config_var("LIBDIR") or "")
        for var in ("INSTSONAME", "LDLIBRARY"):
            library = os.path.join(libdir, str(sysconfig.get_config_var(var) or ""))
            candidates += [library + "-gdb.py", os.path.realpath(library) + "-gdb.py"]
    candidates += sorted(glob.glob(os.path.join(os.path.dirname(os.path.dirname(real)), "lib",
                                                "libpython*-gdb.py")))
    return next((c for c in candidates if os.path.isfile(c)), None)


def default_python() -> str:
    """The interpreter a user's script most likely runs with: the active venv's or conda's.

    ``python`` on PATH is not used: pyenv and asdf put shell-script shims there, which
    gdb cannot load as the program. Falls back to the interpreter running mixdbg.
    """
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = os.environ.get(variable)
        candidate = os.path.join(prefix, "bin", "python") if prefix else ""
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def _interpreter_binary(python: str) -> str:
    """The real path of ``python``, checked to be an executable binary gdb can load."""
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise NotFoundError(f"no executable Python interpreter at {python}")
    real = os.path.realpath(python)
    with open(real, "rb") as handle:
        magic = handle.read(4)
    if sys.platform.startswith("linux") and magic != b"\x7fELF":
        raise UsageError(f"{python} is not an executable binary (a pyenv/asdf shim or a script?)",
                         hint="pass the real interpreter: "
                              "--python \"$(python -c 'import sys; print(sys.executable)')\"")
    return real


def generate_entries(python: str, host: str, port: int, *, gdb: str | None = None,
                     source_map: Mapping[str, str] | None = None, kind: str = KIND_BOTH) -> list[dict[str, Any]]:
    """Our entries of ``kind``, filled in and validated: the ``type: mixdbg`` ones (current
    file, module, attach by picker), then the pair (debugpy attach, cppdbg attach, compound).

    For the pair, ``python`` is resolved to its real path, the executable gdb sees in
    ``/proc/PID/exe``, and ``miDebuggerPath`` is ``gdb``, else the gdb ``mixdbg run`` would use
    (``find_gdb``); the ``mixdbg`` kind needs none of the arguments.
    """
    if kind not in KIND_NAMES:
        raise UsageError(f"unknown kind of configurations {kind!r} (use {', '.join(KIND_NAMES)})")
    document = jsonc.loads(template_text("launch.jsonc"))
    wanted = [e for e in [*document["configurations"], *document["compounds"]] if e["name"] in KIND_NAMES[kind]]
    values = _pair_values(python, host, port, gdb, source_map) if kind != KIND_MIXDBG else {}
    entries: list[dict[str, Any]] = [_fill(entry, values) for entry in wanted]
    for entry in entries:
        validate_entry(entry)
    return entries


def _pair_values(python: str, host: str, port: int, gdb: str | None,
                 source_map: Mapping[str, str] | None) -> dict[str, Any]:
    """The values of the pair's ``{{placeholders}}``, checked."""
    _check_port(port)
    if not host:
        raise UsageError("the debugpy host must not be empty")
    real = _interpreter_binary(python)
    script = python_gdb_script(real)
    return {
        "python": real, "host": host, "port": port, "gdb": gdb or find_gdb(),
        "python_gdb_script_mi": mi_escape(script) if script else None,
        "source_file_map": dict(source_map) if source_map else None,
    }


def ensure_setup(workspace: Path, python: str, host: str, port: int, *,
                 source_map: Mapping[str, str] | None = None, gdb: str | None = None,
                 dry_run: bool = False, kind: str = KIND_BOTH) -> SetupResult:
    """Create ``.vscode/launch.json`` or merge mixdbg's entries of ``kind`` into it (``mixdbg setup``).

    Entries with our names are replaced when they differ from what we generate, added when
    missing (``type: mixdbg`` ones first in the list, the pair last), left byte for byte when
    equal, so a second run changes nothing. Entries of the other kind are left as they are.
    Everything else in the file is kept exactly. Also writes ``c_cpp_properties.json`` when the
    workspace has a ``compile_commands.json`` and no such file yet. Raises DataError for
    an unparseable file, CannotWriteError when it cannot be written safely.
    """
    entries = generate_entries(python, host, port, gdb=gdb, source_map=source_map, kind=kind)
    path = launch_json_path(_existing_dir(workspace))
    state = user_files.read_for_edit(path, _parse_root)
    added: list[str] = []
    updated: list[str] = []
    unchanged: list[str] = []
    if state.text is None:
        new_text = _new_launch_text(entries)
        added = [e["name"] for e in entries]
    else:
        new_text = state.text
        actions: dict[str, str] = {}
        # Each new type-mixdbg entry goes first: add them last to first to keep their order.
        firsts = [e for e in entries if e["name"] in MIXDBG_NAMES]
        for entry in [*reversed(firsts), *(e for e in entries if e["name"] not in MIXDBG_NAMES)]:
            new_text, actions[entry["name"]] = _upsert(new_text, entry, replace=True,
                                                       first=entry["name"] in MIXDBG_NAMES)
        for entry in entries:
            {"added": added, "updated": updated, "unchanged": unchanged}[actions[entry["name"]]].append(entry["name"])
    _check_merged(new_text, strict=True, names=KIND_NAMES[kind])
    changed = new_text != state.text
    backup = None if dry_run or not changed else user_files.commit(state, new_text, _user_content)
    cpp_path, cpp_action = _ensure_c_cpp_properties(workspace, dry_run)
    return SetupResult(path, state.text is None, changed, dry_run, backup, tuple(added), tuple(updated),
                       tuple(unchanged), state.text, new_text, cpp_path, cpp_action)


def set_attach_target(workspace: Path, pid: int, program: str, port: int) -> Path:
    """Point our entries at a running debuggee: cppdbg ``processId``/``program``, debugpy port.

    Used by ``mixdbg run --vscode``. Only those three values change (surgically, so any
    other tweak to our entries survives); missing entries are first created as ``setup``
    would (with ``program`` as the interpreter). Returns the launch.json path.
    """
    if isinstance(pid, bool) or not isinstance(pid, int) or pid < 1:
        raise UsageError(f"not a process id: {pid!r}")
    _check_port(port)
    if not program:
        raise UsageError("the program (the debuggee's executable) must not be empty")
    path = launch_json_path(_existing_dir(workspace))
    state = user_files.read_for_edit(path, _parse_root)
    if state.text is None:
        text = _new_launch_text(generate_entries(program, DEFAULT_HOST, port, kind=KIND_PAIR))
    else:
        text = state.text
        missing = [n for n in PAIR_NAMES if _find(text, n) is None]
        if missing:
            for entry in generate_entries(program, DEFAULT_HOST, port, kind=KIND_PAIR):
                if entry["name"] in missing:
                    text, _ = _upsert(text, entry, replace=False)
    text = _set_in_entry(text, CPPDBG_NAME, [("processId", pid), ("program", program)])
    text = _set_debugpy_port(text, port)
    _check_merged(text, strict=False, names=PAIR_NAMES)
    if text != state.text:
        user_files.commit(state, text, _user_content)
    return path


def read_configurations(path: Path) -> list[dict[str, Any]]:
    """The ``configurations`` of a launch.json, comments stripped (for tests and ``ps``)."""
    if not path.is_file():
        raise NotFoundError(f"{path} does not exist")
    text, _ = user_files.read_text(path)
    root = _parse_root(text, path)
    configurations = root.value.get("configurations", [])
    if not isinstance(configurations, list):
        raise DataError(f"{path}: \"configurations\" is not a list")
    return [c for c in configurations if isinstance(c, dict)]


# --- merging ---------------------------------------------------------------------------------

def _container_key(entry: Mapping[str, Any]) -> str:
    return "compounds" if entry["name"] == COMPOUND_NAME else "configurations"


def _find(text: str, name: str) -> jsonc.Node | None:
    """The node of the entry called ``name`` in its list, None if absent; DataError if doubled."""
    root = _parse_root(text)
    key = "compounds" if name == COMPOUND_NAME else "configurations"
    member = root.member(key)
    if member is None:
        return None
    if member.value.kind != "array":
        raise DataError(f"launch.json: \"{key}\" is not a list; fix it by hand, then run mixdbg again")
    found = [i for i in member.value.items if i.kind == "object" and i.value.get("name") == name]
    if len(found) > 1:
        raise DataError(f"launch.json has {len(found)} entries named {name!r}",
                        hint="delete or rename all but one of them, then run mixdbg again")
    return found[0] if found else None


def _upsert(text: str, entry: Mapping[str, Any], replace: bool, first: bool = False) -> tuple[str, str]:
    """Add ``entry`` to its list (at its end, or its start when ``first``), or replace the entry
    of that name; return (text, action)."""
    style = jsonc.detect_style(text)
    existing = _find(text, entry["name"])
    if existing is not None:
        if not replace or jsonc.same_value(existing.value, entry):
            return text, "unchanged"
        return jsonc.apply_edits(text, [jsonc.replace_value(text, existing, entry, style)]), "updated"
    root = _parse_root(text)
    key = _container_key(entry)
    member = root.member(key)
    if member is None:
        edits = jsonc.add_members(text, root, [(key, [entry])], style)
    elif first:
        edits = jsonc.prepend_items(text, member.value, [entry], style)
    else:
        edits = jsonc.append_items(text, member.value, [entry], style)
    return jsonc.apply_edits(text, edits), "added"


def _set_in_entry(text: str, name: str, pairs: Sequence[tuple[str, Any]]) -> str:
    """Set members of the entry ``name`` one by one, each a minimal edit."""
    for key, value in pairs:
        node = _find(text, name)
        if node is None:
            raise MixdbgError(f"internal error: {name!r} vanished while editing")
        text = jsonc.apply_edits(text, jsonc.set_member(text, node, key, value, jsonc.detect_style(text)))
    return text


def _set_debugpy_port(text: str, port: int) -> str:
    """Set ``connect.port`` of our debugpy entry (creating ``connect`` if it is not an object)."""
    node = _find(text, DEBUGPY_NAME)
    connect = node.member("connect") if node else None
    if node is None or connect is None or connect.value.kind != "object":
        return _set_in_entry(text, DEBUGPY_NAME, [("connect", {"host": DEFAULT_HOST, "port": port})])
    edits = jsonc.set_member(text, connect.value, "port", port, jsonc.detect_style(text))
    return jsonc.apply_edits(text, edits)


def _check_merged(text: str, strict: bool, names: Sequence[str]) -> None:
    """Re-parse the result: ``names`` present once each, valid (strict), compound refs resolvable."""
    nodes = {name: _find(text, name) for name in names}
    for name, node in nodes.items():
        if node is None:
            raise MixdbgError(f"internal error: {name!r} missing after the merge")
        if strict:
            validate_entry(node.value)
    defined = {c.get("name") for c in _parse_root(text).value.get("configurations", []) if isinstance(c, dict)}
    compound = _find(text, COMPOUND_NAME)
    refs = compound.value.get("configurations", []) if compound else []
    for ref in refs if isinstance(refs, list) else []:
        ref_name = ref.get("name") if isinstance(ref, dict) else ref
        if ref_name not in defined:
            raise DataError(f"compound {COMPOUND_NAME!r} refers to {ref_name!r}, which is not defined")


def _new_launch_text(entries: Sequence[Mapping[str, Any]]) -> str:
    document = {
        "version": "0.2.0",
        "configurations": [e for e in entries if _container_key(e) == "configurations"],
        "compounds": [e for e in entries if _container_key(e) == "compounds"],
    }
    return _NEW_FILE_HEADER + jsonc.dumps(document, jsonc.Style()) + "\n"


def _fill(value: Any, values: Mapping[str, Any]) -> Any:
    """Substitute ``{{name}}`` placeholders, dropping what a None value makes meaningless.

    A string that is one placeholder drops its member (``"sourceFileMap": "{{map}}"``); a
    placeholder inside a longer string drops the enclosing list item (a setup command).
    """
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole:
            return _DROP if values[whole.group(1)] is None else values[whole.group(1)]
        if any(values[n] is None for n in _PLACEHOLDER.findall(value)):
            return _DROP_ITEM
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), value)
    if isinstance(value, dict):
        filled = {k: _fill(v, values) for k, v in value.items()}
        if any(v is _DROP_ITEM for v in filled.values()):
            return _DROP_ITEM
        return {k: v for k, v in filled.items() if v is not _DROP}
    if isinstance(value, list):
        return [v for v in (_fill(i, values) for i in value) if v is not _DROP and v is not _DROP_ITEM]
    return value


def _check_port(port: int) -> None:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise UsageError(f"not a TCP port: {port!r} (use 1-65535)")


# --- files -----------------------------------------------------------------------------------

def _existing_dir(workspace: Path) -> Path:
    if not workspace.is_dir():
        raise NotFoundError(f"workspace {workspace} is not a directory")
    return workspace


def _parse_root(text: str, path: Path | None = None) -> jsonc.Node:
    where = str(path) if path else "launch.json"
    try:
        root = jsonc.parse(text)
    except jsonc.JsoncError as err:
        raise DataError(f"{where} cannot be parsed: {err.message}; it was left untouched",
                        hint="fix it (or move it away) and run mixdbg again") from err
    if root.kind != "object":
        raise DataError(f"{where} is not a JSON object; it was left untouched")
    return root


def _user_content(text: str) -> str:
    """``text`` without mixdbg's own entries: what a backup must preserve."""
    spans = [(node.start, node.end) for node in (_find(text, name) for name in KIND_NAMES[KIND_BOTH]) if node]
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + text[end:]
    return text


def _find_compile_commands(workspace: Path) -> Path | None:
    for candidate in (workspace / "compile_commands.json", workspace / "build" / "compile_commands.json"):
        if candidate.is_file():
            return candidate
    return None


def _ensure_c_cpp_properties(workspace: Path, dry_run: bool) -> tuple[Path | None, str]:
    """Write c_cpp_properties.json for IntelliSense when a compile database exists and it does not."""
    commands = _find_compile_commands(workspace)
    if commands is None:
        return None, "none"
    path = workspace / ".vscode" / "c_cpp_properties.json"
    if path.exists() or path.is_symlink():
        return path, "kept"
    relative = commands.relative_to(workspace).as_posix()
    document = _fill(jsonc.loads(template_text("c_cpp_properties.jsonc")),
                     {"compile_commands": "${workspaceFolder}/" + relative})
    problem = _schema_problem(document, schema("c_cpp_properties.schema.json"))
    if problem is not None:
        raise MixdbgError(f"internal error: generated c_cpp_properties.json is invalid: {problem}")
    if not dry_run:
        user_files.commit(user_files.UserFile(path, None), jsonc.dumps(document, jsonc.Style()) + "\n",
                          _user_content)
    return path, "created"
