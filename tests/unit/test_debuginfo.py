"""ELF debug-info classification against tiny libraries built here with and without -g."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mixdbg import debugfiles, debuginfo
from mixdbg.errors import DataError, NotFoundError

SOURCE = """\
static int helper(int x) { int doubled = x * 2; return doubled; }
int exported(int x) { return helper(x) + 1; }
"""


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def build(directory: Path, name: str, *flags: str) -> Path:
    """Compile SOURCE into ``directory/name`` as a shared library with ``flags``."""
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "tiny.c"
    source.write_text(SOURCE)
    library = directory / name
    subprocess.run([tool("cc"), "-shared", "-fPIC", "-Wl,--build-id", *flags, str(source), "-o", str(library)],
                   check=True, timeout=60)
    return library


def sections(library: Path) -> set[str]:
    """Section names as binutils sees them, to check the fixtures are what the tests assume."""
    out = subprocess.run([tool("readelf"), "-S", "-W", str(library)], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return set(re.findall(r"\]\s+(\.\S+)", out))


@pytest.mark.timeout(60)
def test_library_built_with_g_has_dwarf(tmp_path: Path) -> None:
    library = build(tmp_path, "libg.so", "-g", "-O0")
    assert ".debug_info" in sections(library)
    info = debuginfo.classify(library, debug_root=tmp_path / "no-debug-root")
    assert (info.level, info.dwarf_file) == (debuginfo.DWARF, library)
    assert info.file_line_breakpoints and info.locals_visible and info.any_function_by_name


@pytest.mark.timeout(60)
def test_library_without_g_has_only_a_symbol_table(tmp_path: Path) -> None:
    library = build(tmp_path, "libnog.so", "-O0")
    assert ".symtab" in sections(library) and ".debug_info" not in sections(library)
    info = debuginfo.classify(library, debug_root=tmp_path / "no-debug-root")
    assert (info.level, info.dwarf_file) == (debuginfo.SYMTAB, None)
    assert info.any_function_by_name and not info.file_line_breakpoints and not info.locals_visible


@pytest.mark.timeout(60)
def test_stripped_library_has_only_dynamic_symbols(tmp_path: Path) -> None:
    library = build(tmp_path, "libstripped.so", "-g")
    subprocess.run([tool("strip"), "--strip-all", str(library)], check=True, timeout=60)
    assert ".symtab" not in sections(library) and ".dynsym" in sections(library)
    info = debuginfo.classify(library, debug_root=tmp_path / "no-debug-root")
    assert info.level == debuginfo.DYNSYM
    assert info.exported_functions_by_name and not info.any_function_by_name


def split_debug(library: Path) -> Path:
    """Move the DWARF of ``library`` into ``library.debug`` and strip ``library``."""
    debug = library.with_name(library.name + ".debug")
    subprocess.run([tool("objcopy"), "--only-keep-debug", str(library), str(debug)], check=True, timeout=60)
    subprocess.run([tool("strip"), "--strip-all", str(library)], check=True, timeout=60)
    return debug


@pytest.mark.timeout(60)
def test_separate_debug_file_found_by_build_id(tmp_path: Path) -> None:
    library = build(tmp_path / "lib", "libsplit.so", "-g")
    debug = split_debug(library)
    build_id = debuginfo.classify(library, debug_root=tmp_path / "none").build_id
    assert build_id is not None and len(build_id) == 40
    root = tmp_path / "debug-root"
    target = root / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    target.parent.mkdir(parents=True)
    debug.rename(target)
    info = debuginfo.classify(library, debug_root=root)
    assert (info.level, info.dwarf_file) == (debuginfo.DWARF, target)


@pytest.mark.timeout(60)
def test_separate_debug_file_found_by_debuglink(tmp_path: Path) -> None:
    library = build(tmp_path, "liblink.so", "-g")
    debug = split_debug(library)
    subprocess.run([tool("objcopy"), f"--add-gnu-debuglink={debug}", str(library)], check=True, timeout=60,
                   cwd=tmp_path)
    info = debuginfo.classify(library, debug_root=tmp_path / "none")
    assert (info.debuglink, info.level, info.dwarf_file) == (debug.name, debuginfo.DWARF, debug)
    debug.unlink()
    assert debuginfo.classify(library, debug_root=tmp_path / "none").level == debuginfo.DYNSYM


def test_debuglink_candidates_follow_gdb_rules(tmp_path: Path) -> None:
    library = tmp_path / "usr" / "lib" / "libx.so"
    root = tmp_path / "dbg"
    candidates = debugfiles.candidates(library, "abcdef", "libx.so.debug", debugfiles.Search((root,)))
    assert candidates == [
        root / ".build-id" / "ab" / "cdef.debug",
        library.parent / "libx.so.debug",
        library.parent / ".debug" / "libx.so.debug",
        root / str(library.parent).lstrip("/") / "libx.so.debug",
    ]


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        debuginfo.classify(tmp_path / "nope.so")


def test_non_elf_file_is_a_data_error(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not an ELF file\n")
    with pytest.raises(DataError, match="not a readable ELF file"):
        debuginfo.classify(text)
