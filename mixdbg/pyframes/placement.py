"""Where runs of Python frames go in a native stack.

Each run (the frames one eval-loop invocation executes) carries the address of its
entry marker, an object that invocation keeps on its own C stack. The native frame
whose stack range ``[sp_i, sp_i+1)`` holds that address is the invocation: the run
replaces it. This needs no symbol names, so it works where the loop is ``??``
(stripped), split (``.cold``) or renamed (3.14's tail-calling interpreter). Standard
library only: gdb's Python runs it.
"""

from __future__ import annotations

from collections.abc import Sequence

from mixdbg.pyframes.walk import Run

EVAL_LOOP = "_PyEval_EvalFrameDefault"
BY_ADDRESS, BY_NAME, AT_END = "by C-stack address", "by eval-loop name", "at the end"


def owner(stack_pointers: Sequence[int | None], marker: int) -> int | None:
    """Index of the native frame whose stack range holds ``marker`` (the stack grows
    down: frame i's locals lie between its SP and its caller's)."""
    for index in range(len(stack_pointers) - 1):
        low, high = stack_pointers[index], stack_pointers[index + 1]
        if low is not None and high is not None and low <= marker < high:
            return index
    return None


def place(stack_pointers: Sequence[int | None], names: Sequence[str], runs: Sequence[Run],
          truncated: bool) -> tuple[dict[int, Run], list[Run], str]:
    """Map native frame index -> the run it executes; the runs left for after the last
    native frame; and how the runs were placed, in words.

    Runs are innermost first, like the native frames, so each goes above the previous
    one's frame: on the frame holding its marker, else (unwinding lost that frame) on
    the next frame named like the eval loop, else after every frame. When the native
    frames were cut at the maximum, runs not placed by then are beyond the cut."""
    owners: dict[int, Run] = {}
    tail: list[Run] = []
    last = -1
    how = {BY_ADDRESS: 0, BY_NAME: 0, AT_END: 0}
    for run in runs:
        index = owner(stack_pointers, run.marker) if run.marker is not None else None
        if tail:  # an earlier run is already at the end: so is every older one
            index, way = None, AT_END
        elif index is not None and index > last:
            way = BY_ADDRESS
        else:
            loops = [i for i, name in enumerate(names) if i > last and name == EVAL_LOOP]
            index, way = (loops[0], BY_NAME) if loops else (None, AT_END)
        if index is None and truncated:
            break
        how[way] += 1
        if index is None:
            tail.append(run)
        else:
            owners[index], last = run, index
    return owners, tail, ", ".join(f"{count} {way}" for way, count in how.items() if count)
