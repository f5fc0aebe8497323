"""Which libraries gdb reads symbols for (``mixdbg.solibs``), decided on real ELF files: the
tests' C extension (``-g``), libc (no DWARF here), torch's kernel library by name."""

from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CExtension

from mixdbg.breakpoints import parse_spec
from mixdbg.solibs import LibraryFacts, added_libraries, name_key, wanted


def _libc() -> str:
    name = ctypes.util.find_library("c")
    for directory in ("/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64"):
        if name and os.path.exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    pytest.skip("libc not found")


@pytest.mark.parametrize(("spec", "key"), [
    ("native_step", b"native_step"),
    ("at::native::randn", b"randn"),
    ("ns::Klass::method(int) const", b"method"),
    ("foo@plt", b"foo"),
    ("loop.c:12", None),
    ("*0x1234", None),
    ("op:aten::add", None),
])
def test_the_name_a_library_must_hold(spec: str, key: bytes | None) -> None:
    assert name_key(parse_spec(spec)) == key


def test_a_library_is_read_only_for_a_breakpoint_it_can_hold(cext: CExtension) -> None:
    facts, libc = LibraryFacts(), _libc()
    native = [parse_spec("native_step")]
    assert wanted(facts, str(cext.library), native, None)
    assert not wanted(facts, libc, native, None)
    assert wanted(facts, libc, [parse_spec("getpid")], None)


def test_file_line_breakpoints_read_libraries_with_line_tables(cext: CExtension, tmp_path: Path) -> None:
    facts, line = LibraryFacts(), [parse_spec("mixdbg_testext.c:10")]
    assert wanted(facts, str(cext.library), line, None)
    stripped = tmp_path / cext.library.name
    shutil.copy(cext.library, stripped)
    strip = shutil.which("strip") or pytest.skip("strip is not installed")
    subprocess.run([strip, "--strip-debug", str(stripped)], check=True, timeout=60)
    assert not wanted(facts, str(stripped), line, None)


def test_the_kernel_library_is_read_for_operator_breakpoints(tmp_path: Path) -> None:
    kernels = tmp_path / "libtorch_cpu.so"
    kernels.write_bytes(b"not even ELF")
    assert wanted(LibraryFacts(), str(kernels), [], "libtorch_cpu.so")
    assert not wanted(LibraryFacts(), str(kernels), [], None)


def test_addresses_and_unknown_files_are_left_to_gdb(tmp_path: Path) -> None:
    assert wanted(LibraryFacts(), str(tmp_path / "gone.so"), [parse_spec("native_step")], None)
    assert wanted(LibraryFacts(), _libc(), [parse_spec("*0x1234")], None)


def test_loaded_libraries_of_a_solib_event() -> None:
    assert added_libraries({"added": ["/a.so", {"target-name": "/b.so"}, {}]}) == ["/a.so", "/b.so"]
    assert added_libraries({}) == []


def test_which_names_a_library_holds_is_kept_for_later_sessions(cext: CExtension, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    library, cache = tmp_path / cext.library.name, "names.json"
    shutil.copy(cext.library, library)
    first = LibraryFacts(cache)
    assert first.defines(str(library), b"native_step") and not first.defines(str(library), b"no_such_name")
    first.save()
    # The file's bytes change but not its identity (same inode, size and mtime): a later
    # session answers from the cache, without reading the file
    stat = library.stat()
    data = library.read_bytes()
    library.write_bytes(data.replace(b"native_step", b"native_stop"))
    os.utime(library, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert LibraryFacts(cache).defines(str(library), b"native_step")
    # A new mtime is a new file: read again
    os.utime(library, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert not LibraryFacts(cache).defines(str(library), b"native_step")
    assert LibraryFacts(None).defines(str(library), b"native_stop")
