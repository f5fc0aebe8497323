"""A small JSONC (JSON with comments) reader and surgical text editor, for launch.json.

Why our own: VS Code reads launch.json as JSONC (``//`` and ``/* */`` comments, trailing
commas) and users keep comments in it. Re-serialising a parsed document loses them
(vscode#29453), so mixdbg never re-serialises a user's file: it parses it into nodes that
remember their character offsets, and changes it with ``Edit`` objects that replace or
insert text at those offsets. Everything outside an edit stays byte for byte.

The grammar is VS Code's jsonc-parser with its default options: strict JSON values and
strings, comments and trailing commas allowed, and the same set of whitespace characters.
Anything else (JSON5 extras, unterminated comments, control characters in strings) is a
``JsoncError`` rather than a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mixdbg.errors import DataError

MAX_DEPTH = 256

# Whitespace as jsonc-parser's scanner defines it (isWhiteSpace + line breaks).
_WS = (" \t\r\n\v\f\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200C)))
       + "\u2028\u2029\u202f\u205f\u3000\ufeff")
_TOKEN = re.compile(
    rf"""
    (?P<ws>[{re.escape(_WS)}]+)
    | (?P<comment>//[^\r\n]*|/\*.*?\*/)
    | (?P<string>"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{{4}}))*")
    | (?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
    | (?P<literal>true|false|null)
    | (?P<punct>[{{}}\[\]:,])
    """,
    re.VERBOSE | re.DOTALL,
)
_SAME_LINE_TAIL = re.compile(r"(?:[ \t]*/\*[^\r\n]*?\*/)*(?:[ \t]*//[^\r\n]*)?")
_INDENT = re.compile(r"[ \t]*")


class JsoncError(DataError):
    """The text is not valid JSONC; ``offset`` is where the problem was found."""

    def __init__(self, message: str, text: str, offset: int) -> None:
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        super().__init__(f"{message} at line {line}, column {column}")
        self.offset = offset


@dataclass(frozen=True)
class Token:
    """One significant token (comments and whitespace are skipped): kind, text span."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Node:
    """A parsed value with its span ``[start, end)`` in the text.

    ``value`` is the plain Python value; ``members`` (objects: key, key offset, value
    node) and ``items`` (arrays) give the children with their own spans.
    """

    kind: str
    start: int
    end: int
    value: Any
    members: tuple[Member, ...] = ()
    items: tuple[Node, ...] = ()

    def member(self, key: str) -> Member | None:
        """The last member named ``key`` (the one JSON.parse and VS Code use), or None."""
        found = [m for m in self.members if m.key == key]
        return found[-1] if found else None


@dataclass(frozen=True)
class Member:
    """One ``"key": value`` pair of an object node."""

    key: str
    key_start: int
    value: Node


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``new`` (an insertion when start == end)."""

    start: int
    end: int
    new: str


@dataclass(frozen=True)
class Style:
    """How a file is laid out, so inserted text looks like its neighbours."""

    indent: str = "    "
    eol: str = "\n"


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into significant tokens; raise JsoncError on anything unknown."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise JsoncError(_describe_bad_char(text, pos), text, pos)
        kind = match.lastgroup or ""
        if kind not in ("ws", "comment"):
            tokens.append(Token(kind, pos, match.end()))
        pos = match.end()
    return tokens


def _describe_bad_char(text: str, pos: int) -> str:
    """Name the most likely mistake at ``pos`` for the error message."""
    if text.startswith("/*", pos):
        return "unterminated block comment"
    if text[pos] == '"':
        return "unterminated or invalid string"
    return f"unexpected character {text[pos]!r}"


class _Parser:
    """Recursive descent over the significant tokens."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.index = 0

    def fail(self, message: str) -> JsoncError:
        offset = self.tokens[self.index].start if self.index < len(self.tokens) else len(self.text)
        return JsoncError(message, self.text, offset)

    def peek(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, punct: str) -> Token:
        token = self.peek()
        if token is None or self.text[token.start:token.end] != punct:
            raise self.fail(f"expected {punct!r}")
        self.index += 1
        return token

    def at(self, punct: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "punct" and self.text[token.start] == punct

    def document(self) -> Node:
        if not self.tokens:
            raise JsoncError("no JSON value (the file is empty or only comments)", self.text, 0)
        node = self.value(0)
        if self.peek() is not None:
            raise self.fail("unexpected text after the end of the document")
        return node

    def value(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        token = self.peek()
        if token is None:
            raise self.fail("unexpected end of file")
        if self.at("{"):
            return self.obj(depth)
        if self.at("["):
            return self.array(depth)
        if token.kind == "punct":
            raise self.fail(f"unexpected {self.text[token.start]!r}")
        self.index += 1
        value = json.loads(self.text[token.start:token.end])
        return Node(token.kind, token.start, token.end, value)

    def obj(self, depth: int) -> Node:
        start = self.take("{").start
        members: list[Member] = []
        while not self.at("}"):
            key_token = self.peek()
            if key_token is None or key_token.kind != "string":
                raise self.fail("expected a property name in double quotes or '}'")
            self.index += 1
            self.take(":")
            key = json.loads(self.text[key_token.start:key_token.end])
            members.append(Member(key, key_token.start, self.value(depth + 1)))
            if not self.at("}"):
                self.take(",")
        end = self.take("}").end
        value = {m.key: m.value.value for m in members}
        return Node("object", start, end, value, members=tuple(members))

    def array(self, depth: int) -> Node:
        start = self.take("[").start
        items: list[Node] = []
        while not self.at("]"):
            items.append(self.value(depth + 1))
            if not self.at("]"):
                self.take(",")
        end = self.take("]").end
        return Node("array", start, end, [i.value for i in items], items=tuple(items))


def parse(text: str) -> Node:
    """Parse JSONC ``text`` into a node tree with offsets; raise JsoncError if invalid."""
    return _Parser(text).document()


def loads(text: str) -> Any:
    """Parse JSONC ``text`` into plain Python values (comments and trailing commas dropped)."""
    return parse(text).value


def detect_style(text: str) -> Style:
    """Guess the file's indent unit (tab or N spaces) and line ending (CRLF or LF)."""
    crlf = text.count("\r\n")
    eol = "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"
    # Only lines that start with a JSON token: " * text" lines of block comments would lie.
    indents = re.findall(r"^([ \t]+)[\"{}\[\]]", text, re.MULTILINE)
    if any(i.startswith("\t") for i in indents[:1]):
        return Style("\t", eol)
    widths = [len(i) for i in indents if set(i) == {" "}]
    return Style(" " * min(min(widths), 8) if widths else "    ", eol)


def dumps(value: Any, style: Style, base_indent: str = "") -> str:
    """Serialise ``value`` as JSON in ``style``, continuation lines indented by ``base_indent``."""
    return json.dumps(value, indent=style.indent, ensure_ascii=False).replace("\n", style.eol + base_indent)


def line_indent(text: str, pos: int) -> str:
    """The leading whitespace of the line that contains ``pos``."""
    line_start = max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1
    match = _INDENT.match(text, line_start, max(pos, line_start))
    return match.group(0) if match else ""


def _starts_line(text: str, pos: int) -> bool:
    """True when only spaces and tabs precede ``pos`` on its line."""
    line_start = max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1
    return text[line_start:pos].strip(" \t") == ""


def replace_value(text: str, node: Node, value: Any, style: Style) -> Edit:
    """An edit that replaces ``node`` by ``value``, indented like the line it sits on."""
    return Edit(node.start, node.end, dumps(value, style, line_indent(text, node.start)))


def append_items(text: str, array: Node, values: Sequence[Any], style: Style) -> list[Edit]:
    """Edits that add ``values`` at the end of ``array``, each on its own line."""
    last = array.items[-1] if array.items else None
    indent = _child_indent(text, array, last, style)
    return _insert_entries(text, array, last, [dumps(v, style, indent) for v in values], indent, style)


def prepend_items(text: str, array: Node, values: Sequence[Any], style: Style) -> list[Edit]:
    """Edits that add ``values`` before the first item of ``array``, each on its own line.

    They go at the start of the first item's line, so comments above it stay above the
    items added; an item that shares a line with ``[`` gets them right before it.
    """
    if not array.items:
        return append_items(text, array, values, style)
    first = array.items[0]
    if _starts_line(text, first.start):
        indent = line_indent(text, first.start)
        pos = first.start - len(indent)
        entries = "".join(indent + dumps(v, style, indent) + "," + style.eol for v in values)
        return [Edit(pos, pos, entries)]
    indent = line_indent(text, array.start) + style.indent
    return [Edit(first.start, first.start, "".join(dumps(v, style, indent) + ", " for v in values))]


def add_members(text: str, obj: Node, members: Sequence[tuple[str, Any]], style: Style) -> list[Edit]:
    """Edits that add ``"key": value`` members at the end of ``obj``, each on its own line."""
    last = obj.members[-1] if obj.members else None
    indent = _child_indent(text, obj, last.value if last else None, style, last.key_start if last else None)
    entries = [f"{json.dumps(k, ensure_ascii=False)}: {dumps(v, style, indent)}" for k, v in members]
    return _insert_entries(text, obj, last.value if last else None, entries, indent, style)


def set_member(text: str, obj: Node, key: str, value: Any, style: Style) -> list[Edit]:
    """Edits that make ``obj[key] == value``: replace the value in place, or add the member."""
    existing = obj.member(key)
    if existing is None:
        return add_members(text, obj, [(key, value)], style)
    if same_value(existing.value.value, value):
        return []
    return [replace_value(text, existing.value, value, style)]


def same_value(a: Any, b: Any) -> bool:
    """JSON equality that tells ``false`` from ``0`` and ignores key order."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _child_indent(text: str, container: Node, last: Node | None, style: Style,
                  last_start: int | None = None) -> str:
    """Indent for a new child: that of the last child if it starts a line, else one level in."""
    if last is not None:
        start = last.start if last_start is None else last_start
        if _starts_line(text, start):
            return line_indent(text, start)
    return line_indent(text, container.start) + style.indent


def _insert_entries(text: str, container: Node, last: Node | None, entries: list[str],
                    indent: str, style: Style) -> list[Edit]:
    """Place ``entries`` after the last child (and its comma and same-line comments)."""
    joined = ("," + style.eol + indent).join(entries)
    if last is None:
        # Empty container: go after the last comment inside it, keep the closing bracket's line.
        close = container.end - 1
        inner = text[container.start + 1:close]
        pos = container.start + 1 + len(inner.rstrip(_WS))
        closing = "" if "\n" in text[pos:close] else style.eol + line_indent(text, container.start)
        return [Edit(pos, pos, style.eol + indent + joined + closing)]
    following = _next_token(text, last.end)
    comma = ""
    if following is not None and text[following.start] == ",":
        pos = following.end
    else:
        pos, comma = last.end, ","
    tail = _SAME_LINE_TAIL.match(text, pos)
    after_comments = tail.end() if tail else pos
    if comma and after_comments != pos:
        return [Edit(pos, pos, comma), Edit(after_comments, after_comments, style.eol + indent + joined)]
    return [Edit(after_comments, after_comments, comma + style.eol + indent + joined)]


def _next_token(text: str, pos: int) -> Token | None:
    """The first significant token at or after ``pos`` (which is outside any token)."""
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            return None
        if match.lastgroup not in ("ws", "comment"):
            return Token(match.lastgroup or "", pos, match.end())
        pos = match.end()
    return None


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Apply non-overlapping ``edits`` (offsets into the original ``text``)."""
    result = text
    previous_start = len(text) + 1
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if edit.end > previous_start:
            raise ValueError(f"overlapping edits at {edit.start}..{edit.end}")
        result = result[:edit.start] + edit.new + result[edit.end:]
        previous_start = edit.start
    return result
