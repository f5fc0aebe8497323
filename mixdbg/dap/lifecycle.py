"""Starting and ending a DAP session: initialize, launch (also without debugging: ``noDebug``),
attach, configurationDone, disconnect, terminate."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mixdbg import attach
from mixdbg.dap import configuration
from mixdbg.dap.output import OutputFiles
from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import CAPABILITIES, request
from mixdbg.dap.terminal import TerminalRequest
from mixdbg.engine.agents import AgentHub
from mixdbg.engine.gdb_boot import GdbAhead
from mixdbg.errors import MixdbgError
from mixdbg.proctree import FOLLOW_NONE
from mixdbg.session import Session
from mixdbg.sources import SourceMap, rules_of

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter

#: How deep a stack the editor is shown (the prompt shows 128; an editor pages through them).
MAX_FRAMES = 1000

EXCEPTION_FILTERS = [
    {"filter": "native-crash", "label": "Native crash", "default": True,
     "description": "Stop when a process dies of SIGSEGV, SIGABRT, SIGFPE, SIGBUS or SIGILL"},
    {"filter": "cpp-throw", "label": "C++ throw", "default": False,
     "description": "Stop where C++ code throws an exception"},
    {"filter": "python-uncaught", "label": "Uncaught Python exceptions", "default": True,
     "description": "Stop when a Python exception ends a thread or the program"},
    {"filter": "python-raised", "label": "Raised Python exceptions", "default": False,
     "description": "Stop where your Python code raises an exception"},
    {"filter": "python-user-uncaught", "label": "User uncaught Python exceptions", "default": False,
     "description": "Stop where a Python exception leaves your code for library code that catches it "
                    "(a ThreadPoolExecutor worker, a framework's handler)"},
]


@request("initialize", supportsConfigurationDoneRequest=True, supportTerminateDebuggee=True,
         supportsTerminateRequest=True, exceptionBreakpointFilters=EXCEPTION_FILTERS)
def initialize(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Remember what the client can do; say what mixdbg can. A launch or attach follows:
    gdb starts now (``GdbAhead``)."""
    adapter.client = arguments
    if adapter.gdb_ahead is None:
        adapter.gdb_ahead = GdbAhead(adapter.queue.put)
    return dict(CAPABILITIES)


def _checked(kind: str, arguments: dict[str, Any]) -> None:
    found = configuration.problem(arguments, configuration.CONFIGURATION[kind])
    if found is not None:
        where, why = found
        raise DapError(f"{kind} argument '{'.'.join(str(part) for part in where) or kind}': {why}")


def _target(arguments: dict[str, Any]) -> attach.Target:
    program, module = arguments.get("program"), arguments.get("module")
    if bool(program) == bool(module):
        raise DapError("launch needs 'program' (a Python script) or 'module' (python -m MODULE), "
                       "one of the two")
    args = tuple(str(a) for a in arguments.get("args", []))
    return attach.Target("module", str(module), args) if module else attach.Target("script", str(program), args)


def _source_map(arguments: dict[str, Any], cwd: str | None) -> SourceMap:
    """The launch's or attach's ``sourceMap``, and the debuggee's working directory for
    relative source names."""
    try:
        rules = rules_of(arguments.get("sourceMap") or {})
    except MixdbgError as err:
        raise DapError(err.message) from None
    return SourceMap(rules, (cwd,) if cwd else ())


def _new_session(adapter: Adapter, arguments: dict[str, Any], python: str, hub: AgentHub | None,
                 sources: SourceMap, while_gdb_boots: Callable[[], None] | None = None) -> Session:
    gdb, debuginfod = arguments.get("gdb"), bool(arguments.get("debuginfod", False))
    session = Session(adapter.on_event, auto_continue=False, gdb=gdb, python=python,
                      max_frames=MAX_FRAMES,
                      follow=str(arguments.get("follow", "python")), hub=hub, items=adapter.queue,
                      eager_stacks=False, debuginfod=debuginfod, sources=sources,
                      ahead=adapter.gdb_ahead.take(gdb, debuginfod) if adapter.gdb_ahead else None)
    adapter.session = session
    session.start_gdb(while_gdb_boots)
    return session


@request("launch")
def launch(adapter: Adapter, arguments: dict[str, Any]) -> None:
    """Start the program under gdb and the Python agent, held before its first line until
    ``configurationDone``; with arguments that do not follow their schema, nothing starts
    and the schema's reason is the answer."""
    if adapter.session is not None:
        raise DapError("this session already has a debuggee")
    _checked("launch", arguments)
    try:
        target = _launch_checked(adapter, arguments)
    except BaseException:
        _end_held(adapter)
        raise
    if target is not None:
        assert adapter.debuggee is not None
        adapter.connection.event("process", {"name": " ".join((target.name, *target.args)),
                                             "systemProcessId": adapter.debuggee.pid, "isLocalProcess": True,
                                             "startMethod": "launch"})
        adapter.connection.event("initialized")


def _launch_checked(adapter: Adapter, arguments: dict[str, Any]) -> attach.Target | None:
    """The launch of checked arguments: the program started, held at its gate, gdb
    attached (its target), or run without debugging (None)."""
    target = _target(arguments)
    cwd = str(arguments.get("cwd") or os.getcwd())
    attach.check_target(target, cwd)
    sources = _source_map(arguments, cwd)
    python = str(arguments.get("python") or sys.executable)
    if arguments.get("noDebug"):
        if adapter.gdb_ahead is not None:
            adapter.gdb_ahead.discard()
        _run_without_debugging(adapter, arguments, target, cwd, python)
        return None
    adapter.hub = AgentHub(adapter.agent_message)
    adapter.hub.configure(just_my_code=bool(arguments.get("justMyCode", True)),
                          stop_on_entry=bool(arguments.get("stopOnEntry", False)),
                          show_return_value=bool(arguments.get("showReturnValue", True)))
    hub = adapter.hub

    def start_program() -> None:  # while gdb boots; held at its gate until configurationDone
        terminal = _program_output(adapter, arguments, target, cwd)
        adapter.debuggee = attach.launch(target, _launch_options(
            adapter, arguments, python, cwd, terminal, tracer=os.getpid(),
            no_vfork=str(arguments.get("follow", "python")) != FOLLOW_NONE, agent_socket=str(hub.path)))
        if terminal is not None:
            terminal.close()  # the debuggee has its own descriptors on it
        adapter.launched = True
        adapter.terminate_on_end = True

    session = _new_session(adapter, arguments, python, hub, sources, while_gdb_boots=start_program)
    debuggee = adapter.debuggee
    assert debuggee is not None  # start_program ran
    session.attach(debuggee.pid, child=debuggee)
    return target


def _run_without_debugging(adapter: Adapter, arguments: dict[str, Any], target: attach.Target, cwd: str,
                           python: str) -> None:
    """``noDebug`` (VS Code's Run Without Debugging, Ctrl+F5): the program runs as ``python``
    runs it, with no gdb and no agent, in the same console; its end ends the session."""
    terminal = _program_output(adapter, arguments, target, cwd)
    program = attach.run_without_debugger(target, _launch_options(adapter, arguments, python, cwd, terminal))
    if terminal is not None:
        terminal.close()
    adapter.program = program
    adapter.launched = adapter.terminate_on_end = True
    adapter.connection.event("process", {"name": " ".join((target.name, *target.args)), "systemProcessId": program.pid,
                                         "isLocalProcess": True, "startMethod": "launch"})
    adapter.connection.event("initialized")

    def wait() -> None:  # on its own thread; the end is served on the adapter's
        code = program.wait()
        adapter.queue.put(lambda session: adapter.program_ended(code))
    threading.Thread(target=wait, name="program-wait", daemon=True).start()


def _program_output(adapter: Adapter, arguments: dict[str, Any], target: attach.Target, cwd: str) -> IO[bytes] | None:
    """Where the program's output goes: the editor's terminal (returned), or else output
    events (``adapter.output``, and None returned)."""
    terminal = _terminal(adapter, arguments, target, cwd)
    if terminal is None:
        adapter.output = OutputFiles(lambda category, text: adapter.connection.event(
            "output", {"category": category, "output": text}))
    return terminal


def _launch_options(adapter: Adapter, arguments: dict[str, Any], python: str, cwd: str, terminal: IO[bytes] | None,
                    **more: Any) -> attach.LaunchOptions:
    """How the program starts: its interpreter, directory, environment changes and output."""
    env = {str(k): (None if v is None else str(v)) for k, v in (arguments.get("env") or {}).items()}
    return attach.LaunchOptions(
        python=python, host="127.0.0.1", port=0,
        stdout=terminal or (adapter.output.stdout[1] if adapter.output else None),
        stderr=terminal or (adapter.output.stderr[1] if adapter.output else None), stdin=terminal,
        stdin_devnull=True, cwd=cwd, env=env, **more)


def _terminal(adapter: Adapter, arguments: dict[str, Any], target: attach.Target, cwd: str) -> IO[bytes] | None:
    """The editor's terminal for the debuggee (``console: integratedTerminal`` and a client
    that runs commands in terminals), or None: output events then."""
    console = str(arguments.get("console", "integratedTerminal"))
    if console == "internalConsole" or not adapter.client.get("supportsRunInTerminalRequest"):
        return None
    request = TerminalRequest(f"mixdbg: {Path(target.name).name}", cwd)
    answer: list[bool] = []
    arguments_sent = request.arguments()
    if console == "externalTerminal":
        arguments_sent["kind"] = "external"
    adapter.connection.reverse_request("runInTerminal", arguments_sent,
                                       lambda response: answer.append(bool(response.get("success"))))
    device = request.wait(lambda: answer[0] if answer else None)
    if device is None:
        adapter.say("mixdbg: the editor gave no terminal; the program's output goes to the debug console")
    adapter.terminal = request
    return device


@request("attach")
def attach_request(adapter: Adapter, arguments: dict[str, Any]) -> None:
    """Attach gdb to a running Python process (its children from now on too)."""
    if adapter.session is not None:
        raise DapError("this session already has a debuggee")
    _checked("attach", arguments)
    raw = str(arguments.get("processId", "")).strip()
    if not raw.isdigit():
        raise DapError(f"attach needs a numeric 'processId', not {raw!r}")
    pid, how = attach.resolve_debuggee(int(raw))
    sources = _source_map(arguments, _cwd_of(pid))
    session = _new_session(adapter, arguments, os.path.realpath(f"/proc/{pid}/exe"), None, sources)
    session.pid = pid
    session.attach(pid)
    adapter.say(f"mixdbg: {how}")
    adapter.connection.event("process", {"name": " ".join(attach.command_line(pid)), "systemProcessId": pid,
                                         "isLocalProcess": True, "startMethod": "attach"})
    adapter.connection.event("initialized")


def _cwd_of(pid: int) -> str | None:
    """The working directory of a process we attach to (where its relative paths start)."""
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


@request("configurationDone")
def configuration_done(adapter: Adapter, arguments: dict[str, Any]) -> None:
    """The client set its breakpoints: let the program start."""
    session = adapter.session
    if session is None and adapter.program is not None:  # run without debugging: nothing to configure
        adapter.configured = True
        return
    if session is None:
        raise DapError("configurationDone before launch or attach")
    if adapter.debuggee is not None and adapter.hub is not None:
        adapter.hub.release()
        try:
            adapter.debuggee.wait_for_debugpy()  # the agent's report: configured, or why not
        except BaseException:
            _end_held(adapter)
            raise
        session.enable_breakpoints()
        session.release()
    else:  # attached: it has been held since the attach, its breakpoints now in
        session.resume()
    adapter.configured = True


@request("disconnect")
def disconnect(adapter: Adapter, arguments: dict[str, Any]) -> None:
    """End the session: the program runs on (``terminateDebuggee: false``, the default
    for attach) or, if mixdbg started it, is ended (the default for launch)."""
    adapter.done = True
    session = adapter.session
    terminate = bool(arguments.get("terminateDebuggee", adapter.terminate_on_end))
    if adapter.program is not None and not adapter.ended:
        if terminate:
            adapter.program.terminate()  # the process mixdbg started, by its PID
        adapter.end_session()
        return
    if session is None or adapter.ended:
        return
    if not adapter.configured:
        if adapter.launched:
            _end_held(adapter)
        adapter.end_session()
        return
    if terminate and adapter.launched:
        session.kill()
        return
    session.detach("the client disconnected")


@request("terminate")
def terminate(adapter: Adapter, arguments: dict[str, Any]) -> None:
    """End the program mixdbg started (its followed children too)."""
    if adapter.program is not None and not adapter.ended:
        adapter.program.terminate()  # its end ends the session
        return
    if adapter.session is None or adapter.ended:
        return
    if not adapter.launched:
        raise DapError("mixdbg attached to this program; it ends only what it started (use disconnect)")
    adapter.session.kill()


def _end_held(adapter: Adapter) -> None:
    """A launch that cannot go on: the program, still held before its first line, ends
    (it asked for a debugger; it never runs without one)."""
    if adapter.debuggee is not None:
        adapter.debuggee.discard()
