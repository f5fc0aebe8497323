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

// myops::many: twenty tensor locals (benchmarks/bench_torch_values.py looks at them all).
at::Tensor many_cpu(const at::Tensor& x) {
  at::Tensor t0 = x + 0, t1 = x + 1, t2 = x + 2, t3 = x + 3, t4 = x + 4, t5 = x + 5, t6 = x + 6;
  at::Tensor t7 = x + 7, t8 = x + 8, t9 = x + 9, t10 = x + 10, t11 = x + 11, t12 = x + 12;
  at::Tensor t13 = x + 13, t14 = x + 14, t15 = x + 15, t16 = x + 16, t17 = x + 17, t18 = x + 18;
  at::Tensor t19 = x + 19;
  return t0 + t19;  /* @many */
}

TORCH_LIBRARY(myops, m) {
  m.def("scaled_add(Tensor a, Tensor b, float alpha) -> Tensor");
  m.def("kinds(Tensor x, Tensor? maybe, Scalar scale, int[] dims, ScalarType? dtype) -> Tensor");
  m.def("many(Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(myops, CPU, m) {
  m.impl("scaled_add", &scaled_add_cpu);
  m.impl("kinds", &kinds_cpu);
  m.impl("many", &many_cpu);
}

TORCH_LIBRARY(vision_like, m) {
  m.def("shrink(Tensor x, float scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(vision_like, CPU, m) {
  m.impl("shrink", TORCH_FN(shrink_cpu));
}
