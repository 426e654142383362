// A device's peak for MFU where no datasheet figure applies (an arbitrary CPU share, a GPU without a
// preset): measured once at start-up with a large GEMM on this rank's threads or GPU.
#pragma once

#include <c10/core/TensorOptions.h>

namespace tessera::runtime {

/// TFLOP/s of the best of a few n×n×n matrix products in `options`' dtype on its device, in the
/// fastest of the three operand layouts a linear layer multiplies in (x·Wᵀ forward, dy·W and dyᵀ·x
/// backward): on a CPU without bf16 instructions ATen's bf16 GEMM runs 20× slower in one layout than
/// in another, and a peak measured in the slow one put a bf16 model above 400 % MFU. n = 8192 on a
/// GPU; on the CPU it grows from 256 to 1024 while one product takes under 30 ms, so that a slow dtype
/// costs well under a second of start-up.
double measure_gemm_peak_tflops(const at::TensorOptions& options = {});

}  // namespace tessera::runtime
