"""Where session events and messages go: human text, or one JSON object per line.

In JSON mode stdout carries events only; everything for people goes to stderr. In human
mode events go to stdout (like gdb's own output) and progress and warnings to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mixdbg.events import (
    BreakpointChanged,
    Detached,
    Event,
    Exited,
    Notice,
    ProcessFollowed,
    ProgramOutput,
    Progress,
    SessionStarted,
    Stopped,
)
from mixdbg.pytorch.views import argument_lines
from mixdbg.stack import format_stack, format_threads


class Output:
    """Renders events for people or for tools; ``prompt`` is printed after stops if set."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.prompt: str | None = None

    def emit(self, event: Event) -> None:
        """Report one event."""
        if self.json_mode:
            print(json.dumps(event.to_json()), flush=True)
            return
        if isinstance(event, Notice):
            print(f"mixdbg: {event.level}: {event.message}", file=sys.stderr, flush=True)
            return
        if isinstance(event, Progress):
            self._progress(event)
            return
        if isinstance(event, BreakpointChanged) and not event.news:
            return  # only the processes it is in changed: a line each time would be noise
        print("\n".join(human(event)), flush=True)
        if isinstance(event, Stopped) and self.prompt:
            self.show_prompt()

    def show_prompt(self) -> None:
        """Print the interactive prompt (no newline)."""
        print(self.prompt, end="", flush=True)

    def _progress(self, event: Progress) -> None:
        """A slow step: at a terminal one line that updates in place; elsewhere a line at its
        start and one at its end."""
        at_terminal = sys.stderr.isatty()
        if at_terminal:
            end = "\n" if event.phase == "end" else ""
            print(f"\r\x1b[Kmixdbg: {event.title}: {event.message}", end=end, file=sys.stderr, flush=True)
        elif event.phase != "update":
            print(f"mixdbg: {event.title}: {event.message}", file=sys.stderr, flush=True)

    def progress(self, message: str) -> None:
        """A step of a slow operation, for people only."""
        if not self.json_mode:
            print(f"mixdbg: {message}...", file=sys.stderr, flush=True)

    def say(self, message: str) -> None:
        """Tell the user something they must act on (an ``info`` event in JSON mode)."""
        if self.json_mode:
            self.emit(Notice("info", message))
        else:
            print(f"mixdbg: {message}", file=sys.stderr, flush=True)

    def warning(self, message: str) -> None:
        """A warning, as a ``warning`` event in JSON mode."""
        self.emit(Notice("warning", message))

    def table(self, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
        """Print rows as aligned columns, or as one JSON document."""
        if self.json_mode:
            print(json.dumps(list(rows)), flush=True)
            return
        widths = [max([len(c)] + [len(str(row[c])) for row in rows]) for c in columns[:-1]]
        header = [c.upper().ljust(w) for c, w in zip(columns, widths)] + [columns[-1].upper()]
        print("  ".join(header))
        for row in rows:
            cells = [str(row[c]).ljust(w) for c, w in zip(columns, widths)] + [str(row[columns[-1]])]
            print("  ".join(cells))


def human(event: Event) -> list[str]:
    """The lines a person sees for an event."""
    if isinstance(event, SessionStarted):
        where = f"; debugpy on {event.host}:{event.port}" if event.port else ""
        adapter = f" (adapter PID {event.adapter_pid})" if event.adapter_pid else ""
        gdb = f"; gdb PID {event.gdb_pid}" if event.gdb_pid else ""
        return [f"mixdbg: debugging PID {event.pid}: {event.target}{where}{adapter}{gdb}"]
    if isinstance(event, BreakpointChanged):
        return [_breakpoint_line(event.body, event.deleted)]
    if isinstance(event, Stopped):
        return ["", _stop_header(event), *argument_lines(event.arguments or []), *format_stack(event.stack),
                *format_threads(event.stack, event.thread)]
    if isinstance(event, Exited):
        how = f"exited with code {event.code}" if event.signal is None else f"was killed by {event.signal}"
        if event.code is None and event.signal is None:
            how = "ended (its status is unknown)"
        return [f"mixdbg: [{event.process}] {how}" if event.process else f"mixdbg: the debuggee {how}"]
    if isinstance(event, ProcessFollowed):
        return [f"mixdbg: [{event.label}] following: {' '.join(event.body['argv'])}"]
    if isinstance(event, Detached):
        return [f"mixdbg: detached from PID {event.pid} ({event.reason}); it runs on"]
    if isinstance(event, ProgramOutput):
        return [event.text.rstrip("\n")]
    if isinstance(event, Progress):
        return [f"mixdbg: {event.title}: {event.message}"]
    return [f"mixdbg: {event.level}: {event.message}"]


def _breakpoint_line(body: dict[str, Any], deleted: bool) -> str:
    head = f"breakpoint {body['id']} ({body['spec']})"
    if deleted:
        return f"{head}: deleted"
    hint = f"\n  hint: {body['hint']}" if body.get("hint") else ""
    if body.get("ops"):
        kernels = "; ".join(f"{op} ({', '.join(keys)})" for op, keys in body["ops"].items())
        state = "pending until torch loads" if body["pending"] else f"{len(body['locations'])} location(s)"
        return f"{head}: {state}: kernels of {kernels}"
    if body["pending"]:
        return f"{head}: pending until a library defines it{hint}"
    places = list(dict.fromkeys(_place(loc) for loc in body["locations"]))  # one line per place, not per process
    shown = ", ".join(places[:3]) + (f", and {len(places) - 3} more" if len(places) > 3 else "")
    processes = f" (in {len(body['pids'])} processes)" if len(body.get("pids") or ()) > 1 else ""
    return f"{head}: {len(places)} location(s){processes}: {shown}{hint}"


def _place(location: dict[str, Any]) -> str:
    """A location for people: its function and line, or where it is when gdb names neither."""
    function = location.get("function") or (f"{location['address']} in {location['library']}" if location.get("library")
                                            else location.get("address") or "an unnamed place")
    if location.get("file") and location.get("line"):
        return f"{function} at {Path(location['file']).name}:{location['line']}"
    return str(function)


def _stop_header(event: Stopped) -> str:
    who = f"[{event.process}] " if event.process else ""
    thread = f" in thread {event.thread}" if event.thread is not None else ""
    if event.reason == "breakpoint" and event.op:
        return f"stopped at breakpoint {event.breakpoint}{thread}: operator {event.op}"
    if event.reason == "breakpoint":
        return f"{who}stopped at breakpoint {event.breakpoint}{thread}:"
    if event.reason == "signal":
        return f"{who}stopped: signal {event.signal}{thread}:"
    if event.reason == "interrupt":
        return f"{who}interrupted{thread}:"
    return f"{who}stopped{thread}:"
