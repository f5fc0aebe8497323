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
from mixdbg.debugfiles import Search
from mixdbg.elfsections import build_id, read_sections
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


def _shipped(library: Path, directory: Path, debuglink: bool) -> tuple[Path, Path]:
    """A copy of ``library`` as packages ship it: stripped, its DWARF and symbol table in a
    debug file under ``directory/debug/.build-id`` (and named by a debuglink if asked);
    the copy and the debug root."""
    objcopy = shutil.which("objcopy") or pytest.skip("objcopy is not installed")
    strip = shutil.which("strip") or pytest.skip("strip is not installed")
    shipped, debug = directory / library.name, directory / "split.debug"
    shutil.copy(library, shipped)
    subprocess.run([objcopy, "--only-keep-debug", "--compress-debug-sections", str(shipped), str(debug)],
                   check=True, timeout=60)
    subprocess.run([strip, "--strip-unneeded", str(shipped)], check=True, timeout=60)
    if debuglink:
        subprocess.run([objcopy, "--add-gnu-debuglink=split.debug", str(shipped)], check=True, timeout=60,
                       cwd=directory)
    with shipped.open("rb") as stream:
        build = build_id(stream, read_sections(stream))
    assert build is not None
    root = directory / "debug"
    by_id = root / ".build-id" / build[:2] / f"{build[2:]}.debug"
    by_id.parent.mkdir(parents=True)
    shutil.move(debug, by_id)
    return shipped, root


def test_a_stripped_librarys_debug_file_found_by_build_id_counts(cext: CExtension, tmp_path: Path) -> None:
    # Given the extension stripped, its DWARF only in a build-id file (no debuglink)
    shipped, root = _shipped(cext.library, tmp_path, debuglink=False)
    without = LibraryFacts()
    with_root = LibraryFacts(search=Search((root,)))
    # Then FILE:LINE and the static function's name (only in the debug file) read it,
    # once gdb's debug directory is the one holding the file; a name in neither does not
    line, static = [parse_spec("mixdbg_testext.c:10")], [parse_spec("native_loop")]
    assert not wanted(without, str(shipped), line, None) and not wanted(without, str(shipped), static, None)
    assert wanted(with_root, str(shipped), line, None) and wanted(with_root, str(shipped), static, None)
    assert not wanted(with_root, str(shipped), [parse_spec("no_such_function_here")], None)


def test_debuginfod_makes_a_library_with_a_build_id_worth_reading(cext: CExtension, tmp_path: Path) -> None:
    # Given a stripped library whose debug file is nowhere here
    shipped, root = _shipped(cext.library, tmp_path, debuglink=False)
    shutil.rmtree(root)
    line = [parse_spec("mixdbg_testext.c:10")]
    # Then FILE:LINE reads it only when debuginfod may fetch its DWARF
    assert not wanted(LibraryFacts(search=Search((root,))), str(shipped), line, None)
    assert wanted(LibraryFacts(search=Search((root,), debuginfod_cache=tmp_path / "cache")), str(shipped), line, None)
