// Exact parameter counts of a model, per layer, per pipeline stage and per rank after TP/EP splits.
#pragma once

#include <cstdint>
#include <vector>

#include "spec/run_spec.hpp"

namespace tessera::planner {

/// Parameters of one transformer layer, by how a layout splits them.
struct LayerParams {
  int64_t tp_sharded = 0;        ///< column/row-parallel weights and column-parallel biases: split by tp
  int64_t replicated = 0;        ///< norms, row-parallel biases, router, position bias: on every tp rank
  int64_t expert_sharded = 0;    ///< expert weights: split by ep, then by tp
  int64_t expert_ep_only = 0;    ///< expert row-parallel biases: split by ep only
  int64_t total() const { return tp_sharded + replicated + expert_sharded + expert_ep_only; }
  int64_t dense_on_rank(int64_t tp) const { return tp_sharded / tp + replicated; }
  int64_t expert_on_rank(int64_t tp, int64_t ep) const { return expert_sharded / (ep * tp) + expert_ep_only / ep; }
};

/// Every parameter of a model (vocabulary unpadded, so totals match the published counts).
struct ModelParams {
  int64_t word_embedding = 0;       ///< V * h (vocab-parallel)
  int64_t embedding_replicated = 0; ///< learned positions, token types, embedding norm
  std::vector<LayerParams> layers;  ///< in model order (t5: encoder layers, then decoder layers)
  int64_t final_norm = 0;
  int64_t output_layer = 0;         ///< untied output projection V * h; 0 when tied
  int64_t head_replicated = 0;      ///< bert: pooler, MLM transform and norm, NSP head
  int64_t head_vocab_bias = 0;      ///< bert: MLM output bias (vocab-parallel)
  int64_t total = 0;
  /// What one token passes through: total less the experts it is not routed to (top_k of
  /// num_experts a layer; Mixtral 8x7B: 12.9 B of 46.7 B). total for a dense model.
  int64_t active_per_token = 0;
  int64_t embedding_total() const { return word_embedding + embedding_replicated; }
};

ModelParams count_parameters(const spec::ModelSpec& model);

/// Vocabulary padded to a multiple of `multiple` (Megatron pads to 128 * tp).
int64_t padded_vocab(int64_t vocab_size, int64_t multiple);

/// Parameters of one pipeline stage: unique totals and what one rank of it holds.
struct StageParams {
  int64_t total = 0;           ///< unique parameters of the stage (no copies, unpadded)
  int64_t dense_on_rank = 0;   ///< on one rank after tp (and vocab padding), incl. a tied embedding copy
  int64_t expert_on_rank = 0;  ///< on one rank after ep and tp
  int64_t on_rank() const { return dense_on_rank + expert_on_rank; }
  std::vector<int64_t> layers; ///< model layer indices held by this stage (all its chunks, in order)
  /// dense_on_rank and expert_on_rank by chunk (virtual stage chunk * pp + stage): the embedding in
  /// stage 0's first chunk, the final norm and output layer in the last stage's last chunk.
  std::vector<int64_t> chunk_dense_on_rank, chunk_expert_on_rank;
};

/// Per-stage parameters for the spec's layout; vocab_multiple is the padding multiple used for
/// the per-rank vocabulary shard (tp for Tessera's runtime, 128 * tp for Megatron).
std::vector<StageParams> stage_parameters(const spec::RunSpec& spec, const ModelParams& params, int64_t vocab_multiple);

}  // namespace tessera::planner
