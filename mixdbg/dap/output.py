"""Where a launched debuggee's output goes when the client shows it in its debug console:
two files (stdout, stderr) that the debuggee writes directly and the adapter reads back as
``output`` events. A file never blocks and never breaks: if the adapter dies, the program
writes on, unharmed (a pipe through the adapter would kill it with SIGPIPE)."""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from typing import IO, Callable

from mixdbg.rundir import runtime_dir

log = logging.getLogger(__name__)

#: How often the files are read for new output (seconds).
POLL_INTERVAL = 0.05


class OutputFiles:
    """The debuggee's stdout and stderr files (unlinked at once: only the open descriptors
    keep them), read back on a thread; ``emit(category, text)`` receives what was written."""

    def __init__(self, emit: Callable[[str, str], None]) -> None:
        self._emit = emit
        directory = runtime_dir(create=True)
        self.stdout = self._open(directory, "stdout")
        self.stderr = self._open(directory, "stderr")
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._poll, name="debuggee-output", daemon=True)
        self._thread.start()

    @staticmethod
    def _open(directory: os.PathLike[str], name: str) -> tuple[int, IO[bytes]]:
        fd, path = tempfile.mkstemp(prefix=f"{name}-", dir=directory)
        os.unlink(path)
        read_fd = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
        write = os.fdopen(fd, "ab", buffering=0)
        return read_fd, write

    def _poll(self) -> None:
        while not self._stop.wait(POLL_INTERVAL):
            self.drain()
        self.drain()

    def drain(self) -> None:
        """Send what was written so far (before ``exited``, so it comes first)."""
        with self._lock:
            if self._stop.is_set() and self._thread is not threading.current_thread():
                return
            for (fd, _), category in ((self.stdout, "stdout"), (self.stderr, "stderr")):
                while True:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    self._emit(category, chunk.decode("utf-8", "replace"))

    def stop(self) -> None:
        """Read what is left and close our side (the debuggee keeps writing its own)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=2)
        for fd, handle in (self.stdout, self.stderr):
            os.close(fd)
            handle.close()
