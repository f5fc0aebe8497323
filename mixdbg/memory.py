"""Reading a stopped process's memory: the one interface every memory-only reader uses.

The readers of CPython's frames and of PyTorch's tensors take a ``ReadMemory`` callable
("give me N bytes at this address") and never know where the bytes come from: inside gdb
they come from ``gdb.Inferior.read_memory``, in tests and outside gdb from
``/proc/PID/mem`` (``ProcMemory``). Standard library only: gdb's own Python imports this.
"""

from __future__ import annotations

import struct
from typing import Callable


class MemoryReadError(Exception):
    """The bytes at an address could not be read (unmapped, or the process is gone)."""


#: ``read(address, size) -> bytes`` of exactly ``size`` bytes, or ``MemoryReadError``.
ReadMemory = Callable[[int, int], bytes]


class ProcMemory:
    """Reads another process's memory through ``/proc/PID/mem``.

    The kernel allows it to a tracer of the process, or to root (CAP_SYS_PTRACE) and to
    the same user when ptrace attach would be allowed. The process should be stopped
    (SIGSTOP or ptrace) for the reads to be consistent."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        try:
            self._file = open(f"/proc/{pid}/mem", "rb", buffering=0)  # noqa: SIM115 - closed by close()
        except OSError as err:
            raise MemoryReadError(f"cannot open the memory of PID {pid}: {err.strerror}") from err

    def __call__(self, address: int, size: int) -> bytes:
        """Read ``size`` bytes at ``address``."""
        try:
            self._file.seek(address)
            data = self._file.read(size)
        except (OSError, OverflowError, ValueError) as err:
            raise MemoryReadError(f"cannot read {size} bytes at {address:#x}: {err}") from err
        if data is None or len(data) != size:
            raise MemoryReadError(f"short read of {size} bytes at {address:#x}")
        return data

    def close(self) -> None:
        """Close the memory file."""
        self._file.close()

    def __enter__(self) -> ProcMemory:  # noqa: PYI034 - typing.Self is 3.11+, gdb may embed older
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BlockCache:
    """A ``ReadMemory`` that reads through ``read`` in aligned blocks and keeps them: one
    object's fields read one by one cost one read of the debuggee's memory, not one each.
    For one look at a stopped process: it never forgets."""

    def __init__(self, read: ReadMemory, block: int = 256) -> None:
        self._read = read
        self._block = block
        self._blocks: dict[int, bytes] = {}

    def __call__(self, address: int, size: int) -> bytes:
        """``size`` bytes at ``address``, from the blocks that hold them (a block that cannot
        be read whole is not kept: the bytes are read as asked)."""
        first, end = address - address % self._block, address + size
        if end - first <= self._block and first in self._blocks:  # the common case: one kept block
            return self._blocks[first][address - first:end - first]
        try:
            data = b"".join(self._blocks[start] if start in self._blocks else self._keep(start)
                            for start in range(first, end, self._block))
        except MemoryReadError:
            return self._read(address, size)
        return data[address - first:end - first]

    def _keep(self, start: int) -> bytes:
        self._blocks[start] = self._read(start, self._block)
        return self._blocks[start]


def read_u64(read: ReadMemory, address: int) -> int:
    """An unsigned little-endian 64-bit word at ``address``."""
    return int(struct.unpack("<Q", read(address, 8))[0])


def read_i64(read: ReadMemory, address: int) -> int:
    """A signed little-endian 64-bit word at ``address``."""
    return int(struct.unpack("<q", read(address, 8))[0])
