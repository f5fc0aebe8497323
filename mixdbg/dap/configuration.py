"""The launch and attach arguments of ``mixdbg dap`` (``configuration.json``, their one
source), and their check against it.

The check knows the JSON Schema keywords that file uses (``KEYWORDS``) and says what
jsonschema says, in its words: importing jsonschema cost the adapter's start 85-95 ms of
CPU on 2 loaded cores, which the first stop an editor shows waited for. A keyword it does
not know is an error (``UnknownKeyword``), so the file cannot grow a rule that goes
unchecked (``tests/dap/test_configuration.py`` walks the file and compares the check with
jsonschema's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mixdbg.errors import MixdbgError

#: ``launch`` and ``attach``: the schema of each request's arguments.
CONFIGURATION: dict[str, Any] = json.loads(Path(__file__).with_name("configuration.json").read_text())
#: What a schema here may say: the rules checked, and what only documents.
KEYWORDS = frozenset({"type", "enum", "properties", "required", "additionalProperties", "items",
                      "description", "default", "$comment"})
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "boolean": (bool,), "integer": (int,), "number": (int, float), "array": (list,),
    "object": (dict,), "null": (type(None),)}


class UnknownKeyword(MixdbgError):
    """A schema says something the check does not know (a mixdbg bug: see ``KEYWORDS``)."""


def problem(value: Any, schema: dict[str, Any], where: tuple[str | int, ...] = ()) -> tuple[tuple[str | int, ...], str] | None:
    """The first way ``value`` breaks ``schema``: where (the keys and indexes down to the
    part) and why, as jsonschema words it; None when it follows it."""
    unknown = set(schema) - KEYWORDS
    if unknown:
        raise UnknownKeyword(f"the arguments' schema says {', '.join(sorted(unknown))}, which mixdbg does not check")
    if "type" in schema:
        names = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
        if not any(_is(value, name) for name in names):
            return where, f"{value!r} is not of type {', '.join(repr(name) for name in names)}"
    if "enum" in schema and value not in schema["enum"]:
        return where, f"{value!r} is not one of {schema['enum']!r}"
    if isinstance(value, dict):
        return _object_problem(value, schema, where)
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found = problem(item, schema["items"], (*where, index))
            if found is not None:
                return found
    return None


def _object_problem(value: dict[str, Any], schema: dict[str, Any],
                    where: tuple[str | int, ...]) -> tuple[tuple[str | int, ...], str] | None:
    for name in schema.get("required", ()):
        if name not in value:
            return where, f"{name!r} is a required property"
    properties, others = schema.get("properties", {}), schema.get("additionalProperties", True)
    for name, item in value.items():
        rule = properties.get(name, others)
        if rule is False:
            return where, f"Additional properties are not allowed ({name!r} was unexpected)"
        if isinstance(rule, dict):
            found = problem(item, rule, (*where, name))
            if found is not None:
                return found
    return None


def _is(value: Any, name: str) -> bool:
    """Whether ``value`` is of the JSON type ``name`` (a boolean is not a number)."""
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(name, ()))
