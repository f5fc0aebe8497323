"""mixdbg dap's check of launch and attach arguments (``mixdbg/dap/configuration.py``) says
what jsonschema says about them, and knows every rule ``configuration.json`` has."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from mixdbg.dap.configuration import CONFIGURATION, KEYWORDS, UnknownKeyword, problem

ARGUMENTS = [
    ("launch", {"program": "a.py", "args": ["-x", "1"], "env": {"A": "1", "B": None}, "justMyCode": False,
                "follow": "all", "console": "internalConsole", "stopOnEntry": True, "extra": [1]}),
    ("launch", {"program": "a.py", "justMyCode": "yes"}),
    ("launch", {"program": 3}),
    ("launch", {"module": "m", "args": ["ok", 2]}),
    ("launch", {"program": "a.py", "env": {"A": 1}}),
    ("launch", {"program": "a.py", "follow": "some"}),
    ("launch", {"program": "a.py", "console": None}),
    ("launch", {"program": "a.py", "stopOnEntry": 1}),
    ("attach", {"processId": 12, "follow": "none"}),
    ("attach", {"processId": "${command:pickProcess}"}),
    ("attach", {"processId": 1.5}),
    ("attach", {"processId": True}),
    ("attach", {"follow": "python"}),
    ("attach", {"processId": 12, "justMyCode": "no"}),
]


def _keywords(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    found = set(schema) - {"properties"}
    for rule in [*schema.get("properties", {}).values(), schema.get("items"), schema.get("additionalProperties")]:
        found |= _keywords(rule)
    return found


def test_every_rule_of_the_configuration_is_one_the_check_knows() -> None:
    assert _keywords(CONFIGURATION["launch"]) | _keywords(CONFIGURATION["attach"]) <= KEYWORDS


@pytest.mark.parametrize(("kind", "arguments"), ARGUMENTS)
def test_the_check_says_what_jsonschema_says(kind: str, arguments: dict[str, Any]) -> None:
    errors = sorted(jsonschema.Draft202012Validator(CONFIGURATION[kind]).iter_errors(arguments),
                    key=lambda error: list(map(str, error.absolute_path)))
    found = problem(arguments, CONFIGURATION[kind])
    if not errors:
        assert found is None
        return
    assert found is not None, errors[0].message
    where, why = found
    assert (list(where), why) in [(list(error.absolute_path), error.message) for error in errors]


def test_a_rule_the_check_does_not_know_is_an_error_not_a_pass() -> None:
    with pytest.raises(UnknownKeyword):
        problem("x", {"type": "string", "pattern": "^y"})
