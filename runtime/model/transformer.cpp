// The transformer's parameters (initialised per full tensor, then sharded) and its forward pass.
#include "runtime/model/transformer.hpp"

#include <cmath>

#include <ATen/SDPBackend.h>
#include <torch/torch.h>

#include "runtime/model/fused_ops.hpp"

namespace tessera::runtime {

namespace {

constexpr double kInitStd = 0.02;
constexpr double kNormEps = 1e-5;
constexpr double kRopeTheta = 10000.0;

at::Tensor rotate_half(const at::Tensor& x) {
  const auto halves = x.chunk(2, -1);
  return at::cat({-halves[1], halves[0]}, -1);
}

}  // namespace

Transformer::Transformer(const spec::RunSpec& spec, int64_t stage, TensorParallel tp, ParamStore& store, bool fused_kernels)
    : model_(spec.model), tp_(tp), biases_(spec.model.arch == spec::Arch::gpt),
      layernorm_(spec.model.normalization == spec::Normalization::layernorm),
      swiglu_(spec.model.activation == spec::Activation::swiglu),
      rope_(spec.model.position_embedding == spec::PositionEmbedding::rope), fused_(fused_kernels),
      recompute_(spec.training.recompute) {
  const auto& model = spec.model;
  const int64_t t = tp_.size(), h = model.hidden_size;
  heads_local_ = model.num_attention_heads / t;
  groups_local_ = model.num_query_groups / t;
  head_dim_ = model.head_dim();
  if (rope_) {
    const auto inv_freq =
        at::pow(kRopeTheta, at::arange(0, head_dim_, 2, at::kDouble) / static_cast<double>(head_dim_)).reciprocal();
    const auto angles = at::outer(at::arange(model.seq_length, at::kDouble), inv_freq);
    const auto both = at::cat({angles, angles}, -1);  // [s, d]
    // In the model's dtype (as Megatron-Core casts its cos/sin), so bf16 queries stay bf16.
    rope_cos_ = both.cos().to(store.model_options());
    rope_sin_ = both.sin().to(store.model_options());
  }

  const bool sp = tp_.sequence_parallel;
  auto replicated = [&](const std::string& name, at::Tensor value, bool in_sequence_region) {
    return store.add({name, std::move(value), true, sp && in_sequence_region, false, false});
  };
  auto sharded = [&](const std::string& name, at::IntArrayRef shape, double std, int64_t dim) {
    return store.add({name, store.normal(name, shape, std, Shard::along(dim)), false, false, true, false});
  };

  const int64_t pp = spec.parallel.pp, vpp = spec.parallel.vpp;
  const int64_t last_virtual = pp * vpp - 1;
  for (int64_t c = 0; c < vpp; ++c) {
    ModelChunk chunk;
    chunk.virtual_stage = c * pp + stage;
    const auto [first_layer, end_layer] = spec.chunk_layers(chunk.virtual_stage);
    chunk.first_layer = first_layer;
    const int64_t layers_per_chunk = end_layer - first_layer;
    chunk.has_embedding = chunk.virtual_stage == 0;
    chunk.has_head = chunk.virtual_stage == last_virtual;
    if (chunk.has_embedding) {
      chunk.word_embedding = sharded("embedding.word.weight", {model.vocab_size, h}, kInitStd, 0);
      if (!rope_) {
        const std::string name = "embedding.position.weight";
        chunk.position_embedding = store.add(
            {name, store.normal(name, {model.seq_length, h}, kInitStd), true, false, false, false});
      }
    }
    chunk.layers.resize(layers_per_chunk);
    for (int64_t i = 0; i < layers_per_chunk; ++i) build_layer(chunk.layers[i], chunk.first_layer + i, store);
    if (chunk.has_head) {
      chunk.final_norm_weight = replicated("final_norm.weight", at::ones({h}), true);
      if (layernorm_) chunk.final_norm_bias = replicated("final_norm.bias", at::zeros({h}), true);
      if (!model.tie_embeddings) {
        chunk.output_weight = sharded("output.weight", {model.vocab_size, h}, kInitStd, 0);
      } else if (chunk.has_embedding) {
        chunk.output_weight = chunk.word_embedding;
      } else {
        // The last stage's copy of the word embedding: same initialisation; its gradient is summed
        // with the first stage's over the embedding group, so both copies stay equal.
        const std::string name = "embedding.word.weight";
        chunk.output_weight =
            store.add({name, store.normal(name, {model.vocab_size, h}, kInitStd, Shard::along(0)), false, false, true, true});
      }
    }
    chunks_.push_back(std::move(chunk));
  }
  attention_core_fn_ = [this](const std::vector<at::Tensor>& qkv) { return attention_core(qkv[0], qkv[1], qkv[2]); };
  layer_fns_.resize(chunks_.size());
  for (size_t c = 0; c < chunks_.size(); ++c)
    for (const auto& w : chunks_[c].layers)
      layer_fns_[c].push_back([this, &w](const std::vector<at::Tensor>& x) { return layer(w, x[0]); });
}

void Transformer::build_layer(LayerWeights& w, int64_t index, ParamStore& store) {
  const auto& m = model_;
  const int64_t h = m.hidden_size, q = m.num_attention_heads * head_dim_, kv = m.num_query_groups * head_dim_;
  const int64_t f = m.ffn_hidden_size;
  const std::string prefix = "layers." + std::to_string(index) + ".";
  const double out_std = kInitStd / std::sqrt(2.0 * static_cast<double>(m.num_layers));
  const bool sp = tp_.sequence_parallel;
  auto replicated = [&](const std::string& name, at::Tensor value) {
    return store.add({prefix + name, std::move(value), true, sp, false, false});
  };
  // Column-parallel weights fused from several full tensors: each is sharded by rows, then joined.
  auto fused_rows = [&](const std::string& name, const std::vector<std::pair<std::string, int64_t>>& parts) {
    std::vector<at::Tensor> shards;
    for (const auto& [part, rows] : parts)
      shards.push_back(store.normal(prefix + part, {rows, h}, kInitStd, Shard::along(0)));
    return store.add({prefix + name, at::cat(shards, 0), false, false, true, false});
  };
  auto column_bias = [&](const std::string& name, int64_t width) {
    return store.add({prefix + name, at::zeros({width / tp_.size()}), false, false, false, false});
  };
  auto row_weight = [&](const std::string& name, int64_t in_features) {
    return store.add({prefix + name,
                      store.normal(prefix + name, {h, in_features}, out_std, Shard::along(1)), false,
                      false, true, false});
  };

  w.norm1_weight = replicated("norm1.weight", at::ones({h}));
  w.qkv_weight = fused_rows("attention.qkv.weight",
                            {{"attention.q.weight", q}, {"attention.k.weight", kv}, {"attention.v.weight", kv}});
  w.proj_weight = row_weight("attention.proj.weight", q);
  w.norm2_weight = replicated("norm2.weight", at::ones({h}));
  if (layernorm_) {
    w.norm1_bias = replicated("norm1.bias", at::zeros({h}));
    w.norm2_bias = replicated("norm2.bias", at::zeros({h}));
  }
  if (swiglu_) {
    w.fc1_weight = fused_rows("mlp.gate_up.weight", {{"mlp.gate.weight", f}, {"mlp.up.weight", f}});
    w.fc2_weight = row_weight("mlp.down.weight", f);
  } else {
    w.fc1_weight = fused_rows("mlp.fc1.weight", {{"mlp.fc1.weight", f}});
    w.fc2_weight = row_weight("mlp.fc2.weight", f);
  }
  if (biases_) {
    // Zero biases: sharding the parts and joining them gives zeros of the local width.
    w.qkv_bias = column_bias("attention.qkv.bias", q + 2 * kv);
    w.proj_bias = replicated("attention.proj.bias", at::zeros({h}));
    w.fc1_bias = column_bias(swiglu_ ? "mlp.gate_up.bias" : "mlp.fc1.bias", swiglu_ ? 2 * f : f);
    w.fc2_bias = replicated("mlp.fc2.bias", at::zeros({h}));
  }
}

at::Tensor Transformer::norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) const {
  if (fused_) return layernorm_ ? fused_layer_norm(x, weight, bias, kNormEps) : fused_rms_norm(x, weight, kNormEps);
  if (layernorm_) return at::layer_norm(x, {model_.hidden_size}, weight, bias, kNormEps);
  return at::rms_norm(x, {model_.hidden_size}, weight, kNormEps);
}

at::Tensor Transformer::attention(const LayerWeights& w, const at::Tensor& x) const {
  const at::Tensor qkv = column_parallel_linear(x, w.qkv_weight, w.qkv_bias, tp_);  // [s, b, (a+2g)d/t]
  const int64_t s = qkv.size(0), b = qkv.size(1), d = head_dim_;
  const auto parts = split_qkv(qkv);
  at::Tensor q = as_heads(parts[0], s, b), k = as_heads(parts[1], s, b), v = as_heads(parts[2], s, b);
  if (rope_ && fused_) {
    // The kernel takes [tokens, heads, d]: q and k before the permute, token s*b + b' at position s.
    const at::Tensor positions = at::arange(s, qkv.options().dtype(at::kLong)).repeat_interleave(b);
    auto rotated = [&](const at::Tensor& t, int64_t n) {
      return as_heads(fused_rope(t.reshape({s * b, n, d}), positions, kRopeTheta), s, b);
    };
    q = rotated(parts[0], heads_local_);
    k = rotated(parts[1], groups_local_);
  } else if (rope_) {
    const auto cos = rope_cos_.narrow(0, 0, s), sin = rope_sin_.narrow(0, 0, s);
    q = q * cos + rotate_half(q) * sin;
    k = k * cos + rotate_half(k) * sin;
  }
  const at::Tensor o = recompute_ == spec::Recompute::selective ? recomputed(attention_core_fn_, {q, k, v})
                                                                  : attention_core(q, k, v);  // [b, a, s, d]
  return row_parallel_linear(o.permute({2, 0, 1, 3}).reshape({s, b, heads_local_ * d}), w.proj_weight, w.proj_bias,
                             tp_);
}

std::vector<at::Tensor> Transformer::split_qkv(const at::Tensor& qkv) const {
  const int64_t d = head_dim_;
  return qkv.split({heads_local_ * d, groups_local_ * d, groups_local_ * d}, -1);
}

at::Tensor Transformer::as_heads(const at::Tensor& t, int64_t s, int64_t b) const {
  return t.reshape({s, b, -1, head_dim_}).permute({1, 2, 0, 3});
}

at::Tensor Transformer::repeat_groups(const at::Tensor& kv) const {
  return groups_local_ == heads_local_ ? kv : kv.repeat_interleave(heads_local_ / groups_local_, 1);
}

at::Tensor Transformer::attention_core(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const {
  return at::scaled_dot_product_attention(q, repeat_groups(k), repeat_groups(v), {}, 0.0, /*is_causal=*/true);
}

std::string Transformer::attention_backend(const at::TensorOptions& options) const {
  const int64_t s = model_.seq_length;
  // One sample's QKV projection, split as attention() splits it, so the strides are the model's.
  const auto parts = split_qkv(at::empty({s, 1, (heads_local_ + 2 * groups_local_) * head_dim_}, options));
  const at::Tensor q = as_heads(parts[0], s, 1), k = repeat_groups(as_heads(parts[1], s, 1)),
                   v = repeat_groups(as_heads(parts[2], s, 1));
  switch (static_cast<at::SDPBackend>(at::_fused_sdp_choice(q, k, v, {}, 0.0, /*is_causal=*/true))) {
    case at::SDPBackend::flash_attention: return "flash_attention";
    case at::SDPBackend::efficient_attention: return "efficient_attention";
    case at::SDPBackend::cudnn_attention: return "cudnn_attention";
    case at::SDPBackend::math: return "math";
    case at::SDPBackend::overrideable: return "overrideable";
    default: return "none";
  }
}

at::Tensor Transformer::mlp(const LayerWeights& w, const at::Tensor& x) const {
  const bool fused_gelu = fused_ && !swiglu_;  // the fc1 bias is added inside the fused kernel
  at::Tensor hidden = column_parallel_linear(x, w.fc1_weight, fused_gelu ? at::Tensor() : w.fc1_bias, tp_);
  if (swiglu_ && fused_) {
    hidden = fused_swiglu(hidden);
  } else if (swiglu_) {
    const auto gate_up = hidden.chunk(2, -1);
    hidden = at::silu(gate_up[0]) * gate_up[1];
  } else if (fused_gelu) {
    hidden = fused_bias_gelu(hidden, w.fc1_bias);
  } else {
    hidden = at::gelu(hidden, "tanh");
  }
  return row_parallel_linear(hidden, w.fc2_weight, w.fc2_bias, tp_);
}

at::Tensor Transformer::layer(const LayerWeights& w, const at::Tensor& x) const {
  const at::Tensor after_attention = x + attention(w, norm(x, w.norm1_weight, w.norm1_bias));
  return after_attention + mlp(w, norm(after_attention, w.norm2_weight, w.norm2_bias));
}

at::Tensor Transformer::forward(int64_t c, const at::Tensor& input) const {
  const ModelChunk& chunk = chunks_[c];
  at::Tensor x = input;
  if (chunk.has_embedding) {
    x = vocab_parallel_embedding(input, chunk.word_embedding, tp_);  // [s, b, h]
    if (!rope_) x = x + chunk.position_embedding.narrow(0, 0, input.size(0)).unsqueeze(1);
    if (tp_.sequence_parallel) x = scatter_to_sequence(x, *tp_.group);
  }
  for (size_t i = 0; i < chunk.layers.size(); ++i)
    x = recompute_ == spec::Recompute::full ? recomputed(layer_fns_[c][i], {x}) : layer(chunk.layers[i], x);
  return x;
}

at::Tensor Transformer::loss(int64_t c, const at::Tensor& hidden, const at::Tensor& targets) const {
  const ModelChunk& chunk = chunks_[c];
  const at::Tensor x = norm(hidden, chunk.final_norm_weight, chunk.final_norm_bias);
  const at::Tensor logits = column_parallel_linear(x, chunk.output_weight, {}, tp_);  // [s, b, V/t]
  // The loss in fp32 whatever the model's dtype: the ATen path on fp32 logits (as Megatron), the fused
  // kernel on the logits as they are with fp32 statistics (no fp32 copy of the logits kept).
  const at::Tensor per_token =
      fused_ ? fused_vocab_parallel_cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}), *tp_.group)
             : vocab_parallel_cross_entropy(logits.reshape({-1, logits.size(-1)}).to(at::kFloat), targets.reshape({-1}), tp_);
  return per_token.mean();
}

}  // namespace tessera::runtime
