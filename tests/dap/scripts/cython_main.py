"""The Cython module: a def function looping over a cdef function, a Python callback."""

import cyloop
from finish import finish


def twice(i):
    doubled = 2 * i  # @callback
    return doubled


def main():
    total = cyloop.sum_squares(4)  # @call
    twos = cyloop.apply(twice, 2)  # @call_apply
    finish(f"cython total {total} twos {twos}")  # @after


if __name__ == "__main__":
    main()  # @main
