"""Which native functions of a process are the user's own: those defined in the sources of
its loaded extension modules and libraries built with debug info, not in the
interpreter, the runtimes or binding libraries' headers. A Step Into from Python lands in
one of them. Read from the DWARF with pyelftools, only the compile units' top-level
entries, once per library file."""

from __future__ import annotations

import logging
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from mixdbg.engine.frames import is_glue_source, is_runtime_library

log = logging.getLogger(__name__)

#: Source files a function can be defined in (headers are left out: theirs are inline).
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".pyx", ".m", ".mm", ".f90", ".rs")
#: Libraries under these directories are the system's, not the user's.
SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/")


#: Names of functions in a user's file that are binding glue all the same.
GLUE_NAMES = re.compile(r"^(PyInit_|pybind11_init_|pybind11_exec_|__pyx_pw_|__Pyx|__pyx_(?!pf_|f_)|nb_init_|_GLOBAL__|"
                        r"__static_initialization|__cxx_global|_sub_I_)")


def user_functions(pid: int) -> dict[str, tuple[tuple[str, str], ...]]:
    """The user's functions in the libraries ``pid`` has loaded: per library, each one's
    source file and name (qualified, as gdb takes them; the file lets gdb look the name up
    in that file's symbols alone, not in every library's)."""
    found: dict[str, tuple[tuple[str, str], ...]] = {}
    for library in _loaded_libraries(pid):
        try:
            stat = os.stat(library)
        except OSError:
            continue
        names = _functions_of(library, stat.st_mtime_ns, stat.st_size)
        if names:
            found[library] = names
    return found


def _loaded_libraries(pid: int) -> list[str]:
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return []
    exe = os.path.realpath(f"/proc/{pid}/exe")
    found: dict[str, None] = {}
    for line in maps.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or "x" not in parts[1]:
            continue
        path = parts[5].strip()
        if (path.startswith("/") and path != exe and ".so" in Path(path).name and "/lib-dynload/" not in path
                and not path.startswith(SYSTEM_DIRS) and not is_runtime_library(path)):
            found[path] = None
    return list(found)


@lru_cache(maxsize=256)
def _functions_of(library: str, mtime: int, size: int) -> tuple[tuple[str, str], ...]:
    """The functions a library defines in the user's sources (see the module doc)."""
    # pyelftools here, not at the top: its import cost mixdbg dap's start 35 ms of CPU
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    try:
        with open(library, "rb") as handle:
            elf = ELFFile(handle)
            if elf.get_section_by_name(".debug_info") is None:
                return ()
            dwarf = elf.get_dwarf_info()
            found: set[tuple[str, str]] = set()
            for unit in dwarf.iter_CUs():
                found.update(_unit_functions(dwarf, unit))
    except (OSError, ELFError, KeyError, ValueError) as err:
        log.info("reading the debug info of %s: %s", library, err)
        return ()
    return tuple(sorted((source, name) for source, name in found if not GLUE_NAMES.match(name)))


def _unit_functions(dwarf: Any, unit: Any) -> set[tuple[str, str]]:
    program = dwarf.line_program_for_CU(unit)
    files = _file_names(program) if program is not None else {}
    names: set[tuple[str, str]] = set()
    for die in unit.get_top_DIE().iter_children():
        if die.tag != "DW_TAG_subprogram" or "DW_AT_low_pc" not in die.attributes:
            continue
        declared = die
        if "DW_AT_specification" in die.attributes:
            declared = die.get_DIE_from_attribute("DW_AT_specification")
        elif "DW_AT_abstract_origin" in die.attributes:
            declared = die.get_DIE_from_attribute("DW_AT_abstract_origin")
        file_index = declared.attributes.get("DW_AT_decl_file")
        source = files.get(int(file_index.value), "") if file_index is not None else ""
        if not source.endswith(SOURCE_SUFFIXES) or is_glue_source(source):
            continue
        name = _qualified(declared)
        if name:
            names.add((source, name))
    return names


def _file_names(program: Any) -> dict[int, str]:
    """The line program's file table by DW_AT_decl_file index (DWARF 5 counts from 0,
    earlier versions from 1)."""
    entries = program.header.file_entry
    first = 0 if program.header.version >= 5 else 1
    return {index: _text(entry.name) for index, entry in enumerate(entries, first)}


def _qualified(die: Any) -> str:
    """``ns::Class::name`` from a declaration and the scopes it sits in."""
    name = _text(die.attributes["DW_AT_name"].value) if "DW_AT_name" in die.attributes else ""
    parent = die.get_parent()
    while name and parent is not None and parent.tag in ("DW_TAG_namespace", "DW_TAG_class_type",
                                                          "DW_TAG_structure_type"):
        if "DW_AT_name" not in parent.attributes:
            return ""  # an anonymous namespace or a lambda's closure: not callable by name
        name = f"{_text(parent.attributes['DW_AT_name'].value)}::{name}"
        parent = parent.get_parent()
    return name


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
