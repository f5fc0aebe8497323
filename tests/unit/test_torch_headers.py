"""Return types and parameter names of at::native:: kernels from the *_native.h headers."""

from __future__ import annotations

from pathlib import Path

from mixdbg.pytorch import headers

RANDN = ("TORCH_API at::Tensor randn(at::IntArrayRef size, ::std::optional<at::ScalarType> dtype={}, "
         "::std::optional<at::Layout> layout={}, ::std::optional<at::Device> device={}, "
         "::std::optional<bool> pin_memory={});")
ADD_OUT = ("TORCH_API at::Tensor & add_Scalar_out(const at::Tensor & self, const at::Scalar & other, "
           "const at::Scalar & alpha, at::Tensor & out);")


def test_declarations_give_gdb_spelled_return_types_and_names() -> None:
    parsed = headers.parse_declaration(ADD_OUT)
    assert parsed is not None
    name, declaration = parsed
    assert name == "add_Scalar_out" and declaration.returns == "at::Tensor&"
    assert declaration.names == ("self", "other", "alpha", "out")
    assert headers.parse_declaration("struct TORCH_API structured_add : public x {") is None


def test_overloads_are_matched_by_demangled_parameter_types(tmp_path: Path) -> None:
    ops = tmp_path / "include" / "ATen" / "ops"
    ops.mkdir(parents=True)
    (ops / "randn_native.h").write_text(f"namespace at {{\n{RANDN}\n{RANDN.replace('at::IntArrayRef size, ', 'at::IntArrayRef size, ::std::optional<at::Generator> generator, ')}\n}}\n")
    index = headers.HeaderIndex(tmp_path)
    plain = ["c10::ArrayRef<long>", "std::optional<c10::ScalarType>", "std::optional<c10::Layout>",
             "std::optional<c10::Device>", "std::optional<bool>"]
    found = headers.lookup(index, "at::native::randn", plain)
    assert found is not None and found.names[0] == "size" and found.returns == "at::Tensor"
    generator = headers.lookup(index, "at::native::randn", [plain[0], "std::optional<at::Generator>", *plain[1:]])
    assert generator is not None and generator.names[1] == "generator"
    assert headers.lookup(index, "at::native::randn", plain[:2]) is None
    assert headers.lookup(index, "at::randn", plain) is None


def test_type_spellings_meet() -> None:
    assert headers.type_key("const at::Tensor &") == headers.type_key("at::Tensor const&")
    assert headers.type_key("at::IntArrayRef") == headers.type_key("c10::ArrayRef<long>")
    assert headers.type_key("::std::optional<c10::string_view>") == \
        headers.type_key("std::optional<std::basic_string_view<char, std::char_traits<char> > >")


def test_a_function_is_looked_up_in_its_own_header_then_everywhere(tmp_path: Path) -> None:
    ops = tmp_path / "include" / "ATen" / "ops"
    ops.mkdir(parents=True)
    (ops / "add_native.h").write_text(ADD_OUT + "\n")
    (ops / "zeta_native.h").write_text(ADD_OUT.replace("add_Scalar_out", "helper_of_zeta") + "\n")
    types = ["at::Tensor const&", "c10::Scalar const&", "c10::Scalar const&", "at::Tensor&"]
    index = headers.HeaderIndex(tmp_path)
    assert [d.names for d in index.candidates("add_Scalar_out")] == [("self", "other", "alpha", "out")]
    assert index.candidates("helper_of_zeta") == []
    found = headers.lookup(index, "at::native::helper_of_zeta", types)
    assert found is not None and found.returns == "at::Tensor&"
    assert headers.lookup(index, "at::native::missing", types) is None
