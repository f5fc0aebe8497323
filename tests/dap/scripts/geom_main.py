"""pybind11: a method called from Python, then a C++ loop calling a Python callback; at the
callback the stack is scale <- total_area (C++) <- main <- <module>."""

import geom
from finish import finish


def scale(a):
    factor = 2.0  # @callback
    return a * factor  # @callback_return


def main():
    polys = [geom.Polygon("triangle", [(0, 0), (4, 0), (4, 3)]),
             geom.Polygon("square", [(0, 0), (2, 0), (2, 2), (0, 2)])]
    first = polys[0].area()  # @method
    total = geom.total_area(polys, scale)  # @call
    finish(f"geom first {first} total {total}")  # @after
    return total


if __name__ == "__main__":
    main()  # @main
