// GEMM peak measurement.
#include "runtime/metrics/gemm_peak.hpp"

#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>

namespace tessera::runtime {

double measure_gemm_peak_tflops() {
  constexpr int64_t n = 1024;
  const at::Tensor a = at::randn({n, n}), b = at::randn({n, n});
  at::Tensor c = at::mm(a, b);  // warm-up
  double best_s = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    at::mm_out(c, a, b);
    best_s = std::min(best_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * n * n * n / best_s / 1e12;
}

}  // namespace tessera::runtime
