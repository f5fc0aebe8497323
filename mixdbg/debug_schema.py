"""The schema VS Code checks a ``type: mixdbg`` launch.json entry against.

``mixdbg dap``'s launch and attach arguments have one source, ``mixdbg/dap/configuration.json``;
the extension's ``configurationAttributes`` (``editors/vscode/package.json``) are generated from
it. VS Code does not check an entry against those attributes as they are:
``Debugger.getSchemaAttributes`` (microsoft/vscode, ``contrib/debug/common/debugger.ts``) adds
``type``, ``request``, ``name`` and the properties every configuration may have, requires the
first three, forbids any other key, and adds ``windows``/``osx``/``linux`` overrides.
``effective_schema`` does the same, so ``mixdbg setup`` and the tests see what the editor sees.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

DEBUG_TYPE = "mixdbg"
REQUESTS = ("launch", "attach")
#: VS Code flags the deprecated ``${env.X}`` form on every top-level property.
_DEPRECATED_VARIABLES = r"^(?!.*\$\{(env|config|command)\.)"
_TASK = {"anyOf": [{"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}},
                   {"type": ["string"]}]}
_COMMON: dict[str, Any] = {
    "name": {"type": "string"},
    "debugServer": {"type": "number"},
    "preLaunchTask": _TASK,
    "postDebugTask": _TASK,
    "presentation": {"type": "object", "properties": {
        "hidden": {"type": "boolean"}, "group": {"type": "string"}, "order": {"type": "number"}}},
    "internalConsoleOptions": {"enum": ["neverOpen", "openOnSessionStart", "openOnFirstSessionStart"]},
    "suppressMultipleSessionWarning": {"type": "boolean"},
}


def dap_arguments() -> dict[str, Any]:
    """``mixdbg/dap/configuration.json``: the launch and attach schemas of ``mixdbg dap``."""
    text = resources.files("mixdbg").joinpath("dap/configuration.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def configuration_attributes(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The extension's ``configurationAttributes``, as ``editors/vscode/scripts/gen-attributes.js``
    writes them: the launch and attach schemas, unchanged."""
    return {request: arguments[request] for request in REQUESTS}


def effective_schema(debug_type: str, request: str, attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON Schema VS Code validates a ``debug_type``/``request`` entry with, from the
    extension's attributes for that request (a copy; ``attributes`` is not changed)."""
    schema = copy.deepcopy(dict(attributes))
    properties: dict[str, Any] = schema.setdefault("properties", {})
    properties.update(copy.deepcopy(_COMMON))
    for value in properties.values():
        value["pattern"] = _DEPRECATED_VARIABLES
    platform = {"type": "object", "additionalProperties": False,
                "properties": {k: v for k, v in properties.items() if k != "name"}}
    properties.update({
        "type": {"enum": [debug_type], "pattern": "^(?!node2)"},
        "request": {"enum": [request], "pattern": _DEPRECATED_VARIABLES},
        **{system: copy.deepcopy(platform) for system in ("windows", "osx", "linux")},
    })
    schema["required"] = ["name", "type", "request", *schema.get("required", [])]
    schema["additionalProperties"] = False
    schema["type"] = "object"
    return schema
