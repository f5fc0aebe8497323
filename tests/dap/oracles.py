"""The debug adapters a parity test runs one DAP client script against: ``mixdbg dap`` and
the shipping ones, the oracles: debugpy's adapter (``python -m debugpy.adapter``), gdb's
own DAP (``gdb -i dap``, the wheel's gdb) and LLDB's (``lldb-dap-19``, Debian's
``lldb-19``). A feature of mixdbg must give the user the same result as they do.

Each adapter knows how it is started (a test skips, saying why, when it is not installed),
how it launches a Python program (``python SCRIPT ARGS`` in a directory, with an
environment: the Python adapters are given the script, the native ones the interpreter)
and what it calls its Python exception filters. The oracles' own protocol slips are
recorded, not raised (gdb 18 sends a ``process`` event with ``startMethod: "process"``,
debugpy an error response without a body): a parity test judges what the user sees, and
holds only what it sends and what mixdbg sends to the schema."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from mixdbg.errors import MixdbgError
from mixdbg.gdbmi import find_gdb, gdb_environment

from .client import DapClient
from .natives import NativeSet
from .schema import DapSchema, Message, ProtocolViolation

T = TypeVar("T")
#: The timeout of every request to an adapter under test (an oracle's first launch is slow).
TIMEOUT = 60.0


class ClientFactory(Protocol):
    """What starts a client of a new adapter: the tests' ``DapFactory`` (which logs ``mixdbg
    dap``'s traffic and closes every client after the test) or the benchmarks' ScriptClients."""

    def __call__(self, *, command: Sequence[str] | None = None, env: Mapping[str, str] | None = None,
                 timeout: float = TIMEOUT) -> DapClient:
        """A client of a new adapter: ``mixdbg dap`` unless ``command`` is given."""


class OracleSchema(DapSchema):
    """The DAP schema for an oracle's session: what the test sends is checked, what the
    oracle sends is only recorded (in ``slips``)."""

    def __init__(self, strict: DapSchema) -> None:
        vars(self).update(vars(strict))  # the parsed schema and its validators, not read again
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
class PythonRun:
    """A Python program as a test runs it: ``python SCRIPT ARGS`` in ``cwd``, with ``env``
    (None: the adapter's own environment)."""

    python: str
    script: Path
    args: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str] | None

    def as_script(self) -> dict[str, Any]:
        """``program``, ``args`` and ``cwd`` of a Python adapter: the script is the program."""
        return {"program": str(self.script), "args": list(self.args), "cwd": str(self.cwd), **self._env()}

    def as_interpreter(self) -> dict[str, Any]:
        """``program``, ``args`` and ``cwd`` of a native debugger: the interpreter is the program."""
        return {"program": self.python, "args": [str(self.script), *self.args], "cwd": str(self.cwd), **self._env()}

    def _env(self) -> dict[str, Any]:
        return {} if self.env is None else {"env": dict(self.env)}


def _mixdbg_config(run: PythonRun) -> dict[str, Any]:
    return {**run.as_script(), "python": run.python, "console": "internalConsole", "justMyCode": True}


def _debugpy_config(run: PythonRun) -> dict[str, Any]:
    return {**run.as_script(), "type": "debugpy", "python": [run.python], "console": "internalConsole",
            "justMyCode": True}


def _gdb_config(run: PythonRun) -> dict[str, Any]:
    return run.as_interpreter()


def _lldb_config(run: PythonRun) -> dict[str, Any]:
    """As gdb's, with the environment as a list of ``NAME=VALUE`` (lldb-dap 19 takes no object)."""
    config = run.as_interpreter()
    if run.env is not None:
        config["env"] = [f"{name}={value}" for name, value in run.env.items()]
    return config


def _debugpy_command() -> list[str]:
    if importlib.util.find_spec("debugpy") is None:
        pytest.skip("no debugpy here (it is installed with mixdbg: pip install -e .)")
    return [sys.executable, *DEBUGPY.python_module]


def _gdb_command() -> list[str]:
    try:
        return [find_gdb(), "-nx", "-q", "-i", "dap"]
    except MixdbgError as error:
        pytest.skip(f"no gdb DAP adapter here (the gdb-for-pwndbg wheel's gdb): {error}")


def _lldb_command() -> list[str]:
    program = shutil.which("lldb-dap-19")
    if program is None:
        pytest.skip("no lldb-dap-19 here (apt-get install lldb-19)")
    return [program]


@dataclass(frozen=True)
class Adapter:
    """One adapter: its name, its command line (``command()``, or a skip; None: the
    factory's own ``mixdbg dap``, logging to the test's directory), its ``launch`` arguments for a :class:`PythonRun`, what it calls the Python
    exception filters (``filters``: ``raised``, ``uncaught``, ``user-uncaught`` to its ids),
    the arguments after ``python`` that start it on an interpreter (``python_module``, the
    Python adapters'), its environment, and whether it is an oracle (its slips recorded)."""

    name: str
    command: Callable[[], list[str]] | None
    configure: Callable[[PythonRun], dict[str, Any]]
    filters: Mapping[str, str] = field(default_factory=dict)
    python_module: tuple[str, ...] = ()
    environment: Callable[[], dict[str, str]] | None = None
    oracle: bool = True

    def client(self, factory: ClientFactory, command: Sequence[str] | None = None) -> DapClient:
        """An initialized client of a new adapter of this kind; ``command`` replaces its
        command line (another platform's)."""
        if command is None and self.command is not None:
            command = self.command()
        client = factory(command=command,
                         env=None if self.environment is None else self.environment(), timeout=TIMEOUT)
        if self.oracle:
            client.schema = OracleSchema(client.schema)  # before its first message: initialize's answer
        client.initialize(adapterID=self.name)
        return client

    def launch_config(self, python: str, script: Path, *args: str, cwd: Path,
                      env: Mapping[str, str] | None = None, **extra: Any) -> dict[str, Any]:
        """The ``launch`` arguments that run ``python SCRIPT ARGS`` in ``cwd`` with ``env``,
        and ``extra`` (launch attributes the test sets)."""
        return {**self.configure(PythonRun(python, script, args, cwd, env)), **extra}

    def config(self, natives: NativeSet, script: str, *args: str) -> dict[str, Any]:
        """The ``launch`` arguments that run a driver script of ``natives`` with ``ARGS`` in
        their directory, the modules importable."""
        return self.launch_config(natives.python, natives.script(script), *args, cwd=natives.directory,
                                  env=natives.env())

    def filter_ids(self, names: Sequence[str]) -> list[str]:
        """This adapter's ids of the Python exception filters named by what they do."""
        unknown = [name for name in names if name not in self.filters]
        if unknown:
            raise ValueError(f"{self.name} has no Python exception filter {', '.join(unknown)}")
        return [self.filters[name] for name in names]


#: ``mixdbg dap``, held to the schema.
MIXDBG = Adapter("mixdbg", None, _mixdbg_config, oracle=False, python_module=("-m", "mixdbg", "dap"),
                 filters={"raised": "python-raised", "uncaught": "python-uncaught",
                          "user-uncaught": "python-user-uncaught"})
#: debugpy's adapter, the one VS Code's Python debugger runs (on the tests' Python, which has
#: debugpy; it launches the program with the interpreter under test, as mixdbg does).
DEBUGPY = Adapter("debugpy", _debugpy_command, _debugpy_config, python_module=("-m", "debugpy.adapter"),
                  filters={"raised": "raised", "uncaught": "uncaught", "user-uncaught": "userUnhandled"})
#: gdb's own DAP server, without the user's gdbinit, Python environment or debuginfod.
GDB = Adapter("gdb", _gdb_command, _gdb_config, environment=gdb_environment)
#: LLDB's DAP server (Debian's lldb-19).
LLDB = Adapter("lldb", _lldb_command, _lldb_config)


def launch(factory: ClientFactory, adapter: Adapter, program: Path, python: str,
           breakpoints: Mapping[str | Path, Sequence[int | Mapping[str, Any]]] | None = None,
           filters: Sequence[str] = ("uncaught",), command: Sequence[str] | None = None,
           **config: Any) -> DapClient:
    """A client of a new Python ``adapter`` that launched ``program`` with ``python`` in its
    directory as VS Code launches it (``justMyCode`` and ``showReturnValue`` on), stopping
    on the exception ``filters`` (by what they do); ``command`` replaces the adapter's."""
    client = adapter.client(factory, command)
    client.launch(adapter.launch_config(python, program, cwd=program.parent, showReturnValue=True, **config),
                  breakpoints=breakpoints, exception_filters=adapter.filter_ids(filters))
    return client


def both(scenario: Callable[[Adapter], T]) -> dict[str, T]:
    """What ``scenario(adapter)`` observed with debugpy, then with mixdbg, by adapter name."""
    return {adapter.name: scenario(adapter) for adapter in (DEBUGPY, MIXDBG)}


def against(oracle: Adapter, factory: ClientFactory, session: Callable[[DapClient, Adapter], T]) -> tuple[T, T]:
    """The same client script (``session``) against ``oracle``, its session then ended,
    and against mixdbg dap: the oracle's results and ours."""
    client = oracle.client(factory)
    try:
        found = session(client, oracle)
    finally:
        close_oracle(client)
    return found, session(MIXDBG.client(factory), MIXDBG)


def close_oracle(client: DapClient) -> None:
    """End an oracle's session, printing (for a failing test's report) its protocol slips
    and how it ended when that was a slip too (lldb-dap 19 cuts its last message short)."""
    if isinstance(client.schema, OracleSchema) and client.schema.slips:
        print("the oracle's schema slips:", *client.schema.slips, sep="\n  ")
    try:
        client.close(terminate_debuggee=True)
    except AssertionError as slip:
        print(f"the oracle's session ended with: {slip}")


class ScriptClients:
    """Clients of new adapters for the benchmark scripts, as a test's ``DapFactory`` makes
    them, without its logs (writing them costs time being measured)."""

    def __init__(self, workdir: Path, schema: DapSchema) -> None:
        self.workdir, self.schema = workdir, schema

    def __call__(self, *, command: Sequence[str] | None = None, env: Mapping[str, str] | None = None,
                 timeout: float = TIMEOUT) -> DapClient:
        """A client of a new adapter (``mixdbg dap`` unless ``command`` is given)."""
        return DapClient.spawn(command or [sys.executable, *MIXDBG.python_module], self.workdir, self.schema,
                               env=env, timeout=timeout)


def find_variable(client: DapClient, frame_id: int, name: str) -> dict[str, Any]:
    """Variable ``name`` in any scope of a frame but the registers (adapters group locals
    differently)."""
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
