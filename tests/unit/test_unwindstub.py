"""The unwind stub of a library gdb is not asked to read (``mixdbg.unwindstub``): the stub
carries the library's unwind tables at their addresses and nothing else, and its frames are
named from the library's ELF symbol table as binutils' nm sees it. (That gdb unwinds and
names the seed run's stack from them as it does from libtorch_cpu.so's symbols is
``tests/integration/test_known_places.py``.)"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, BinaryIO, cast

import pytest

from mixdbg import unwindstub
from mixdbg.elfsections import SHT_NOBITS, read_sections
from mixdbg.gdbmi import GdbMi
from mixdbg.solibs import SymbolReader

SOURCE = """\
static int helper(int x) { int doubled = x * 2; return doubled; }
int exported(int x) { return helper(x) + 1; }
int other(int x) { return exported(x) * 3; }
"""

pytestmark = pytest.mark.timeout(60)


def build(directory: Path, *flags: str) -> Path:
    """SOURCE as a shared library built with ``flags``."""
    source = directory / "tiny.c"
    source.write_text(SOURCE)
    library = directory / "libtiny.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O0", *flags, str(source), "-o", str(library)], check=True,
                   timeout=60)
    return library


def nm_functions(library: Path) -> dict[str, tuple[int, int]]:
    """Each function's (start, size) as binutils' nm says."""
    out = subprocess.run(["nm", "-S", str(library)], check=True, capture_output=True, text=True, timeout=60).stdout
    return {match.group(4): (int(match.group(1), 16), int(match.group(2), 16))
            for match in re.finditer(r"^([0-9a-f]+) ([0-9a-f]+) ([tT]) (\S+)$", out, re.MULTILINE)}


def test_every_address_of_a_function_names_it_as_nm_does(tmp_path: Path) -> None:
    # Given a library with a static and two exported functions, and nm's table of them
    library = build(tmp_path)
    functions = nm_functions(library)
    assert {"helper", "exported", "other"} <= set(functions)
    table = unwindstub.SymbolTable(str(library))
    # Then its first, middle and last byte are in it, and the byte after is not (unless
    # another function starts there)
    for name in ("helper", "exported", "other"):
        start, size = functions[name]
        for offset in (start, start + size // 2, start + size - 1):
            assert table.function_at(offset) == (name, start)
        after = table.function_at(start + size)
        assert after is None or after[1] == start + size


def test_the_stub_holds_the_unwind_tables_at_their_addresses_and_no_code(tmp_path: Path) -> None:
    # Given a library, and its stub
    library = build(tmp_path)
    stub = unwindstub.write_stub(str(library), tmp_path / "stubs" / "libtiny.unwind")
    with open(library, "rb") as stream:
        original = read_sections(stream)
        tables = {name: _bytes(stream, original[name].offset, original[name].size)
                  for name in (".eh_frame", ".eh_frame_hdr")}
    with open(stub, "rb") as stream:
        kept = read_sections(stream)
        # Then the unwind tables are the library's, byte for byte
        for name, data in tables.items():
            assert _bytes(stream, kept[name].offset, kept[name].size) == data
    # the code is a placeholder at the library's address; nothing else is there
    assert kept[".text"].type == SHT_NOBITS and kept[".text"].size == original[".text"].size
    assert set(kept) == {".text", ".eh_frame", ".eh_frame_hdr", ".shstrtab"}
    assert unwindstub.code_address(stub) == _address(library, ".text")
    # and a second call finds it; the newest stubs are kept, no more
    assert unwindstub.write_stub(str(library), tmp_path / "stubs" / "libtiny.unwind") == stub
    for number in range(unwindstub.KEPT_STUBS + 2):
        unwindstub.write_stub(str(library), tmp_path / "stubs" / f"libtiny{number}.unwind")
    assert len(list((tmp_path / "stubs").glob("*.unwind"))) == unwindstub.KEPT_STUBS
    assert (tmp_path / "stubs" / f"libtiny{unwindstub.KEPT_STUBS + 1}.unwind").exists()


def test_only_a_large_symbol_table_without_dwarf_is_heavy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = build(tmp_path)
    assert not unwindstub.heavy(str(plain))  # a few symbols: gdb reads it at once
    monkeypatch.setattr(unwindstub, "HEAVY_SYMTAB_BYTES", 0)
    assert unwindstub.heavy(str(plain))
    (tmp_path / "g").mkdir()
    assert not unwindstub.heavy(str(build(tmp_path / "g", "-g")))  # DWARF: gdb's read is more than names
    assert not unwindstub.heavy(str(tmp_path / "missing.so"))


def _bytes(stream: BinaryIO, offset: int, size: int) -> bytes:
    stream.seek(offset)
    return stream.read(size)


def _address(library: Path, name: str) -> int:
    out = subprocess.run(["readelf", "-S", "-W", str(library)], check=True, capture_output=True, text=True,
                         timeout=60).stdout
    match = re.search(rf"\]\s+{re.escape(name)}\s+\S+\s+([0-9a-f]+)", out)
    assert match is not None
    return int(match.group(1), 16)


class FakeGdb:
    """What SymbolReader asks of gdb when it leaves a library unread: its debuginfod opt-in,
    and console commands (recorded)."""

    def __init__(self, debuginfod: bool = False) -> None:
        self.debuginfod = debuginfod
        self.consoles: list[str] = []

    def console(self, command: str) -> dict[str, Any]:
        self.consoles.append(command)
        return {}


@pytest.mark.parametrize(("flags", "debuginfod", "left"), [((), False, True), (("-g",), False, False),
                                                          ((), True, False)])
def test_a_heavy_library_without_dwarf_is_left_unread_with_its_stub(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: tuple[str, ...], debuginfod: bool, left: bool) -> None:
    # Given a session where nobody waits at a stop, and a library bound by address at its load
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(unwindstub, "HEAVY_SYMTAB_BYTES", 0)
    library = build(tmp_path, *flags)
    gdb = FakeGdb(debuginfod)
    reader = SymbolReader(cast(GdbMi, gdb))
    reader.unwind_only = True
    reader.deferred = [str(library)]
    read: list[tuple[str, ...]] = []
    monkeypatch.setattr(reader, "read_running", lambda inferior, *paths: read.append(paths))
    # When the session reads the libraries it bound by address
    reader.read_deferred(None, [], "i1")
    # Then one without DWARF is not read: gdb's helper gets its stub; with DWARF (its own,
    # or maybe debuginfod's) gdb reads it
    assert read == ([] if left else [(str(library),)])
    stubs = list((tmp_path / "cache" / "mixdbg" / "unwind-stubs").glob("libtiny.so-*"))
    assert gdb.consoles == ([f"mixdbg-unwind-only {library} {stubs[0]}"] if left else [])
