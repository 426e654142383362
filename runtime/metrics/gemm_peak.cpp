// GEMM peak measurement.
#include "runtime/metrics/gemm_peak.hpp"

#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>
#include <torch/cuda.h>

namespace tessera::runtime {

double measure_gemm_peak_tflops(const at::TensorOptions& options) {
  const bool gpu = options.device().is_cuda();
  const int64_t n = gpu ? 8192 : 1024;
  const at::Tensor a = at::randn({n, n}, options), b = at::randn({n, n}, options);
  at::Tensor c = at::mm(a, b);  // warm-up
  auto sync = [&] {
    if (gpu) torch::cuda::synchronize(options.device().index());
  };
  sync();
  double best_s = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    at::mm_out(c, a, b);
    sync();
    best_s = std::min(best_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * static_cast<double>(n) * n * n / best_s / 1e12;
}

}  // namespace tessera::runtime
