"""Placing a native function's arguments from its demangled signature (x86-64 SysV)."""

from __future__ import annotations

from mixdbg.pytorch import arguments

FUNCTOR = ("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<"
           "c10::CompileTimeFunctionPointer<at::Tensor (at::Tensor const&, at::Tensor const&, c10::Scalar const&), "
           "&at::(anonymous namespace)::wrapper_CPU_add_Tensor>, at::Tensor, c10::guts::typelist::typelist<"
           "at::Tensor const&, at::Tensor const&, c10::Scalar const&> >, at::Tensor (at::Tensor const&, "
           "at::Tensor const&, c10::Scalar const&)>::call(c10::OperatorKernel*, c10::DispatchKeySet, "
           "at::Tensor const&, at::Tensor const&, c10::Scalar const&)")


def test_signature_of_a_functor_call() -> None:
    parsed = arguments.signature(FUNCTOR)
    assert parsed is not None
    name, params = parsed
    assert name.endswith(">::call")
    assert params == ["c10::OperatorKernel*", "c10::DispatchKeySet", "at::Tensor const&", "at::Tensor const&",
                      "c10::Scalar const&"]
    assert arguments.functor_return(FUNCTOR) == "at::Tensor"
    assert arguments.signature("no_parameters_here") is None


def test_template_commas_do_not_split_parameters() -> None:
    parsed = arguments.signature("f(std::tuple<long, long>, c10::ArrayRef<at::Tensor>, std::function<void (int, int)>)")
    assert parsed is not None and len(parsed[1]) == 3


def test_result_pointer_only_for_classes_returned_by_value() -> None:
    assert arguments.has_result_pointer("at::Tensor")
    assert arguments.has_result_pointer("std::tuple<at::Tensor, at::Tensor>")
    assert not arguments.has_result_pointer("at::Tensor&")
    assert not arguments.has_result_pointer("void")
    assert not arguments.has_result_pointer("bool")


def test_how_types_are_passed() -> None:
    def registers(cpp_type: str) -> tuple[int, int] | None:
        how = arguments.passing(cpp_type)
        return None if how is None else (how[0], how[1])

    assert registers("at::Tensor const&") == (1, 0)
    assert registers("at::Tensor") == (1, 0)  # invisible reference: a non-trivial class
    assert registers("c10::ArrayRef<long>") == (2, 0)  # data, length
    assert registers("std::optional<c10::ScalarType>") == (1, 0)
    assert registers("c10::OptionalArrayRef<long>") == (0, 3)  # 24 bytes, in memory
    assert registers("some::Unknown") is None


def test_small_optionals_read_value_then_engaged_byte() -> None:
    layout = {"dtypes": {"7": ["float64", 8]}}
    decode = arguments.passing("std::optional<c10::ScalarType>")
    assert decode is not None and decode[2] is not None
    assert decode[2]([0xDEAD0000_0107], lambda a, n: b"", layout) == {"value": "float64"}
    assert decode[2]([0x0007], lambda a, n: b"", layout) == {"value": None}
    device = arguments.passing("std::optional<c10::Device>")
    assert device is not None and device[2] is not None
    assert device[2]([0x01FF00], lambda a, n: b"", layout) == {"value": "cpu"}
    assert device[2]([0x010001], lambda a, n: b"", layout) == {"value": "cuda:0"}
