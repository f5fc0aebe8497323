"""Two fork children that each run a Python line many times (a breakpoint there is hit by
both, until it is removed); the parent waits for them."""

import os

from finish import finish


def work():
    total = 0
    for i in range(200_000):
        total += i % 7  # @line
    return total


if __name__ == "__main__":
    children = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            os._exit(0 if work() > 0 else 1)
        children.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    finish(f"children {codes}")  # @done
