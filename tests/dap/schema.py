"""Checking every DAP message against the protocol's JSON schema
(``../shared/dap/debugAdapterProtocol.json`` beside the repository)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

#: CI clones the repository with shared/ beside it, as the forky tests expect.
SCHEMA_PATH = Path(__file__).resolve().parents[3] / "shared" / "dap" / "debugAdapterProtocol.json"

Message = dict[str, Any]


class ProtocolViolation(AssertionError):
    """A message, sent or received, that the DAP schema (or the protocol's sequencing) rejects."""


def _command_or_event(definition: dict[str, Any], key: str) -> str | None:
    """The ``command`` (or ``event``) a ``XxxRequest`` (or ``XxxEvent``) definition pins."""
    for part in definition.get("allOf", []):
        enum = part.get("properties", {}).get(key, {}).get("enum")
        if enum and len(enum) == 1:
            return str(enum[0])
    return None


class DapSchema:
    """Validators for each message kind, picked by command or event name as the schema
    defines them: requests by ``XxxRequest``, responses by ``XxxResponse`` (failures by
    ``ErrorResponse``), events by ``XxxEvent``; anything else by its generic kind."""

    def __init__(self, path: Path = SCHEMA_PATH) -> None:
        self.path = path
        document = json.loads(path.read_text(encoding="utf-8"))
        self._definitions: dict[str, Any] = document["definitions"]
        self._requests: dict[str, str] = {}
        self._events: dict[str, str] = {}
        for name, definition in self._definitions.items():
            if name.endswith("Request") and (command := _command_or_event(definition, "command")):
                self._requests[command] = name
            elif name.endswith("Event") and (event := _command_or_event(definition, "event")):
                self._events[event] = name
        self._validators: dict[str, jsonschema.Draft4Validator] = {}

    def _validator(self, definition: str) -> jsonschema.Draft4Validator:
        if definition not in self._validators:
            schema = {"definitions": self._definitions, "allOf": [{"$ref": f"#/definitions/{definition}"}]}
            self._validators[definition] = jsonschema.Draft4Validator(schema)
        return self._validators[definition]

    def definition_for(self, message: Message) -> str:
        """The schema definition that ``message`` must satisfy."""
        kind = message.get("type")
        if kind == "request":
            return self._requests.get(str(message.get("command")), "Request")
        if kind == "response":
            if message.get("success") is False:
                return "ErrorResponse"
            request = self._requests.get(str(message.get("command")))
            response = request[: -len("Request")] + "Response" if request else "Response"
            return response if response in self._definitions else "Response"
        if kind == "event":
            return self._events.get(str(message.get("event")), "Event")
        return "ProtocolMessage"

    def check(self, message: Message, direction: str) -> None:
        """Raise :class:`ProtocolViolation` naming the rule broken and showing the message;
        ``direction`` ("sent" or "received") says whose message it is."""
        definition = self.definition_for(message)
        errors = sorted(self._validator(definition).iter_errors(message), key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "(top level)"
            raise ProtocolViolation(
                f"{direction} message violates {definition} at {where}: {errors[0].message}\n"
                f"{json.dumps(message, indent=1)[:4000]}")
