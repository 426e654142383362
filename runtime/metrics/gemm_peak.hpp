// A device's peak for MFU where no datasheet figure applies (an arbitrary CPU share, a GPU without a
// preset): measured once at start-up with a large GEMM on this rank's threads or GPU.
#pragma once

#include <c10/core/TensorOptions.h>

namespace tessera::runtime {

/// TFLOP/s of the best of a few n×n×n matrix products in `options`' dtype on its device (n = 1024 on
/// the CPU, 8192 on a GPU).
double measure_gemm_peak_tflops(const at::TensorOptions& options = {});

}  // namespace tessera::runtime
