"""The debuggee side of the agent tests (standard library only; any Python 3.10+).

Usage: pyagent_harness.py AGENT_FILE CONFIG_SOCKET (TRAP_SOCKET|native) SCRIPT [ARGS...]

Loads the agent by path as bootstrap does, replaces its trap by one that plays gdb: it reads
the mailbox at the raw offsets of docs/dap-design.md (not through the agent's ctypes
classes), sends the ``out`` JSON to the test's engine on TRAP_SOCKET with what the engine
would read from memory (the Python frames above the trap), and writes the engine's answer
into ``in`` (and, when asked, arms a slot in the shared block); ``native`` keeps the real
trap (for a test under gdb). Then runs SCRIPT as ``python SCRIPT`` would.
"""

import ctypes
import importlib.util
import json
import os
import runpy
import socket
import sys
import threading

MAGIC = 0x4741474244584D4D
OUT_SIZE, IN_SIZE = 1 << 20, 64 << 10
_lock = threading.Lock()
_conn = []


def _u64(address):
    return ctypes.c_uint64.from_address(address).value


def _u32(address):
    return ctypes.c_uint32.from_address(address)


def _frames(agent_files):
    """The Python frames the engine would show: from the stopped frame outward."""
    frame, shown = sys._getframe(2), []
    while frame is not None:
        if frame.f_code.co_filename not in agent_files and frame.f_code.co_filename != __file__:
            shown.append([frame.f_code.co_name, os.path.basename(frame.f_code.co_filename), frame.f_lineno])
        frame = frame.f_back
    return shown


def _arm(shared, slot):
    """Write one slot as the engine does while everything is stopped."""
    index = _u32(shared + 12).value
    base = shared + 16 + 16 * index
    ctypes.c_uint64.from_address(base).value = slot["tid"]
    _u32(base + 8).value = slot["mode"]
    _u32(base + 12).value = slot["depth"]
    _u32(shared + 12).value = index + 1


def make_trap(trap_socket, agent_files):
    """The test trap: one JSON line out to the engine, one JSON line back."""
    def trap(address):
        assert _u64(address) == MAGIC, "trap called without a mailbox"
        shared, tid = _u64(address + 8), _u64(address + 16)
        assert _u64(shared) == MAGIC and _u32(shared + 8).value == 2
        out = ctypes.string_at(address + 32, _u32(address + 24).value)
        message = {"out": json.loads(out), "frames": _frames(agent_files), "tid": tid, "pid": os.getpid(),
                   "armed": _u32(shared + 12).value, "thread": threading.current_thread().name}
        with _lock:
            if not _conn:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(trap_socket)
                _conn.append((sock, sock.makefile("rb")))
            sock, reader = _conn[0]
            sock.sendall(json.dumps(message).encode() + b"\n")
            answer = json.loads(reader.readline())
        for slot in answer.get("arm", []):
            _arm(shared, dict(slot, tid=slot.get("tid", tid)))
        if answer.get("in") is not None:
            data = json.dumps(answer["in"]).encode()
            ctypes.memmove(address + 32 + OUT_SIZE, data, len(data))
            _u32(address + 28).value = len(data)
    return trap


def main(argv):
    agent_file, config_socket, trap_socket, script = argv[:4]
    spec = importlib.util.spec_from_file_location("_mixdbg_agent", agent_file)
    agent = importlib.util.module_from_spec(spec)
    sys.modules["_mixdbg_agent"] = agent
    spec.loader.exec_module(agent)
    if trap_socket != "native":
        agent.trap = make_trap(trap_socket, agent._AGENT_FILES)
        os.register_at_fork(after_in_child=_conn.clear)
    try:
        agent.start(config_socket)
    except agent.AgentError as err:
        print(f"mixdbg: {err}", file=sys.stderr)
        sys.exit(3)
    sys.argv = argv[3:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
