// Counter-based normal numbers for the weights' initialisation: Philox4x32-10 (Salmon et al. 2011,
// "Parallel Random Numbers: As Easy as 1, 2, 3", the generator of cuRAND and of PyTorch on CUDA) and
// Box-Muller. Number i of a stream is a function of (key, i) alone, so a rank draws just its shard of
// a weight, on all its threads, and still gets exactly the numbers the single-process run draws there.
#pragma once

#include <array>
#include <cstdint>

namespace tessera::runtime {

/// Philox4x32 with 10 rounds: the four 32-bit words of block `counter` of the stream `key`.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

/// Writes std · z for numbers [first, first + count) of the standard normal stream `key` to `out`.
/// Block b of Philox gives numbers 4b..4b+3: Box-Muller on its words (0, 1) and (2, 3), each as a
/// uniform of 24 bits (u1 in (0, 1], so |z| ≤ √(50 ln 2) < 5.9), with float polynomials for log, sin
/// and cos (errors 2e-7) that vectorise (tests/benchmarks/bench_param_init times it against LibTorch).
void normal_range(uint64_t key, int64_t first, int64_t count, float std, float* out);

}  // namespace tessera::runtime
