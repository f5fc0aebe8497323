"""Native values a debugger changes (the C API module): a struct member set at a stop in
native_point_sum is the one its sum then uses; a Python stop from which an evaluation runs
native code (a native breakpoint may hit during it)."""

import mixdbg_testext as ext
from finish import finish


class Box:
    """A plain instance: a native stop shows its attributes, read from memory."""

    def __init__(self, size):
        self.size = size
        self.label = "b"


def main():
    box, sizes = Box(2), [1, 2, 3]  # noqa: F841 (a native stop shows it)
    before = ext.point_sum(box.size - 1)  # @native
    ready = 1  # @python
    after = ext.loop(3)  # @after_python
    finish(f"native values sum {before} ready {ready} loop {after}")  # @after


if __name__ == "__main__":
    main()
