// Memory model (docs/formulas.md §2).
#include "planner/memory.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace tessera::planner {

using spec::Arch;
using spec::Activation;
using spec::Precision;
using spec::Recompute;

std::string_view memory_profile_name(MemoryProfile profile) {
  return profile == MemoryProfile::tessera ? "tessera" : "megatron";
}

MemoryProfile memory_profile_from_string(std::string_view name) {
  if (name == "tessera") return MemoryProfile::tessera;
  if (name == "megatron") return MemoryProfile::megatron;
  throw std::invalid_argument("memory profile \"" + std::string(name) + "\" must be tessera or megatron");
}

bool plans_fused_kernels(const spec::RunSpec& spec) { return spec.cluster.gpu != "cpu"; }

namespace {

// Bytes as an integer, capped at kMaxMemoryTermBytes: beyond it llround is undefined, and a plan
// showed negative memory that "fits"; a stage's five terms, each capped, still sum within int64 and
// never fit.
int64_t bytes_of(double bytes) {
  return bytes < static_cast<double>(kMaxMemoryTermBytes) ? static_cast<int64_t>(std::llround(bytes)) : kMaxMemoryTermBytes;
}

bool has_dropout(Arch arch) { return arch == Arch::gpt || arch == Arch::bert || arch == Arch::t5; }

struct LayerActivation {
  double replicated = 0;  // bytes kept whole on every tp rank unless sequence parallel splits them
  double split = 0;       // bytes already divided by tp
  double stored_input = 0;  // the layer input (what full recompute keeps)
};

// One attention block's stored tensors (bytes), excluding the norm before it: `tokens` queries on this
// rank, `kv_tokens` keys and values on this rank (a t5 cross-attention's come from the encoder), each
// query attending `seq_keys` keys (all of them under the CP ring).
void attention_activations(LayerActivation& a, const spec::RunSpec& spec, double tokens, double kv_tokens, double seq_keys,
                           bool scores) {
  const auto& m = spec.model;
  const double t = static_cast<double>(spec.parallel.tp);
  const double e = spec::bytes_per_element(spec.training.precision);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim());
  const double kv_width = static_cast<double>(m.num_query_groups * m.head_dim());
  const double a_heads = static_cast<double>(m.num_attention_heads);
  const bool dropout = has_dropout(m.arch);
  a.replicated += e * tokens * static_cast<double>(m.hidden_size);  // QKV input
  a.split += e * (tokens * q + kv_tokens * 2 * kv_width) / t;        // Q, K, V
  a.split += e * tokens * q / t;                                      // attention output = projection input
  if (dropout) a.replicated += tokens * static_cast<double>(m.hidden_size);  // projection dropout mask
  if (scores) {
    // Softmax output, dropout mask and dropout output: 5 a s^2 b for 16-bit (Korthikanti eq. 2).
    const double per_score = e + (dropout ? 1 + e : 0);
    a.split += per_score * a_heads * tokens * seq_keys / t;
  } else {
    a.split += 4 * a_heads * tokens / t;  // softmax log-sum-exp (fp32) kept by flash attention
  }
}

void mlp_activations(LayerActivation& a, const spec::RunSpec& spec, double tokens) {
  const auto& m = spec.model;
  const double t = static_cast<double>(spec.parallel.tp);
  const double e = spec::bytes_per_element(spec.training.precision);
  const double h = static_cast<double>(m.hidden_size);
  const bool dropout = has_dropout(m.arch);
  const bool swiglu = m.activation == Activation::swiglu;
  const double f = static_cast<double>(m.is_moe() ? m.moe_ffn_hidden_size : m.ffn_hidden_size);
  const double routed = m.is_moe() ? tokens * static_cast<double>(m.moe_top_k) : tokens;
  a.replicated += e * tokens * h;  // MLP input
  // gelu: fc1 output and gelu output; swiglu: gate and up outputs and their product.
  a.split += e * routed * f * (swiglu ? 3 : 2) / t;
  if (m.is_moe()) {
    a.split += e * routed * h / t;                                           // permuted tokens
    a.replicated += 4 * tokens * static_cast<double>(m.num_experts);        // router logits (fp32)
  }
  if (dropout) a.replicated += tokens * h;  // MLP dropout mask
}

LayerActivation layer_activation(const spec::RunSpec& spec, int64_t layer, bool scores) {
  const auto& m = spec.model;
  const auto per_rank = [&](int64_t seq) { return static_cast<double>(seq / spec.parallel.cp * spec.training.micro_batch_size); };
  const double tokens = per_rank(m.layer_seq_length(layer));  // a t5 decoder layer's are the decoder's
  const double e = spec::bytes_per_element(spec.training.precision);
  const double h = static_cast<double>(m.hidden_size);
  LayerActivation a;
  a.stored_input = e * tokens * h;
  a.replicated += 2 * e * tokens * h;  // inputs of the two norms
  attention_activations(a, spec, tokens, tokens, static_cast<double>(m.layer_seq_length(layer)), scores);
  if (m.arch == Arch::t5 && layer >= m.encoder_layers) {
    a.replicated += e * tokens * h;  // third norm (before cross-attention)
    attention_activations(a, spec, tokens, per_rank(m.seq_length), static_cast<double>(m.seq_length), scores);
  }
  mlp_activations(a, spec, tokens);
  return a;
}

double combine(const spec::RunSpec& spec, const LayerActivation& a) {
  const double t = static_cast<double>(spec.parallel.tp);
  return (spec.parallel.sequence_parallel ? a.replicated / t : a.replicated) + a.split;
}

// --- Megatron-LM theoretical_memory_usage.py, reproduced -------------------------------------

std::vector<StageMemory> megatron_stages(const spec::RunSpec& spec, const ScheduleTable& schedule) {
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  const double L = static_cast<double>(m.num_layers), h = static_cast<double>(m.hidden_size);
  const double a = static_cast<double>(m.num_attention_heads), g = static_cast<double>(m.num_query_groups);
  const double q_ratio = static_cast<double>(m.num_attention_heads * m.head_dim()) / h;
  const double experts = m.is_moe() ? static_cast<double>(m.num_experts) : 1.0;
  const double gated = m.activation == Activation::swiglu ? 1.5 : 1.0;
  const double ffn = static_cast<double>(m.is_moe() ? m.moe_ffn_hidden_size : m.ffn_hidden_size);
  const double tp = static_cast<double>(p.tp);
  const double dp = static_cast<double>(spec.data_parallel());
  const double vocab = static_cast<double>(padded_vocab(m.vocab_size, 128 * p.tp));

  const double layer_params = 2 * L * h * h *
                              ((1 + g / a) * q_ratio + (ffn / h) * experts * gated + 2 / h + 1 / (L * h));
  const double embedding = h * vocab;
  const bool untied = !m.tie_embeddings;
  // A stage's share of the layers' parameters: 1/pp of them, or its own count of an uneven split.
  auto stage_layer_params = [&](int64_t stage) {
    return layer_params * static_cast<double>(spec.stage_layers(stage)) / L;
  };
  const bool distributed = spec.effective_zero_stage() >= 1;
  const double optimizer_per_param = distributed ? 12 / dp : 12;

  // Activations: Korthikanti Table 2 as the script applies it (first stage, pp microbatches in flight).
  const double s = static_cast<double>(m.seq_length), b = static_cast<double>(spec.training.micro_batch_size);
  const double sbh = s * b * h;
  const bool sp = p.sequence_parallel;
  double per_layer = 0;  // bytes before the final division by tp
  switch (spec.training.recompute) {
    case Recompute::selective:
      per_layer = sp ? sbh * (18 + 4 * ffn / h) : sbh * (10 * tp + 8 + 4 * ffn / h);
      break;
    case Recompute::none: {
      const double scores = 5 * a * s / h;
      per_layer = sp ? sbh * (18 + 4 * ffn / h + scores) : sbh * (10 * tp + 8 + 4 * ffn / h + scores);
      break;
    }
    case Recompute::full:
      per_layer = sp ? 2 * sbh : 2 * sbh * tp;
      break;
  }
  std::vector<StageMemory> out(p.pp);
  for (int64_t stage = 0; stage < p.pp; ++stage) {
    // The script models the first stage: num_layers/pp layers x pp microbatches, times
    // 1 + (pp-1)/(pp·vpp) when interleaved, which is the schedule's peak of chunk-microbatches in flight
    // on stage 0 over vpp ((pp-1)·2 + (vpp-1)·pp + 1 chunks). Every stage here: its own layers (an
    // uneven split's, which the script has not) and its own peak over vpp (1F1B: min(pp - r, m) on stage r).
    const double units = peak_in_flight(schedule, static_cast<int>(stage)) / static_cast<double>(p.vpp);
    double act = per_layer * static_cast<double>(spec.stage_layers(stage)) * units;
    if (stage == 0) act += (8 * s * b + s * b * h) * units;  // input ids and embedding dropout
    if (stage == p.pp - 1) act += s * b * h * 4 * (1 + vocab / h);  // output layer and CE loss inputs
    act /= tp;

    // The last stage of a pipeline holds the output layer (or, tied, its copy of the word embeddings).
    double params = stage_layer_params(stage) / tp;
    if (stage == 0) params += embedding / tp;
    if (stage == p.pp - 1 && (untied || p.pp > 1)) params += embedding / tp;
    auto& st = out[stage];
    st.stage = stage;
    st.weights_bytes = bytes_of(params * 2);
    st.gradients_bytes = bytes_of(params * 4);
    st.optimizer_bytes = bytes_of(params * optimizer_per_param);
    st.activations_bytes = bytes_of(act);
  }
  return out;
}

// --- Tessera profile: what tessera-train's autograd keeps (dense gpt and llama) ------------------
// Measured term by term against the runtime's counting allocator (docs/formulas.md §2, "Runtime
// terms"; docs/runtime.md, "Memory against the planner"). e bytes per element, T tokens of a
// microbatch on a rank (s/cp · b), Tr the rows of the residual stream (T/t under SP, else T).

}  // namespace

bool has_runtime_terms(const spec::ModelSpec& m) {
  return (m.arch == spec::Arch::gpt || m.arch == spec::Arch::llama) && !m.is_moe();
}

namespace {

struct RuntimeShape {
  double e, tokens, rows, h, q, kv, f, heads, t;
  bool rope, repeat, layernorm, swiglu;
  bool fused;  ///< Tessera's fused kernels (tessera-train's default on GPUs) instead of ATen's ops (on the CPU)
};

RuntimeShape runtime_shape(const spec::RunSpec& spec) {
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  RuntimeShape r{};
  r.e = spec::bytes_per_element(spec.training.precision);
  r.t = static_cast<double>(p.tp);
  r.tokens = static_cast<double>(m.seq_length / p.cp * spec.training.micro_batch_size);
  r.rows = p.sequence_parallel ? r.tokens / r.t : r.tokens;
  r.h = static_cast<double>(m.hidden_size);
  r.q = static_cast<double>(m.num_attention_heads * m.head_dim());
  r.kv = static_cast<double>(m.num_query_groups * m.head_dim());
  r.f = static_cast<double>(m.ffn_hidden_size);
  r.heads = static_cast<double>(m.num_attention_heads);
  r.rope = m.position_embedding == spec::PositionEmbedding::rope;
  r.repeat = m.num_query_groups != m.num_attention_heads;
  r.layernorm = m.normalization == spec::Normalization::layernorm;
  r.swiglu = m.activation == Activation::swiglu;
  r.fused = plans_fused_kernels(spec);
  return r;
}

// A norm's saved tensors: its input and the fp32 statistics (LayerNorm: mean and 1/std; RMSNorm:
// 1/rms). ATen's RMSNorm is a composite op on CPU: it keeps the input cast to fp32 and the fp32
// normalised input before the weight multiply instead (8 bytes per element in fp32 and in bf16).
double runtime_norm_bytes(const RuntimeShape& r) {
  if (r.fused || r.layernorm) return r.e * r.rows * r.h + (r.layernorm ? 8 : 4) * r.rows;
  return 8 * r.rows * r.h + 4 * r.rows;
}

// Stored bytes of one layer for one microbatch under `recompute`.
double runtime_layer_bytes(const RuntimeShape& r, Recompute recompute) {
  const double e = r.e, T = r.tokens, t = r.t;
  if (recompute == Recompute::full) return e * r.rows * r.h;  // the layer input, kept by the checkpoint
  double bytes = 2 * runtime_norm_bytes(r);
  bytes += 2 * e * r.rows * r.h;                      // QKV and fc1 inputs (the shard under SP)
  // gelu: fc1 out, gelu out; swiglu: gate|up, silu, product (fused: gate|up, product)
  bytes += e * T * r.f / t * (r.swiglu ? (r.fused ? 3 : 4) : 2);
  bytes += e * T * r.q / t;                           // attention output, also the projection input (a view)
  if (recompute == Recompute::selective) {
    bytes += e * T * (r.q + 2 * r.kv) / t;            // Q, K, V saved by the checkpoint (views of the QKV output)
    if (r.rope) bytes += e * T * (r.q + r.kv) / t;    // rotated Q and K
  } else {
    if (!r.rope || !r.repeat) bytes += e * T * (r.q + 2 * r.kv) / t;  // QKV output, held by views SDPA saves
    if (r.rope) bytes += e * T * r.q / t;                              // rotated Q
    if (r.repeat) bytes += 2 * e * T * r.q / t;                        // K and V repeated to every head
    else if (r.rope) bytes += e * T * r.kv / t;                        // rotated K
    bytes += 4 * T * r.heads / t;                                      // SDPA's fp32 log-sum-exp
  }
  return bytes;
}

// Gradients alive while one layer's backward runs: the MLP hidden gradient and two residual-width
// ones; under SP also the column-parallel linear's input, gathered again for its weight gradient.
double runtime_layer_backward_bytes(const RuntimeShape& r) {
  const double regathered = r.rows < r.tokens ? r.e * r.tokens * r.h : 0;
  return r.e * r.tokens * (r.swiglu ? 2 * r.f : r.f) / r.t + 2 * r.e * r.tokens * r.h + regathered;
}

struct RuntimePeak {
  double activations = 0, buffers = 0;
};

// Walks this stage's row of the schedule table as the runtime executes it and returns the largest
// live bytes: stored activations of the chunk-microbatches in flight, plus the input gradient still
// held by its send, plus the op's transient buffers.
RuntimePeak runtime_activation_peak(const spec::RunSpec& spec, const ScheduleTable& schedule, int64_t stage) {
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  const RuntimeShape r = runtime_shape(spec);
  const double layers_per_chunk = static_cast<double>(spec.stage_layers(stage) / p.vpp);
  const double per_layer = runtime_layer_bytes(r, spec.training.recompute);
  const double vocab_rank = static_cast<double>(padded_vocab(m.vocab_size, p.tp)) / r.t;
  // ATen's cross-entropy keeps an fp32 softmax (and the fp32 logits exist while it is computed); the
  // fused one keeps the logits as they are (bf16 or fp32) with two fp32 statistics per row.
  const double logits = (r.fused ? r.e : 4) * r.tokens * vocab_rank;
  // Last virtual stage, per microbatch: the final norm's input and saved tensors, the output layer's
  // input (the shard under SP), the cross-entropy's saved logits or softmax and its targets (and mask).
  const double loss_part = runtime_norm_bytes(r) + r.e * r.rows * r.h + logits + (r.fused ? 16 : 9) * r.tokens;
  const double p2p = r.e * r.rows * r.h;
  double layer_backward = runtime_layer_backward_bytes(r);
  if (spec.training.recompute == Recompute::full)  // the layer rebuilt with its graph and its output
    layer_backward += runtime_layer_bytes(r, Recompute::none) + r.e * r.rows * r.h;
  const int64_t last_virtual = p.pp * p.vpp - 1;

  // A forward's output is sent while the chunk keeps it for its backward anyway; an input gradient
  // is held by its send until the previous stage receives it, which the walk takes as the next op.
  double held = 0, gradient_send = 0;
  RuntimePeak best;
  auto consider = [&](double transient) {
    const double buffers = gradient_send + transient;
    if (held + buffers > best.activations + best.buffers) best = {held, buffers};
  };
  for (const auto& op : schedule.stages.at(stage)) {
    const int64_t virtual_stage = static_cast<int64_t>(op.chunk) * p.pp + stage;
    const bool last = virtual_stage == last_virtual;
    const double layers = layers_per_chunk * per_layer, loss = last ? loss_part : 0;
    const bool backward = op.kind == OpKind::backward || op.kind == OpKind::backward_input;
    if (op.kind == OpKind::forward) {
      held += layers + loss;
      consider(last && !r.fused ? logits : 0);  // ATen: the logits while the softmax is computed
    } else if (backward) {
      if (last && r.fused) consider(logits);  // the logits' gradient, next to the saved logits
      consider(std::max(0.0, layer_backward - loss));  // the loss part is freed first
      held -= loss;  // the loss's backward consumed it, W or not
    }
    if (releases_activations(op.kind)) held -= layers;
    gradient_send = backward && virtual_stage > 0 ? p2p : 0;
  }
  return best;
}

// --- Tessera profile --------------------------------------------------------------------------

std::vector<StageMemory> tessera_stages(const spec::RunSpec& spec, const ModelParams& params,
                                        const ScheduleTable& schedule) {
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  const auto stages = stage_parameters(spec, params, p.tp);
  const double e = spec::bytes_per_element(spec.training.precision);
  const bool mixed = spec.training.precision != Precision::fp32;
  const double weight_bytes = e;
  const double grad_bytes = 4;                  // fp32 gradients (main grads under mixed precision)
  const double optimizer_bytes = mixed ? 12 : 8;  // fp32 master copy + Adam m and v
  const int64_t zero = spec.effective_zero_stage();
  const double shard_dense = static_cast<double>(spec.data_parallel() * p.cp);
  const double shard_expert = shard_dense / static_cast<double>(p.ep);
  const double t = static_cast<double>(p.tp);
  const double tokens = static_cast<double>(m.seq_length / p.cp * spec.training.micro_batch_size);
  // What the output layer and the loss see: a t5's decoder tokens.
  const double out_tokens = static_cast<double>(m.output_seq_length() / p.cp * spec.training.micro_batch_size);
  const double h = static_cast<double>(m.hidden_size);
  const double vocab_rank = static_cast<double>(padded_vocab(m.vocab_size, p.tp)) / t;

  const int64_t last_virtual = p.pp * p.vpp - 1;
  std::vector<StageMemory> out(p.pp);
  for (int64_t stage = 0; stage < p.pp; ++stage) {
    const auto& sp = stages[stage];
    const double dense = static_cast<double>(sp.dense_on_rank), expert = static_cast<double>(sp.expert_on_rank);
    auto sharded = [&](double bytes_per_param, bool shard) {
      return shard ? dense * bytes_per_param / shard_dense + expert * bytes_per_param / shard_expert
                   : (dense + expert) * bytes_per_param;
    };
    auto& st = out[stage];
    st.stage = stage;
    st.weights_bytes = bytes_of(sharded(weight_bytes, zero >= 3));
    st.gradients_bytes = bytes_of(sharded(grad_bytes, zero >= 2));
    st.optimizer_bytes = bytes_of(sharded(optimizer_bytes, zero >= 1));

    // ZeRO-3 gathers each layer's parameters before it runs: the gathered layer and the prefetched next.
    double zero3_gathered = 0;
    if (zero >= 3) {
      double largest = 0;
      for (int64_t layer : sp.layers)
        largest = std::max(largest, static_cast<double>(params.layers[layer].dense_on_rank(p.tp) +
                                                        params.layers[layer].expert_on_rank(p.tp, p.ep)));
      zero3_gathered = 2 * largest * weight_bytes;
    }

    if (has_runtime_terms(m)) {
      // tessera-train runs this model: its own stored tensors and buffers (docs/formulas.md §2); the
      // ZeRO-3 gather as for every model (tessera-train itself runs ZeRO-0 and 1).
      const RuntimePeak peak = runtime_activation_peak(spec, schedule, stage);
      const double batches = static_cast<double>(schedule.microbatches) * 8 *
                             static_cast<double>((m.seq_length + 1) * spec.training.micro_batch_size);
      st.activations_bytes = bytes_of(peak.activations);
      st.buffers_bytes = bytes_of(peak.buffers + batches + zero3_gathered);
      continue;
    }

    // The paper's terms (MoE, bert, t5). Activations: what each chunk-microbatch holds from its F
    // until its B (or W): its layers' stored bytes, on the first virtual stage also the token ids and
    // the embedding dropout mask, on the last the final norm's input and the fp32 logits kept for the
    // loss. The peak over this stage's schedule. Under ZB-H1 the loss's tensors go at Bi (its backward
    // consumed them), the rest at W.
    std::vector<double> chunk_bytes(p.vpp, 0.0), loss_bytes(p.vpp, 0.0);
    double working_layer = 0;
    for (int64_t chunk = 0; chunk < p.vpp; ++chunk) {
      const auto [first_layer, end_layer] = spec.chunk_layers(chunk * p.pp + stage);
      for (int64_t layer = first_layer; layer < end_layer; ++layer) {
        chunk_bytes[chunk] += layer_activation_bytes(spec, layer);
        working_layer = std::max(working_layer, layer_activation_bytes_no_recompute(spec, layer));
      }
      const int64_t virtual_stage = chunk * p.pp + stage;
      if (virtual_stage == 0) chunk_bytes[chunk] += tokens * (8 + (has_dropout(m.arch) ? h : 0));
      if (virtual_stage == last_virtual)
        loss_bytes[chunk] = e * out_tokens * h / (p.sequence_parallel ? t : 1) + 4 * out_tokens * vocab_rank;
    }
    double held = 0, act = 0;
    for (const auto& op : schedule.stages.at(stage)) {
      if (op.kind == OpKind::forward) act = std::max(act, held += chunk_bytes.at(op.chunk) + loss_bytes.at(op.chunk));
      if (op.kind == OpKind::backward || op.kind == OpKind::backward_input) held -= loss_bytes.at(op.chunk);
      if (releases_activations(op.kind)) held -= chunk_bytes.at(op.chunk);
    }
    if (spec.training.recompute == Recompute::full) act += working_layer;  // one layer rebuilt at a time
    st.activations_bytes = bytes_of(act);

    double buffers = 0;
    if (p.pp > 1) buffers += 2 * e * tokens * h / (p.sequence_parallel ? t : 1);  // p2p send and receive
    if (stage == p.pp - 1) buffers += 4 * out_tokens * vocab_rank;         // logits gradient during backward
    st.buffers_bytes = bytes_of(buffers + zero3_gathered);
  }
  return out;
}

}  // namespace

double layer_activation_bytes_no_recompute(const spec::RunSpec& spec, int64_t layer) {
  return combine(spec, layer_activation(spec, layer, !spec.training.flash_attention));
}

double layer_activation_bytes(const spec::RunSpec& spec, int64_t layer) {
  switch (spec.training.recompute) {
    case Recompute::full: {
      const auto a = layer_activation(spec, layer, false);
      return spec.parallel.sequence_parallel ? a.stored_input / static_cast<double>(spec.parallel.tp) : a.stored_input;
    }
    case Recompute::selective:
      return combine(spec, layer_activation(spec, layer, false));
    case Recompute::none:
      break;
  }
  return layer_activation_bytes_no_recompute(spec, layer);
}

std::vector<std::string> memory_profile_notes(const spec::RunSpec& s, MemoryProfile profile) {
  std::vector<std::string> notes;
  if (profile == MemoryProfile::tessera) {
    if (has_runtime_terms(s.model) && !s.training.flash_attention)
      notes.push_back("training.flash_attention=false: this profile counts what tessera-train keeps, whose attention never "
                      "stores the s² scores; Megatron-LM without flash attention does (the megatron memory profile)");
    return notes;
  }
  if (s.model.is_moe() && s.parallel.ep > 1)
    notes.push_back("the megatron profile divides the experts by tp and pp only, as Megatron-LM's "
                    "theoretical_memory_usage.py does, not by ep=" + std::to_string(s.parallel.ep) +
                    " (the tessera profile counts what a rank holds)");
  if (s.parallel.cp > 1)
    notes.push_back("the megatron profile, as Megatron-LM's theoretical_memory_usage.py, neither splits the sequence by cp=" +
                    std::to_string(s.parallel.cp) + " nor shards the distributed optimizer over it (the tessera profile does both)");
  if (s.training.recompute == Recompute::none && s.training.flash_attention)
    notes.push_back("without recompute the megatron profile adds Korthikanti et al.'s 5as/h per layer, the attention scores "
                    "that attention without flash attention stores; training.flash_attention=true never stores them (the "
                    "tessera profile leaves them out)");
  if (s.training.precision == spec::Precision::fp32)
    notes.push_back("the megatron profile counts 16-bit weights and activations with fp32 gradients and Adam state, as "
                    "Megatron-LM's script does, whatever training.precision=fp32 (the tessera profile counts fp32)");
  if (s.effective_zero_stage() >= 2)
    notes.push_back("the megatron profile knows Megatron-LM's distributed optimizer (ZeRO-1) only: parallel.zero_stage=" +
                    std::to_string(s.effective_zero_stage()) + " is counted as 1, its sharded gradients" +
                    (s.effective_zero_stage() >= 3 ? std::string(" and weights") : std::string()) +
                    " whole (the tessera profile shards them)");
  return notes;
}

MemoryEstimate estimate_memory(const spec::RunSpec& spec, const ModelParams& params, const ScheduleTable& schedule,
                               MemoryProfile profile) {
  MemoryEstimate out;
  out.profile = profile;
  out.stages = profile == MemoryProfile::megatron ? megatron_stages(spec, schedule) : tessera_stages(spec, params, schedule);
  for (const auto& st : out.stages) out.peak_bytes = std::max(out.peak_bytes, st.total_bytes());
  if (const auto* gpu = spec::PresetCatalog::builtin().gpu(spec.cluster.gpu)) out.capacity_bytes = gpu->memory_bytes;
  out.fits = out.capacity_bytes == 0 || out.peak_bytes <= out.capacity_bytes;
  return out;
}

}  // namespace tessera::planner
