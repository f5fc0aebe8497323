"""The Cython module: a def function looping over a cdef function, a Python callback."""

import cyloop


def twice(i):
    doubled = 2 * i  # @callback
    return doubled


def main():
    total = cyloop.sum_squares(4)  # @call
    twos = cyloop.apply(twice, 2)  # @call_apply
    print(f"cython total {total} twos {twos}", flush=True)  # @after


if __name__ == "__main__":
    main()  # @main
