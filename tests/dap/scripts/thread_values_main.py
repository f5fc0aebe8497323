"""A stop in a thread other than the main one, where a request cannot be interrupted by a
signal (Python runs signal handlers in the main thread only).

The worker stops only once the main thread waits in read(2), the GIL released: no thread
then wants the GIL while requests run in the worker. (gdb runs the requesting thread
alone; a thread that wanted the GIL when the program stopped is frozen with its wish, and
the worker, asked to hand the GIL over, would wait for it in native code.)"""

import os
import threading
import time

from finish import finish

#: The number of read(2) in /proc/PID/task/TID/syscall.
READ = {"x86_64": "0", "aarch64": "63"}[os.uname().machine]


def main_thread_reads():
    with open(f"/proc/self/task/{os.getpid()}/syscall") as syscall:
        return syscall.read().split()[0] == READ


def worker(out, wake):
    while not main_thread_reads():
        time.sleep(0.001)
    ready = time.monotonic() > 0  # @worker_stop
    out.append(ready)
    os.write(wake, b"x")


def main():
    out = []
    parked, wake = os.pipe()
    thread = threading.Thread(target=worker, args=(out, wake), name="worker")
    thread.start()
    os.read(parked, 1)
    thread.join()
    finish(f"thread done {out}")


if __name__ == "__main__":
    main()
