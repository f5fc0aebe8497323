"""Values people debug, and what a debugger may change in them: a stop in ``work`` with
locals of every kind (the same script runs under debugpy's adapter as the oracle); the
printed line shows what the program then used."""

import collections
import dataclasses
import time

from finish import finish

try:
    import numpy
except ImportError:  # an interpreter without numpy: the rest still runs
    numpy = None

COUNTER = 0


@dataclasses.dataclass
class Config:
    rate: float
    steps: int = 3


Pair = collections.namedtuple("Pair", "left right")


class Box:
    """A plain instance: public, protected and class members, a method."""

    kind = "box"

    def __init__(self):
        self.size = 1
        self._secret = 2

    def grow(self):
        self.size += 1


def slow(seconds):
    """Python that a request may run for long (the cancel tests)."""
    time.sleep(seconds)
    return seconds


def work(limit):
    count = 1
    flags = 255
    text = "x" * 100_000
    box = Box()
    items = [1, 2, 3]
    table = {"alpha": 1, "beta": 2}
    config = Config(0.5)
    pair = Pair(1, 2)
    big = list(range(1000))
    grid = numpy.arange(12).reshape(3, 4) if numpy is not None else None
    total = count + limit  # @stop
    used = (f"count {count} size {box.size} item {items[1]} alpha {table['alpha']} global {COUNTER} "
            f"rate {config.rate} flags {flags} text {len(text)} pair {pair.left} big {len(big)}")
    if grid is not None:
        used += f" grid {int(grid[1][2])}"
    finish(f"values total {total} {used}")  # @after


if __name__ == "__main__":
    work(10)  # @main
