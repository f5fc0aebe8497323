"""How mixdbg's gdb-side commands take a request and read gdb's console: runs inside gdb's
embedded Python (imported by ``gdb_commands.py`` and ``gdb_operators.py``).

Standard library and ``gdb`` only; Python 3.9-compatible (gdb's Python is not mixdbg's).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import gdb  # type: ignore[import-untyped, import-not-found, unused-ignore]

from mixdbg.memory import MemoryReadError

#: One MI console record (``~"TEXT"``) and one escape inside its C string.
_CONSOLE_RECORD = re.compile(rb'~"((?:[^"\\]|\\.)*)"\n?')
_ESCAPE = re.compile(rb"\\([0-7]{1,3}|.)", re.DOTALL)
_ESCAPED = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"e": b"\x1b", b"a": b"\a", b"b": b"\b", b"f": b"\f",
            b"v": b"\v"}


def console(command: str) -> str:
    """The text gdb's console command ``command`` prints.

    gdb 18.1 under MI hands ``gdb.execute(..., to_string=True)`` the output of many
    commands (``print``, ``demangle``, ``info symbol``) as MI console records
    (``~"text\\n"``), where gdb 13.1 gives the text itself (measured); decode those."""
    output = gdb.execute(command, to_string=True)
    raw = output.encode("utf-8", "surrogateescape")
    records = list(_CONSOLE_RECORD.finditer(raw))
    if not records or sum(len(record.group(0)) for record in records) != len(raw):
        return str(output)
    text = b"".join(_ESCAPE.sub(_unescape, record.group(1)) for record in records)
    return text.decode("utf-8", "replace")


def _unescape(match: re.Match[bytes]) -> bytes:
    """One C escape of an MI string, as its byte."""
    escape = match.group(1)
    if escape[:1].isdigit():
        return bytes([int(escape, 8) & 0xFF])
    return _ESCAPED.get(escape, escape)


class JsonCommand(gdb.Command):  # type: ignore[misc]
    """A command ``NAME [WORD] REQUEST``: reads the JSON file REQUEST (the rest of the line,
    spaces allowed) and writes its answer as JSON to ``answer.json`` beside it. Files, not
    gdb's console, carry the data: MI would mix it into its stream records."""

    words = 0

    def __init__(self, name: str) -> None:
        super().__init__(name, gdb.COMMAND_DATA)

    def invoke(self, argument: str, from_tty: bool) -> None:
        *words, path = argument.strip().split(" ", self.words)
        with open(path, encoding="utf-8") as stream:
            request = json.load(stream)
        try:
            answer = self.answer(words, request)
        except (gdb.error, MemoryReadError) as err:
            answer = {"error": f"not decoded: {err}"}
        with open(Path(path).with_name("answer.json"), "w", encoding="utf-8") as out:
            json.dump(answer, out)

    def answer(self, words: list[str], request: Any) -> Any:
        """The answer to one request."""
        raise NotImplementedError
