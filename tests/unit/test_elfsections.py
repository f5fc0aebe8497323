"""``mixdbg.elfsections`` against pyelftools on real files: the tests' C extension, libc,
the interpreters and their libpython, and a file that is not ELF."""

from __future__ import annotations

import ctypes.util
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import CExtension
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection

from mixdbg.elfsections import (
    SHF_COMPRESSED,
    SHT_NOBITS,
    ElfFormatError,
    build_id,
    dynamic_symbols,
    first_load_bias,
    is_relocated,
    link_name,
    needed_libraries,
    read_sections,
    section_contains,
)


def _libc() -> Path:
    name = ctypes.util.find_library("c") or "libc.so.6"
    for directory in ("/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64"):
        if os.path.exists(os.path.join(directory, name)):
            return Path(directory, name)
    pytest.skip("libc not found")


def _pyelftools_view(path: Path) -> dict[str, tuple[int, int]]:
    with path.open("rb") as stream:
        return {section.name: (section["sh_offset"], section["sh_size"])
                for section in ELFFile(stream).iter_sections() if section.name}


def _file(which: str, cext: CExtension) -> Path:
    """The tests' C extension, libc or the interpreter running the tests."""
    return {"extension": lambda: cext.library, "libc": _libc,
            "interpreter": lambda: Path(os.path.realpath(sys.executable))}[which]()


@pytest.mark.parametrize("which", ["extension", "libc", "interpreter"])
def test_sections_are_those_pyelftools_reads(which: str, cext: CExtension) -> None:
    path = _file(which, cext)
    with path.open("rb") as stream:
        ours = read_sections(stream)
    theirs = _pyelftools_view(path)
    assert {name: (s.offset, s.size) for name, s in ours.items()} == theirs
    assert ".text" in ours and ours[".bss"].type == SHT_NOBITS


@pytest.mark.parametrize("content", [b"not even ELF, but long enough to hold a header " * 2,
                                     b"\x7fELF\x02\x01" + b"\0" * 50])  # a 64-bit header cut short
def test_a_file_that_is_not_elf_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "lib.so"
    path.write_bytes(content)
    with path.open("rb") as stream, pytest.raises(ElfFormatError):
        read_sections(stream)


def _interpreter_files() -> list[str]:
    library = os.path.join(sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("LDLIBRARY") or "-")
    files = [os.path.realpath(sys.executable), library, "/usr/bin/python3.11", *glob.glob("/usr/lib/*/libpython3*.so.1.0")]
    return [path for path in dict.fromkeys(files) if os.path.isfile(path)]


@pytest.mark.parametrize("path", _interpreter_files())
def test_an_interpreters_runtime_symbols_and_load_bias_are_those_pyelftools_reads(path: str) -> None:
    names = ("_PyRuntime", "Py_Version", "PyObject_GetAttr", "no_such_symbol")
    with open(path, "rb") as stream:
        elf = ELFFile(stream)
        table = elf.get_section_by_name(".dynsym")
        assert isinstance(table, SymbolTableSection)
        expected = {name: found[0]["st_value"] for name in names
                    if (found := table.get_symbol_by_name(name)) and found[0]["st_shndx"] != "SHN_UNDEF"}
        loads = [segment for segment in elf.iter_segments() if segment["p_type"] == "PT_LOAD"]
        bias = min(segment["p_vaddr"] - segment["p_offset"] for segment in loads)
        relocated = elf["e_type"] == "ET_DYN"
        assert (dynamic_symbols(stream, names), first_load_bias(stream), is_relocated(stream)) == \
            (expected, bias, relocated)


@pytest.mark.parametrize("which", ["extension", "libc", "interpreter"])
def test_build_id_and_needed_libraries_are_those_pyelftools_reads(which: str, cext: CExtension) -> None:
    path = _file(which, cext)
    with path.open("rb") as stream:
        elf = ELFFile(stream)
        note = elf.get_section_by_name(".note.gnu.build-id")
        expected_id = next((n["n_desc"] for n in note.iter_notes() if n["n_type"] == "NT_GNU_BUILD_ID"), None) \
            if note is not None else None
        dynamic = elf.get_section_by_name(".dynamic")
        expected_needed = [tag.needed for tag in dynamic.iter_tags() if tag.entry.d_tag == "DT_NEEDED"] \
            if dynamic is not None else []
    with path.open("rb") as stream:
        assert build_id(stream) == expected_id
        assert needed_libraries(stream) == expected_needed


def test_build_id_and_debuglink_are_those_pyelftools_reads(cext: CExtension, tmp_path: Path) -> None:
    # Given the test extension with a debuglink added (objcopy writes it as packagers do)
    objcopy = shutil.which("objcopy") or pytest.skip("objcopy is not installed")
    linked = tmp_path / cext.library.name
    (tmp_path / "ext.debug").write_bytes(b"")
    subprocess.run([objcopy, "--add-gnu-debuglink=ext.debug", str(cext.library), str(linked)], check=True,
                   cwd=tmp_path, timeout=60)
    with linked.open("rb") as stream:
        notes = [note for section in ELFFile(stream).iter_sections() if isinstance(section, NoteSection)
                 for note in section.iter_notes() if note["n_type"] == "NT_GNU_BUILD_ID"]
    # Then the build id and the link name are read
    with linked.open("rb") as stream:
        sections = read_sections(stream)
        assert build_id(stream, sections) == (notes[0]["n_desc"] if notes else None)
        assert link_name(stream, sections, ".gnu_debuglink") == "ext.debug"
        assert link_name(stream, sections, ".gnu_debugaltlink") is None


@pytest.mark.parametrize("key", [b"native_step", b"mixdbg_testext.c", b"no_such_name_anywhere", b"int"])
def test_a_compressed_section_is_searched_as_the_plain_one(cext: CExtension, tmp_path: Path, key: bytes) -> None:
    # Given the extension's DWARF, plain and zlib-compressed (as Debian's debug files have it)
    objcopy = shutil.which("objcopy") or pytest.skip("objcopy is not installed")
    compressed = tmp_path / "compressed.so"
    subprocess.run([objcopy, "--compress-debug-sections=zlib", str(cext.library), str(compressed)], check=True,
                   timeout=60)
    with cext.library.open("rb") as plain, compressed.open("rb") as packed:
        plain_str, packed_str = read_sections(plain)[".debug_str"], read_sections(packed)[".debug_str"]
        assert packed_str.flags & SHF_COMPRESSED and not plain_str.flags & SHF_COMPRESSED
        # Then a name is found in both, or in neither
        assert section_contains(packed, packed_str, key) == section_contains(plain, plain_str, key)
        assert section_contains(plain, plain_str, key) == (key in ELFFile(plain).get_section_by_name(".debug_str").data())
