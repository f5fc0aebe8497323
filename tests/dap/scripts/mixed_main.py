"""A Python line breakpoint, then a native function breakpoint (native_step), in one run."""

import mixdbg_testext as ext


def main():
    value = 41
    value += 1  # @python_stop
    result = ext.loop(2)  # @native_call
    print(f"mixed value {value} result {result}", flush=True)  # @after


if __name__ == "__main__":
    main()
