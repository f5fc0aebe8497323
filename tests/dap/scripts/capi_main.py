"""The C API module: a C loop calling a C function, a Python callback called from C."""

import mixdbg_testext as ext


def on_call():
    answer = 7  # @callback
    return answer


def main():
    n = 3
    total = ext.loop(n)  # @call
    called = ext.callback(on_call)  # @call_callback
    print(f"capi total {total} called {called}", flush=True)  # @after


if __name__ == "__main__":
    main()  # @main
