"""The ``break``, ``sessions`` and ``detach`` verbs: talk to a live ``run``/``attach`` session.

The session owns gdb; these verbs send it one request over its control socket (see
``control``) and print the answer. They never touch gdb or the debuggee themselves.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from mixdbg import argtypes, control
from mixdbg.errors import UsageError
from mixdbg.events import BreakpointChanged
from mixdbg.output import Output, human

BREAK_HELP = """\
Add a native breakpoint to a running 'mixdbg run' / 'mixdbg attach' session, or list or
delete its breakpoints. The session inserts it without stopping the debuggee and reports
its stops like any other (a 'breakpoint' event, then 'stopped' events, in its --json output).
"""

BREAK_EPILOG = """\
breakpoint specs (as for 'mixdbg run -b'):
  FUNCTION              exact (qualified) name, all overloads: at::native::add
  FILE:LINE             a source line: my_ext.c:42
  op:NS::NAME[.OVERLOAD] a PyTorch operator, once per call in its kernel: op:aten::add,
                        any namespace once a library registers it: op:torchvision::nms
  SPEC if CONDITION     evaluated by gdb in the debuggee: 'my_ext.c:42 if i == 10'
  --regex PATTERN       every loaded function whose name matches gdb's regex PATTERN
                        (as 'info functions'), at most --max-locations locations, or none

A function no loaded library defines yet stays pending until one does; if it looks like a
typo, the closest loaded names are suggested.

examples:
  mixdbg break at::native::add
  mixdbg break op:aten::mm
  mixdbg break --session 4242 'loop.c:12 if n > 3'
  mixdbg break --regex '^at::native::add' --max-locations 20
  mixdbg break --list
  mixdbg break --delete 3

--session takes the debuggee PID (the 'pid' of the session's 'session' event, or see
'mixdbg sessions'); it may be left out while exactly one session of yours is live.
"""


def register(verbs: argparse._SubParsersAction[Any]) -> None:
    """Add ``break``, ``sessions`` and ``detach``."""
    brk = verbs.add_parser("break", help="add, list or delete breakpoints of a live session",
                           description=BREAK_HELP, epilog=BREAK_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    brk.add_argument("spec", nargs="?", metavar="SPEC", help="where to break (see below)")
    what = brk.add_mutually_exclusive_group()
    what.add_argument("--list", action="store_true", help="list the session's breakpoints and their hits")
    what.add_argument("--delete", type=argtypes.positive_number, metavar="ID", help="delete breakpoint ID")
    brk.add_argument("--regex", action="store_true", help="SPEC is a regex over loaded function names")
    brk.add_argument("--max-locations", type=argtypes.positive_number, default=control.DEFAULT_MAX_LOCATIONS, metavar="N",
                     help=f"--regex refuses to create more than N locations (default "
                          f"{control.DEFAULT_MAX_LOCATIONS}, at most {control.MAX_LOCATIONS_LIMIT})")
    _common(brk)
    brk.set_defaults(func=_break)

    sessions = verbs.add_parser("sessions", help="list your live mixdbg sessions",
                                description="List your live 'mixdbg run' / 'mixdbg attach' sessions: "
                                "debuggee PID, debugpy port, start time, breakpoints, followed processes, target. Sockets "
                                "left by sessions that died are removed on the way.")
    sessions.add_argument("--json", action="store_true", help="one JSON document on stdout")
    sessions.set_defaults(func=_sessions)

    detach = verbs.add_parser("detach", help="end a live session; the debuggee runs on",
                              description="End a live session: gdb detaches, its breakpoints are "
                              "removed, the debuggee (and a connected Python debugger) runs on.")
    _common(detach)
    detach.set_defaults(func=_detach)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", type=argtypes.positive_number, metavar="PID",
                        help="the debuggee PID of the session (needed when several are live)")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")


def _break(args: argparse.Namespace) -> int:
    if args.list or args.delete is not None:
        if args.spec is not None or args.regex:
            raise UsageError("--list and --delete take no SPEC or --regex")
    elif args.spec is None:
        raise UsageError("missing SPEC (or --list, --delete ID); see 'mixdbg break --help'")
    session = control.find_session(args.session)
    if args.list:
        result = control.call(session.socket, "list")
        _print_list(session, result, args.json)
    elif args.delete is not None:
        result = control.call(session.socket, "delete", {"id": args.delete})
        _print(args.json, {"session": session.pid, **result},
               [f"breakpoint {args.delete} deleted (session PID {session.pid})"])
    else:
        result = control.call(session.socket, "break", {
            "spec": args.spec, "regex": args.regex, "max_locations": args.max_locations})
        lines = [line for body in result["breakpoints"] for line in human(BreakpointChanged(body))]
        if result["suggestions"]:
            lines.append("did you mean: " + ", ".join(result["suggestions"]) + "?")
        _print(args.json, {"session": session.pid, **result}, lines)
    return 0


def _print_list(session: control.SessionInfo, result: dict[str, Any], json_mode: bool) -> None:
    if json_mode:
        print(json.dumps({"session": session.pid, **result}), flush=True)
        return
    if not result["breakpoints"]:
        print(f"no breakpoints in the session for PID {session.pid}", flush=True)
        return
    rows = [{"id": b["id"], "hits": b["hits"],
             "where": "pending" if b["pending"] else f"{len(b['locations'])} location(s)",
             "spec": b["spec"]} for b in result["breakpoints"]]
    Output(json_mode=False).table(rows, columns=("id", "hits", "where", "spec"))


def _sessions(args: argparse.Namespace) -> int:
    found = control.live_sessions()
    if args.json:
        print(json.dumps([info.to_json() for info in found]), flush=True)
    elif not found:
        print("no live mixdbg sessions", flush=True)
    else:
        rows = [{"pid": info.pid, "port": info.port if info.port is not None else "-",
                 "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.started)),
                 "breakpoints": info.breakpoints, "state": info.state, "target": info.target,
                 "processes": "; ".join(p["process"] for p in info.processes) or "-"}
                for info in found]
        Output(json_mode=False).table(rows, columns=("pid", "port", "started", "breakpoints", "state",
                                                     "processes", "target"))
    return 0


def _detach(args: argparse.Namespace) -> int:
    session = control.find_session(args.session)
    result = control.call(session.socket, "detach")
    _print(args.json, {"session": session.pid, **result},
           [f"detached from PID {session.pid}; it runs on"])
    return 0


def _print(json_mode: bool, document: dict[str, Any], lines: list[str]) -> None:
    if json_mode:
        print(json.dumps(document), flush=True)
    else:
        print("\n".join(lines), flush=True)
