// Per-GPU memory per pipeline stage: weights, gradients, optimizer state, activations, buffers.
// Two profiles: `tessera` (the full breakdown of Tessera's runtime; for the dense gpt/llama that
// tessera-train runs, its own stored tensors, checked by test_memory_agreement) and `megatron`
// (reproduces Megatron-LM's theoretical_memory_usage.py). Formulas and sources: docs/formulas.md §2.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/params.hpp"
#include "planner/schedule.hpp"
#include "spec/run_spec.hpp"

namespace tessera::planner {

enum class MemoryProfile { tessera, megatron };
std::string_view memory_profile_name(MemoryProfile profile);
/// Throws std::invalid_argument naming the valid profiles.
MemoryProfile memory_profile_from_string(std::string_view name);

/// The most bytes one memory term is counted as: 1 EiB. Sizes beyond any machine (2^24 tokens x a
/// micro-batch of 2^20) would overflow int64; a term at the cap is no size, and is shown as "over 1 EiB".
inline constexpr int64_t kMaxMemoryTermBytes = int64_t{1} << 60;

struct StageMemory {
  int64_t stage = 0;
  int64_t weights_bytes = 0;
  int64_t gradients_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t activations_bytes = 0;
  int64_t buffers_bytes = 0;
  int64_t total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + buffers_bytes;
  }
};

struct MemoryEstimate {
  MemoryProfile profile = MemoryProfile::tessera;
  std::vector<StageMemory> stages;
  int64_t peak_bytes = 0;
  int64_t capacity_bytes = 0;
  bool fits = true;
};

/// Whether the tessera profile models tessera-train's fused kernels for `spec` (planned on a GPU,
/// where they are its default) rather than ATen's ops (`cluster.gpu: cpu`, its CPU default).
bool plans_fused_kernels(const spec::RunSpec& spec);

/// Whether the tessera profile counts what tessera-train's autograd keeps for this model (dense gpt and
/// llama: docs/formulas.md §2, "Runtime terms") rather than the paper's activation terms.
bool has_runtime_terms(const spec::ModelSpec& m);

/// Activation bytes of one transformer layer for one microbatch on one rank (Korthikanti et al.
/// 2022, generalised to GQA, SwiGLU, MoE and any FFN width), under the spec's TP/SP/CP, recompute
/// and flash-attention settings. With full recompute: the stored layer input only.
double layer_activation_bytes(const spec::RunSpec& spec, int64_t layer);
/// The same without any recompute (the working set while one layer is recomputed).
double layer_activation_bytes_no_recompute(const spec::RunSpec& spec, int64_t layer);

/// What a profile leaves out of this spec, one sentence each ("the megatron profile … (the tessera
/// profile …)"): `plan` prints them under the memory table and in its JSON, the memory view under
/// its legend. Empty where the profile counts the spec as it is.
std::vector<std::string> memory_profile_notes(const spec::RunSpec& spec, MemoryProfile profile);

/// Memory per stage; `schedule` gives the microbatches in flight on each stage.
MemoryEstimate estimate_memory(const spec::RunSpec& spec, const ModelParams& params, const ScheduleTable& schedule,
                               MemoryProfile profile);

}  // namespace tessera::planner
