// Parameter counting. Conventions (docs/formulas.md §1): gpt and bert have biases and LayerNorm
// (2h per norm); llama, mixtral and t5 have no biases and RMSNorm-style norms (h per norm).
#include "planner/params.hpp"

namespace tessera::planner {

using spec::Activation;
using spec::Arch;
using spec::Normalization;
using spec::PositionEmbedding;

namespace {

constexpr int64_t kT5RelativeBuckets = 32;

struct Shape {
  int64_t h, q, kv, f, f_moe, experts, norm;
  bool bias;
  int64_t mlp_matrices;  // 2 for gelu, 3 for swiglu (gate, up, down)
};

Shape shape_of(const spec::ModelSpec& m) {
  Shape s{};
  s.h = m.hidden_size;
  s.q = m.num_attention_heads * m.head_dim();
  s.kv = m.num_query_groups * m.head_dim();
  s.f = m.ffn_hidden_size;
  s.f_moe = m.moe_ffn_hidden_size;
  s.experts = m.num_experts;
  s.norm = m.normalization == Normalization::layernorm ? 2 * s.h : s.h;
  s.bias = m.arch == Arch::gpt || m.arch == Arch::bert;
  s.mlp_matrices = m.activation == Activation::swiglu ? 3 : 2;
  return s;
}

// Self-attention (or cross-attention) block: QKV column-parallel, output row-parallel.
void add_attention(LayerParams& p, const Shape& s, int64_t kv_width) {
  p.tp_sharded += s.h * (s.q + 2 * kv_width) + s.q * s.h;
  if (s.bias) {
    p.tp_sharded += s.q + 2 * kv_width;  // column-parallel bias is split
    p.replicated += s.h;                 // row-parallel bias is not
  }
  p.replicated += s.norm;
}

// One MLP: up (and gate) column-parallel, down row-parallel.
void add_mlp(LayerParams& p, const Shape& s) {
  if (s.experts > 1) {
    p.replicated += s.h * s.experts;  // router
    p.expert_sharded += s.experts * s.mlp_matrices * s.h * s.f_moe;
    if (s.bias) {
      p.expert_sharded += s.experts * (s.mlp_matrices - 1) * s.f_moe;
      p.expert_ep_only += s.experts * s.h;
    }
  } else {
    p.tp_sharded += s.mlp_matrices * s.h * s.f;
    if (s.bias) {
      p.tp_sharded += (s.mlp_matrices - 1) * s.f;
      p.replicated += s.h;
    }
  }
  p.replicated += s.norm;
}

}  // namespace

ModelParams count_parameters(const spec::ModelSpec& m) {
  const Shape s = shape_of(m);
  ModelParams out;
  out.word_embedding = m.vocab_size * s.h;
  if (m.position_embedding == PositionEmbedding::learned) out.embedding_replicated += m.seq_length * s.h;
  if (m.arch == Arch::bert) out.embedding_replicated += 2 * s.h + s.norm;  // token types + embedding norm

  const int64_t encoder_layers = m.arch == Arch::t5 ? m.encoder_layers : 0;
  for (int64_t i = 0; i < m.num_layers; ++i) {
    LayerParams layer;
    add_attention(layer, s, s.kv);
    const bool decoder = m.arch == Arch::t5 && i >= encoder_layers;
    if (decoder) add_attention(layer, s, s.kv);  // cross-attention
    add_mlp(layer, s);
    if (m.arch == Arch::t5) {
      // Relative position bias lives in the first layer of each stack (where the positions are
      // relative: a t5 with rope or learned positions has none); the encoder's final norm in its last
      // layer (the decoder's is final_norm).
      if (m.position_embedding == PositionEmbedding::relative && (i == 0 || i == encoder_layers))
        layer.replicated += kT5RelativeBuckets * m.num_attention_heads;
      if (i == encoder_layers - 1) layer.replicated += s.norm;
    }
    out.layers.push_back(layer);
  }
  out.final_norm = m.arch == Arch::bert ? 0 : s.norm;  // bert is post-LN: no final norm
  out.output_layer = m.tie_embeddings ? 0 : m.vocab_size * s.h;
  if (m.arch == Arch::bert) {
    out.head_replicated = (s.h * s.h + s.h)    // pooler
                          + (s.h * s.h + s.h)  // MLM transform
                          + s.norm             // MLM norm
                          + (2 * s.h + 2);     // next-sentence head
    out.head_vocab_bias = m.vocab_size;
  }
  out.total = out.embedding_total() + out.final_norm + out.output_layer + out.head_replicated + out.head_vocab_bias;
  for (const auto& l : out.layers) out.total += l.total();
  // Experts a token is not routed to, each an equal share of a layer's expert weights.
  int64_t idle_experts = 0;
  if (m.num_experts > 1)
    for (const auto& l : out.layers)
      idle_experts += (l.expert_sharded + l.expert_ep_only) / m.num_experts * (m.num_experts - m.moe_top_k);
  out.active_per_token = out.total - idle_experts;
  return out;
}

int64_t padded_vocab(int64_t vocab_size, int64_t multiple) {
  if (multiple <= 1) return vocab_size;
  return (vocab_size + multiple - 1) / multiple * multiple;
}

std::vector<StageParams> stage_parameters(const spec::RunSpec& spec, const ModelParams& params, int64_t vocab_multiple) {
  const auto& p = spec.parallel;
  const int64_t tp = p.tp, ep = p.ep, pp = p.pp, vpp = p.vpp;
  const int64_t h = spec.model.hidden_size;
  const int64_t vocab_rank = padded_vocab(spec.model.vocab_size, vocab_multiple) / tp;
  std::vector<StageParams> stages(pp);
  for (int64_t stage = 0; stage < pp; ++stage) {
    auto& st = stages[stage];
    st.chunk_dense_on_rank.assign(vpp, 0);
    st.chunk_expert_on_rank.assign(vpp, 0);
    for (int64_t chunk = 0; chunk < vpp; ++chunk) {
      const auto [first, last] = spec.chunk_layers(chunk * pp + stage);
      for (int64_t i = first; i < last; ++i) {
        const auto& layer = params.layers[i];
        st.layers.push_back(i);
        st.total += layer.total();
        st.chunk_dense_on_rank[chunk] += layer.dense_on_rank(tp);
        st.chunk_expert_on_rank[chunk] += layer.expert_on_rank(tp, ep);
      }
    }
    const bool first_stage = stage == 0;
    const bool last_stage = stage == pp - 1;
    if (first_stage) {
      st.total += params.embedding_total();
      st.chunk_dense_on_rank.front() += vocab_rank * h + params.embedding_replicated;
    }
    if (last_stage) {
      st.total += params.final_norm + params.output_layer + params.head_replicated + params.head_vocab_bias;
      int64_t& head = st.chunk_dense_on_rank.back();
      head += params.final_norm + params.head_replicated;
      if (params.head_vocab_bias > 0) head += vocab_rank;
      // Untied output layer, or (pp > 1) the last stage's copy of the tied word embedding.
      if (params.output_layer > 0 || pp > 1) head += vocab_rank * h;
    }
    for (int64_t chunk = 0; chunk < vpp; ++chunk) {
      st.dense_on_rank += st.chunk_dense_on_rank[chunk];
      st.expert_on_rank += st.chunk_expert_on_rank[chunk];
    }
  }
  return stages;
}

}  // namespace tessera::planner
