// A user's custom PyTorch operators, as PyTorch's extension tutorial writes them, built by
// the tests with torch.utils.cpp_extension.load(..., extra_cflags=["-O0", "-g"]).
#include <ATen/ATen.h>
#include <torch/library.h>

// myops::scaled_add: a CPU kernel registered by its function pointer (the tutorial's way).
at::Tensor scaled_add_cpu(const at::Tensor& a, const at::Tensor& b, double alpha) {
  at::Tensor out = at::empty_like(a);  /* @first */
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t i = 0; i < a.numel(); i++) {
    po[i] = pa[i] + alpha * pb[i];  /* @loop */
  }
  return out;
}

// vision_like::shrink: a second namespace, its kernel registered with TORCH_FN (torchvision's way).
at::Tensor shrink_cpu(const at::Tensor& x, double scale) {
  return x * scale;  /* @shrink */
}

// myops::kinds: one value of each c10 type gdb's tensor printers show.
at::Tensor kinds_cpu(const at::Tensor& x, const std::optional<at::Tensor>& maybe, const at::Scalar& scale,
                     at::IntArrayRef dims, std::optional<at::ScalarType> dtype) {
  std::vector<at::Tensor> list{x, x.t()};
  c10::SmallVector<int64_t, 5> small(dims.begin(), dims.end());
  c10::IValue boxed(x);
  c10::IValue number(3.5);
  c10::Device device = x.device();
  c10::SymInt symint(7);
  at::Tensor undefined;
  at::TensorList tensors(list);
  std::optional<at::Tensor> nothing;
  c10::TensorImpl* impl = x.unsafeGetTensorImpl();
  return x.to(dtype.value_or(x.scalar_type())) * scale;  /* @kinds */
}

TORCH_LIBRARY(myops, m) {
  m.def("scaled_add(Tensor a, Tensor b, float alpha) -> Tensor");
  m.def("kinds(Tensor x, Tensor? maybe, Scalar scale, int[] dims, ScalarType? dtype) -> Tensor");
}

TORCH_LIBRARY_IMPL(myops, CPU, m) {
  m.impl("scaled_add", &scaled_add_cpu);
  m.impl("kinds", &kinds_cpu);
}

TORCH_LIBRARY(vision_like, m) {
  m.def("shrink(Tensor x, float scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(vision_like, CPU, m) {
  m.impl("shrink", TORCH_FN(shrink_cpu));
}
