// FLOPs of a training iteration: model FLOPs (forward + backward = 3 x 2 x MACs) and hardware FLOPs
// (adding the recomputed forward). Attention scores counted full or causal (halved), as asked.
#pragma once

#include <cstdint>

#include "spec/run_spec.hpp"

namespace tessera::planner {

/// Multiply-accumulates of one sample's forward pass, by part (each layer over the tokens it sees:
/// a t5 decoder layer over model.decoder_seq_length, every other over model.seq_length).
struct SampleMacs {
  double projections = 0;     ///< QKV and output projections (and t5 cross-attention) over all layers
  double attention_core = 0;  ///< QK^T and AV over all layers (already halved when causal)
  double mlp = 0;             ///< dense MLPs or the routed experts (top-k) plus routers
  double logits = 0;          ///< output layer (and bert's MLM transform)
  double layers() const { return projections + attention_core + mlp; }
  double total() const { return layers() + logits; }
};

/// Forward MACs of one layer (index into the model's layers) over one sample, by part.
SampleMacs layer_sample_macs(const spec::ModelSpec& model, int64_t layer, bool causal);
SampleMacs model_sample_macs(const spec::ModelSpec& model, bool causal);

struct IterationFlops {
  double model_per_iteration = 0;     ///< 6 * MACs of a sample * global batch
  double hardware_per_iteration = 0;  ///< model FLOPs plus the recomputed forward
  int64_t tokens_per_iteration = 0;   ///< global_batch_size * seq_length (a t5's encoder tokens)
  bool causal = false;                ///< whether any attention scores were halved (never for BERT)
};

/// causal=true halves the attention-score FLOPs of causal (decoder) self-attention.
IterationFlops iteration_flops(const spec::RunSpec& spec, bool causal);

}  // namespace tessera::planner
