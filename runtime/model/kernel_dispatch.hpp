// How the runtime calls a kernel of kernels/kernels.hpp on a tensor: the CPU reference for CPU
// tensors, the CUDA kernel on the tensor's device and current stream for CUDA tensors (in builds with
// tessera_kernels_cuda), float or bf16 after the tensor's dtype. Shared by the fused autograd ops and
// the optimizer; internal to tessera_runtime (TESSERA_WITH_CUDA_KERNELS is its private definition).
#pragma once

#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <ATen/ATen.h>
#ifdef TESSERA_WITH_CUDA_KERNELS
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include "kernels.hpp"

namespace tessera::runtime::kernel_dispatch {

/// Where a kernel runs: the CPU reference, or the CUDA kernel on `stream` (with the tensor's device
/// made current for the launch).
struct Launch {
  bool cuda = false;
  void* stream = nullptr;
#ifdef TESSERA_WITH_CUDA_KERNELS
  std::optional<c10::cuda::CUDAGuard> guard;
#endif
};

#ifdef TESSERA_WITH_CUDA_KERNELS
/// The kernels' scratch (norm backward row sums, AdamW's table) from LibTorch's caching allocator, on
/// the launch's stream: served from its cache and counted in the peak the metrics report.
inline void use_torch_scratch_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    kernels::cuda::set_scratch_allocator(
        {[](size_t bytes, void* stream) {
           return c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(bytes, static_cast<cudaStream_t>(stream));
         },
         [](void* pointer, void*) { c10::cuda::CUDACachingAllocator::raw_delete(pointer); }});
  });
}
#endif

inline void launch_for(Launch& l, const at::Tensor& x, const char* op) {
  if (x.is_cpu()) return;
  if (x.is_cuda()) {
#ifdef TESSERA_WITH_CUDA_KERNELS
    use_torch_scratch_allocator();
    l.cuda = true;
    l.guard.emplace(x.device());
    l.stream = at::cuda::getCurrentCUDAStream(x.device().index()).stream();
    return;
#else
    throw std::runtime_error(std::string(op) +
                             ": the tensor is on CUDA but this build has no CUDA kernels (tessera_kernels_cuda was "
                             "not built: no nvcc); use the ATen ops (--kernels aten)");
#endif
  }
  throw std::invalid_argument(std::string(op) + ": tensors on " + x.device().str() + " are not supported (CPU or CUDA)");
}

// kernels::cpu::NAME(args...) or kernels::cuda::NAME(args..., stream).
#ifdef TESSERA_WITH_CUDA_KERNELS
#define TESSERA_RUN(launch, name, ...) \
  ((launch).cuda ? kernels::cuda::name(__VA_ARGS__, (launch).stream) : kernels::cpu::name(__VA_ARGS__))
#else
#define TESSERA_RUN(launch, name, ...) kernels::cpu::name(__VA_ARGS__)
#endif

/// Calls f(T{}) with T = float or kernels::bf16 after x's dtype; anything else is refused.
template <typename F>
void with_dtype(const at::Tensor& x, const char* op, F&& f) {
  if (x.scalar_type() == at::kFloat) {
    f(float{});
  } else if (x.scalar_type() == at::kBFloat16) {
    f(kernels::bf16{});
  } else {
    throw std::invalid_argument(std::string(op) + ": unsupported dtype " + std::string(c10::toString(x.scalar_type())) +
                                " (the fused kernels take float or bfloat16)");
  }
}

template <typename T>
T* ptr(const at::Tensor& t) {
  if constexpr (std::is_same_v<T, float>) {
    return t.data_ptr<float>();
  } else {
    static_assert(sizeof(kernels::bf16) == sizeof(at::BFloat16));
    return reinterpret_cast<kernels::bf16*>(t.data_ptr<at::BFloat16>());
  }
}
inline float* f32(const at::Tensor& t) { return t.data_ptr<float>(); }
inline int64_t* i64(const at::Tensor& t) { return t.data_ptr<int64_t>(); }

}  // namespace tessera::runtime::kernel_dispatch
