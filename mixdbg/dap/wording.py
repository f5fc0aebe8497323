"""How the engine's breakpoints and stops are worded in DAP: a breakpoint's ``Breakpoint``
body and a data breakpoint's stop, for the adapter's events and the request handlers'
answers alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mixdbg.session import Session
from mixdbg.sources import local_file, missing_reason

#: The message of a breakpoint not bound yet.
PENDING = ("not bound yet: its library is not loaded, or has no debug info (-g) for this line; "
           "it binds when a library that has it loads")
#: The message of an ``op:`` breakpoint whose operator has not registered yet.
OPERATOR_PENDING = "not bound yet: no library has registered this operator; it binds when one does"


def describe(dap_id: int, body: dict[str, Any]) -> dict[str, Any]:
    """A DAP ``Breakpoint`` from an engine breakpoint's JSON (``Breakpoint.to_json``)."""
    result: dict[str, Any] = {"id": dap_id, "verified": not body.get("pending", False)}
    located = [loc for loc in body.get("locations", []) if loc.get("line")]
    if located:
        result["line"] = int(located[0]["line"])
        local = local_file(located[0].get("file"))
        if local is not None:
            result["source"] = {"name": Path(local).name, "path": local}
        elif located[0].get("file"):  # named by the debug info, not here: no path to open
            result["source"] = {"name": Path(located[0]["file"]).name, "presentationHint": "deemphasize",
                                "origin": missing_reason(located[0]["file"])}
    if body.get("pending"):
        result["message"] = OPERATOR_PENDING if str(body.get("spec", "")).startswith("op:") else PENDING
    elif body.get("hint"):
        result["message"] = str(body["hint"])
    return result


def describe_stop(session: Session, number: int | None, value: dict[str, str]) -> str:
    """A data breakpoint's stop in words: what changed, from what to what."""
    watch = session.watchpoints.owner(number) if number is not None else None
    label = watch.spec.label if watch is not None and watch.spec.label else "watched value"
    if "old" in value:
        return f"{label} changed: {value['old']} -> {value.get('new', '?')}"
    if "new" in value:
        return f"{label} = {value['new']}"
    return f"{label} was read: {value.get('value', '?')}"
