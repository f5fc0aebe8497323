"""Step Into Target, Jump to Cursor, return values, a user-uncaught exception."""

from concurrent.futures import ThreadPoolExecutor


def inner(n):
    return n + 1  # @inner


def other(n):
    doubled = n * 2  # @other
    return doubled


def helper(a, b):
    return a + b  # @helper


def forty_two():
    return 42


def worker(n):
    if n == 3:
        raise ValueError(f"bad item {n}")  # @raise
    return n


def main():
    total = helper(inner(1), other(2))  # @targets
    runs = 0
    runs += 1  # @again
    after = runs  # @jumped
    value = forty_two()  # @returns
    with ThreadPoolExecutor(max_workers=1) as pool:
        results = [future.exception() for future in [pool.submit(worker, n) for n in range(5)]]
    print("done", total, after, value, [str(r) for r in results if r])  # @done


main()
