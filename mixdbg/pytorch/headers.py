"""Return types and parameter names of ``at::native::`` kernels, from the wheel's headers.

A demangled C++ name has neither: the return type decides whether a hidden result pointer
takes the first register, and the names make ``self``/``other`` out of ``#0``/``#1``. The
wheel ships ``torch/include/ATen/ops/*_native.h``, which declare every native kernel
(``TORCH_API at::Tensor add(const at::Tensor & self, const at::Scalar & other, ...);``).
Overloads are told apart by their parameter types, compared after both spellings (the
header's and gdb's demangled one) are reduced to one form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mixdbg.pytorch.arguments import split_parameters

_DECLARATION = re.compile(r"^TORCH_API (?P<returns>.+?) ?\b(?P<name>\w+)\((?P<params>.*)\);$")
_NAMESPACES = re.compile(r"\b(?:at|c10|std)::")
_ALIASES = {
    "IntArrayRef": "ArrayRef<long>", "SymIntArrayRef": "ArrayRef<SymInt>", "TensorList": "ArrayRef<Tensor>",
    "int64_t": "long", "OptionalIntArrayRef": "OptionalArrayRef<long>",
    "OptionalSymIntArrayRef": "OptionalArrayRef<SymInt>", "DimnameList": "ArrayRef<Dimname>",
}
_STRING_VIEW = "basic_string_view<char,char_traits<char>>"


@dataclass(frozen=True)
class Declaration:
    """One ``at::native::`` kernel as its header declares it."""

    returns: str  # as gdb would spell it: "at::Tensor", "at::Tensor&", "void"
    types: tuple[str, ...]  # parameter types, reduced by ``type_key``
    names: tuple[str, ...]


def type_key(cpp_type: str) -> str:
    """One spelling for a C++ parameter type, whether from a header or gdb's demangler:
    no namespaces, qualifiers, references or spaces; typedefs expanded."""
    text = _NAMESPACES.sub("", cpp_type.replace("const", "").replace("&", "").replace(" ", "").replace("::std::", "std::"))
    text = text.replace(_STRING_VIEW, "string_view")
    return _ALIASES.get(text, text)


def _gdb_spelling(returns: str) -> str:
    """``at::Tensor &`` -> ``at::Tensor&``, ``::std::vector<at::Tensor>`` -> ``std::vector<at::Tensor>``."""
    return returns.replace("::std::", "std::").replace(" &", "&").replace("const ", "").strip()


def parse_declaration(line: str) -> tuple[str, Declaration] | None:
    """``(name, Declaration)`` for a ``TORCH_API`` function line of a ``*_native.h``."""
    match = _DECLARATION.match(line.strip())
    if match is None:
        return None
    types, names = [], []
    for param in split_parameters(match.group("params")):
        declaration = param.split("=", 1)[0].strip()
        cpp_type, _, name = declaration.rpartition(" ")
        types.append(type_key(cpp_type))
        names.append(name)
    return match.group("name"), Declaration(_gdb_spelling(match.group("returns")), tuple(types), tuple(names))


class HeaderIndex:
    """The ``at::native::`` declarations of the installed torch, read as needed: a
    function's own header first (``ATen/ops/NAME_native.h``, or the header of a prefix of
    its name: ``add_Scalar_out`` is in ``add_native.h``), all 1,300 headers (0.1 s) only when
    none of those declares it with the types asked for."""

    def __init__(self, torch_root: Path) -> None:
        self._directory = torch_root / "include" / "ATen" / "ops"
        self._files: dict[Path, dict[str, list[Declaration]]] = {}

    def candidates(self, name: str) -> list[Declaration]:
        """The declarations of ``name`` in the headers named after it or a prefix of it."""
        parts = name.split("_")
        found: list[Declaration] = []
        for end in range(len(parts), 0, -1):
            header = self._directory / f"{'_'.join(parts[:end])}_native.h"
            if header.is_file():
                found += self._read(header).get(name, [])
        return found

    def everywhere(self, name: str) -> list[Declaration]:
        """The declarations of ``name`` in every header."""
        return [declaration for header in sorted(self._directory.glob("*_native.h"))
                for declaration in self._read(header).get(name, [])]

    def _read(self, header: Path) -> dict[str, list[Declaration]]:
        if header not in self._files:
            declared: dict[str, list[Declaration]] = {}
            try:
                text = header.read_text(encoding="utf-8")
            except OSError:
                text = ""
            for line in text.splitlines():
                parsed = parse_declaration(line)
                if parsed is not None:
                    declared.setdefault(parsed[0], []).append(parsed[1])
            self._files[header] = declared
        return self._files[header]


def lookup(index: HeaderIndex, qualified: str, params: list[str]) -> Declaration | None:
    """The declaration of ``at::native::NAME`` with these (demangled) parameter types."""
    prefix = "at::native::"
    if not qualified.startswith(prefix):
        return None
    name, wanted = qualified[len(prefix):], tuple(type_key(param) for param in params)
    found = [d for d in index.candidates(name) if d.types == wanted]
    if not found:
        found = [d for d in index.everywhere(name) if d.types == wanted]
    return found[0] if len(set(found)) == 1 else None
