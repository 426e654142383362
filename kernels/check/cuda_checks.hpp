// Every CUDA kernel against its CPU reference on random odd shapes, fp32 and bf16, as a list of
// results: shared by the Qt test (test_kernels_cuda) and the Qt-free GPU check (kernel_check).
#pragma once

#include <string>
#include <vector>

namespace tessera::kernels::checks {

struct KernelCheck {
  std::string kernel;
  std::string dtype;
  std::string shape;
  double max_error = 0;  ///< largest |cuda - cpu| / max(1, |cpu|)
  double tolerance = 0;
  bool passed() const { return max_error <= tolerance; }
};

/// Runs all comparisons on the current CUDA device; throws std::runtime_error on a CUDA error.
std::vector<KernelCheck> run_cuda_kernel_checks();

}  // namespace tessera::kernels::checks
