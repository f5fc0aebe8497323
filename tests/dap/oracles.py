"""The shipping debug adapters the native parity tests hold ``mixdbg dap`` to: gdb's own
(``gdb -i dap``, the wheel's gdb) and LLDB's (``lldb-dap-19``, Debian's ``lldb-19``), each
started on a Python interpreter running a driver script, as ``mixdbg dap`` launches it."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

import pytest

from .client import DapClient
from .fixtures import DapFactory
from .natives import NativeSet
from .schema import DapSchema


@dataclass(frozen=True)
class Adapter:
    """One adapter under test: its name, and how it is started and launched."""

    name: str

    def client(self, factory: DapFactory) -> DapClient:
        """A client of a new adapter of this kind (skips when it is not installed)."""
        if self.name == "mixdbg":
            return factory(timeout=60)
        program = shutil.which("gdb" if self.name == "gdb" else "lldb-dap-19")
        if program is None:
            pytest.skip(f"no {self.name} DAP adapter here (gdb: the wheel's; lldb: apt-get install lldb-19)")
        command = [program, "-q", "-nx", "-i", "dap"] if self.name == "gdb" else [program]
        client = factory(command=command, timeout=60)
        client.schema = _Lenient(factory.schema)  # the oracle's own slips are not what is tested
        return client

    def config(self, natives: NativeSet, script: str, *args: str) -> dict[str, Any]:
        """The launch arguments that run ``python SCRIPT ARGS`` in the natives' directory."""
        env = natives.env()
        path = str(natives.script(script))
        if self.name == "mixdbg":
            return {"program": path, "args": list(args), "cwd": str(natives.directory),
                    "console": "internalConsole", "env": env}
        if self.name == "gdb":
            return {"program": sys.executable, "args": [path, *args], "cwd": str(natives.directory), "env": env}
        return {"program": sys.executable, "args": [path, *args], "cwd": str(natives.directory),
                "env": [f"{key}={value}" for key, value in env.items()]}


class _Lenient(DapSchema):
    """The schema for what a test sends; what an oracle sends is taken as it is (gdb 18's
    ``process`` event has ``startMethod: process``, which the schema does not allow)."""

    def __init__(self, strict: DapSchema) -> None:
        self._strict = strict

    def check(self, message: dict[str, Any], direction: str) -> None:
        """Check only what the test sends."""
        if direction == "sent":
            self._strict.check(message, direction)


MIXDBG, GDB, LLDB = Adapter("mixdbg"), Adapter("gdb"), Adapter("lldb")
T = TypeVar("T")


class ScriptClients:
    """Clients of new adapters for the benchmark scripts, as ``Adapter.client`` asks a
    ``DapFactory`` for them, without its logs (writing them costs time being measured)."""

    def __init__(self, workdir: Path, schema: DapSchema) -> None:
        self.workdir, self.schema = workdir, schema

    def __call__(self, command: list[str] | None = None, timeout: float = 60.0) -> DapClient:
        """A client of a new adapter (``mixdbg dap`` unless ``command`` is given)."""
        return DapClient.spawn(command or [sys.executable, "-m", "mixdbg", "dap"], self.workdir, self.schema,
                               timeout=timeout)


def against(oracle: Adapter, factory: DapFactory, session: Callable[[DapClient, Adapter], T]) -> tuple[T, T]:
    """The same client script (``session``) against ``oracle``, then against mixdbg dap:
    the oracle's results and ours."""
    client = oracle.client(factory)
    try:
        found = session(client, oracle)
    finally:
        close_oracle(client)
    return found, session(MIXDBG.client(factory), MIXDBG)


def close_oracle(client: DapClient) -> None:
    """End an oracle's session: its own protocol slips at the end (lldb-dap 19 cuts its
    last message short) are not what is tested."""
    try:
        client.close(terminate_debuggee=True)
    except AssertionError as slip:
        print(f"the oracle's session ended with: {slip}")


def find_variable(client: DapClient, frame_id: int, name: str) -> dict[str, Any]:
    """Variable ``name`` in any scope of a frame (adapters group locals differently)."""
    for scope in client.scopes(frame_id):
        if scope["name"].lower().startswith("register"):
            continue
        for variable in client.variables(scope["variablesReference"]):
            if variable["name"] == name:
                return variable
    raise AssertionError(f"no variable {name!r} in frame {frame_id}")


def program_output(client: DapClient) -> str:
    """What the program printed, as the adapter reported it (stdout or console output)."""
    return client.output("stdout") + client.output("console")


def path_of(natives: NativeSet, name: str) -> Path:
    """A module's source as the debug info names it."""
    return natives.directory / name
