# cython: language_level=3
"""A tiny Cython module the DAP tests compile with -g -O0 and #line directives, so that
gdb places its code on these .pyx lines (found by the marker comments)."""


cdef long square(long x):
    cdef long result = x * x  # @square
    return result


def sum_squares(long n):
    """The sum of i * i for i in range(n), through a cdef function."""
    cdef long total = 0  # @sum_start
    cdef long i
    for i in range(n):
        total += square(i)  # @sum_loop
    return total


def apply(f, long n):
    """f(i) for i in range(n), as a list: Python called from Cython."""
    results = []
    for i in range(n):
        results.append(f(i))  # @apply_call
    return results
