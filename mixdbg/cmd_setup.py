"""``mixdbg setup``: write VS Code debug configurations for mixed Python + C/C++ debugging."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mixdbg import launch_gen
from mixdbg.errors import UsageError

DESCRIPTION = f"""\
Create .vscode/launch.json, or merge into an existing one, three entries:

  '{launch_gen.DEBUGPY_NAME}'   debugpy attaches to HOST:PORT
  '{launch_gen.CPPDBG_NAME}'          gdb (cpptools) attaches to the same process
  '{launch_gen.COMPOUND_NAME}'              starts both (press F5 on it)

mixdbg owns the entries with these names and nothing else: comments, formatting and your
own configurations stay byte for byte. A second run changes nothing. Before any change
the old file is copied to launch.json.mixdbg.bak (.bak.1, ... if that exists); a file
that cannot be parsed is never overwritten. A symlinked launch.json is refused.

When the workspace has compile_commands.json (or build/compile_commands.json) and no
.vscode/c_cpp_properties.json, that file is written too, for C/C++ IntelliSense.

Then: 'mixdbg run --vscode script.py' (fills in the process id), or start the script with
'python -m debugpy --listen PORT --wait-for-client script.py' and pick the process.
"""

EPILOG = """\
examples:
  mixdbg setup                                   the current directory is the workspace
  mixdbg setup --dry-run                         show the diff, write nothing
  mixdbg setup --workspace ~/pytorch --source-map /__w/pytorch/pytorch=$HOME/pytorch
"""


def register(verbs: argparse._SubParsersAction[Any]) -> None:
    """Add the ``setup`` verb to the top-level parser."""
    parser = verbs.add_parser(
        "setup", help="write .vscode/launch.json for debugpy + gdb (cppdbg)", description=DESCRIPTION,
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
    """Run ``mixdbg setup``: merge the configurations, then report what changed."""
    result = launch_gen.ensure_setup(
        args.workspace, args.python or launch_gen.default_python(), args.host, args.port,
        source_map=parse_source_map(args.source_map), dry_run=args.dry_run,
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
    if not result.dry_run:
        lines.append(f"next: mixdbg run --vscode script.py, then press F5 on '{launch_gen.COMPOUND_NAME}'")
    return "\n".join(lines)
