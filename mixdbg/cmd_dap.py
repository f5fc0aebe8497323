"""The ``dap`` verb: serve the Debug Adapter Protocol on stdin/stdout, or on a TCP port."""

from __future__ import annotations

import argparse
import logging
import os
import queue
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any

from mixdbg import argtypes, diagnostics
from mixdbg.engine.gdb_boot import GdbAhead
from mixdbg.errors import MixdbgError, UnavailableError, UsageError

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter
    from mixdbg.dap.protocol import Connection

#: A gdb started as the process started (``start_gdb_early``), with the queue it reports to,
#: for the first session to take.
_EARLY: tuple[queue.SimpleQueue[Any], GdbAhead] | None = None

DAP_HELP = """\
Serve one debugging session to an editor over the Debug Adapter Protocol: Python and
C/C++ in one session, one stack, every process the program starts (DataLoader workers,
multiprocessing, torchrun ranks), PyTorch operator breakpoints (function breakpoint
'op:aten::add') and tensors.

Editors start it themselves: VS Code through the mixdbg extension ('mixdbg setup
--install-extension'), Neovim (nvim-dap), Emacs (dape), Helix and Zed as an executable
adapter 'mixdbg dap'. With --port it waits for editors that connect to a running adapter
(VS Code's "debugServer", nvim-dap's server adapters).
"""

DAP_EPILOG = """\
launch arguments: program | module, args, cwd, env, python, stopOnEntry, justMyCode,
  follow (python | all | none), console, gdb. attach arguments: processId (the
  debuggee, its debugpy adapter or VS Code's launcher), follow, justMyCode, gdb.

examples:
  mixdbg dap                         (started by the editor; speaks DAP on stdin/stdout)
  mixdbg dap --port 4711             (then point the editor at 127.0.0.1:4711)
  mixdbg dap --port 0 --log dap.log  (a free port, printed; the traffic logged to dap.log)

The program runs on whenever the adapter ends, is killed, or the editor vanishes;
'disconnect' ends it only when mixdbg started it and the editor asks to.
Exit codes: 0 the client disconnected; 64 usage; 69 the port is unavailable.
"""


def register(verbs: argparse._SubParsersAction[Any]) -> None:
    """Add the ``dap`` verb."""
    parser = verbs.add_parser("dap", help="serve the Debug Adapter Protocol (editors)", description=DAP_HELP,
                              epilog=DAP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=argtypes.tcp_port, default=None,
                        help="listen on this TCP port (0: a free one, printed) instead of stdin/stdout")
    parser.add_argument("--host", default="127.0.0.1",
                        help="with --port: the address to listen on (default 127.0.0.1)")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow --host other than loopback: anyone who reaches the port can run code")
    parser.add_argument("--log", metavar="FILE", help="log the adapter's work and every DAP message to FILE (default: $MIXDBG_LOG)")
    parser.set_defaults(func=_dap)


def start_gdb_early() -> None:
    """Start gdb now, before the adapter's modules are imported: it boots meanwhile. A gdb
    that cannot start here is started again, and said, when the editor's session needs it."""
    global _EARLY
    items: queue.SimpleQueue[Any] = queue.SimpleQueue()
    try:
        _EARLY = (items, GdbAhead(items.put))
    except (MixdbgError, OSError) as err:
        logging.getLogger(__name__).info("gdb did not start early: %s", err)


def _adapter(connection: Connection) -> Adapter:
    """The adapter for a connection; the first one takes the gdb started early."""
    global _EARLY
    from mixdbg.dap.adapter import Adapter  # after gdb's start: see start_gdb_early

    if _EARLY is None:
        return Adapter(connection)
    (items, ahead), _EARLY = _EARLY, None
    return Adapter(connection, items, ahead)


def _dap(args: argparse.Namespace) -> int:
    diagnostics.log_to(args.log)
    if args.port is None:
        return _serve_stdio()
    return _serve_port(args)


def _serve_stdio() -> int:
    """DAP on our stdin/stdout. Nothing else may write to that stdout: file descriptor 1
    becomes stderr for everything of ours (and gdb's, and the debuggee's), and the
    protocol keeps a private duplicate of the real one."""
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    # SIGINT from a client (nvim-dap) after 'terminated' ends us quietly; never the debuggee.
    signal.signal(signal.SIGINT, lambda signum, frame: os._exit(0))
    from mixdbg.dap.protocol import Connection

    adapter = _adapter(Connection(protocol_out))
    # Unbuffered: a reader thread still blocked in it at exit must not hold a buffer lock.
    with open(sys.stdin.fileno(), "rb", buffering=0, closefd=False) as requests:
        adapter.serve(requests)
    return 0


def _serve_port(args: argparse.Namespace) -> int:
    """DAP to clients that connect to ``--port``, one session per connection, in turn."""
    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.allow_remote:
        raise UsageError(f"--host {args.host} would let anyone who reaches it run code as you; "
                         "add --allow-remote if that is what you want")
    if args.allow_remote:
        print(f"mixdbg: WARNING: listening on {args.host}: anyone who can reach this port can run "
              "any code as your user", file=sys.stderr, flush=True)
    from mixdbg.dap.protocol import Connection

    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind((args.host, args.port))
    except OSError as err:
        raise UnavailableError(f"cannot listen on {args.host}:{args.port}: {err.strerror}",
                               hint="pick another with --port N, or --port 0 for a free one") from err
    server.listen(1)
    print(f"mixdbg dap: listening on {args.host}:{server.getsockname()[1]}", flush=True)
    with server:
        while True:
            conn, _ = server.accept()
            with conn, conn.makefile("rb") as reading, conn.makefile("wb") as writing:
                _adapter(Connection(writing)).serve(reading)
