"""The operator catalogue: schemas from native_functions.yaml, kernels from symbol names."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from mixdbg.breakpoints import parse_spec
from mixdbg.errors import UsageError
from mixdbg.pytorch import catalogue, ops

ADD_TENSOR = "- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
ADD_OUT = "- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"
RANDN = ("- func: randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None,"
         " bool? pin_memory=None) -> Tensor")
SUM = "- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"


def _functor(wrapper: str, boxed: bool = False, nested: bool = False) -> bytes:
    kind = b"31make_boxed_from_unboxed_functor" if boxed else b"28wrap_kernel_functor_unboxed_"
    namespace = b"S5_12_GLOBAL__N_1" if nested else b"NS5_12_GLOBAL__N_1"
    name = wrapper.encode()
    return (b"_ZN3c104impl" + kind + b"INS0_6detail24WrapFunctionIntoFunctor_INS_26CompileTimeFunctionPointer"
            b"IFN2at6TensorERKS6_S8_EXadL_Z" + namespace + str(len(name)).encode() + name + b"ES8_S8_EEEE"
            b"E4callEPNS_14OperatorKernelENS_14DispatchKeySetES8_S8_")


def test_schema_lines_give_names_types_and_returns() -> None:
    schema = catalogue.parse_schema_line(ADD_OUT)
    assert schema is not None
    assert schema.full_name == "aten::add.out"
    assert [(a.type, a.name) for a in schema.arguments] == [
        ("Tensor", "self"), ("Tensor", "other"), ("Scalar", "alpha"), ("Tensor(a!)", "out")]
    assert schema.returns == "Tensor(a!)" and schema.is_out
    summed = catalogue.parse_schema_line(SUM)
    assert summed is not None and [a.name for a in summed.arguments] == ["self", "dim", "keepdim", "dtype"]
    randn = catalogue.parse_schema_line(RANDN)
    assert randn is not None and randn.full_name == "aten::randn" and not randn.is_out


def test_kernels_are_matched_to_overloads_by_both_codegen_namings() -> None:
    schemas = {s.full_name: s for s in map(catalogue.parse_schema_line, [ADD_TENSOR, ADD_OUT, RANDN]) if s}
    table = b"\0".join([
        b"unrelated", _functor("wrapper_CPU_add_Tensor"), _functor("wrapper_CPU_add_Tensor", boxed=True),
        _functor("wrapper_CPU_add_out_out"), _functor("wrapper_SparseCPU_out_add_out", nested=True),
        _functor("wrapper_CompositeExplicitAutograd__randn", nested=True),
        _functor("wrapper_CPU_add_Tensor") + b".cold", _functor("wrapper_CPU_nothing_known"), b""])
    functors = list(catalogue.scan_functor_symbols(table))
    assert all(table[f.name_offset:].startswith(f.symbol.encode()) for f in functors)
    addresses = {f.name_offset: 0x1000 + 16 * i for i, f in enumerate(functors)}
    kernels = catalogue.match_kernels(schemas, functors, addresses)
    assert [(k.dispatch_key, k.boxed) for k in kernels["aten::add.Tensor"]] == [("CPU", False), ("CPU", True)]
    assert [k.address for k in kernels["aten::add.Tensor"]] == [0x1000, 0x1010]
    assert [k.dispatch_key for k in kernels["aten::add.out"]] == ["CPU", "SparseCPU"]
    assert [k.dispatch_key for k in kernels["aten::randn"]] == ["CompositeExplicitAutograd"]
    assert all(k.symbol.startswith("_ZN3c104impl") and k.symbol.endswith("S8_S8_")
               for found in kernels.values() for k in found)


def test_symbol_values_of_defined_symbols_only() -> None:
    entry = struct.Struct("<IBBHQQ")
    symtab = b"".join([entry.pack(10, 2, 0, 14, 0x2000, 32), entry.pack(20, 2, 0, 0, 0, 0),  # undefined
                       entry.pack(30, 2, 0, 14, 0x3000, 8)])
    assert catalogue.symbol_values(symtab, [10, 20]) == {10: 0x2000}


def _catalogue() -> catalogue.Catalogue:
    schemas = {s.full_name: s for s in map(catalogue.parse_schema_line, [ADD_TENSOR, ADD_OUT, RANDN]) if s}
    kernel = catalogue.Kernel("aten::add.Tensor", "CPU", "_Zadd", False, 0x10)
    autograd = catalogue.Kernel("aten::add.Tensor", "AutogradCPU", "_Zgrad", False, 0x20)
    out = catalogue.Kernel("aten::add.out", "CPU", "_Zout", False, 0x30)
    return catalogue.Catalogue(Path("/torch"), schemas, {"aten::add.Tensor": (kernel, autograd),
                                                         "aten::add.out": (out,)})


def test_op_specs_resolve_to_every_overload_or_the_one_named() -> None:
    found = _catalogue()
    assert [k.symbol for k in ops.resolve(found, "aten::add")] == ["_Zadd", "_Zout"]
    assert [k.symbol for k in ops.resolve(found, "aten::add.out")] == ["_Zout"]


def test_unknown_operators_fail_with_close_matches() -> None:
    with pytest.raises(UsageError, match=r"no such operator; did you mean: op:aten::add") as raised:
        ops.resolve(_catalogue(), "aten::addd")
    assert raised.value.exit_code == 64
    with pytest.raises(UsageError, match="no kernel"):
        ops.resolve(_catalogue(), "aten::randn")


def test_op_spec_syntax() -> None:
    spec = parse_spec("op:aten::add.Tensor if $rdi != 0")
    assert spec.is_op and spec.location == "aten::add.Tensor" and spec.condition == "$rdi != 0"
    for bad in ("op:add", "op:aten::", "op:aten::add.Tensor.x"):
        with pytest.raises(UsageError, match="NAMESPACE::NAME"):
            parse_spec(bad)


def test_native_function_specs_that_are_operators_get_a_hint(tmp_path: Path) -> None:
    torch_root = tmp_path / "site-packages" / "torch"
    schema_file = torch_root.parent / catalogue.SCHEMA_FILE
    schema_file.parent.mkdir(parents=True)
    schema_file.write_text(f"{ADD_TENSOR}\n{ADD_OUT}\n{RANDN}\n  dispatch:\n    CPU: add_kernel\n")
    hint = ops.native_hint("at::native::add", lambda name: catalogue.declares_operator(torch_root, name))
    assert hint is not None and "op:aten::add" in hint and "\n" not in hint
    for function in ("at::native::add_kernel", "at::native::ad", "at::add"):
        assert ops.native_hint(function, lambda name: catalogue.declares_operator(torch_root, name)) is None
    assert not catalogue.declares_operator(tmp_path / "no-torch", "add")
