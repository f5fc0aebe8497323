"""control: the runtime directory, the request protocol and the peer check, against a fake session.

The fake session is just what the server reads (pid, state, breakpoints, queue); a thread
plays the session thread, running the actions the server queues.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import raw_exchange

from mixdbg import control, symbols
from mixdbg.errors import MixdbgError, NotFoundError, UnavailableError, UsageError

NOBODY = 65534


class FakeTable:
    """The session's breakpoint table, as list and delete use it."""

    def __init__(self, items: dict[int, object]) -> None:
        self.items = items

    def delete(self, number: int) -> None:
        if self.items.pop(number, None) is None:
            raise UsageError(f"no breakpoint {number}")


class FakeSession(SimpleNamespace):
    """What the server and the list/delete operations touch."""

    tree = SimpleNamespace(summary=((4243, "rank 1, pid 4243"),))  # the followed processes

    @property
    def table(self) -> FakeTable:
        return FakeTable(self.breakpoints)


@pytest.fixture
def server(rundir: Path) -> Iterator[tuple[control.ControlServer, FakeSession]]:
    """A real server on a real socket, for a fake session whose thread runs the actions."""
    session = FakeSession(pid=4242, state="running", breakpoints={}, queue=queue.SimpleQueue(),
                          emit=lambda event: None)

    def session_thread() -> None:
        while (item := session.queue.get()) is not None:
            item(session)

    thread = threading.Thread(target=session_thread, daemon=True)
    thread.start()
    started = control.start_server(session, target="train.py --epochs 1", port=5678)  # type: ignore[arg-type]
    assert isinstance(started, control.ControlServer)
    try:
        yield started, session
    finally:
        started.close()
        session.queue.put(None)
        thread.join(5)


# --- the runtime directory ---------------------------------------------------------------

def test_runtime_dir_is_created_private(rundir: Path) -> None:
    old = os.umask(0o000)
    try:
        path = control.runtime_dir(create=True)
    finally:
        os.umask(old)
    assert path == rundir
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_runtime_dir_falls_back_to_tmp_per_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    assert control.runtime_dir(create=False) == Path(f"/tmp/mixdbg-{os.geteuid()}")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "relative/dir")
    assert control.runtime_dir(create=False) == Path(f"/tmp/mixdbg-{os.geteuid()}")


@pytest.mark.parametrize("mode", [0o750, 0o705, 0o777])
def test_runtime_dir_open_to_others_is_refused(rundir: Path, mode: int) -> None:
    rundir.mkdir()
    rundir.chmod(mode)
    with pytest.raises(UnavailableError, match="refusing"):
        control.runtime_dir(create=True)


def test_runtime_dir_of_another_user_is_refused(rundir: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to create a directory owned by another uid")
    rundir.mkdir(mode=0o700)
    os.chown(rundir, NOBODY, NOBODY)
    with pytest.raises(UnavailableError, match=f"owned by uid {NOBODY}"):
        control.runtime_dir()


def test_runtime_dir_that_is_a_symlink_is_refused(rundir: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    rundir.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnavailableError, match="not a directory"):
        control.runtime_dir(create=True)


# --- the peer check ----------------------------------------------------------------------

def test_peer_check_accepts_only_the_owner() -> None:
    assert control.peer_allowed(1000, own_uid=1000)
    assert not control.peer_allowed(NOBODY, own_uid=1000)
    assert not control.peer_allowed(0, own_uid=1000), "not even root"
    assert control.peer_allowed(os.geteuid())


def test_connection_from_another_uid_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to connect as another uid")
    # A runtime dir the foreign uid can reach (pytest's tmp_path is private to root).
    base = Path(tempfile.mkdtemp(prefix="mixdbg-test-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    session = FakeSession(pid=31337, state="running", breakpoints={}, queue=queue.SimpleQueue(), emit=print)
    srv = control.start_server(session, target="t.py", port=None)  # type: ignore[arg-type]
    assert isinstance(srv, control.ControlServer)
    try:
        reply = _describe_as_nobody(srv, base)
    finally:
        srv.close()
        shutil.rmtree(base)
    assert reply["ok"] is False
    assert reply["error"]["kind"] == "not-permitted"
    assert f"uid {NOBODY}" in reply["error"]["message"]
    assert "result" not in reply


def _describe_as_nobody(srv: control.ControlServer, base: Path) -> dict[str, Any]:
    # Only so that the foreign uid can reach the socket at all: the directory and socket
    # modes would stop it first (which is the other half of the protection).
    for directory in (base, srv.path.parent):
        directory.chmod(0o711)
    srv.path.chmod(0o666)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the child: become nobody, ask, report the reply through the pipe
        code = 1
        try:
            os.close(read_end)
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            reply = raw_exchange(srv.path, b'{"v": 1, "verb": "describe"}\n')
            os.write(write_end, json.dumps(reply).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        reply = json.loads(pipe.read() or b"{}")
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert isinstance(reply, dict)
    return reply


# --- the protocol ------------------------------------------------------------------------

def test_socket_and_directory_modes(server: tuple[control.ControlServer, FakeSession], rundir: Path) -> None:
    srv, _ = server
    assert srv.path == rundir / "4242.sock"
    assert stat.S_ISSOCK(srv.path.stat().st_mode)
    assert stat.S_IMODE(srv.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(rundir.stat().st_mode) == 0o700


def test_describe_and_list(server: tuple[control.ControlServer, FakeSession]) -> None:
    srv, _ = server
    described = control.call(srv.path, "describe")
    assert described["pid"] == 4242 and described["port"] == 5678 and described["target"] == "train.py --epochs 1"
    assert described["owner_pid"] == os.getpid() and described["state"] == "running"
    assert described["processes"] == [{"pid": 4243, "process": "rank 1, pid 4243"}]
    assert control.call(srv.path, "list") == {"breakpoints": []}


@pytest.mark.parametrize("payload, expected", [
    (b"this is not json\n", "not JSON"),
    (b"\xff\xfe\n", "not JSON"),
    (b"[1, 2]\n", "JSON object"),
    (b'{"v": 2, "verb": "list"}\n', "protocol version"),
    (b'{"verb": "list"}\n', "protocol version"),
    (b'{"v": 1, "verb": "rm -rf"}\n', "unknown verb"),
    (b'{"v": 1, "verb": "list", "args": []}\n', "'args'"),
    (b'{"v": 1, "verb": "break", "args": {}}\n', "'spec'"),
    (b'{"v": 1, "verb": "break", "args": {"spec": "   "}}\n', "empty breakpoint spec"),
    (b'{"v": 1, "verb": "break", "args": {"spec": "f", "max_locations": 0}}\n', "max-locations"),
    (b'{"v": 1, "verb": "delete", "args": {"id": "1"}}\n', "'id'"),
    (b"{}", "connection closed"),
])
def test_bad_requests_get_an_error_and_the_session_goes_on(
        server: tuple[control.ControlServer, FakeSession], payload: bytes, expected: str) -> None:
    srv, _ = server
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(srv.path))
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        reply = json.loads(sock.makefile("rb").read())
    assert reply["ok"] is False and expected in reply["error"]["message"]
    assert control.call(srv.path, "list") == {"breakpoints": []}


def test_ten_megabyte_request_is_refused_quickly(server: tuple[control.ControlServer, FakeSession]) -> None:
    srv, _ = server
    reply = raw_exchange(srv.path, b'{"v": 1, "verb": "list", "pad": "' + b"x" * (10 * 1024 * 1024))
    assert reply["ok"] is False and f"larger than {control.MAX_REQUEST}" in reply["error"]["message"]
    assert control.call(srv.path, "describe")["pid"] == 4242


def test_silent_client_is_timed_out(server: tuple[control.ControlServer, FakeSession],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    srv, _ = server
    monkeypatch.setattr(control, "REQUEST_TIMEOUT", 0.3)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.settimeout(5)
        silent.connect(str(srv.path))
        assert control.call(srv.path, "list") == {"breakpoints": []}, "a silent client blocks nobody"
        reply = json.loads(silent.makefile("rb").read())
    assert reply["ok"] is False and "no complete request" in reply["error"]["message"]


def test_session_errors_come_back_with_their_kind(server: tuple[control.ControlServer, FakeSession]) -> None:
    srv, session = server
    with pytest.raises(UsageError, match="no breakpoint 7"):
        control.call(srv.path, "delete", {"id": 7})
    session.state = "exited"
    with pytest.raises(UnavailableError, match="ending"):
        control.call(srv.path, "delete", {"id": 7})


def test_close_answers_requests_the_session_never_ran(rundir: Path) -> None:
    session = FakeSession(pid=99, state="running", breakpoints={}, queue=queue.SimpleQueue(), emit=print)
    srv = control.start_server(session, target="t.py", port=None)  # type: ignore[arg-type]
    replies: list[BaseException] = []

    def client() -> None:
        try:
            control.call(rundir / "99.sock", "list", timeout=10)
        except MixdbgError as err:
            replies.append(err)

    thread = threading.Thread(target=client)
    thread.start()
    queued = session.queue.get(timeout=5)  # the request reached the session's queue...
    assert callable(queued)
    srv.close()  # ...which ends without running it
    thread.join(10)
    assert [type(e) for e in replies] == [UnavailableError]
    assert not (rundir / "99.sock").exists()


# --- the registry ------------------------------------------------------------------------

def dead_socket(path: Path) -> None:
    """What a SIGKILLed session leaves: a bound socket file nobody listens on."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))


def test_stale_sockets_are_removed(rundir: Path) -> None:
    control.runtime_dir(create=True)
    dead_socket(rundir / "111.sock")
    dead_socket(rundir / "222.sock")
    with pytest.raises(NotFoundError, match="no live mixdbg session for PID 222 .removed its stale socket"):
        control.find_session(222)
    assert not (rundir / "222.sock").exists() and (rundir / "111.sock").exists()
    assert control.live_sessions() == []
    assert not (rundir / "111.sock").exists()
    with pytest.raises(NotFoundError, match="no live mixdbg session"):
        control.find_session(None)


def test_a_new_session_replaces_a_stale_socket_of_its_pid(rundir: Path) -> None:
    control.runtime_dir(create=True)
    dead_socket(rundir / "4242.sock")
    session = FakeSession(pid=4242, state="running", breakpoints={}, queue=queue.SimpleQueue(), emit=print)
    srv = control.start_server(session, target="t.py", port=None)  # type: ignore[arg-type]
    try:
        assert isinstance(srv, control.ControlServer)
        assert control.find_session(4242).target == "t.py"
    finally:
        srv.close()


def test_several_sessions_need_session_pid(server: tuple[control.ControlServer, FakeSession]) -> None:
    other = FakeSession(pid=5151, state="stopped", breakpoints={1: None}, queue=queue.SimpleQueue(), emit=print)
    second = control.start_server(other, target="other.py", port=None)  # type: ignore[arg-type]
    try:
        assert [s.pid for s in control.live_sessions()] == [4242, 5151]
        with pytest.raises(UsageError, match="2 live sessions") as info:
            control.find_session(None)
        assert info.value.hint is not None and "--session 5151" in info.value.hint
        assert control.find_session(5151).breakpoints == 1
    finally:
        second.close()


def test_unsafe_directory_means_no_live_commands_but_the_session_runs(rundir: Path) -> None:
    rundir.mkdir(mode=0o777)
    rundir.chmod(0o777)
    events: list[Any] = []
    session = FakeSession(pid=7, state="running", breakpoints={}, queue=queue.SimpleQueue(), emit=events.append)
    srv = control.start_server(session, target="t.py", port=None)  # type: ignore[arg-type]
    srv.close()
    assert not isinstance(srv, control.ControlServer)
    assert len(events) == 1 and "live commands" in events[0].message and "refusing" in events[0].message


# --- symbol names ------------------------------------------------------------------------

@pytest.mark.parametrize("symbol, name", [
    ("native_step", "native_step"),
    ("at::native::add(at::Tensor const&, at::Tensor const&, c10::Scalar const&)", "at::native::add"),
    ("c10::Foo<int (*)(int)>::bar(int) const", "c10::Foo<int (*)(int)>::bar"),
    ("Functor::operator()(int)", "Functor::operator()"),
    ("at::native::add_out_sparse_cpu(at::Tensor const&, at::Tensor&) [clone .isra.0] [clone .cold]",
     "at::native::add_out_sparse_cpu"),
    ("at::native::f(at::Tensor&)::{lambda()#1}::operator()() const [clone .isra.0]", None),
    ("native_step@plt", None),
    ("weird)", None),
])
def test_breakable_names_from_gdb_symbols(symbol: str, name: str | None) -> None:
    assert symbols.breakable_name(symbol) == name
