"""First code the debuggee runs (``python -Xfrozen_modules=off bootstrap.py ...``).

It runs inside the user's interpreter, before the user's script, and does four things:

1. declares the permitted tracer (``prctl(PR_SET_PTRACER)``) so that gdb may attach under
   Yama ``ptrace_scope=1`` without root (a no-op where Yama is absent);
2. reports its pid on the status pipe (one JSON line), then its Python debugger (a second
   line): debugpy's port (debugpy started when a client connects, or at once when one is
   expected), or, under ``mixdbg dap`` (``MIXDBG_AGENT_SOCKET`` set, PORT -1), mixdbg's own
   agent (``mixdbg/pyagent``), which takes its breakpoints from that socket;
3. waits on the gate pipe until mixdbg has attached gdb and inserted every breakpoint.
   If mixdbg is gone before that (EOF on the gate), the script is not run: it asked for a
   debugger, and running it undebugged would skip every breakpoint it was started for;
4. runs the script or module exactly as ``python SCRIPT`` / ``python -m MODULE`` would.

Usage: bootstrap.py STATUS_FD GATE_FD HOST PORT WAIT_FOR_CLIENT TRACER CHILDREN (script|module) TARGET [ARGS...]
TRACER is a pid, or "any". CHILDREN is 1 to let debugpy follow child processes. Only the standard library, debugpy and the agent are used before step 4.
"""

import json
import os
import runpy
import socket
import sys
import threading


def _declare_tracer(tracer):
    """Allow ``tracer`` (a pid, or None for any process) to attach under Yama scope 1."""
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, package_parent)
    try:
        from mixdbg.yama_optin import set_ptracer
    finally:
        sys.path.remove(package_parent)
    return set_ptracer(tracer)


def _report(status_fd, message):
    try:
        os.write(status_fd, (json.dumps(message) + "\n").encode())
    except OSError:
        pass  # mixdbg is gone (or gave up on us): the script runs without it


def _import_debugpy(fallback):
    """The interpreter's own debugpy, else mixdbg's copy (``fallback``, the package
    directory), loaded by path so nothing else of mixdbg's environment is seen."""
    try:
        import debugpy
    except ImportError:
        if not fallback:
            raise
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "debugpy", os.path.join(fallback, "__init__.py"), submodule_search_locations=[fallback])
        debugpy = importlib.util.module_from_spec(spec)
        sys.modules["debugpy"] = debugpy
        spec.loader.exec_module(debugpy)
    return debugpy


def _start_debugpy(host, port, children, status_fd):
    """Listen for a DAP client; report the outcome on the status pipe.

    When a client is expected (``children``: --wait-for-client, --vscode), debugpy starts
    now and runs its usual adapter process, which also follows child processes. Otherwise
    only a socket listens: debugpy costs nothing until a client connects (importing it,
    starting it and its tracing of ``import torch`` took about 1 s of a 6 s run); the
    first connection starts it with the adapter inside the debuggee (half the start and
    exit time of the adapter process, and exec() works: debugpy's child-process hook would
    reconnect the new program to an adapter that, with no client, is gone), and each
    connection is relayed to it."""
    fallback = os.environ.pop("MIXDBG_DEBUGPY_FALLBACK", None)
    try:
        if not children:
            server = socket.create_server((host, port))
            _daemon(_serve_lazily, server, host, fallback)
            return server.getsockname()[:2]
        debugpy = _import_debugpy(fallback)
        debugpy.configure(subProcess=True)
        address = debugpy.listen((host, port), in_process_debug_adapter=False)
        if address is None:  # debugpy older than 1.8.22 does not say where it listens
            raise RuntimeError("debugpy >= 1.8.22 is needed (pip install -U debugpy)")
        return address
    except Exception as err:  # reported to mixdbg, which words it for the user
        _report(status_fd, {"error": f"{type(err).__name__}: {err}"})
        os._exit(69)


def _daemon(target, *args):
    """A daemon thread running ``target(*args)``, which debugpy does not trace."""
    thread = threading.Thread(target=target, args=args, daemon=True, name="mixdbg-debugpy-relay")
    thread.pydev_do_not_trace = True
    thread.is_pydev_daemon_thread = True
    thread.start()


def _serve_lazily(server, host, fallback):
    """Accept DAP clients; start debugpy at the first; relay each to it."""
    debugpy_address = None
    while True:
        client, _ = server.accept()
        try:
            if debugpy_address is None:
                debugpy = _import_debugpy(fallback)
                debugpy.configure(subProcess=False)
                debugpy_address = debugpy.listen((host, 0), in_process_debug_adapter=True)
            upstream = socket.create_connection(debugpy_address)
        except Exception as err:
            print(f"mixdbg: the Python debugger could not start: {type(err).__name__}: {err}", file=sys.stderr)
            client.close()
            continue
        _daemon(_relay, client, upstream)
        _daemon(_relay, upstream, client)


def _relay(source, sink):
    """Copy bytes from ``source`` to ``sink`` until either side closes."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass  # the other side closed: the shutdown below ends its relay too
    for end in (source, sink):
        try:
            end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed


#: Exit status of a debuggee whose debugger went away before its first line (EX_UNAVAILABLE).
NO_DEBUGGER_STATUS = 69
AGENT_SOCKET_ENV = "MIXDBG_AGENT_SOCKET"


def _start_agent(status_fd):
    """Load mixdbg's Python agent by path (as ``_mixdbg_agent``: the program never sees
    mixdbg's package) and let it take its configuration; report a failure and end."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyagent", "agent.py")
    try:
        spec = importlib.util.spec_from_file_location("_mixdbg_agent", path)
        agent = importlib.util.module_from_spec(spec)
        sys.modules["_mixdbg_agent"] = agent
        spec.loader.exec_module(agent)
        agent.start(os.environ[AGENT_SOCKET_ENV])
    except Exception as err:  # reported to mixdbg, which words it for the user
        message = f"mixdbg's Python agent could not start: {type(err).__name__}: {err}"
        _report(status_fd, {"error": message})
        sys.stderr.write(f"mixdbg: {message}; the script was not run\n")
        os._exit(NO_DEBUGGER_STATUS)


def _wait_at_gate(gate_fd):
    """Wait for mixdbg to open the gate; if it is gone instead, end without running."""
    opened = os.read(gate_fd, 1)
    os.close(gate_fd)
    if not opened:
        sys.stderr.write("mixdbg: the debugger went away before the script started; "
                         "not running it without the debugger it was started under\n")
        sys.stderr.flush()
        os._exit(NO_DEBUGGER_STATUS)


def _check_syntax(kind, target, status_fd):
    """Compile a script file with the user's interpreter before anything runs, so that a
    syntax error is one line from mixdbg rather than a traceback from inside the debugger."""
    if kind != "script" or not os.path.isfile(target):
        return
    with open(target, "rb") as handle:
        source = handle.read()
    if source[:4] == b"PK\x03\x04":  # a zip application: runpy reads it, not compile()
        return
    try:
        compile(source, target, "exec", dont_inherit=True)
    except SyntaxError as err:
        _report(status_fd, {"syntax": {"file": target, "line": err.lineno, "message": err.msg}})
        os._exit(65)
    except ValueError as err:  # e.g. NUL bytes in the source
        _report(status_fd, {"syntax": {"file": target, "line": None, "message": str(err)}})
        os._exit(65)


def _fork_not_vfork():
    """With ``MIXDBG_NO_VFORK=1`` (children followed under gdb: see mixdbg's attach.py),
    let ``subprocess`` fork rather than vfork or posix_spawn; the program run is the same."""
    if os.environ.pop("MIXDBG_NO_VFORK", None) != "1":
        return
    import subprocess

    for flag in ("_USE_VFORK", "_USE_POSIX_SPAWN"):
        if hasattr(subprocess, flag):
            setattr(subprocess, flag, False)


def _run_target(kind, target, args):
    """Run the user's code as the interpreter itself would."""
    if kind == "module":
        sys.argv = [target] + args
        sys.path.insert(0, "")
        runpy._run_module_as_main(target, alter_argv=True)
    else:
        sys.argv = [target] + args
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")


def main(argv):
    status_fd, gate_fd = int(argv[0]), int(argv[1])
    host, port, wait_for_client = argv[2], int(argv[3]), argv[4] == "1"
    tracer = None if argv[5] == "any" else int(argv[5])
    children = argv[6] == "1"
    kind, target, args = argv[7], argv[8], argv[9:]
    # Python put this file's directory first on sys.path; the user's code must not see it.
    del sys.path[0]
    _check_syntax(kind, target, status_fd)
    # The pid first: mixdbg attaches gdb while debugpy starts up (about 0.7 s).
    _report(status_fd, {"pid": os.getpid(), "ptracer": _declare_tracer(tracer)})
    if port < 0:  # mixdbg dap: its agent, which returns once the debugger configured it
        _start_agent(status_fd)
        bound_host, bound_port = None, None
    else:
        bound_host, bound_port = _start_debugpy(host, port, children, status_fd)
    _report(status_fd, {"host": bound_host, "port": bound_port, "python": sys.executable})
    os.close(status_fd)
    _wait_at_gate(gate_fd)
    if wait_for_client:
        sys.modules["debugpy"].wait_for_client()
    _fork_not_vfork()
    _run_target(kind, target, args)


if __name__ == "__main__":
    main(sys.argv[1:])
