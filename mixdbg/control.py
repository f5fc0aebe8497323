"""The control endpoint of a live session: how ``mixdbg break`` reaches the gdb a session owns.

Each ``run``/``attach`` session listens on a Unix socket ``<runtime dir>/<debuggee pid>.sock``
(runtime dir: ``$XDG_RUNTIME_DIR/mixdbg``, else ``/tmp/mixdbg-<uid>``; the directory 0700, the
socket 0600; the server also checks the peer's uid with SO_PEERCRED and refuses any other).

Protocol, version 1: one connection carries one request and one reply, each a JSON object on
one line (at most ``MAX_REQUEST`` bytes, sent within ``REQUEST_TIMEOUT`` seconds)::

    -> {"v": 1, "verb": "break", "args": {"spec": "native_step", "regex": false, "max_locations": 50}}
    <- {"v": 1, "ok": true, "result": {"breakpoints": [...], "suggestions": [...]}}
    <- {"v": 1, "ok": false, "error": {"kind": "usage", "message": "...", "hint": null}}

Verbs: ``describe`` (answered by the server thread itself), and ``break``, ``list``, ``delete``,
``detach``, which run as actions on the session thread; the action sends the reply itself, so
a ``detach`` is answered before the session ends. The server threads never wait for the
session thread: they only put actions on its queue.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mixdbg import symbols
from mixdbg.breakpoints import Breakpoint, BreakSpec, parse_spec
from mixdbg.errors import (
    DebuggerError,
    MixdbgError,
    NotFoundError,
    NotPermittedError,
    UnavailableError,
    UsageError,
)
from mixdbg.events import Notice
from mixdbg.rundir import runtime_dir
from mixdbg.session import Session, SessionEnded

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
MAX_REQUEST = 64 * 1024
#: A client that connected must have sent its whole request by then.
REQUEST_TIMEOUT = 5.0
#: How long a client waits for a reply: a breakpoint in a huge library can take gdb a while.
REPLY_TIMEOUT = 150.0
#: ``describe`` is answered without the session thread, so it is quick or the session is gone.
DESCRIBE_TIMEOUT = 3.0
SESSION_VERBS = frozenset({"break", "list", "delete", "detach"})
_ERROR_KINDS: dict[str, type[MixdbgError]] = {
    "usage": UsageError, "not-found": NotFoundError, "unavailable": UnavailableError,
    "debugger": DebuggerError, "not-permitted": NotPermittedError, "protocol": MixdbgError,
}


class ProtocolError(MixdbgError):
    """A request that is not valid protocol: malformed, oversized, too slow, unknown verb."""


def socket_path(pid: int) -> Path:
    """Where the session debugging ``pid`` listens."""
    return runtime_dir() / f"{pid}.sock"


def peer_allowed(peer_uid: int, own_uid: int | None = None) -> bool:
    """Whether a peer with ``peer_uid`` may control this session: only its owner may."""
    return peer_uid == (os.geteuid() if own_uid is None else own_uid)


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket (SO_PEERCRED)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


def _is_stale(path: Path) -> bool:
    """True if nothing listens on the socket at ``path`` (its session died)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(DESCRIBE_TIMEOUT)
    try:
        probe.connect(str(path))
    except ConnectionRefusedError:
        return True
    except FileNotFoundError:
        return False
    finally:
        probe.close()
    return False


def _remove_stale(path: Path) -> None:
    try:
        path.unlink()
        log.info("removed stale session socket %s", path)
    except FileNotFoundError:
        log.debug("stale socket %s already removed", path)


# --- the server ---------------------------------------------------------------------------

class _Connection:
    """One accepted client; ``reply`` sends exactly one answer and closes."""

    def __init__(self, sock: socket.socket, on_close: Callable[[_Connection], None]) -> None:
        self.sock = sock
        self.peer_pid = 0
        self._on_close = on_close
        self._lock = threading.Lock()
        self._done = False

    def reply(self, message: dict[str, Any]) -> None:
        """Send ``message`` (the first call wins) and close; a vanished client is only logged."""
        with self._lock:
            if self._done:
                return
            self._done = True
        try:
            self.sock.settimeout(2.0)
            self.sock.sendall(json.dumps({"v": PROTOCOL_VERSION, **message}).encode() + b"\n")
        except OSError as err:
            log.info("control client (pid %d) went away before its reply: %s", self.peer_pid, err)
        finally:
            self.sock.close()
            self._on_close(self)

    def fail(self, err: MixdbgError) -> None:
        """Reply with an error."""
        kind = next((k for k, cls in _ERROR_KINDS.items() if type(err) is cls), None)
        if kind is None:
            kind = next((k for k, cls in _ERROR_KINDS.items() if isinstance(err, cls)), "protocol")
        self.reply({"ok": False, "error": {"kind": kind, "message": err.message, "hint": err.hint}})


class ControlServer:
    """Serves one session's control socket on background threads (see the module doc)."""

    def __init__(self, session: Session, path: Path, target: str, port: int | None) -> None:
        self.session = session
        self.path = path
        self.description = {"pid": session.pid, "owner_pid": os.getpid(), "target": target, "port": port,
                            "started": time.time(), "protocol": PROTOCOL_VERSION}
        self._open: set[_Connection] = set()
        self._lock = threading.Lock()
        self._closing = False
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(str(path))
            os.chmod(path, 0o600)  # the directory is private already; be exact anyway
            self._listener.listen(16)
        except OSError:
            self._listener.close()
            raise
        self._inode = os.stat(path).st_ino
        self._thread = threading.Thread(target=self._accept_loop, name="control-accept", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop listening, remove the socket, and answer requests the session will never run."""
        with self._lock:
            self._closing = True
            pending = list(self._open)
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() on Linux
        except OSError as err:
            log.debug("shutdown of the control listener: %s", err)
        self._listener.close()
        self._thread.join(2.0)
        try:
            if os.stat(self.path).st_ino == self._inode:
                self.path.unlink()
        except FileNotFoundError:
            log.info("control socket %s was already removed", self.path)
        for connection in pending:
            connection.fail(UnavailableError("the session ended before it could do this"))

    def _accept_loop(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                if self._closing:
                    return
                log.exception("control socket accept failed; live commands are off for this session")
                return
            connection = _Connection(sock, self._forget)
            with self._lock:
                if self._closing:
                    sock.close()
                    return
                self._open.add(connection)
            threading.Thread(target=self._serve, args=(connection,), name="control-conn", daemon=True).start()

    def _forget(self, connection: _Connection) -> None:
        with self._lock:
            self._open.discard(connection)

    def _serve(self, connection: _Connection) -> None:
        """Check the peer, read and validate the request, then answer or hand it to the session."""
        try:
            pid, uid, _ = peer_credentials(connection.sock)
            connection.peer_pid = pid
            if not peer_allowed(uid):
                log.warning("refused a control connection from uid %d (pid %d)", uid, pid)
                connection.fail(NotPermittedError(f"uid {uid} may not control this session"))
                return
            verb, args = parse_request(_read_request(connection.sock))
        except MixdbgError as err:
            connection.fail(err)
            return
        except OSError as err:
            connection.fail(ProtocolError(f"reading the request failed: {err}"))
            return
        if verb == "describe":
            connection.reply({"ok": True, "result": self.describe()})
        else:
            self.session.queue.put(_action(connection, verb, args))

    def describe(self) -> dict[str, Any]:
        """The session's metadata. Read from the server thread: plain attribute reads only."""
        return {**self.description, "state": self.session.state,
                "breakpoints": len(self.session.table.items),
                "processes": [{"pid": pid, "process": label} for pid, label in self.session.tree.summary]}


def _read_request(sock: socket.socket) -> bytes:
    """One newline-terminated request, within the size and time limits."""
    deadline = time.monotonic() + REQUEST_TIMEOUT
    data = b""
    while b"\n" not in data:
        if len(data) > MAX_REQUEST:
            raise ProtocolError(f"request larger than {MAX_REQUEST} bytes")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ProtocolError(f"no complete request within {REQUEST_TIMEOUT:.0f} s")
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            raise ProtocolError("connection closed before a complete request")
        data += chunk
    line = data.split(b"\n", 1)[0]
    if len(line) > MAX_REQUEST:
        raise ProtocolError(f"request larger than {MAX_REQUEST} bytes")
    return line


def parse_request(line: bytes) -> tuple[str, dict[str, Any]]:
    """Validate one request line; return (verb, args) or raise ProtocolError/UsageError."""
    try:
        request = json.loads(line)
    except (UnicodeDecodeError, ValueError) as err:
        raise ProtocolError(f"request is not JSON: {err}") from err
    if not isinstance(request, dict):
        raise ProtocolError("request must be a JSON object")
    if request.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(f"unsupported protocol version {request.get('v')!r} "
                            f"(this session speaks {PROTOCOL_VERSION}); use the same mixdbg for both")
    verb, args = request.get("verb"), request.get("args", {})
    if verb != "describe" and verb not in SESSION_VERBS:
        raise ProtocolError(f"unknown verb {verb!r}")
    if not isinstance(args, dict):
        raise ProtocolError("'args' must be a JSON object")
    _check_args(str(verb), args)
    return str(verb), args


def _action(connection: _Connection, verb: str, args: dict[str, Any]) -> Callable[[Session], None]:
    """The session-thread side of a request: do it, then reply (before the session ends)."""

    def action(session: Session) -> None:
        try:
            result = _OPERATIONS[verb](session, args, connection.peer_pid)
        except SessionEnded:
            connection.reply({"ok": True, "result": {"detached": session.pid}})
            raise
        except MixdbgError as err:
            connection.fail(err)
        except Exception as err:  # a bug in one request must not end the session
            log.exception("control request %r failed", verb)
            connection.fail(MixdbgError(f"internal error in the session: {err!r}"))
        else:
            connection.reply({"ok": True, "result": result})

    return action


# --- what requests do, on the session thread ------------------------------------------------

#: How many breakpoint locations one ``--regex`` request may create, by default and at most.
DEFAULT_MAX_LOCATIONS = 50
MAX_LOCATIONS_LIMIT = 1000
MAX_SPEC = 4096


def _check_args(verb: str, args: dict[str, Any]) -> None:
    """Reject bad arguments on the server thread, before they reach the session."""
    if verb == "break":
        spec = args.get("spec")
        if not isinstance(spec, str) or len(spec) > MAX_SPEC:
            raise ProtocolError(f"'break' needs 'spec': a string of at most {MAX_SPEC} characters")
        parse_spec(spec)
        if not isinstance(args.get("regex", False), bool):
            raise ProtocolError("'regex' must be true or false")
        cap = args.get("max_locations", DEFAULT_MAX_LOCATIONS)
        if type(cap) is not int or not 1 <= cap <= MAX_LOCATIONS_LIMIT:
            raise UsageError(f"--max-locations must be between 1 and {MAX_LOCATIONS_LIMIT}")
    elif verb == "delete" and type(args.get("id")) is not int:
        raise ProtocolError("'delete' needs 'id': a breakpoint number")


def _attached(session: Session) -> None:
    if session.state not in ("running", "stopped"):
        raise UnavailableError(f"the session is ending (debuggee {session.state})")


def _listed(breakpoint: Breakpoint) -> dict[str, Any]:
    return {**breakpoint.to_json(), "hits": breakpoint.hits}


def _op_break(session: Session, args: dict[str, Any], peer_pid: int) -> dict[str, Any]:
    """Insert at once, running or not: in MI async all-stop mode gdb writes the breakpoint
    into a running debuggee immediately (it inserts whenever threads are executing)."""
    _attached(session)
    spec = parse_spec(args["spec"])
    if args.get("regex") and spec.is_op:
        raise UsageError("--regex takes a pattern over function names, not an op: spec")
    if args.get("regex"):
        created = _break_regex(session, spec, args.get("max_locations", DEFAULT_MAX_LOCATIONS))
        return {"breakpoints": [_listed(b) for b in created], "suggestions": []}
    breakpoint = session.table.add(spec)
    unknown = breakpoint.pending and not spec.is_line and not spec.is_op
    return {"breakpoints": [_listed(breakpoint)],
            "suggestions": symbols.suggestions(session.gdb, spec.location) if unknown else []}


def _op_list(session: Session, args: dict[str, Any], peer_pid: int) -> dict[str, Any]:
    return {"breakpoints": [_listed(session.table.items[n]) for n in sorted(session.table.items)]}


def _op_delete(session: Session, args: dict[str, Any], peer_pid: int) -> dict[str, Any]:
    _attached(session)
    session.table.delete(args["id"])
    return {"deleted": args["id"]}


def _op_detach(session: Session, args: dict[str, Any], peer_pid: int) -> dict[str, Any]:
    session.detach(f"'mixdbg detach' (PID {peer_pid}) asked")  # raises SessionEnded
    return {"detached": session.pid}


_OPERATIONS: dict[str, Callable[[Session, dict[str, Any], int], dict[str, Any]]] = {
    "break": _op_break, "list": _op_list, "delete": _op_delete, "detach": _op_detach,
}


def _break_regex(session: Session, spec: BreakSpec, cap: int) -> list[Breakpoint]:
    """One breakpoint per loaded function matching the pattern, all or none within ``cap``."""
    # Room for the symbols that are dropped or merged: PLT stubs, clones, overloads.
    names, truncated = symbols.function_names(session.gdb, spec.location, 4 * cap + 50)
    examples = f" (e.g. {', '.join(names[:3])})" if names else ""
    too_many = UsageError(f"the pattern {spec.location!r} matches more than {cap} locations{examples}",
                          hint=f"narrow the pattern, or raise --max-locations (at most {MAX_LOCATIONS_LIMIT})")
    if truncated or len(names) > cap:
        raise too_many
    if not names:
        raise NotFoundError(f"no function of the loaded libraries matches the pattern {spec.location!r}",
                            hint="a library not loaded yet: add its functions by name, they stay pending")
    created: list[Breakpoint] = []
    try:
        for name in names:
            text = name if spec.condition is None else f"{name} if {spec.condition}"
            created.append(session.table.add(BreakSpec(text, name, spec.condition, is_line=False)))
            if sum(len(b.real_locations) for b in created) > cap:
                raise too_many
    except MixdbgError:
        for breakpoint in created:
            session.table.delete(breakpoint.number)
        raise
    return created


class _NoServer:
    """Stands in when the control socket could not be created (the session runs on without it)."""

    def close(self) -> None:
        """Nothing to close."""


def start_server(session: Session, target: str, port: int | None) -> ControlServer | _NoServer:
    """Serve ``session``'s control socket; on failure warn and let the session run without it."""
    assert session.pid is not None
    try:
        path = runtime_dir(create=True) / f"{session.pid}.sock"
        if path.exists() or path.is_symlink():
            if not _is_stale(path):
                raise UnavailableError(f"another session already serves {path}")
            _remove_stale(path)
        return ControlServer(session, path, target, port)
    except (MixdbgError, OSError) as err:
        message = err.message if isinstance(err, MixdbgError) else str(err)
        session.emit(Notice("warning", f"live commands ('mixdbg break') are off for this session: {message}"))
        return _NoServer()


# --- the client ---------------------------------------------------------------------------

@dataclass(frozen=True)
class SessionInfo:
    """A live session as its ``describe`` reply tells it."""

    pid: int
    owner_pid: int
    target: str
    port: int | None
    started: float
    state: str
    breakpoints: int
    socket: Path
    processes: list[dict[str, Any]]  # the followed processes: pid, process (who, for people)

    def to_json(self) -> dict[str, Any]:
        """JSON form (``mixdbg sessions --json``)."""
        return {"pid": self.pid, "owner_pid": self.owner_pid, "target": self.target, "port": self.port,
                "started": self.started, "state": self.state, "breakpoints": self.breakpoints,
                "socket": str(self.socket), "processes": self.processes}


def call(path: Path, verb: str, args: dict[str, Any] | None = None,
         timeout: float = REPLY_TIMEOUT) -> dict[str, Any]:
    """Send one request to the session at ``path``; return its result or raise its error."""
    line = json.dumps({"v": PROTOCOL_VERSION, "verb": verb, "args": args or {}}).encode() + b"\n"
    if len(line) > MAX_REQUEST:
        raise UsageError(f"request too large for a session ({len(line)} bytes, at most {MAX_REQUEST}): "
                         "is that argument what you meant?")
    return _exchange(path, line, timeout)


def _exchange(path: Path, line: bytes, timeout: float) -> dict[str, Any]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(str(path))
        except ConnectionRefusedError as err:
            raise NotFoundError(f"the session behind {path} is gone") from err
        except FileNotFoundError as err:
            raise NotFoundError(f"no session socket {path}") from err
        try:
            sock.sendall(line)
        except (BrokenPipeError, ConnectionResetError) as err:
            log.debug("the session stopped reading the request early: %s", err)  # its reply says why
        reply = _read_reply(sock)
    except socket.timeout as err:
        raise UnavailableError(f"the session behind {path} did not answer within {timeout:.0f} s") from err
    finally:
        sock.close()
    if reply.get("ok"):
        result: dict[str, Any] = reply.get("result") or {}
        return result
    error = reply.get("error") or {}
    cls = _ERROR_KINDS.get(str(error.get("kind")), MixdbgError)
    raise cls(str(error.get("message", "the session refused the request")), hint=error.get("hint"))


def _read_reply(sock: socket.socket) -> dict[str, Any]:
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            break
        data += chunk
    try:
        reply = json.loads(data)
    except ValueError as err:
        raise DebuggerError(f"the session sent an unreadable reply ({len(data)} bytes)") from err
    if not isinstance(reply, dict):
        raise DebuggerError("the session sent an unreadable reply")
    return reply


def live_sessions() -> list[SessionInfo]:
    """Every live session of this user, oldest first; stale sockets found on the way are removed."""
    directory = runtime_dir()
    if not directory.is_dir():
        return []
    found = []
    for path in directory.glob("*.sock"):
        if not path.stem.isdigit():
            continue
        try:
            described = call(path, "describe", timeout=DESCRIBE_TIMEOUT)
        except NotFoundError:
            if _is_stale(path):
                _remove_stale(path)
            continue
        except MixdbgError as err:
            log.warning("session socket %s did not describe itself: %s", path, err.message)
            continue
        found.append(_info(described, path))
    return sorted(found, key=lambda info: info.started)


def _info(described: dict[str, Any], path: Path) -> SessionInfo:
    return SessionInfo(pid=int(described["pid"]), owner_pid=int(described["owner_pid"]),
                       target=str(described["target"]), port=described.get("port"),
                       started=float(described["started"]), state=str(described["state"]),
                       breakpoints=int(described["breakpoints"]), socket=path,
                       processes=list(described.get("processes", [])))


def find_session(pid: int | None) -> SessionInfo:
    """The session to talk to: the one debugging ``pid``, or the only live one.

    Raise NotFoundError when there is none (removing a stale socket left by a killed
    session), and UsageError listing them when ``pid`` is None and there are several."""
    if pid is not None:
        path = socket_path(pid)
        try:
            return _info(call(path, "describe", timeout=DESCRIBE_TIMEOUT), path)
        except NotFoundError as err:
            stale = path.exists() and _is_stale(path)
            if stale:
                _remove_stale(path)
            raise NotFoundError(
                f"no live mixdbg session for PID {pid}" + (" (removed its stale socket)" if stale else ""),
                hint="'mixdbg sessions' lists the live ones; --session takes the debuggee PID") from err
    sessions = live_sessions()
    if not sessions:
        raise NotFoundError("no live mixdbg session (start one with 'mixdbg run' or 'mixdbg attach')")
    if len(sessions) > 1:
        listing = "\n".join(f"--session {s.pid}   {s.target}" for s in sessions)
        raise UsageError(f"{len(sessions)} live sessions; say which with --session PID", hint=listing)
    return sessions[0]
