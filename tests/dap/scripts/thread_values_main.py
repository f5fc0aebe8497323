"""A stop in a thread other than the main one, where a request cannot be interrupted by a
signal (Python runs signal handlers in the main thread only)."""

import threading
import time

from finish import finish


def worker(out):
    ready = time.monotonic() > 0  # @worker_stop
    out.append(ready)


def main():
    out = []
    thread = threading.Thread(target=worker, args=(out,), name="worker")
    thread.start()
    thread.join()
    finish(f"thread done {out}")


if __name__ == "__main__":
    main()
