"""The memory tests' driver: the checksum of a filled buffer, a counter bumped N times
(``sys.argv[1]``, default 3), then, with ``fork`` as ``sys.argv[2]``, bumped again in a
fork child; with ``ticks`` there, a C thread ticks while the main thread sleeps; with
``forked-fill``, a fork child fills its buffer half a second after its parent."""

import os
import sys
import time

import memlab
from finish import finish


def main():
    times = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(f"checksum {memlab.fill()}", flush=True)  # @fill
    counter = memlab.bump(times)  # @bump_call
    if len(sys.argv) > 2 and sys.argv[2] == "fork":
        pid = os.fork()
        if pid == 0:
            os._exit(0 if memlab.bump(2) == counter + 2 else 1)  # @child
        os.waitpid(pid, 0)
    if len(sys.argv) > 2 and sys.argv[2] == "forked-fill":
        pid = os.fork()
        if pid == 0:
            time.sleep(0.5)
            os._exit(0 if memlab.fill() else 1)
        memlab.fill()
        os.waitpid(pid, 0)
    if len(sys.argv) > 2 and sys.argv[2] == "ticks":
        memlab.ticking()
    finish(f"counter {counter}")


if __name__ == "__main__":
    main()
