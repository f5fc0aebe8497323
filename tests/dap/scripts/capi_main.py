"""The C API module: a C loop calling a C function, a Python callback called from C."""

import mixdbg_testext as ext
from finish import finish


def on_call():
    answer = 7  # @callback
    return answer


def main():
    n = 3
    total = ext.loop(n)  # @call
    called = ext.callback(on_call)  # @call_callback
    finish(f"capi total {total} called {called}")  # @after


if __name__ == "__main__":
    main()  # @main
