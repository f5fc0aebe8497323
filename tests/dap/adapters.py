"""The debug adapters a parity test runs one DAP client script against: ``mixdbg dap``,
debugpy's adapter (``python -m debugpy.adapter``) and gdb's own DAP (``gdb -i dap``, the
wheel's gdb). Each knows its command and how it launches a program; the shipping ones are
the oracles: a feature of mixdbg must give the user the same result as they do.

The oracles' own protocol slips are recorded, not raised (gdb 18 sends a ``process`` event
with ``startMethod: "process"``, debugpy an error response without a body): a parity test
judges what the user sees, and holds only mixdbg to the schema."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mixdbg.gdbmi import find_gdb, gdb_environment

from .client import DapClient
from .fixtures import DapFactory, mixdbg_dap_command
from .schema import DapSchema, Message, ProtocolViolation


class OracleSchema(DapSchema):
    """The DAP schema for an oracle: what the test sends is checked, what the oracle sends
    is only recorded (in ``slips``)."""

    def __init__(self, schema: DapSchema) -> None:
        super().__init__(schema.path)
        self.slips: list[str] = []

    def check(self, message: Message, direction: str) -> None:
        """Raise for our messages; record the oracle's."""
        try:
            super().check(message, direction)
        except ProtocolViolation as violation:
            if direction == "sent":
                raise
            self.slips.append(str(violation).splitlines()[0])


@dataclass(frozen=True)
class Adapter:
    """One adapter: its name, how to start it, and its ``launch`` arguments for ``python
    SCRIPT`` run in ``cwd`` with environment ``env`` (``launch(python, script, cwd, env)``)."""

    name: str
    command: Callable[[Path], list[str]]
    launch: Callable[[str, Path, Path, Mapping[str, str]], dict[str, Any]]
    environment: Mapping[str, str] | None = None
    oracle: bool = True

    def client(self, factory: DapFactory) -> DapClient:
        """A client of a new adapter of this kind (closed with the test's other clients)."""
        log = factory.workdir / f"{self.name}-{len(factory.clients)}.log"
        factory.logs.append(log)
        schema = OracleSchema(factory.schema) if self.oracle else factory.schema
        client = DapClient.spawn(self.command(log), factory.workdir, schema,
                                 env=None if self.environment is None else dict(self.environment), timeout=60)
        factory.clients.append(client)
        client.initialize(adapterID=self.name)
        return client


def _mixdbg_launch(python: str, script: Path, cwd: Path, env: Mapping[str, str]) -> dict[str, Any]:
    return {"program": str(script), "cwd": str(cwd), "env": dict(env), "python": python,
            "console": "internalConsole"}


def _debugpy_launch(python: str, script: Path, cwd: Path, env: Mapping[str, str]) -> dict[str, Any]:
    return {"type": "debugpy", "program": str(script), "cwd": str(cwd), "env": dict(env), "python": [python],
            "console": "internalConsole", "justMyCode": True}


def _gdb_launch(python: str, script: Path, cwd: Path, env: Mapping[str, str]) -> dict[str, Any]:
    return {"program": python, "args": [str(script)], "cwd": str(cwd), "env": dict(env)}


#: ``mixdbg dap``, held to the schema.
MIXDBG = Adapter("mixdbg", lambda log: mixdbg_dap_command(log), _mixdbg_launch, oracle=False)
#: debugpy's adapter, the one VS Code's Python debugger runs (debugpy is installed with mixdbg).
DEBUGPY = Adapter("debugpy", lambda log: [sys.executable, "-m", "debugpy.adapter"], _debugpy_launch)
#: gdb's own DAP server (``gdb -i dap``), without the user's gdbinit and Python environment.
GDB = Adapter("gdb", lambda log: [find_gdb(), "-nx", "-q", "-i", "dap"], _gdb_launch, environment=gdb_environment())
