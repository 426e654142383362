// FLOPs of a training iteration: model FLOPs (forward + backward = 3 x 2 x MACs) and hardware FLOPs
// (adding the recomputed forward). Attention scores counted full or causal (halved), as asked.
#pragma once

#include <cstdint>

#include "spec/run_spec.hpp"

namespace tessera::planner {

/// Multiply-accumulates of one forward pass per token, by part.
struct TokenMacs {
  double projections = 0;     ///< QKV and output projections (and t5 cross-attention) over all layers
  double attention_core = 0;  ///< QK^T and AV over all layers (already halved when causal)
  double mlp = 0;             ///< dense MLPs or the routed experts (top-k) plus routers
  double logits = 0;          ///< output layer (and bert's MLM transform)
  double layers() const { return projections + attention_core + mlp; }
  double total() const { return layers() + logits; }
};

/// Forward MACs per token of one layer (index into the model's layers), by part.
TokenMacs layer_token_macs(const spec::ModelSpec& model, int64_t layer, bool causal);
TokenMacs model_token_macs(const spec::ModelSpec& model, bool causal);

struct IterationFlops {
  double model_per_iteration = 0;     ///< 6 * MACs * tokens
  double hardware_per_iteration = 0;  ///< model FLOPs plus the recomputed forward
  int64_t tokens_per_iteration = 0;   ///< global_batch_size * seq_length
  bool causal = false;                ///< whether any attention scores were halved (never for BERT)
};

/// causal=true halves the attention-score FLOPs of causal (decoder) self-attention.
IterationFlops iteration_flops(const spec::RunSpec& spec, bool causal);

}  // namespace tessera::planner
