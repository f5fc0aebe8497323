"""The operators of the installed torch and the C++ functions that run each one.

Operator names (``aten::add.Tensor``) are stable across torch releases; the C++ names that
implement them are not. Both are discovered on the installed torch, never hard-coded:

* the operators and their schemas come from the ``native_functions.yaml`` that the wheel
  ships (``torchgen/packaged/ATen/native/``): argument names and return types;
* the kernels come from ``libtorch_cpu.so``'s symbol table. PyTorch's code generator
  wraps every kernel it registers as ``wrapper_<DispatchKey>_<name>`` and registers it
  through the templates ``c10::impl::wrap_kernel_functor_unboxed_<...>::call`` (the
  dispatcher's unboxed calls) and ``make_boxed_from_unboxed_functor<...>::call`` (boxed
  calls). The wrappers themselves are often inlined (``wrapper_CPU_mm`` has no symbol of
  its own in torch 2.13), these two ``call`` functions never are: the dispatcher calls them
  through a pointer. They are found by their mangled names in ``.strtab`` (a byte scan,
  0.25 s for the 76 MB table of torch 2.13), their addresses in ``.symtab``, and the
  result is cached by the library's build id.

Nothing here imports torch: mixdbg's own interpreter need not have it, and importing it
takes seconds.
"""

from __future__ import annotations

import logging
import re
import struct
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mixdbg import debuginfo
from mixdbg.errors import DataError, NotFoundError
from mixdbg.pytorch.mapped import mapped_library
from mixdbg.rundir import keep_cached, read_cached

log = logging.getLogger(__name__)

SCHEMA_FILE = Path("torchgen", "packaged", "ATen", "native", "native_functions.yaml")
KERNEL_LIBRARY = Path("lib", "libtorch_cpu.so")
#: Bumped when the cached document changes shape.
CACHE_VERSION = 2
#: Elf64_Sym: st_name, st_info, st_other, st_shndx, st_value, st_size.
_SYMBOL = struct.Struct("<IBBHQQ")

_FUNCTOR_CALL = re.compile(
    rb"_ZN3c104impl(?P<kind>28wrap_kernel_functor_unboxed_|31make_boxed_from_unboxed_functor)I"
    # The wrapper is in an anonymous namespace: its name follows `12_GLOBAL__N_1`, or a
    # substitution (`S5_`) when the namespace was named before in the same symbol.
    rb"[^\x00]*?(?:_GLOBAL__N_1|_)(?P<length>\d+)wrapper_[^\x00]*")
_FUNC_LINE = re.compile(r"^- func: (?P<name>[\w]+)(?:\.(?P<overload>\w+))?\((?P<args>.*)\) -> (?P<returns>.+)$")


@dataclass(frozen=True)
class Argument:
    """One argument of an operator schema: its schema type (``Tensor``, ``SymInt[]``) and name."""

    type: str
    name: str


@dataclass(frozen=True)
class Schema:
    """One operator overload, as ``native_functions.yaml`` declares it."""

    name: str  # "add"
    overload: str  # "Tensor", or "" for the default overload
    arguments: tuple[Argument, ...]
    returns: str  # "Tensor", "Tensor(a!)", "(Tensor, Tensor)", "()"

    @property
    def full_name(self) -> str:
        """The operator's qualified name with its overload: ``aten::add.Tensor``."""
        return f"aten::{self.name}" + (f".{self.overload}" if self.overload else "")

    @property
    def is_out(self) -> bool:
        """Whether it writes into keyword ``out=`` tensors (codegen names it ``NAME_out``)."""
        return any("!" in arg.type for arg in self.arguments) and "!" in self.returns


@dataclass(frozen=True)
class Kernel:
    """One registered kernel of an operator overload, as a function gdb can break on."""

    overload: str  # the schema's full name, "aten::add.Tensor"
    dispatch_key: str  # "CPU", "CompositeImplicitAutograd", ...
    symbol: str  # the mangled name of the functor's ``call``
    boxed: bool  # the boxed entry (arguments on an IValue stack, not in registers)
    address: int  # its address in the library, relative to where the library is loaded


@dataclass(frozen=True)
class Catalogue:
    """Every operator overload of one torch install, and the kernels found for each."""

    torch_root: Path
    schemas: dict[str, Schema]  # by full name
    kernels: dict[str, tuple[Kernel, ...]]  # by full name

    @property
    def library(self) -> Path:
        """The library that holds the kernels (``libtorch_cpu.so``)."""
        return self.torch_root / KERNEL_LIBRARY

    def overloads(self, name: str) -> list[Schema]:
        """The overloads of operator ``aten::NAME`` (``name`` without namespace)."""
        return [schema for schema in self.schemas.values() if schema.name == name]

    def operator_names(self) -> list[str]:
        """Every operator's ``aten::NAME``, once each."""
        return sorted({f"aten::{schema.name}" for schema in self.schemas.values()})


def split_arguments(text: str) -> list[str]:
    """Split a schema's argument list at its top-level commas (defaults hold ``[0, 1]``)."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def parse_schema_line(line: str) -> Schema | None:
    """A ``- func: NAME.OVERLOAD(ARGS) -> RETURNS`` line of native_functions.yaml, or None."""
    match = _FUNC_LINE.match(line.strip())
    if match is None:
        return None
    arguments = []
    for part in split_arguments(match.group("args")):
        if part == "*":
            continue
        declaration = part.split("=", 1)[0].strip()
        type_text, _, name = declaration.rpartition(" ")
        arguments.append(Argument(type=type_text, name=name))
    return Schema(match.group("name"), match.group("overload") or "", tuple(arguments),
                  match.group("returns").strip())


def read_schemas(path: Path) -> dict[str, Schema]:
    """Every operator overload declared in ``native_functions.yaml``, by full name."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise NotFoundError(f"cannot read torch's operator list {path}: {err.strerror}") from err
    schemas = (parse_schema_line(line) for line in text.splitlines() if line.startswith("- func:"))
    return {schema.full_name: schema for schema in schemas if schema is not None}


def declares_operator(torch_root: Path, name: str) -> bool:
    """Whether the torch at ``torch_root`` has an operator ``aten::NAME`` (one search of
    ``native_functions.yaml``: a breakpoint's hint needs no parsed catalogue)."""
    try:
        text = (torch_root.parent / SCHEMA_FILE).read_bytes()
    except OSError:
        return False
    return re.search(rb"^- func: " + re.escape(name.encode()) + rb"[.(]", text, re.MULTILINE) is not None


def wrapper_names(schema: Schema) -> set[str]:
    """The names torch's code generator gives a kernel wrapper of ``schema`` after
    ``wrapper_<KEY>_``: ``NAME_OVERLOAD`` (structured kernels), ``OVERLOAD_NAME``
    (the others); out= variants append ``_out`` to the C++ name."""
    unambiguous = f"{schema.name}_{schema.overload}" if schema.overload else schema.name
    cpp_name = schema.name + ("_out" if schema.is_out else "")
    names = {unambiguous, f"{schema.overload}_{cpp_name}"}
    if schema.is_out:
        names.add(f"{unambiguous}_out")
    return names


@dataclass(frozen=True)
class Functor:
    """A kernel functor's ``call`` found in the string table."""

    identifier: str  # "wrapper_CPU_add_Tensor"
    symbol: str
    boxed: bool
    name_offset: int  # where its name starts in the string table (st_name)


def scan_functor_symbols(strtab: bytes) -> Iterator[Functor]:
    """Each kernel functor's ``call`` named in a string table."""
    for match in _FUNCTOR_CALL.finditer(strtab):
        symbol = match.group(0)
        if symbol.endswith(b".cold") or b"4callE" not in symbol:
            continue
        start = match.end("length")
        identifier = strtab[start:start + int(match.group("length"))].decode("ascii", "replace")
        yield Functor(identifier, symbol.decode("ascii"), match.group("kind").startswith(b"31"), match.start())


def _sections(library: Path) -> tuple[bytes, bytes]:
    """The raw ``.strtab`` and ``.symtab`` of ``library`` (empty when stripped)."""
    # pyelftools here, not at the top: its import cost mixdbg dap's start 35 ms of CPU
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    try:
        with library.open("rb") as stream:
            elf = ELFFile(stream)
            found = []
            for name in (".strtab", ".symtab"):
                section = elf.get_section_by_name(name)
                found.append(section.data() if section is not None else b"")
            return found[0], found[1]
    except (OSError, ELFError) as err:
        raise DataError(f"cannot read the symbols of {library}: {err}") from err


def symbol_values(symtab: bytes, name_offsets: Iterable[int]) -> dict[int, int]:
    """``{st_name: st_value}`` of the defined symbols whose names start at ``name_offsets``."""
    wanted = set(name_offsets)
    usable = len(symtab) - len(symtab) % _SYMBOL.size
    return {name: value for name, _, _, section, value, _ in _SYMBOL.iter_unpack(symtab[:usable])
            if name in wanted and section != 0 and value}


def match_kernels(schemas: dict[str, Schema], functors: Iterable[Functor], addresses: dict[int, int],
                  ) -> dict[str, tuple[Kernel, ...]]:
    """Assign each functor (with an address) to the operator overload whose wrapper name
    it carries."""
    by_wrapper: dict[str, str] = {}
    for full_name, schema in schemas.items():
        for name in wrapper_names(schema):
            by_wrapper.setdefault(name, full_name)
    found: dict[str, list[Kernel]] = {}
    for functor in functors:
        key, _, rest = functor.identifier[len("wrapper_"):].partition("_")
        overload = by_wrapper.get(rest)
        address = addresses.get(functor.name_offset)
        if overload is not None and address is not None:
            found.setdefault(overload, []).append(Kernel(overload, key, functor.symbol, functor.boxed, address))
    return {name: tuple(kernels) for name, kernels in found.items()}


def _cached_kernels(library: Path, schemas: dict[str, Schema]) -> dict[str, tuple[Kernel, ...]]:
    """``match_kernels`` for ``library``, cached by its build id (1 s → 0.1 s)."""
    build_id = debuginfo.classify(library).build_id
    name = f"torch-kernels-{build_id}-v{CACHE_VERSION}.json" if build_id else None
    raw = read_cached(name) if name is not None else None
    if isinstance(raw, dict):
        try:
            return {op: tuple(Kernel(op, *fields) for fields in kernels) for op, kernels in raw.items()}
        except TypeError as err:
            log.info("ignoring the kernel list cached as %s: %s", name, err)
    strtab, symtab = _sections(library)
    functors = list(scan_functor_symbols(strtab))
    kernels = match_kernels(schemas, functors, symbol_values(symtab, (f.name_offset for f in functors)))
    if name is not None:
        keep_cached(name, {op: [[k.dispatch_key, k.symbol, k.boxed, k.address] for k in found]
                           for op, found in kernels.items()})
    return kernels


def load(torch_root: Path) -> Catalogue:
    """The catalogue of the torch package at ``torch_root`` (its ``torch/`` directory)."""
    schemas = read_schemas(torch_root.parent / SCHEMA_FILE)
    library = torch_root / KERNEL_LIBRARY
    if not library.is_file():
        raise NotFoundError(f"torch at {torch_root} has no {KERNEL_LIBRARY}")
    return Catalogue(torch_root, schemas, _cached_kernels(library, schemas))


def torch_root_of_interpreter(python: str) -> Path:
    """Where ``python`` would import torch from, found without importing it."""
    probe = ("import importlib.util as u; s = u.find_spec('torch'); "
             "print(next(iter(s.submodule_search_locations)) if s and s.submodule_search_locations else '')")
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise NotFoundError(f"cannot ask {python} where torch is: {err}") from err
    found = done.stdout.strip()
    if done.returncode != 0 or not found:
        raise NotFoundError(f"{python} cannot import torch: operator breakpoints need it")
    return Path(found)


def torch_root_of_process(pid: int) -> Path | None:
    """The torch package a running process has loaded, if any."""
    loaded = mapped_library(pid, f"/torch/{KERNEL_LIBRARY}")
    return loaded[0].parent.parent if loaded else None
