"""The ``run``, ``attach`` and ``ps`` verbs: start or join a session and report its events."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Optional

from mixdbg import argtypes, attach, control, diagnostics, gdbpath, launch_gen, sources
from mixdbg.breakpoints import BreakSpec, parse_spec
from mixdbg.errors import UsageError
from mixdbg.events import Exited, SessionStarted
from mixdbg.output import Output
from mixdbg.proctree import FOLLOW_MODES, FOLLOW_NONE, FOLLOW_PYTHON
from mixdbg.prompt import start_prompt
from mixdbg.session import Session, SessionEnded

RUN_HELP = """\
Run a Python script (or -m module) under debugpy and gdb at once.

The script is held before its first line until gdb is attached and every breakpoint is
inserted, so breakpoints in libraries loaded by 'import' (e.g. PyInit__C) always hit.
Each stop is reported with one mixed stack: native frames and the Python frames that
called them. Everything after SCRIPT (or -m MODULE) is passed to the script untouched.
"""

SPECS_HELP = """\
breakpoint specs (-b, repeatable):
  FUNCTION              exact (qualified) name, all overloads: at::native::randn
  FILE:LINE             a source line: my_ext.c:42 (needs debug info, see 'mixdbg doctor')
  op:NS::NAME[.OVERLOAD] a PyTorch operator, once per call in its kernel: op:aten::add.Tensor,
                        any namespace once a library registers it: op:myops::scaled_add
  SPEC if CONDITION     evaluated by gdb in the debuggee: 'my_ext.c:42 if i == 10'
"""

PROMPT_HELP = """\
At a terminal each stop opens a prompt (c, bt, p EXPR, args, tensor ADDR, break SPEC, detach, kill).
Ctrl-C interrupts the debuggee and shows where it is; at the prompt it detaches.
With --json or without a terminal, stops are printed and the debuggee continues.
"""

ATTACH_EPILOG = SPECS_HELP + """
examples:
  mixdbg attach 4242 -b at::native::add
  mixdbg attach $(pgrep -f train.py) --json -b 'loop.c:12 if i == 3'

""" + PROMPT_HELP

RUN_EPILOG = SPECS_HELP + """
examples:
  mixdbg run -b PyInit__C -b THPModule_initExtension -b at::native::randn examples/testdebug.py
  mixdbg run --json -b 'loop.c:12 if n > 3' train.py --epochs 1
  mixdbg run --wait-for-client --port 0 -m pytest -k test_add
  mixdbg run --vscode train.py        (then F5 in VS Code, see 'mixdbg setup')

""" + PROMPT_HELP


def register(verbs: argparse._SubParsersAction[Any]) -> None:
    """Add ``run``, ``attach`` and ``ps``."""
    run = verbs.add_parser("run", help="launch a script under debugpy + gdb", description=RUN_HELP,
                           epilog=RUN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _session_options(run)
    run.add_argument("--host", default="127.0.0.1",
                     help="address debugpy listens on (default 127.0.0.1)")
    run.add_argument("--port", type=argtypes.tcp_port, default=5678,
                     help="debugpy port (default 5678; 0 picks a free one)")
    run.add_argument("--allow-remote", action="store_true",
                     help="allow a --host other than loopback: anyone who reaches it can run code")
    run.add_argument("--wait-for-client", action="store_true",
                     help="also hold the script until a Python debugger (VS Code) attaches")
    run.add_argument("--python", default=attach.default_python(),
                     help="interpreter to run the script with (needs debugpy; default: mixdbg's)")
    run.add_argument("--vscode", action="store_true",
                     help="let VS Code attach both debuggers: write this run's PID and port into "
                          ".vscode/launch.json (see 'mixdbg setup') and hold the script until they attach")
    run.add_argument("--workspace", type=Path, default=Path.cwd(),
                     help="VS Code workspace folder for --vscode (default: the current directory)")
    run.add_argument("-m", dest="module", action="store_true",
                     help="run TARGET as a module, like python -m")
    run.add_argument("target", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS...]",
                     help="the script (or module with -m) and its arguments")
    run.set_defaults(func=_run)

    att = verbs.add_parser("attach", help="attach gdb to a running debuggee",
                           description="Attach gdb to a running Python process. PID may be the "
                           "debuggee itself, its debugpy adapter, or VS Code's debugpy launcher: "
                           "mixdbg finds the real debuggee and says which one it picked.",
                           epilog=ATTACH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _session_options(att)
    att.add_argument("pid", type=argtypes.process_id, help="process id")
    att.set_defaults(func=_attach)

    ps = verbs.add_parser("ps", help="list Python processes and their debugpy roles",
                          description="List Python processes with their role: debuggee, "
                          "debugpy adapter, debugpy launcher, or other. --json adds 'program': the command "
                          "line as the user ran it (python SCRIPT ARGS for a debuggee mixdbg launched).")
    ps.add_argument("--json", action="store_true", help="one JSON document on stdout")
    ps.set_defaults(func=_ps)


def _session_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-b", "--break", dest="breaks", action="append", default=[], metavar="SPEC",
                        help="native breakpoint (repeatable); see below")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON event per line on stdout, nothing else")
    parser.add_argument("--no-prompt", action="store_true",
                        help="at a terminal too, print each stop and continue (no prompt)")
    parser.add_argument("--gdb", default=None, help="gdb executable (default: $MIXDBG_GDB, else the gdb "
                        f"of the {gdbpath.WHEEL} wheel, else the system's)")
    parser.add_argument("--max-frames", type=argtypes.positive_number, default=128,
                        help="frames per stack (default 128)")
    parser.add_argument("--follow", choices=FOLLOW_MODES, default=FOLLOW_PYTHON,
                        help="which descendants gdb follows with their breakpoints: 'python' (default: "
                             "forks, and execs of a Python interpreter: DataLoader workers, "
                             "multiprocessing, subprocess, torchrun ranks; any other program is let go "
                             "at its exec, untouched), 'all', or 'none' (the debuggee only)")
    parser.add_argument("--threads", action="store_true",
                        help="with each stop, every thread's stack too (JSON: 'threads' in 'stopped')")
    parser.add_argument("--source-map", dest="source_map", action="append", default=[], metavar="FROM=TO",
                        type=sources.parse_rule,
                        help="native sources built in FROM are in TO here (repeatable, first match wins; "
                             "gdb's substitute-path): frames show TO's files, and breakpoints on them bind")
    parser.add_argument("--log", metavar="FILE",
                        help="log mixdbg's work (gdb's commands and their times, the agent's messages) "
                             "to FILE, for a bug report (default: $MIXDBG_LOG; none)")
    parser.add_argument("--debuginfod", action="store_true",
                        help="let gdb download missing debug info from the debuginfod servers in "
                             "$DEBUGINFOD_URLS (off by default: local debug files only, e.g. /usr/lib/debug)")


def _target(args: argparse.Namespace) -> attach.Target:
    remainder = list(args.target)
    if remainder[:1] == ["--"]:
        remainder = remainder[1:]
    if not remainder:
        raise UsageError("missing SCRIPT (or -m MODULE) to run")
    return attach.Target("module" if args.module else "script", remainder[0], tuple(remainder[1:]))


def _specs(args: argparse.Namespace) -> list[BreakSpec]:
    return [parse_spec(text) for text in args.breaks]


def _check_host(args: argparse.Namespace, output: Output) -> None:
    if attach.is_loopback(args.host):
        return
    if not args.allow_remote:
        raise UsageError(f"--host {args.host} is reachable from other machines; debugpy runs any code "
                         "a client sends. Add --allow-remote if you really mean it")
    output.warning(f"debugpy will listen on {args.host}:{args.port}: ANYONE who can reach this "
                   "address can run any code as you. Use an SSH tunnel instead where you can.")


def _interactive(args: argparse.Namespace) -> bool:
    return not args.json and not args.no_prompt and sys.stdin.isatty()


def _run(args: argparse.Namespace) -> int:
    target = _target(args)
    specs = _specs(args)
    output = Output(json_mode=args.json)
    _check_host(args, output)
    attach.check_target(target)
    if args.vscode:
        return _run_for_vscode(args, target, output)
    # gdb first: a spec it cannot parse fails before the script ever starts. The breakpoints
    # stay disabled while debugpy starts under gdb (its code is not the user's, and a stop
    # there would stall the start) and are enabled before the gate opens.
    launched: list[attach.Debuggee] = []

    def launch() -> None:  # while gdb boots; held at the gate until the breakpoints are in
        launched.append(attach.launch(target, attach.LaunchOptions(
            python=args.python, host=args.host, port=args.port, wait_for_client=args.wait_for_client,
            tracer=os.getpid(), stdout=sys.stderr if args.json else None,
            stdin_devnull=_interactive(args), no_vfork=args.follow != FOLLOW_NONE,
        )))

    try:
        with _session(args, output, specs, enabled=False, python=args.python, while_gdb_boots=launch,
                      held=launched) as session:
            debuggee = launched[0]
            output.progress(f"started {target.name} under debugpy on {args.host}:{args.port}; "
                            f"attaching gdb to PID {debuggee.pid}")
            session.attach(debuggee.pid, child=debuggee)
            debuggee.wait_for_debugpy()
            session.enable_breakpoints()
            started = SessionStarted(
                pid=debuggee.pid, host=debuggee.host, port=debuggee.port,
                adapter_pid=attach.debugpy_adapter_of(debuggee.pid, debuggee.port),
                python=debuggee.python, target=" ".join((target.name, *target.args)),
                gdb_pid=session.gdb.pid, how="launched", ptracer=debuggee.ptracer,
                function_calls=session.call_safety.allowed)
            return _go(session, started, output, release=session.release, waiting=args.wait_for_client)
    except SessionEnded as end:  # a signal's detach while the session started
        return end.code


def _run_for_vscode(args: argparse.Namespace, target: attach.Target, output: Output) -> int:
    """Launch for VS Code: its cppdbg gdb (not a descendant of ours, hence any tracer is
    declared) and its debugpy client attach; the script is held until both have."""
    if args.breaks:
        raise UsageError("with --vscode, set breakpoints in VS Code (-b is for mixdbg's own gdb)")
    launch_json = launch_gen.launch_json_path(args.workspace)
    if launch_json.exists():
        launch_gen.read_configurations(launch_json)  # unparseable: fail before launching anything
    debuggee = attach.launch(target, attach.LaunchOptions(
        python=args.python, host=args.host, port=args.port, wait_for_client=True, tracer=None,
        stdout=sys.stderr if args.json else None,
    ))
    try:
        debuggee.wait_for_debugpy()
        path = launch_gen.set_attach_target(args.workspace, debuggee.pid,
                                            os.path.realpath(f"/proc/{debuggee.pid}/exe"), debuggee.port)
    except BaseException:
        # Still held before its first line and unreachable by VS Code: end what we started.
        debuggee.process.kill()
        debuggee.process.wait()
        raise
    try:
        output.emit(SessionStarted(
            pid=debuggee.pid, host=debuggee.host, port=debuggee.port,
            adapter_pid=attach.debugpy_adapter_of(debuggee.pid, debuggee.port), python=debuggee.python,
            target=" ".join((target.name, *target.args)), gdb_pid=None, how="waiting for VS Code",
            ptracer=debuggee.ptracer))
        output.say(f"wrote PID {debuggee.pid} and port {debuggee.port} into {path}\n"
                   f"in VS Code, press F5 on '{launch_gen.COMPOUND_NAME}'; the script starts once "
                   "gdb and the Python debugger have attached")
        with _on_signals(_end_on_signal):
            attach.wait_for_tracer(debuggee.pid, debuggee.process)
            debuggee.release()
            code, signal_name = attach.exit_status(debuggee.process.wait())
    except SessionEnded as end:
        return end.code
    finally:
        debuggee.release()
    output.emit(Exited(code=code, signal=signal_name))
    return attach.shell_status(code, signal_name)


def _attach(args: argparse.Namespace) -> int:
    specs = _specs(args)
    output = Output(json_mode=args.json)
    pid, how = attach.resolve_debuggee(args.pid)
    output.progress(how)
    try:
        with _session(args, output, specs, enabled=True, python=os.path.realpath(f"/proc/{pid}/exe"),
                      pid=pid) as session:
            session.attach(pid)
            started = SessionStarted(
                pid=pid, host=None, port=None, adapter_pid=None,
                python=os.path.realpath(f"/proc/{pid}/exe"), target=" ".join(attach.command_line(pid)),
                gdb_pid=session.gdb.pid, how=how, ptracer=None, function_calls=session.call_safety.allowed)
            return _go(session, started, output, release=None, waiting=False)
    except SessionEnded as end:  # a signal's detach while the session started
        return end.code


@contextmanager
def _session(args: argparse.Namespace, output: Output, specs: list[BreakSpec],
             enabled: bool, python: str, pid: int | None = None,
             while_gdb_boots: Callable[[], None] | None = None,
             held: Sequence[attach.Debuggee] = ()) -> Iterator[Session]:
    """A session with gdb started and the ``-b`` breakpoints inserted, closed on every way
    out. A signal's detach while it starts (before the session loop) raises SessionEnded
    out of the block. A failure ends the debuggees still ``held`` at their gate (they never
    ran a line), before the close would let them run undebugged."""
    diagnostics.log_to(args.log)
    interactive = _interactive(args)
    fallback = gdbpath.choose(args.gdb).fallback_line()
    if fallback is not None:
        output.warning(fallback)
    session = Session(output.emit, auto_continue=not interactive, gdb=args.gdb, max_frames=args.max_frames,
                      all_threads=args.threads, python=python, follow=args.follow, debuginfod=args.debuginfod,
                      sources=sources.SourceMap(tuple(args.source_map)))
    session.pid = pid  # known before the attach: operator specs find the torch it loaded
    with _on_signals(_session_signals(session, interactive)):
        try:
            session.start_gdb(while_gdb_boots)
            for spec in specs:
                session.table.add(spec, announce=False, enabled=enabled)
            yield session
        except SessionEnded:
            raise
        except BaseException:
            for debuggee in held:
                debuggee.discard()
            raise
        finally:
            session.close()


def _go(session: Session, started: SessionStarted, output: Output,
        release: Callable[[], None] | None, waiting: bool) -> int:
    """Serve the control socket, announce the session and its breakpoints, let the
    debuggee run, and process events until the end."""
    server = control.start_server(session, target=started.target, port=started.port)
    try:
        output.emit(started)  # after the socket exists: 'mixdbg break' works from here on
        session.announce_breakpoints()
        session.resume()
        if release is not None:
            release()
        if waiting:
            output.progress(f"waiting for a Python debugger to attach to port {started.port}")
        if not session.auto_continue:
            start_prompt(session, output)
        return session.run()
    except OSError as err:
        if err.errno not in (errno.EIO, errno.EPIPE):
            raise
        # Our terminal (EIO) or the reader of our output (EPIPE) is gone: nobody sees stops
        # any more. End like SIGHUP/SIGPIPE would; the caller's close() detaches as always.
        _silence_stdio()
        return 128 + (signal.SIGHUP if err.errno == errno.EIO else signal.SIGPIPE)
    finally:
        server.close()


def _silence_stdio() -> None:
    """Point our stdout/stderr at /dev/null, so that no later write (or the flush at exit)
    fails again on the vanished terminal or pipe (the debuggee's own fds are unaffected)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        os.dup2(devnull, stream.fileno())
    os.close(devnull)


Handler = Callable[[int, Optional[FrameType]], None]
ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _on_signals(handler: Handler) -> Iterator[None]:
    """Handle SIGINT, SIGTERM and SIGHUP with ``handler`` for the duration of the block."""
    previous = {signum: signal.signal(signum, handler) for signum in ENDING_SIGNALS}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _session_signals(session: Session, interactive: bool) -> Handler:
    """While a session runs: Ctrl-C at a terminal interrupts the debuggee (a second one, at
    the prompt, detaches); SIGINT without a terminal, SIGTERM and SIGHUP detach and exit."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if interactive and signum == signal.SIGINT and session.state == "running":
            session.queue.put(lambda s: s.interrupt())
        else:
            session.queue.put(lambda s: s.detach(f"mixdbg received {name}", code=128 + signum))

    return on_signal


def _end_on_signal(signum: int, frame: FrameType | None) -> None:
    """While mixdbg only waits on a debuggee it does not trace: end with 128+N; the
    debuggee, in its own session, runs on."""
    raise SessionEnded(128 + signum)


def _ps(args: argparse.Namespace) -> int:
    rows = [
        {"pid": proc.pid, "role": role, "cmdline": " ".join(attach.command_line(proc.pid)),
         "program": " ".join(attach.program_line(proc.pid))}
        for proc, role in attach.python_processes()
    ]
    Output(json_mode=args.json).table(rows, columns=("pid", "role", "cmdline"))
    return 0
