"""Fixtures of the DAP tests (registered for all tests by ``tests/conftest.py``): the
schema, the native modules with their driver scripts, and DAP clients driving
``mixdbg dap``."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from conftest import Forky

from .client import DapClient
from .natives import NativeModule, NativeSet, NativeSets
from .schema import SCHEMA_PATH, DapSchema


def mixdbg_dap_command(log: Path, *options: str, python: str = sys.executable) -> list[str]:
    """``python -m mixdbg dap --log LOG [OPTIONS]``."""
    return [python, "-m", "mixdbg", "dap", "--log", str(log), *options]


def forky_command(forky: Forky, directory: Path, command: Sequence[str]) -> list[str]:
    """``command`` run inside the forky chroot with ``directory`` at ``/project``, its stdio
    passed through; every step execs, so the PID is the command's own."""
    return [str(forky.script), "run", str(directory), *command]


@pytest.fixture(scope="session")
def dap_schema() -> DapSchema:
    """The DAP JSON schema (skips when ``../shared/dap`` is not beside the repository)."""
    if not SCHEMA_PATH.is_file():
        pytest.skip(f"no DAP schema at {SCHEMA_PATH} (CI clones shared/ beside the repository)")
    return DapSchema(SCHEMA_PATH)


@pytest.fixture(scope="session")
def native_sets(tmp_path_factory: pytest.TempPathFactory) -> NativeSets:
    """Native modules and driver scripts per interpreter: ``native_sets.get(python)``."""
    return NativeSets(tmp_path_factory.mktemp("natives"))


@pytest.fixture(scope="session")
def natives(native_sets: NativeSets) -> NativeSet:
    """The native modules and driver scripts for the interpreter running the tests."""
    return native_sets.get(sys.executable)


@pytest.fixture(scope="session")
def capi_module(natives: NativeSet) -> NativeModule:
    """The C API module ``mixdbg_testext``, built beside the driver scripts."""
    return natives.capi


@pytest.fixture(scope="session")
def geom_module(natives: NativeSet) -> NativeModule:
    """The pybind11 module ``geom``, built beside the driver scripts."""
    return natives.geom


@pytest.fixture(scope="session")
def cython_module(natives: NativeSet) -> NativeModule:
    """The Cython module ``cyloop``, built beside the driver scripts."""
    return natives.cython


@pytest.fixture(scope="session")
def forky_natives(forky: Forky, tmp_path_factory: pytest.TempPathFactory) -> NativeSet:
    """The native modules and driver scripts built inside the forky chroot for its Python
    3.14 (the venv with this checkout of mixdbg); its paths are the chroot's
    (``/project/...``); ``forky_natives.run(...)`` runs a command there."""
    directory = tmp_path_factory.mktemp("natives-forky")
    return NativeSet(forky.python, directory, run=lambda command: forky.run(directory, command),
                     mount=Path("/project"))


class DapFactory:
    """Starts DAP clients for one test, each against its own adapter; all are closed (and
    their adapters ended) when the test ends."""

    def __init__(self, workdir: Path, schema: DapSchema) -> None:
        self.workdir = workdir
        self.schema = schema
        self.clients: list[DapClient] = []
        self.logs: list[Path] = []

    def __call__(self, transport: str = "stdio", command: Sequence[str] | None = None,
                 env: Mapping[str, str] | None = None, timeout: float = 30.0) -> DapClient:
        """A client of a new adapter: ``mixdbg dap --log FILE`` over stdio, or with
        ``--port 0`` over TCP (``transport="tcp"``), unless ``command`` is given."""
        log = self.workdir / f"dap-{len(self.clients)}.log"
        self.logs.append(log)
        if transport == "stdio":
            command = command or mixdbg_dap_command(log)
            client = DapClient.spawn(command, self.workdir, self.schema, env=env, timeout=timeout)
        elif transport == "tcp":
            command = command or mixdbg_dap_command(log, "--port", "0")
            client = DapClient.serve(command, self.workdir, self.schema, env=env, timeout=timeout)
        else:
            raise ValueError(f"unknown transport {transport!r}")
        self.clients.append(client)
        return client

    def close_all(self) -> None:
        """Close every client; print the adapters' logs' ends (shown when the test fails)."""
        errors = []
        for client in self.clients:
            try:
                client.close()
            except AssertionError as error:
                errors.append(str(error))
        for log in self.logs:
            if log.exists():
                print(f"--- {log.name} (end) ---\n{log.read_text(errors='replace')[-4000:]}")
        if errors:
            raise AssertionError("\n".join(errors))


@pytest.fixture
def dap_factory(tmp_path: Path, dap_schema: DapSchema) -> Iterator[DapFactory]:
    """Make DAP clients of new ``mixdbg dap`` adapters (or of any adapter command)."""
    factory = DapFactory(tmp_path / "dap", dap_schema)
    try:
        yield factory
    finally:
        factory.close_all()


@pytest.fixture
def dap(dap_factory: DapFactory) -> DapClient:
    """A client of a new ``mixdbg dap`` over stdio, logging to ``tmp_path/dap/dap-0.log``,
    closed after the test."""
    return dap_factory()
