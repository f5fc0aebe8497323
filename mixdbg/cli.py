"""Command-line edge of mixdbg: parse arguments, dispatch to a verb, turn errors into exit codes.

Each verb lives in one ``cmd_*`` module that owns its help text and its output; this module
only assembles them and is the single place where ``MixdbgError`` becomes one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from mixdbg import __version__
from mixdbg.errors import MixdbgError, UsageError

DESCRIPTION = """\
Debug Python and C/C++ in the same process at the same time.

  mixdbg run -b at::native::randn script.py     launch under debugpy + gdb, mixed stacks
  mixdbg attach PID -b my_c_function            the same for a running process
  mixdbg break at::native::add                  add a breakpoint to a running session
  mixdbg setup                                  write .vscode/launch.json (mixdbg; debugpy + cppdbg)
  mixdbg setup --install-extension              install the VS Code extension (F5 on a .py file)
  mixdbg doctor                                 check everything that could block attaching
  mixdbg dap                                    a Debug Adapter Protocol server for editors

Exit codes: the debuggee's own code for 'run' once it started (128+N for signal N);
otherwise 0 ok, 64 usage, 65 unparseable file, 66 not found, 69 unavailable (gdb, port),
70 internal error, 73 cannot write, 75 gdb failed or timed out, 77 tracing not permitted.
"""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises UsageError instead of printing usage and exiting 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser(editor_adapter: bool = False) -> argparse.ArgumentParser:
    """Assemble the top-level parser from every verb module (imported here: see ``main``),
    or, for ``editor_adapter`` (``mixdbg dap`` started by an editor), from the ``dap`` verb's
    alone: the other verbs' modules cost the adapter's start 0.1-0.15 s of CPU, which the
    first stop an editor shows waits for on loaded cores."""
    from mixdbg import cmd_dap

    parser = _Parser(
        prog="mixdbg", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"mixdbg {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    verbs.required = True
    if editor_adapter:
        cmd_dap.register(verbs)
        return parser
    from mixdbg import cmd_break, cmd_doctor, cmd_run, cmd_setup

    for module in (cmd_run, cmd_break, cmd_dap, cmd_setup, cmd_doctor):
        module.register(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run mixdbg with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        editor_adapter = args_list[:1] == ["dap"] and not {"-h", "--help"} & set(args_list)
        if editor_adapter:
            # gdb starts before the rest of mixdbg is imported (0.27 s): an editor's first
            # stop waited for gdb's start (0.25-0.5 s) more than for the program's
            from mixdbg import cmd_dap
            cmd_dap.start_gdb_early()
        args = build_parser(editor_adapter).parse_args(args_list)
        code: int = args.func(args)
        return code
    except MixdbgError as err:
        _report(err)
        return err.exit_code
    except KeyboardInterrupt:
        print("mixdbg: interrupted", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001 - the one place a bug becomes a message instead of a traceback
        if os.environ.get("MIXDBG_DEBUG"):
            traceback.print_exc()
        else:
            summary = traceback.format_exc().strip().splitlines()[-1]
            print(f"mixdbg: internal error: {summary} (set MIXDBG_DEBUG=1 for the traceback)",
                  file=sys.stderr)
        return MixdbgError.exit_code


def _report(err: MixdbgError) -> None:
    """Print an error as one line (and an optional indented hint) on stderr."""
    print(f"mixdbg: {err.message}", file=sys.stderr)
    if err.hint:
        for line in err.hint.splitlines():
            print(f"  {line}", file=sys.stderr)
