// FLOPs model (docs/formulas.md §3). Per token and layer, forward MACs:
//   projections h*(q + 2kv) + q*h, attention 2*s*q (x 1/2 when causal), MLP m*h*f (m = 2 gelu, 3 swiglu),
//   MoE top_k*m*h*f_moe + h*E (router); logits h*V. Training = 3 x forward; x 2 FLOPs per MAC.
//   Summed per sample over each layer's own tokens (a t5 decoder's differ from its encoder's).
#include "planner/flops.hpp"

namespace tessera::planner {

using spec::Activation;
using spec::Arch;
using spec::Recompute;

SampleMacs layer_sample_macs(const spec::ModelSpec& m, int64_t layer, bool causal) {
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim());
  const double kv = static_cast<double>(m.num_query_groups * m.head_dim());
  const double s = static_cast<double>(m.layer_seq_length(layer));  // this layer's tokens = its keys
  const double matrices = m.activation == Activation::swiglu ? 3 : 2;
  const bool bidirectional = m.arch == Arch::bert || (m.arch == Arch::t5 && layer < m.encoder_layers);
  const double core_factor = (causal && !bidirectional) ? 0.5 : 1.0;

  SampleMacs macs;
  macs.projections = s * (h * (q + 2 * kv) + q * h);
  macs.attention_core = 2 * s * s * q * core_factor;
  if (m.arch == Arch::t5 && layer >= m.encoder_layers) {
    // Cross-attention: queries and output over the decoder's tokens, keys and values over the
    // encoder's (seq_length), every score computed (never causal).
    const double encoder = static_cast<double>(m.seq_length);
    macs.projections += s * (h * q + q * h) + encoder * h * 2 * kv;
    macs.attention_core += 2 * s * encoder * q;
  }
  if (m.is_moe()) {
    macs.mlp = s * (static_cast<double>(m.moe_top_k) * matrices * h * static_cast<double>(m.moe_ffn_hidden_size) +
                    h * static_cast<double>(m.num_experts));
  } else {
    macs.mlp = s * matrices * h * static_cast<double>(m.ffn_hidden_size);
  }
  return macs;
}

SampleMacs model_sample_macs(const spec::ModelSpec& m, bool causal) {
  SampleMacs total;
  for (int64_t i = 0; i < m.num_layers; ++i) {
    const auto l = layer_sample_macs(m, i, causal);
    total.projections += l.projections;
    total.attention_core += l.attention_core;
    total.mlp += l.mlp;
  }
  const double h = static_cast<double>(m.hidden_size);
  total.logits = static_cast<double>(m.output_seq_length()) * h * static_cast<double>(m.vocab_size);
  if (m.arch == Arch::bert) total.logits += static_cast<double>(m.seq_length) * h * h;  // MLM transform
  return total;
}

IterationFlops iteration_flops(const spec::RunSpec& spec, bool causal) {
  const auto macs = model_sample_macs(spec.model, causal);
  IterationFlops out;
  // Only masked self-attention is halved: BERT (and a T5 with no decoder layer) has none.
  const auto& m = spec.model;
  out.causal = causal && m.arch != Arch::bert && !(m.arch == Arch::t5 && m.num_layers <= m.encoder_layers);
  out.tokens_per_iteration = spec.training.global_batch_size * spec.model.seq_length;
  const double samples = static_cast<double>(spec.training.global_batch_size);
  out.model_per_iteration = 6.0 * macs.total() * samples;
  double recomputed_macs = 0;
  if (spec.training.recompute == Recompute::full) recomputed_macs = macs.layers();
  else if (spec.training.recompute == Recompute::selective) recomputed_macs = macs.attention_core;
  out.hardware_per_iteration = out.model_per_iteration + 2.0 * recomputed_macs * samples;
  return out;
}

}  // namespace tessera::planner
