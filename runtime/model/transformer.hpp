// Decoder-only transformer: `gpt` (LayerNorm, GELU, learned positions, tied embeddings, biases) and
// `llama` (RMSNorm, SwiGLU, RoPE, GQA, untied, no biases); each choice follows its own spec field. The math of one layer is written once;
// its linears are the tensor-parallel ones, which are plain linears when tp = 1. The model is built
// as the chunks (virtual pipeline stages) this rank holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/model/param_store.hpp"
#include "runtime/model/recompute.hpp"
#include "runtime/parallel/tensor_parallel.hpp"
#include "spec/run_spec.hpp"

namespace tessera::runtime {

struct LayerWeights {
  at::Tensor norm1_weight, norm1_bias, qkv_weight, qkv_bias, proj_weight, proj_bias;
  at::Tensor norm2_weight, norm2_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias;
};

/// One virtual pipeline stage: layers [first_layer, first_layer + layers.size()), plus the
/// embeddings on the first and the final norm and output layer on the last virtual stage.
struct ModelChunk {
  int64_t virtual_stage = 0;
  int64_t first_layer = 0;
  bool has_embedding = false, has_head = false;
  at::Tensor word_embedding, position_embedding;
  std::vector<LayerWeights> layers;
  at::Tensor final_norm_weight, final_norm_bias, output_weight;
};

class Transformer {
 public:
  /// Registers this rank's parameters (chunks c of stage `stage`: virtual stage c*pp + stage, with the
  /// layers RunSpec::chunk_layers gives it) in `store`.
  /// fused_kernels: norms, RoPE, the activation and the cross-entropy run Tessera's fused kernels
  /// (runtime/model/fused_ops.hpp) instead of the ATen ops.
  Transformer(const spec::RunSpec& spec, int64_t stage, TensorParallel tp, ParamStore& store, bool fused_kernels = false);
  Transformer(const Transformer&) = delete;  // the recomputed closures point into this object
  Transformer& operator=(const Transformer&) = delete;

  int64_t num_chunks() const { return static_cast<int64_t>(chunks_.size()); }
  const ModelChunk& chunk(int64_t c) const { return chunks_[c]; }

  /// Chunk c: tokens [s, b] (first virtual stage) or hidden [s/t under SP, b, h] → hidden.
  at::Tensor forward(int64_t c, const at::Tensor& input) const;
  /// Last virtual stage: final norm, vocab-parallel logits and the mean cross-entropy over tokens.
  at::Tensor loss(int64_t c, const at::Tensor& hidden, const at::Tensor& targets) const;

  /// The kernel scaled_dot_product_attention picks for this model's attention on `options`' device and
  /// dtype ("flash_attention", "efficient_attention", "cudnn_attention", or "math", which keeps every
  /// score), asked with one sample's shapes and strides.
  std::string attention_backend(const at::TensorOptions& options) const;

 private:
  at::Tensor norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) const;
  at::Tensor attention(const LayerWeights& w, const at::Tensor& x) const;
  at::Tensor mlp(const LayerWeights& w, const at::Tensor& x) const;
  at::Tensor layer(const LayerWeights& w, const at::Tensor& x) const;
  at::Tensor attention_core(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const;
  /// The QKV projection [s, b, (a+2g)d/t] as its q, k and v parts; a part as heads [b, n, s, d]; k or v
  /// repeated to the query heads (GQA).
  std::vector<at::Tensor> split_qkv(const at::Tensor& qkv) const;
  at::Tensor as_heads(const at::Tensor& t, int64_t s, int64_t b) const;
  at::Tensor repeat_groups(const at::Tensor& kv) const;
  void build_layer(LayerWeights& w, int64_t index, ParamStore& store);

  spec::ModelSpec model_;
  TensorParallel tp_;
  bool biases_, layernorm_, swiglu_, rope_;
  bool fused_ = false;
  int64_t heads_local_, groups_local_, head_dim_;
  at::Tensor rope_cos_, rope_sin_;  // [s, 1, 1, d] (llama)
  spec::Recompute recompute_;
  std::vector<ModelChunk> chunks_;
  RecomputedFn attention_core_fn_;
  std::vector<std::vector<RecomputedFn>> layer_fns_;  // [chunk][layer], for full recompute
};

}  // namespace tessera::runtime
