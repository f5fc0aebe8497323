"""The frame reader's pure parts: line tables against CPython's own, and garbage memory
(torn reads, wrong versions) that must give a one-line ``Unsupported`` or fewer frames,
never another exception."""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import pyenv_python
from hypothesis import given, settings
from hypothesis import strategies as st

from mixdbg.memory import MemoryReadError
from mixdbg.pyframes import Interpreter, Unsupported, open_interpreter, reading_method
from mixdbg.pyframes.layouts import DEBUG_COOKIE, KNOWN, Layout
from mixdbg.pyframes.linetable import line_location_table

REPO = Path(__file__).resolve().parents[2]
STDLIB_SAMPLE = ("json.decoder", "argparse", "dataclasses", "asyncio.base_events", "email.message", "pathlib")


def all_code(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from all_code(const)


def module_code(name: str) -> types.CodeType:
    spec = __import__("importlib.util").util.find_spec(name)
    assert spec is not None and spec.origin is not None
    return compile(Path(spec.origin).read_text(encoding="utf-8"), spec.origin, "exec")


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the location table is 3.11+")
def test_location_table_matches_co_positions() -> None:
    # Given every code object of a few stdlib modules, compiled by this interpreter
    checked = 0
    for name in STDLIB_SAMPLE:
        for code in all_code(module_code(name)):
            # When each instruction's line is decoded from co_linetable
            for unit, (line, *_rest) in enumerate(code.co_positions()):
                decoded = line_location_table(code.co_linetable, code.co_firstlineno, unit)
                # Then it is the line CPython itself gives
                assert decoded == line, (code, unit)
                checked += 1
    assert checked > 10_000


LINES_310 = """
import json, sys, types
sys.path.insert(0, sys.argv[1])
from mixdbg.pyframes.linetable import line_310
def walk(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)
bad = checked = 0
for name in ("json/decoder.py", "argparse.py", "dataclasses.py", "asyncio/base_events.py", "pathlib.py"):
    path = sys.prefix + "/lib/python3.10/" + name
    for code in walk(compile(open(path).read(), path, "exec")):
        for start, end, line in code.co_lines():
            for offset in range(start, end, 2):
                checked += 1
                bad += line_310(code.co_linetable, code.co_firstlineno, offset) != line
print(json.dumps([checked, bad]))
"""


@pytest.mark.slow
def test_310_line_table_matches_co_lines() -> None:
    python = pyenv_python("3.10")
    if python is None:
        pytest.skip("no pyenv 3.10 here")
    result = subprocess.run([str(python), "-c", LINES_310, str(REPO)], capture_output=True, text=True,
                            check=True, timeout=60)
    checked, bad = json.loads(result.stdout)
    assert checked > 10_000 and bad == 0


def test_reading_methods() -> None:
    assert [reading_method(minor) for minor in range(9, 16)] == [
        None, "known layout", "known layout", "known layout", "debug offsets", "debug offsets", None]


# --- garbage in, one line out ----------------------------------------------------------

ARENA = 0x10000
ARENA_SIZE = 1 << 16


class RandomMemory:
    """An arena of random words, many of which point back into the arena (so walks go
    deep into nonsense); everything outside it is unmapped."""

    def __init__(self, seed: int, head: bytes = b"") -> None:
        rng = random.Random(seed)
        words = [ARENA + rng.randrange(0, ARENA_SIZE, 8 if rng.random() < 0.8 else 1) if rng.random() < 0.6
                 else rng.getrandbits(rng.choice((8, 32, 64))) for _ in range(ARENA_SIZE // 8)]
        self.data = bytearray(struct.pack(f"<{len(words)}Q", *words))
        self.data[:len(head)] = head

    def put(self, address: int, value: int) -> None:
        """Write a word."""
        struct.pack_into("<Q", self.data, address - ARENA, value)

    def thread_state(self, layout: Layout) -> None:
        """A well-formed runtime -> interpreter -> thread state, so that the walk gets to
        the (garbage) frames."""
        interp, tstate = ARENA + 0x800, ARENA + 0x1000
        self.put(ARENA + layout.interpreters_head, interp)
        self.put(interp + layout.interp_next, 0)
        self.put(interp + layout.interp_threads_head, tstate)
        self.put(tstate + layout.ts_interp, interp)
        self.put(tstate + layout.ts_next, 0)

    def __call__(self, address: int, size: int) -> bytes:
        if not ARENA <= address <= address + size <= ARENA + ARENA_SIZE:
            raise MemoryReadError(f"unmapped {address:#x}")
        return bytes(self.data[address - ARENA:address - ARENA + size])


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32), minor=st.sampled_from(sorted(KNOWN)))
def test_garbage_memory_never_escapes(seed: int, minor: int) -> None:
    # Given a well-formed thread state whose frames are plausible-looking garbage
    memory = RandomMemory(seed)
    memory.thread_state(KNOWN[minor])
    interpreter = Interpreter(memory, ARENA, KNOWN[minor], f"3.{minor}")
    # When every thread is read, then the answer is threads (with fewer frames) or Unsupported
    try:
        threads = interpreter.threads()
    except Unsupported as err:
        assert "\n" not in str(err)
        return
    for thread in threads:
        assert thread.problem is None or "\n" not in thread.problem


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32), version=st.sampled_from([0x030D00F0, 0x030E00F0]))
def test_garbage_debug_offsets_are_refused(seed: int, version: int) -> None:
    # Given a runtime that starts with the cookie and a 3.13/3.14 version, then garbage
    memory = RandomMemory(seed, DEBUG_COOKIE + struct.pack("<QQ", version, 0))
    # When it is opened, then it is refused in one line, or it is read without escaping
    try:
        open_interpreter(memory, ARENA).threads()
    except Unsupported as err:
        assert "\n" not in str(err)


def test_free_threaded_and_prerelease_builds_are_refused() -> None:
    table = bytearray(8 * 95)
    table[:8] = DEBUG_COOKIE
    struct.pack_into("<QQ", table, 8, 0x030E00F0, 1)  # 3.14.0 final, free-threaded

    def memory(address: int, size: int) -> bytes:
        return bytes(table[address - ARENA:address - ARENA + size])

    with pytest.raises(Unsupported, match="free-threaded builds are not supported"):
        open_interpreter(memory, ARENA)
    struct.pack_into("<QQ", table, 8, 0x030F00A2, 0)  # 3.15.0a2
    with pytest.raises(Unsupported, match=r"Python 3\.15\.0a2 is not supported"):
        open_interpreter(memory, ARENA)
    struct.pack_into("<QQ", table, 8, 0x030E00B1, 0)  # 3.14.0b1
    with pytest.raises(Unsupported, match="pre-release"):
        open_interpreter(memory, ARENA)


def test_version_hint_must_agree_with_memory() -> None:
    def memory(address: int, size: int) -> bytes:
        return struct.pack("<Q", 0x030B07F0).ljust(size, b"\0")  # Py_Version = 3.11.7

    with pytest.raises(Unsupported, match="version mismatch: memory says 3.11.7, the executable 3.12"):
        open_interpreter(memory, 0x1000, py_version=0x2000, hint="3.12")
    with pytest.raises(Unsupported, match="version is unknown"):
        open_interpreter(lambda a, s: bytes(s), 0x1000)
