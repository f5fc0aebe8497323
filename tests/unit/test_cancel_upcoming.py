"""A DAP ``cancel`` that comes while its request runs but before the request asked the agent
(a loaded machine: the session thread still prepares it) cancels it as it asks, and only
it. The session is real (its gdb not started); what stands in for the debuggee is the
agent's mailbox write, recorded instead of made."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mixdbg.dap.inflight import Requests
from mixdbg.engine import agents
from mixdbg.session import Session

MAILBOX = agents.Mailbox(pid=100, address=0x1000, shared=0x2000, tid=101, message={})
EVALUATE = {"seq": 7, "type": "request", "command": "evaluate",
            "arguments": {"expression": "while True: pass", "context": "repl"}}


@pytest.fixture
def posted(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What the session posts to the agent while the program runs."""
    messages: list[dict[str, Any]] = []
    monkeypatch.setattr(agents, "post_while_running", lambda mailbox, message: messages.append(message))
    return messages


def _requests(session: Session) -> Requests:
    return Requests(SimpleNamespace(session=session, client={}, connection=None))  # type: ignore[arg-type]


def test_a_cancel_before_the_agent_is_asked_cancels_the_request_as_it_asks(posted: list[dict[str, Any]]) -> None:
    session = Session(lambda event: None)
    requests = _requests(session)
    assert not requests.arrived(EVALUATE) and requests.begin(EVALUATE)
    requests.cancel(7, None)  # the request runs, its agent not asked yet
    assert posted == []
    session._begin_asking(MAILBOX)
    assert posted == [{"command": "cancel"}]
    assert requests.end(EVALUATE)  # answered "cancelled"


def test_a_cancel_is_forgotten_with_its_request(posted: list[dict[str, Any]]) -> None:
    session = Session(lambda event: None)
    requests = _requests(session)
    requests.arrived(EVALUATE)
    requests.begin(EVALUATE)
    requests.cancel(7, None)
    assert requests.end(EVALUATE)  # it ended without asking the agent (a native evaluation)
    following = {**EVALUATE, "seq": 8}
    requests.arrived(following)
    requests.begin(following)
    session._begin_asking(MAILBOX)
    assert posted == []
    assert not requests.end(following)
