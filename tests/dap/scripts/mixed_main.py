"""A Python line breakpoint, then a native function breakpoint (native_step), in one run."""

import mixdbg_testext as ext
from finish import finish


def main():
    value = 41
    value += 1  # @python_stop
    result = ext.loop(2)  # @native_call
    finish(f"mixed value {value} result {result}")  # @after


if __name__ == "__main__":
    main()
