"""Straight-line Python steps for stepping benchmarks: ROUNDS (argv[1], default 100) loop
bodies of a few assignments, then a C loop for native steps."""

import sys

import mixdbg_testext as ext
from finish import finish


def main(rounds):
    total = 0
    for i in range(rounds):
        a = i + 1  # @py_step
        b = a * 2
        total += b
    total += ext.loop(rounds)  # @native
    finish(f"steps {total}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if sys.argv[1:] else 100)
