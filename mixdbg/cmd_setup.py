"""``mixdbg setup``: write VS Code debug configurations for mixed Python + C/C++ debugging,
or (``--install-extension``) install the mixdbg extension with the editor CLIs found."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mixdbg import editor_install, launch_gen
from mixdbg.errors import UsageError

DESCRIPTION = f"""\
Create .vscode/launch.json, or merge into an existing one, two kinds of entries (--kind):

mixdbg: one session for Python and C/C++ (mixdbg dap), through the mixdbg extension
(install it with --install-extension). For VS Code, VSCodium, Cursor and code-server.
Added first in the list, so F5 uses them:
  '{launch_gen.MIXDBG_FILE_NAME}'            the Python file in the editor
  '{launch_gen.MIXDBG_MODULE_NAME}'                  python -m MODULE (asks for MODULE)
  '{launch_gen.MIXDBG_ATTACH_NAME}'     a running process, picked from a list

pair: two sessions and no extension of ours, but Microsoft's Python and C/C++ extensions;
the C/C++ one runs only in Microsoft's VS Code (not in its forks nor code-server):
  '{launch_gen.DEBUGPY_NAME}'   debugpy attaches to HOST:PORT
  '{launch_gen.CPPDBG_NAME}'          gdb (cpptools) attaches to the same process
  '{launch_gen.COMPOUND_NAME}'              starts both (press F5 on it)

mixdbg owns the entries with these names and nothing else: comments, formatting and your
own configurations stay byte for byte. A second run changes nothing. Before any change
the old file is copied to launch.json.mixdbg.bak (.bak.1, ... if that exists); a file
that cannot be parsed is never overwritten. A symlinked launch.json is refused.

When the workspace has compile_commands.json (or build/compile_commands.json) and no
.vscode/c_cpp_properties.json, that file is written too, for C/C++ IntelliSense.

With the pair: 'mixdbg run --vscode script.py' (fills in the process id), or start the
script with 'python -m debugpy --listen PORT --wait-for-client script.py' and pick the process.

--install-extension installs the extension shipped with mixdbg (and nothing else: launch.json
is left alone) with every editor CLI on PATH: {", ".join(editor_install.EDITOR_CLIS)}
(or the one --editor names). Under Remote-SSH, run it in a terminal of the remote window:
'code' there (or 'cursor', 'codium') is the window's remote CLI and installs on the remote
side, where mixdbg runs. In a plain ssh shell it uses the CLI of each Remote-SSH server
already on this machine (~/.vscode-server, ~/.vscode-server-insiders, ~/.vscodium-server,
~/.cursor-server).
Without launch.json, F5 on a Python file then debugs it.
"""

EPILOG = """\
examples:
  mixdbg setup                                   the current directory is the workspace
  mixdbg setup --dry-run                         show the diff, write nothing
  mixdbg setup --workspace ~/pytorch --source-map /__w/pytorch/pytorch=$HOME/pytorch
  mixdbg setup --kind pair                       only debugpy + cppdbg (Microsoft's VS Code, no extension)
  mixdbg setup --install-extension               install the mixdbg extension into every editor found
  mixdbg setup --install-extension --editor code-server

exit codes: 0 done (also when nothing needed doing), 64 bad arguments, 65 launch.json cannot be
parsed, 66 no such workspace or interpreter (or no .vsix in this installation), 69 no editor CLI
found or one failed to install, 73 launch.json cannot be written.
"""


def register(verbs: argparse._SubParsersAction[Any]) -> None:
    """Add the ``setup`` verb to the top-level parser."""
    parser = verbs.add_parser(
        "setup", help="write .vscode/launch.json (mixdbg, or debugpy + cppdbg); install the extension",
        description=DESCRIPTION,
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--workspace", metavar="DIR", type=Path, default=Path.cwd(),
                        help="the VS Code workspace folder (default: the current directory)")
    parser.add_argument("--python", metavar="PATH", default=None,
                        help="the interpreter your script runs with; gdb loads its symbols "
                             "(default: $VIRTUAL_ENV's or $CONDA_PREFIX's python, "
                             "else the one running mixdbg)")
    parser.add_argument("--host", default=launch_gen.DEFAULT_HOST,
                        help=f"where debugpy listens (default: {launch_gen.DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=launch_gen.DEFAULT_PORT,
                        help=f"debugpy's port (default: {launch_gen.DEFAULT_PORT})")
    parser.add_argument("--source-map", metavar="FROM=TO", action="append", default=[],
                        help="map a build path recorded in the binaries to a local source tree "
                             "(cppdbg sourceFileMap), e.g. /__w/pytorch/pytorch=$HOME/pytorch; repeatable")
    parser.add_argument("--kind", choices=tuple(launch_gen.KIND_NAMES), default=launch_gen.KIND_BOTH,
                        help="which entries to write: 'mixdbg' (needs the mixdbg extension; any editor of the "
                             "VS Code family), 'pair' (Microsoft's VS Code only, no extension of ours), "
                             "or 'both' (default)")
    parser.add_argument("--install-extension", action="store_true",
                        help="install the mixdbg extension with the editor CLIs found (launch.json untouched)")
    parser.add_argument("--editor", metavar="CLI", default=None,
                        help="with --install-extension: only this editor CLI (a name on PATH or a path)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the diff (or the new file) and write nothing")
    parser.add_argument("--json", action="store_true", help="print what changed as JSON on stdout")
    parser.set_defaults(func=run)


def parse_source_map(items: list[str]) -> dict[str, str]:
    """Turn ``FROM=TO`` arguments into a sourceFileMap; a malformed one is a UsageError."""
    mapping: dict[str, str] = {}
    for item in items:
        source, sep, target = item.partition("=")
        if not sep or not source or not target:
            raise UsageError(f"--source-map wants FROM=TO, got {item!r}")
        mapping[source] = target
    return mapping


def run(args: argparse.Namespace) -> int:
    """Run ``mixdbg setup``: merge the configurations, then report what changed (or install
    the extension)."""
    if args.install_extension:
        if args.dry_run:
            raise UsageError("--dry-run does not go with --install-extension")
        return install_extension(args)
    if args.editor is not None:
        raise UsageError("--editor goes with --install-extension")
    result = launch_gen.ensure_setup(
        args.workspace, args.python or launch_gen.default_python(), args.host, args.port,
        source_map=parse_source_map(args.source_map), dry_run=args.dry_run, kind=args.kind,
    )
    if args.json:
        report = result.to_json()
        if args.dry_run:
            report["diff"] = result.diff()
        print(json.dumps(report, indent=2))
    else:
        print(_describe(result))
    return 0


def _describe(result: launch_gen.SetupResult) -> str:
    """The human-readable report: the diff for a dry run, else what was written where."""
    lines: list[str] = []
    if result.dry_run:
        if not result.changed:
            lines.append(f"{result.launch_json}: already up to date, nothing would change")
        else:
            lines.append(result.diff().rstrip("\n"))
            lines.append(f"(dry run: {result.launch_json} was not written)")
    elif not result.changed:
        lines.append(f"{result.launch_json}: already up to date, nothing changed")
    else:
        verb = "created" if result.created else "updated"
        lines.append(f"{verb} {result.launch_json}")
        for label, names in (("added", result.added), ("replaced", result.updated)):
            lines += [f"  {label}: {name}" for name in names]
        if result.backup:
            lines.append(f"  previous file saved as {result.backup}")
    if result.c_cpp_properties_action == "created":
        lines.append(f"{'would write' if result.dry_run else 'wrote'} {result.c_cpp_properties} "
                     "(IntelliSense from compile_commands.json)")
    if not result.dry_run and launch_gen.MIXDBG_FILE_NAME in result.added + result.updated + result.unchanged:
        lines.append(f"next: with the mixdbg extension (mixdbg setup --install-extension), open a Python file "
                     f"and press F5 on '{launch_gen.MIXDBG_FILE_NAME}'")
    if not result.dry_run and launch_gen.COMPOUND_NAME in result.added + result.updated + result.unchanged:
        lines.append(f"{'or' if len(lines) > 1 else 'next'}: mixdbg run --vscode script.py, "
                     f"then press F5 on '{launch_gen.COMPOUND_NAME}'")
    return "\n".join(lines)


def install_extension(args: argparse.Namespace) -> int:
    """``mixdbg setup --install-extension``: install the shipped .vsix where it is missing or older."""
    extension = editor_install.shipped_extension()
    clis = editor_install.find_editor_clis(args.editor)
    try:
        outcomes = editor_install.install(extension, clis)
    except editor_install.InstallError as err:
        _report_install(extension, err.outcomes, args.json)
        raise
    _report_install(extension, outcomes, args.json)
    return 0


def _report_install(extension: editor_install.Extension, outcomes: list[editor_install.Outcome],
                    as_json: bool) -> None:
    """Say what each editor CLI did, as text or as one JSON document."""
    if as_json:
        print(json.dumps({"extension": extension.identifier, "version": extension.version,
                          "vsix": str(extension.vsix),
                          "editors": [{"cli": o.cli.name, "path": o.cli.path, "remote": o.cli.remote, "server": o.cli.server,
                                       "action": o.action} for o in outcomes]}, indent=2))
        return
    for outcome in outcomes:
        if outcome.action == editor_install.ALREADY:
            print(f"{outcome.cli.label()}: {extension.identifier} {extension.version} already installed, "
                  "nothing to do")
        else:
            print(f"{outcome.cli.label()}: installed {extension.identifier} {extension.version} "
                  f"from {extension.vsix}; reload open windows to use it")
