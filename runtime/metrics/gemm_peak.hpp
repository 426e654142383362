// The CPU's peak for MFU: measured once at start-up with an fp32 GEMM on this rank's threads (there
// is no datasheet figure for an arbitrary CPU share).
#pragma once

namespace tessera::runtime {

/// TFLOP/s of the best of a few 1024×1024×1024 fp32 matrix products.
double measure_gemm_peak_tflops();

}  // namespace tessera::runtime
