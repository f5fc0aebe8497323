"""``op:NAMESPACE::NAME[.OVERLOAD]`` breakpoint specs: which functions to break on.

One call of an operator runs exactly one kernel for the tensors' backend (the CPU kernel
for CPU tensors; the composite implementation when the operator has no backend kernel),
entered through the dispatcher's functor ``call``. Breaking on every kernel functor of
the operator's overloads therefore stops once per call, before any work is done. Autograd
kernels are left out: they run before the backend kernel of the same call.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from mixdbg.errors import UsageError
from mixdbg.pytorch.catalogue import Catalogue, Kernel

_OP_SPEC = re.compile(r"^(?P<namespace>\w+)::(?P<name>\w+)(?:\.(?P<overload>\w+))?$")
#: Dispatch keys whose kernels are not "the" computation of a call (they pass it on).
SKIPPED_KEY_PREFIXES = ("Autograd",)


@dataclass(frozen=True)
class OpSpec:
    """An operator named by the user: ``aten::add`` or ``aten::add.Tensor``."""

    namespace: str
    name: str
    overload: str | None

    @property
    def text(self) -> str:
        """As the user wrote it, normalised."""
        return f"{self.namespace}::{self.name}" + (f".{self.overload}" if self.overload is not None else "")


def parse_op(text: str) -> OpSpec:
    """Parse ``NAMESPACE::NAME`` or ``NAMESPACE::NAME.OVERLOAD`` (``.default``: no overload name)."""
    match = _OP_SPEC.match(text.strip())
    if match is None:
        raise UsageError(f"operator spec must be NAMESPACE::NAME[.OVERLOAD], e.g. op:aten::add.Tensor: {text!r}")
    overload = match.group("overload")
    return OpSpec(match.group("namespace"), match.group("name"), "" if overload == "default" else overload)


def is_aten(text: str) -> bool:
    """Whether operator spec ``text`` names an aten operator (known from the installed
    torch's files before it runs); others register at run time (``customops``)."""
    return parse_op(text).namespace == "aten"


def _close_matches(catalogue: Catalogue, wanted: str) -> str:
    names = sorted(set(catalogue.operator_names()) | set(catalogue.schemas))
    close = difflib.get_close_matches(wanted, names, n=3, cutoff=0.6)
    return f"; did you mean: {', '.join('op:' + name for name in close)}?" if close else ""


def resolve(catalogue: Catalogue, text: str) -> list[Kernel]:
    """The kernel functors to break on for operator spec ``text``; a ``UsageError`` with
    close matches when the installed torch has no such operator."""
    spec = parse_op(text)
    overloads = [s for s in catalogue.overloads(spec.name) if spec.overload in (None, s.overload)]
    if not overloads:
        raise UsageError(f"op:{spec.text}: the torch at {catalogue.torch_root} has no such operator"
                         + _close_matches(catalogue, spec.text))
    kernels = [kernel for schema in overloads for kernel in catalogue.kernels.get(schema.full_name, ())
               if not kernel.dispatch_key.startswith(SKIPPED_KEY_PREFIXES)]
    if not kernels:
        names = ", ".join(schema.full_name for schema in overloads)
        raise UsageError(f"op:{spec.text}: no kernel of {names} was found in {catalogue.torch_root}")
    return kernels


def native_hint(function: str, is_operator: Callable[[str], bool]) -> str | None:
    """For a function spec ``at::native::NAME`` where NAME is an operator (``is_operator``
    tells): a one-line hint that it is one C++ implementation and ``op:aten::NAME`` stops
    in every call."""
    prefix = "at::native::"
    if not function.startswith(prefix):
        return None
    name = function[len(prefix):]
    if not is_operator(name):
        return None
    return (f"{function} is one C++ implementation of aten::{name} (maybe not the one that runs); "
            f"op:aten::{name} stops in every call of the operator")
