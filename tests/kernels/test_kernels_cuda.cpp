// CUDA kernels against their CPU references (kernels/check/cuda_checks.cpp). Built twice: test_kernels_cuda on
// the GPU (without one the program prints why and exits 77, which CTest reports as "not run"), and
// test_kernels_cuda_emulated on the kernels' own source run by the CPU emulator (kernels/emu), everywhere.
#include <QtTest/QtTest>

#include <cstdio>

#include "cuda_checks.hpp"
#include "kernels.hpp"

class TestKernelsCuda : public QObject {
  Q_OBJECT
 private slots:
  void everyKernelMatchesItsCpuReference() {
    const auto results = tessera::kernels::checks::run_cuda_kernel_checks();
    QVERIFY(results.size() > 40);
    for (const auto& r : results) {
      const std::string what = r.kernel + " " + r.dtype + " " + r.shape + ": error " + std::to_string(r.max_error) +
                               " > tolerance " + std::to_string(r.tolerance);
      QVERIFY2(r.passed(), what.c_str());
    }
  }
};

int main(int argc, char** argv) {
  if (tessera::kernels::cuda::device_count() == 0) {
    std::printf("no CUDA device: the CUDA kernel tests were not run\n");
    return 77;
  }
  TestKernelsCuda tests;
  return QTest::qExec(&tests, argc, argv);
}
#include "test_kernels_cuda.moc"
