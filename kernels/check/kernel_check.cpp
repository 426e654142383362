// kernel_check: the Qt-free GPU check of the CUDA kernels (run by tests/gpu/check.sh). Prints one
// row per comparison with its error and tolerance; exits 1 when any fails, 77 without a GPU.
#include <cstdio>
#include <exception>

#include "cuda_checks.hpp"
#include "kernels.hpp"

int main() {
  if (tessera::kernels::cuda::device_count() == 0) {
    std::printf("no CUDA device: the CUDA kernel checks were not run\n");
    return 77;
  }
  try {
    const auto results = tessera::kernels::checks::run_cuda_kernel_checks();
    int failed = 0;
    std::printf("%-28s %-5s %-22s %12s %12s  %s\n", "kernel", "type", "shape", "max error", "tolerance", "result");
    for (const auto& r : results) {
      std::printf("%-28s %-5s %-22s %12.3e %12.3e  %s\n", r.kernel.c_str(), r.dtype.c_str(), r.shape.c_str(), r.max_error,
                  r.tolerance, r.passed() ? "ok" : "FAILED");
      failed += r.passed() ? 0 : 1;
    }
    std::printf("%zu passed, %d failed\n", results.size() - failed, failed);
    return failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
