"""A Pool(2) of the start method argv[1]; each worker calls into the C extension when it
starts, and waits for the other (so that neither is terminated before it started)."""
import multiprocessing
import sys

import mixdbg_testext as ext


def started(barrier):
    ext.loop(1)
    barrier.wait(60)


if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    barrier = context.Barrier(2)
    with context.Pool(2, initializer=started, initargs=(barrier,)) as pool:
        print("results", pool.map(abs, [-1, -2]), flush=True)
