"""The tests' matrix script: a known call chain from Python into the tests' C extension.

A second thread runs: main_chain -> <lambda> -> C (native_callback) -> callback_target
-> Model.forward -> comprehension -> decorator wrapper -> decorated -> generator ->
résumé_данные (a non-ASCII name) -> C (loop, crash or block, as argv[1] says), while the
main thread waits in join() (the worker waits for that first). Lines are found by the "# @name" markers, never by number.
"""

import functools
import sys
import threading
import time

import mixdbg_testext as ext

MODE = sys.argv[1] if len(sys.argv) > 1 else "loop"


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)  # @wrapper
    return wrapper


def résumé_данные(n):
    # Variables for 'locals' to show (unused otherwise).
    label, ratio, blob, pair = "naïve", 0.5, b"\x00raw", (n, None)  # noqa: F841
    flag, nothing, items, table, tags, model, big, neg = True, None, [1, 2, 3], {"a": 1}, {1, 2}, Model(), 2**100, -7  # noqa: F841
    record, opened = Record(3), Record(4)  # noqa: F841
    vars(opened)  # its attributes now in a dict of their own (3.11+ keep them without one until then)
    if MODE == "block":
        print("ready", flush=True)
    return ext.loop(n) if MODE == "loop" else ext.crash(0) if MODE == "crash" else ext.block(60)  # @resume


def gen(n):
    yield résumé_данные(n)  # @gen


@deco
def decorated(n):
    return list(gen(n))  # @decorated


class Record:
    """An instance with attributes: a native stop's locals show them."""

    def __init__(self, size):
        self.size = size
        self.name = "r"


class Model:
    def forward(self, n):
        return [decorated(v) for v in range(n, n + 1)]  # @forward


def callback_target():
    return Model().forward(1)  # @callback_target


def main_thread_joins():
    """Whether the main thread is inside worker.join() (so every stop sees it there)."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    while frame is not None and not (frame.f_code.co_name == "join" and frame.f_code.co_filename == threading.__file__):
        frame = frame.f_back
    return frame is not None


def main_chain():
    while not main_thread_joins():
        time.sleep(0.01)
    f = lambda: ext.callback(callback_target)  # @lambda
    return f()  # @main_chain


worker = threading.Thread(target=main_chain, name="worker")
worker.start()
worker.join()  # @join
