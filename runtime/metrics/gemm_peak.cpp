// GEMM peak measurement.
#include "runtime/metrics/gemm_peak.hpp"

#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>
#include <torch/cuda.h>

namespace tessera::runtime {

namespace {

// c = a·bᵀ, aᵀ·b or a·b: the products of a linear layer's forward and backward passes.
enum class Operands { a_bt, at_b, a_b };

void multiply(at::Tensor& c, const at::Tensor& a, const at::Tensor& b, Operands operands) {
  switch (operands) {
    case Operands::a_bt: at::mm_out(c, a, b.t()); break;
    case Operands::at_b: at::mm_out(c, a.t(), b); break;
    case Operands::a_b: at::mm_out(c, a, b); break;
  }
}

}  // namespace

double measure_gemm_peak_tflops(const at::TensorOptions& options) {
  const bool gpu = options.device().is_cuda();
  const int64_t largest_n = gpu ? 8192 : 1024;
  // On the CPU n doubles while one product at the next size would stay under this (8× the time).
  constexpr double kGrowWhileUnderS = 0.03;
  auto sync = [&] {
    if (gpu) torch::cuda::synchronize(options.device().index());
  };
  auto seconds_of = [&](int64_t n, Operands operands, int repeats) {
    const at::Tensor a = at::randn({n, n}, options), b = at::randn({n, n}, options);
    at::Tensor c = at::empty({n, n}, options);
    multiply(c, a, b, operands);  // warm-up
    sync();
    double best_s = 1e30;
    for (int i = 0; i < repeats; ++i) {
      const auto start = std::chrono::steady_clock::now();
      multiply(c, a, b, operands);
      sync();
      best_s = std::min(best_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best_s;
  };
  // The fastest layout at the smallest size, then that layout at the size the time allows.
  int64_t n = gpu ? largest_n : 256;
  Operands fastest = Operands::a_bt;
  double fastest_s = 1e30;
  for (const Operands operands : {Operands::a_bt, Operands::at_b, Operands::a_b}) {
    const double s = seconds_of(n, operands, 1);
    if (s < fastest_s) fastest_s = s, fastest = operands;
  }
  while (n < largest_n && fastest_s * 8 < kGrowWhileUnderS) fastest_s = seconds_of(n *= 2, fastest, 1);
  const double best_s = seconds_of(n, fastest, 3);
  return 2.0 * static_cast<double>(n) * n * n / best_s / 1e12;
}

}  // namespace tessera::runtime
