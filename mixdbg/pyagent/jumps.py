"""Where a stopped Python frame can go next, besides the next line: the calls on its line
(Step Into Target) and the lines of its function it can jump to (Jump to Cursor).

Standard library only; loaded by path beside ``agent.py`` as ``_mixdbg_agent_jumps``.
"""

from __future__ import annotations

import ast
import linecache
from types import FrameType
from typing import Any

#: Stops at a line event, where Python lets a trace function set ``f_lineno``.
_LINE_STOPS = ("breakpoint", "step", "entry", "goto")


def _calls_in_order(node: ast.AST, found: list[ast.Call]) -> None:
    """The calls under ``node`` in the order they are made: a call's callee and arguments
    are evaluated (and their own calls made) before it."""
    for child in ast.iter_child_nodes(node):
        _calls_in_order(child, found)
    if isinstance(node, ast.Call):
        found.append(node)


def _callee_name(call: ast.Call) -> str | None:
    """The name the called function's code has: ``f`` of ``f(...)`` and of ``obj.f(...)``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _module(filename: str) -> tuple[str, ast.Module] | None:
    """The source of a code file, parsed (None without a readable source)."""
    source = "".join(linecache.getlines(filename))
    if not source:
        return None
    try:
        return source, ast.parse(source, filename)
    except (SyntaxError, ValueError):
        return None


def call_targets(frame: FrameType) -> list[dict[str, Any]]:
    """The calls on the frame's current line, in the order they are made: DAP
    ``StepInTarget`` objects (labelled with the call's source, as debugpy does) whose
    ``id`` the engine gives back to ``stepIn``; each knows its function's name and how many
    calls of that name come before it on the line."""
    parsed = _module(frame.f_code.co_filename)
    if parsed is None:
        raise ValueError(f"no source for {frame.f_code.co_filename}: its calls cannot be listed")
    source, tree = parsed
    line = frame.f_lineno
    found: list[ast.Call] = []
    _calls_in_order(tree, found)
    targets: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for call in found:
        name = _callee_name(call)
        if call.lineno != line or name is None:
            continue
        label = " ".join((ast.get_source_segment(source, call) or name).split())
        targets.append({"id": len(targets) + 1, "label": label, "name": name, "skip": seen.get(name, 0),
                        "line": call.lineno, "column": call.col_offset + 1,
                        "endLine": call.end_lineno or call.lineno, "endColumn": (call.end_col_offset or 0) + 1})
        seen[name] = seen.get(name, 0) + 1
    return targets


def goto_targets(frame: FrameType, line: int) -> list[dict[str, Any]]:
    """The jump target for ``line`` of the stopped function (a DAP ``GotoTarget``), or a
    ValueError saying why there is none: Python jumps within the running function only."""
    code = frame.f_code
    lines = sorted({number for _, _, number in code.co_lines() if number is not None and number > 0})
    if line not in lines:
        where = f"{code.co_name} (lines {lines[0]}-{lines[-1]})" if lines else code.co_name
        raise ValueError(f"line {line} has no code of the stopped function {where}: "
                         "Python jumps only within the running function")
    return [{"id": line, "label": f"line {line}", "line": line}]


def jump(frame: FrameType, line: int, reason: str) -> int:
    """Make the stopped frame go on from ``line`` (it has not run yet): Python checks the
    jump (not into or out of a block, a ``finally``, ...) and raises ValueError with the
    reason. Only from a stop at a line event, where Python allows it."""
    if reason not in _LINE_STOPS:
        raise ValueError(f"Python can jump only from a stop at a line; this stop is a {reason} stop")
    goto_targets(frame, line)
    frame.f_lineno = line  # type: ignore[misc]  # writable from a trace function
    return frame.f_lineno
