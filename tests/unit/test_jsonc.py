"""mixdbg.jsonc: parsing JSONC with offsets, and surgical edits that keep every other byte."""

from __future__ import annotations

import difflib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixdbg import jsonc
from mixdbg.errors import DataError

# --- parsing ---------------------------------------------------------------------------------

RICH = (
    "// header comment\r\n"
    "{\r\n"
    "\t/* block */ \"version\": \"0.2.0\",\r\n"
    "\t\"configurations\": [\r\n"
    "\t\t{\"name\": \"a // not a comment\", \"x\": \"/* nor this */\",}, // trailing\r\n"
    "\t\t{\"n\": [1, -2.5e3, true, false, null,],},\r\n"
    "\t],\r\n"
    "}\r\n"
)


def test_parses_comments_trailing_commas_and_comment_like_strings() -> None:
    assert jsonc.loads(RICH) == {
        "version": "0.2.0",
        "configurations": [
            {"name": "a // not a comment", "x": "/* nor this */"},
            {"n": [1, -2500.0, True, False, None]},
        ],
    }


def test_nodes_know_their_spans() -> None:
    root = jsonc.parse(RICH)
    configurations = root.member("configurations")
    assert configurations is not None
    first = configurations.value.items[0]
    assert RICH[first.start:first.end] == '{"name": "a // not a comment", "x": "/* nor this */",}'


def test_last_duplicate_key_wins_like_vscode() -> None:
    root = jsonc.parse('{"a": 1, "a": 2}')
    assert root.value == {"a": 2}
    member = root.member("a")
    assert member is not None and member.value.value == 2


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("  // only a comment\n", "empty"),
        ('{"a": 1', "expected"),
        ('{"a": 1 "b": 2}', "expected ','"),
        ("{'a': 1}", "unexpected character"),
        ('{"a": /* open', "unterminated block comment"),
        ('{"a": "unterminated}', "string"),
        ('{"a": "tab\there"}', "string"),
        ('{"a": 01}', "expected"),
        ('{"a": NaN}', "unexpected character"),
        ("{}\x00", "unexpected character"),
        ("{} {}", "after the end"),
        ("[" * (jsonc.MAX_DEPTH + 2), "nested deeper"),
        ("[,]", "unexpected ','"),
        ('{"a": 1,,}', "expected a property name"),
    ],
)
def test_rejects_invalid_jsonc_with_a_position(text: str, fragment: str) -> None:
    with pytest.raises(jsonc.JsoncError) as info:
        jsonc.parse(text)
    assert fragment in info.value.message
    assert "line " in info.value.message and "column " in info.value.message
    assert isinstance(info.value, DataError)


def test_error_position_is_line_and_column() -> None:
    with pytest.raises(jsonc.JsoncError, match="line 3, column 6"):
        jsonc.parse('{\n"a": 1,\n"b": @}')


@pytest.mark.parametrize(
    ("text", "style"),
    [
        ('{\n\t"a": 1\n}\n', jsonc.Style("\t", "\n")),
        ('{\r\n  "a": [\r\n    1\r\n  ]\r\n}\r\n', jsonc.Style("  ", "\r\n")),
        ('/*\n * a block comment\n */\n{\n    "a": 1\n}', jsonc.Style("    ", "\n")),
        ('{"a": 1}', jsonc.Style("    ", "\n")),
    ],
)
def test_detects_indent_and_line_endings(text: str, style: jsonc.Style) -> None:
    assert jsonc.detect_style(text) == style


# --- edits -----------------------------------------------------------------------------------

def _append(text: str, key: str, values: list[Any]) -> str:
    member = jsonc.parse(text).member(key)
    assert member is not None
    return jsonc.apply_edits(text, jsonc.append_items(text, member.value, values, jsonc.detect_style(text)))


def _only_insertions(old: str, new: str) -> bool:
    """True when ``new`` is ``old`` with text inserted and nothing removed or changed."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return all(tag in ("equal", "insert") for tag, *_ in matcher.get_opcodes())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"c": []}', '{"c": [\n    {\n        "k": 1\n    }\n]}'),
        ('{"c": [ ]}', '{"c": [\n    {\n        "k": 1\n    }\n ]}'),
        ('{\n\t"c": [\n\t\t{"a": 1}\n\t]\n}', '{\n\t"c": [\n\t\t{"a": 1},\n\t\t{\n\t\t\t"k": 1\n\t\t}\n\t]\n}'),
        ('{\n  "c": [\n    1, // one\n  ]\n}', '{\n  "c": [\n    1, // one\n    {\n      "k": 1\n    }\n  ]\n}'),
        ('{\n  "c": [\n    1 // one\n  ]\n}', '{\n  "c": [\n    1, // one\n    {\n      "k": 1\n    }\n  ]\n}'),
        ('{\n  "c": [\n    // nothing yet\n  ]\n}', '{\n  "c": [\n    // nothing yet\n    {\n      "k": 1\n    }\n  ]\n}'),
    ],
)
def test_append_item_layouts(text: str, expected: str) -> None:
    new = _append(text, "c", [{"k": 1}])
    assert new == expected
    assert _only_insertions(text, new)


def test_append_keeps_crlf_and_tabs() -> None:
    new = _append(RICH, "configurations", [{"name": "z", "list": [1]}])
    assert "\n" not in new.replace("\r\n", "")
    assert '\r\n\t\t{\r\n\t\t\t"name": "z",\r\n\t\t\t"list": [\r\n\t\t\t\t1\r\n\t\t\t]\r\n\t\t}' in new
    assert _only_insertions(RICH, new)
    assert jsonc.loads(new)["configurations"][-1] == {"name": "z", "list": [1]}


def test_add_members_to_object_with_and_without_trailing_comma() -> None:
    for text in ('{\n    "a": 1\n}', '{\n    "a": 1,\n}', "{}"):
        root = jsonc.parse(text)
        new = jsonc.apply_edits(text, jsonc.add_members(text, root, [("b", [2]), ("c", "x")], jsonc.Style()))
        assert jsonc.loads(new) == {**jsonc.loads(text), "b": [2], "c": "x"}
        assert _only_insertions(text, new)


def test_set_member_replaces_in_place_or_adds() -> None:
    text = '{ "p": 1 /* keep */, "q": 2 }'
    root = jsonc.parse(text)
    replaced = jsonc.apply_edits(text, jsonc.set_member(text, root, "p", 42, jsonc.Style()))
    assert replaced == '{ "p": 42 /* keep */, "q": 2 }'
    assert jsonc.set_member(text, root, "q", 2, jsonc.Style()) == []
    added = jsonc.apply_edits(text, jsonc.set_member(text, root, "r", True, jsonc.Style()))
    assert jsonc.loads(added) == {"p": 1, "q": 2, "r": True}


def test_same_value_tells_false_from_zero() -> None:
    assert jsonc.same_value({"a": 1, "b": [False]}, {"b": [False], "a": 1})
    assert not jsonc.same_value(False, 0)
    assert not jsonc.same_value(1, 1.0)


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(ValueError, match="overlapping"):
        jsonc.apply_edits("abcdef", [jsonc.Edit(1, 4, "x"), jsonc.Edit(3, 5, "y")])


# --- fuzzing: random values rendered as random JSONC ------------------------------------------

TRIVIA = ["", " ", "\t", "\n", "\r\n", "  \n\t", "// c /* x */ \"q\"\n", "/* b // */", "/* multi\r\nline */",
          "\u00a0", "\ufeff"]
keys = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=False, allow_infinity=False, width=32), keys)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)), max_leaves=12)


def _render(value: Any, data: st.DataObject) -> str:
    """Serialise ``value`` as JSONC with random comments, whitespace and trailing commas."""
    def gap() -> str:
        return data.draw(st.sampled_from(TRIVIA))

    if isinstance(value, dict):
        parts = [gap() + json.dumps(k, ensure_ascii=data.draw(st.booleans())) + gap() + ":" + gap()
                 + _render(v, data) + gap() for k, v in value.items()]
        trailing = "," + gap() if parts and data.draw(st.booleans()) else ""
        return "{" + gap() + ",".join(parts) + trailing + "}"
    if isinstance(value, list):
        parts = [gap() + _render(v, data) + gap() for v in value]
        trailing = "," + gap() if parts and data.draw(st.booleans()) else ""
        return "[" + gap() + ",".join(parts) + trailing + "]"
    return json.dumps(value, ensure_ascii=data.draw(st.booleans()))


def _containers(node: jsonc.Node) -> list[jsonc.Node]:
    found = [node] if node.kind in ("object", "array") else []
    for child in [m.value for m in node.members] + list(node.items):
        found += _containers(child)
    return found


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(value=values, data=st.data())
def test_fuzz_parse_round_trips_values(value: Any, data: st.DataObject) -> None:
    text = data.draw(st.sampled_from(TRIVIA)) + _render(value, data) + data.draw(st.sampled_from(TRIVIA))
    assert jsonc.same_value(jsonc.loads(text), json.loads(json.dumps(value)))


@FUZZ
@given(value=st.one_of(st.lists(values, max_size=4), st.dictionaries(keys, values, max_size=4)),
       new=values, data=st.data())
def test_fuzz_insertions_keep_every_original_byte(value: Any, new: Any, data: st.DataObject) -> None:
    text = _render(value, data) + data.draw(st.sampled_from(["", "\n", " // end"]))
    root = jsonc.parse(text)
    target = data.draw(st.sampled_from(_containers(root)))
    style = jsonc.Style(data.draw(st.sampled_from(["\t", "  ", "    "])), data.draw(st.sampled_from(["\n", "\r\n"])))
    if target.kind == "array":
        edits = jsonc.append_items(text, target, [new, new], style)
        expected_container: Any = [*target.value, new, new]
    else:
        edits = jsonc.add_members(text, target, [("\x00new key", new)], style)
        expected_container = {**target.value, "\x00new key": new}
    edited = jsonc.apply_edits(text, edits)
    assert _only_insertions(text, edited)
    reparsed = jsonc.parse(edited)
    moved = [n for n in _containers(reparsed) if n.start == target.start + sum(
        len(e.new) for e in edits if e.start < target.start)]
    assert moved and jsonc.same_value(moved[0].value, json.loads(json.dumps(expected_container)))


@FUZZ
@given(value=st.dictionaries(keys, values, min_size=1, max_size=4), new=values, data=st.data())
def test_fuzz_replace_changes_only_the_value_span(value: dict[str, Any], new: Any, data: st.DataObject) -> None:
    text = _render(value, data)
    root = jsonc.parse(text)
    member = data.draw(st.sampled_from(list(root.members)))
    edited = jsonc.apply_edits(text, [jsonc.replace_value(text, member.value, new, jsonc.Style())])
    start, end = member.value.start, member.value.end
    assert edited.startswith(text[:start]) and edited.endswith(text[end:])
    assert jsonc.same_value(jsonc.loads(edited)[member.key], new)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('{}[]:,"\\/*\n\r\t ab01-.e+truefalsn\x00\u2028')), max_size=40))
def test_fuzz_garbage_raises_only_jsonc_error(text: str) -> None:
    try:
        jsonc.parse(text)
    except jsonc.JsoncError:
        pass
