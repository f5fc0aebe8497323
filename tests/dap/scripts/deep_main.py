"""Recursion N deep (argv[1], default 200 Python frames), then a C call at the bottom."""

import sys

import mixdbg_testext as ext
from finish import finish


def down(n):
    if n <= 1:
        return ext.loop(1)  # @bottom
    return down(n - 1)  # @recurse


if __name__ == "__main__":
    depth = int(sys.argv[1]) if sys.argv[1:] else 200
    sys.setrecursionlimit(depth + 100)
    finish(f"deep {down(depth - 1)}")  # @main
