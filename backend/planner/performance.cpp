// Performance model (docs/formulas.md §4).
#include "planner/performance.hpp"

#include <algorithm>

#include "planner/grid.hpp"
#include "planner/memory.hpp"

namespace tessera::planner {

using spec::Activation;
using spec::Arch;
using spec::Precision;
using spec::Recompute;

namespace {

struct Machine {
  double flops_per_s;     // large-GEMM rate: peak x GPU's gemm efficiency
  double hbm_bytes_per_s;
  double intra_bytes_per_s;
  double inter_bytes_per_s;
};

Machine machine_of(const spec::RunSpec& spec, const spec::GpuPreset& gpu, const PerformanceConstants& c) {
  return {gpu.peak_tflops(spec.training.precision) * 1e12 * gpu.gemm_efficiency, gpu.hbm_bandwidth_GBps * 1e9,
          gpu.intra_node_bandwidth_GBps * 1e9 * c.network_efficiency,
          gpu.inter_node_bandwidth_GBps * 1e9 * c.network_efficiency};
}

double size_factor(double d, const PerformanceConstants& c) { return d / (d + c.gemm_half_size); }

// Time of an M x K x N GEMM.
double gemm_s(double m, double k, double n, const Machine& mc, const PerformanceConstants& c) {
  if (m <= 0 || k <= 0 || n <= 0) return 0;
  return 2 * m * k * n / (mc.flops_per_s * size_factor(m, c) * size_factor(k, c) * size_factor(n, c));
}

// Ring collectives over `ranks` GPUs: all-reduce moves 2(n-1)/n of the bytes, the others (n-1)/n.
double all_reduce_s(double bytes, int64_t ranks, double bandwidth, const PerformanceConstants& c) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double n = static_cast<double>(ranks);
  return 2 * (n - 1) / n * bytes / bandwidth + c.collective_latency_s;
}
double half_collective_s(double bytes, int64_t ranks, double bandwidth, const PerformanceConstants& c) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double n = static_cast<double>(ranks);
  return (n - 1) / n * bytes / bandwidth + c.collective_latency_s;
}

// A collective runs at the speed of its slowest group: the NIC's once any group of the kind spans nodes.
double group_bandwidth(int64_t stride, int64_t size, const spec::RunSpec& spec, const Machine& mc) {
  return any_group_crosses_node(stride, size, spec.world_size(), spec.cluster.gpus_per_node) ? mc.inter_bytes_per_s
                                                                                             : mc.intra_bytes_per_s;
}

struct Parts {
  double gemm_s = 0, gemm_weight_s = 0, core_s = 0, elementwise_s = 0, tp_s = 0, cp_s = 0, ep_s = 0;
};

// Forward parts of one layer for one microbatch on one rank.
Parts forward_parts(const spec::RunSpec& spec, int64_t layer, const Machine& mc, const PerformanceConstants& c) {
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  const double t = static_cast<double>(p.tp);
  // This layer's tokens (a t5 decoder layer's are the decoder's), and a t5 encoder's for cross-attention.
  const double tokens = static_cast<double>(m.layer_seq_length(layer) / p.cp * spec.training.micro_batch_size);
  const double encoder_tokens = static_cast<double>(m.seq_length / p.cp * spec.training.micro_batch_size);
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim());
  const double kv = static_cast<double>(m.num_query_groups * m.head_dim());
  const double d = static_cast<double>(m.head_dim());
  const double e = spec::bytes_per_element(spec.training.precision);
  const bool decoder_t5 = m.arch == Arch::t5 && layer >= m.encoder_layers;
  const bool causal = !(m.arch == Arch::bert || (m.arch == Arch::t5 && !decoder_t5));
  const int attention_blocks = decoder_t5 ? 2 : 1;
  const double up = m.activation == Activation::swiglu ? 2 : 1;

  Parts parts;
  parts.gemm_s += gemm_s(tokens, h, (q + 2 * kv) / t, mc, c) + gemm_s(tokens, q / t, h, mc, c);
  if (decoder_t5) {
    // Cross-attention: Q from the decoder's tokens, K and V from the encoder's output (two GEMMs).
    parts.gemm_s += gemm_s(tokens, h, q / t, mc, c) + gemm_s(encoder_tokens, h, 2 * kv / t, mc, c) +
                    gemm_s(tokens, q / t, h, mc, c);
  }
  if (m.is_moe()) {
    const double f = static_cast<double>(m.moe_ffn_hidden_size);
    const double local_experts = static_cast<double>(m.num_experts / p.ep);
    const double per_expert = tokens * static_cast<double>(m.moe_top_k) / local_experts;
    parts.gemm_s += gemm_s(tokens, h, static_cast<double>(m.num_experts), mc, c);
    parts.gemm_s += local_experts * (gemm_s(per_expert, h, up * f / t, mc, c) + gemm_s(per_expert, f / t, h, mc, c));
    const double a2a_bytes = e * tokens * static_cast<double>(m.moe_top_k) * h;
    const double bw = group_bandwidth(p.tp, p.ep, spec, mc);  // ep neighbours are tp ranks apart
    parts.ep_s = 2 * half_collective_s(a2a_bytes, p.ep, bw, c);  // dispatch and combine
  } else {
    const double f = static_cast<double>(m.ffn_hidden_size);
    parts.gemm_s += gemm_s(tokens, h, up * f / t, mc, c) + gemm_s(tokens, f / t, h, mc, c);
  }
  // Attention scores and values: 2 products of tokens x keys x q/t; flash skips the masked blocks of a
  // causal self-attention (a t5 decoder's cross-attention is never masked).
  const double keys = static_cast<double>(m.layer_seq_length(layer));  // all of them under the CP ring
  const double cross_keys = decoder_t5 ? static_cast<double>(m.seq_length) : 0.0;
  const double self_share = (causal && spec.training.flash_attention) ? 0.5 : 1.0;
  const double core_flops = 2 * 2 * tokens * q / t * (keys * self_share + cross_keys);
  parts.core_s = core_flops / (mc.flops_per_s * c.attention_efficiency * size_factor(d, c));
  parts.elementwise_s = c.elementwise_passes * layer_activation_bytes_no_recompute(spec, layer) / mc.hbm_bytes_per_s;
  if (p.tp > 1) {
    const double bw = group_bandwidth(1, p.tp, spec, mc);
    parts.tp_s = (attention_blocks + 1) * all_reduce_s(e * tokens * h, p.tp, bw, c);
  }
  if (p.cp > 1) {
    const double bw = group_bandwidth(p.tp, p.cp, spec, mc);
    const double ring = static_cast<double>(p.cp - 1) * (2 * e * tokens * kv / t / bw + c.collective_latency_s);
    parts.cp_s = std::max(0.0, ring - parts.core_s);  // KV ring overlaps the attention it feeds
  }
  return parts;
}

double sum_forward(const Parts& f) { return f.gemm_s + f.core_s + f.elementwise_s + f.tp_s + f.cp_s + f.ep_s; }

}  // namespace

std::string_view dp_event_name(DpEvent::Kind kind) {
  switch (kind) {
    case DpEvent::Kind::all_reduce: return "gradient all-reduce";
    case DpEvent::Kind::reduce_scatter: return "gradient reduce-scatter";
    case DpEvent::Kind::all_gather: return "parameter all-gather";
    case DpEvent::Kind::gather_reduce_scatter: return "parameter all-gather + gradient reduce-scatter";
    case DpEvent::Kind::embedding_all_reduce: return "tied-embedding all-reduce";
  }
  return "?";
}

LayerTime layer_time(const spec::RunSpec& spec, const spec::GpuPreset& gpu, int64_t layer, const PerformanceConstants& c) {
  const Machine mc = machine_of(spec, gpu, c);
  const Parts f = forward_parts(spec, layer, mc, c);
  LayerTime out;
  out.forward_s = sum_forward(f);
  // Backward: input and weight gradients (2x the GEMMs), 2x attention and memory-bound work, the
  // same number of TP collectives as forward, twice the CP exchange, the same all-to-alls.
  out.backward_weight_s = f.gemm_s;
  out.backward_s = 2 * f.gemm_s + 2 * f.core_s + 2 * f.elementwise_s + f.tp_s + 2 * f.cp_s + f.ep_s;
  out.tp_comm_s = 2 * f.tp_s;
  if (spec.training.recompute == Recompute::full) {
    out.backward_s += out.forward_s;
    out.tp_comm_s += f.tp_s;
  } else if (spec.training.recompute == Recompute::selective) {
    out.backward_s += f.core_s;
  }
  return out;
}

Prediction predict(const spec::RunSpec& spec, const std::vector<StageParams>& stages, const ScheduleTable& schedule,
                   const IterationFlops& flops, const PerformanceConstants& c, bool record_events) {
  const auto* gpu = spec::PresetCatalog::builtin().gpu(spec.cluster.gpu);
  Prediction out;
  if (!gpu) return out;
  const Machine mc = machine_of(spec, *gpu, c);
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  const double t = static_cast<double>(p.tp);
  const double tokens = static_cast<double>(m.seq_length / p.cp * spec.training.micro_batch_size);
  const double h = static_cast<double>(m.hidden_size);
  const double e = spec::bytes_per_element(spec.training.precision);
  const double vocab_rank = static_cast<double>(padded_vocab(m.vocab_size, p.tp)) / t;
  const int virtual_stages = static_cast<int>(p.pp * p.vpp);

  // Layers of one shape cost the same: time each distinct layer kind once.
  std::vector<LayerTime> per_layer(m.num_layers);
  const LayerTime first = layer_time(spec, *gpu, 0, c);
  const LayerTime decoder = m.arch == Arch::t5 ? layer_time(spec, *gpu, m.encoder_layers, c) : first;
  for (int64_t i = 0; i < m.num_layers; ++i) per_layer[i] = (m.arch == Arch::t5 && i >= m.encoder_layers) ? decoder : first;

  out.costs.forward_s.assign(virtual_stages, 0);
  out.costs.backward_s.assign(virtual_stages, 0);
  out.costs.backward_input_s.assign(virtual_stages, 0);
  out.costs.backward_weight_s.assign(virtual_stages, 0);
  for (int vs = 0; vs < virtual_stages; ++vs) {
    const auto [first_layer, last_layer] = spec.chunk_layers(vs);
    double f = 0, b = 0, w = 0;
    for (int64_t i = first_layer; i < last_layer; ++i) {
      f += per_layer[i].forward_s;
      b += per_layer[i].backward_s;
      w += per_layer[i].backward_weight_s;
    }
    if (vs == 0) f += 3 * e * tokens * h / mc.hbm_bytes_per_s;  // embedding lookup
    if (vs == virtual_stages - 1) {
      // Output layer and vocab-parallel cross-entropy (fp32 logits read and written a few times), over
      // the decoder's tokens for t5.
      const double out_tokens = static_cast<double>(m.output_seq_length() / p.cp * spec.training.micro_batch_size);
      const double logits = gemm_s(out_tokens, h, vocab_rank, mc, c);
      const double loss = 3 * 4 * out_tokens * vocab_rank / mc.hbm_bytes_per_s;
      f += logits + loss;
      b += 2 * logits + loss;
      w += logits;
    }
    out.costs.forward_s[vs] = f;
    out.costs.backward_s[vs] = b;
    out.costs.backward_weight_s[vs] = w;
    out.costs.backward_input_s[vs] = b - w;
  }
  if (p.pp > 1) {
    // 1/t of the activation per rank: its sequence shard under SP, else Megatron's scatter-gather
    // (Narayanan et al. 2021 §4.1, as in the runs the constants were fitted to).
    const double bytes = e * tokens * h / t;
    // One cost for every hop: the NIC's when any pair of neighbouring stages is on two nodes.
    const double bw = group_bandwidth(p.tp * p.cp * spec.data_parallel(), p.pp, spec, mc);
    out.costs.p2p_s = bytes / bw + c.collective_latency_s;
  }
  out.simulation = simulate(schedule, out.costs, record_events);
  out.pipeline_s = out.simulation.makespan_s;
  out.bubble_fraction = out.simulation.bubble_fraction;

  // Data-parallel communication of each pipeline stage on its own stream beside the stage's compute
  // (docs/formulas.md §4, "Data parallelism").
  const double grad_bytes = spec.training.precision == Precision::fp16 ? 2 : 4;
  const int64_t dp_cp = spec.data_parallel() * p.cp;
  const int64_t expert_dp = dp_cp / p.ep;
  const double dp_bw = group_bandwidth(p.tp, dp_cp, spec, mc);
  const int64_t zero = spec.effective_zero_stage();
  auto all_reduce = [&](double d, double x) {
    return all_reduce_s(d * grad_bytes, dp_cp, dp_bw, c) + all_reduce_s(x * grad_bytes, expert_dp, dp_bw, c);
  };
  auto reduce_scatter = [&](double d, double x) {
    return half_collective_s(d * grad_bytes, dp_cp, dp_bw, c) + half_collective_s(x * grad_bytes, expert_dp, dp_bw, c);
  };
  auto all_gather = [&](double d, double x) { return half_collective_s(d * e, dp_cp, dp_bw, c) + half_collective_s(x * e, expert_dp, dp_bw, c); };
  const auto& sim = out.simulation;
  // Megatron-LM's gradient buckets (DistributedDataParallelConfig.bucket_size): max(40M, 1M·dp)
  // parameters, dp counting cp; the expert buffers' the same size.
  const double bucket = std::max(40e6, 1e6 * static_cast<double>(dp_cp));
  const bool interleaved = p.vpp > 1;
  double dense = 0, expert = 0;  // of the stage with the most, for the optimizer step
  double stream_end_s = sim.makespan_s, gather_delay_s = 0;
  std::vector<double> stage_stream_end_s(stages.size(), 0.0);
  for (int stage = 0; stage < static_cast<int>(stages.size()); ++stage) {
    const auto& st = stages[stage];
    dense = std::max(dense, static_cast<double>(st.dense_on_rank));
    expert = std::max(expert, static_cast<double>(st.expert_on_rank));
    const auto chunk_d = [&](int k) { return static_cast<double>(st.chunk_dense_on_rank[k]); };
    const auto chunk_x = [&](int k) { return static_cast<double>(st.chunk_expert_on_rank[k]); };
    std::vector<int> chunks(p.vpp);
    for (int k = 0; k < static_cast<int>(p.vpp); ++k) chunks[k] = k;
    // One stream per stage: each collective starts when it is ready and the previous one has ended.
    double stream_s = 0, comm = 0;
    const auto run = [&](double ready_s, double cost_s, DpEvent::Kind kind, int chunk, int microbatch) {
      if (cost_s <= 0) return;
      const double start = std::max(stream_s, ready_s);
      stream_s = start + cost_s;
      comm += cost_s;
      if (record_events) out.dp_events.push_back({stage, chunk, microbatch, kind, start, stream_s});
    };
    // The updated parameters (ZeRO-1/2), the previous step's, chunk by chunk from the step's start
    // (--overlap-param-gather): a chunk's must be there when its first forward ends, else the
    // stage waits.
    if (zero == 1 || zero == 2) {
      const auto first = [&](int k) { return sim.first_forward_end_s[k * p.pp + stage]; };
      std::sort(chunks.begin(), chunks.end(), [&](int a, int b) { return first(a) < first(b); });
      for (int k : chunks) {
        run(0.0, all_gather(chunk_d(k), chunk_x(k)), DpEvent::Kind::all_gather, k, -1);
        gather_delay_s = std::max(gather_delay_s, stream_s - first(k));
      }
    }
    // What ZeRO-2/3 cannot keep whole, every microbatch, from the start of the op that needs it or
    // makes it: the parameters for each forward and backward (ZeRO-3), the gradients after each
    // weight-gradient op. Both need pp = 1: the ops run back to back in the table's order.
    if (zero >= 2) {
      const double gather = all_gather(chunk_d(0), chunk_x(0)), scatter = reduce_scatter(chunk_d(0), chunk_x(0));
      double t = 0;
      for (const auto& op : schedule.stages[stage]) {
        if (op.kind == OpKind::forward && zero == 3) run(t, gather, DpEvent::Kind::all_gather, op.chunk, op.microbatch);
        if (op.kind == OpKind::backward || op.kind == OpKind::backward_weight)
          run(t, (zero == 3 ? gather : 0.0) + scatter,
              zero == 3 ? DpEvent::Kind::gather_reduce_scatter : DpEvent::Kind::reduce_scatter, op.chunk, op.microbatch);
        const auto& cost = op.kind == OpKind::forward          ? out.costs.forward_s
                           : op.kind == OpKind::backward       ? out.costs.backward_s
                           : op.kind == OpKind::backward_input ? out.costs.backward_input_s
                                                               : out.costs.backward_weight_s;
        t += cost[op.chunk * p.pp + stage];
      }
    }
    // The step's gradients (ZeRO-0/1), chunk by chunk, as Megatron-LM launches them with
    // --overlap-grad-reduce (and its default --align-grad-reduce):
    // - pp = 1, and stage 0 of 1F1B: bucket by bucket while the last backward fills them, all but the
    //   last bucket from that op's start, the last (the chunk's first layers, whose gradients come
    //   last; in stage 0's first chunk at least the word embedding) from its end;
    // - the other stages of 1F1B: one bucket (DDP turns bucketing off for pp rank > 0), after the
    //   stage's last backward ends, in the pipeline's cool-down;
    // - interleaved: one reduction per chunk (the schedule calls grad_sync_func), after the backward op
    //   `stage` places after the chunk's last one, so that the stages launch together; past the end,
    //   after the stage's last op.
    if (zero <= 1) {
      const auto reduce = [&](double d, double x) { return zero == 0 ? all_reduce(d, x) : reduce_scatter(d, x); };
      const auto kind = zero == 0 ? DpEvent::Kind::all_reduce : DpEvent::Kind::reduce_scatter;
      const bool bucketed = p.pp == 1 || (stage == 0 && !interleaved);
      std::vector<double> launch_s(p.vpp), fill_s(p.vpp);  // when the reduction (or its buckets) may start
      for (int k = 0; k < static_cast<int>(p.vpp); ++k) {
        fill_s[k] = sim.last_weight_gradient_s[k * p.pp + stage];
        launch_s[k] = sim.last_weight_gradient_end_s[k * p.pp + stage];
      }
      if (interleaved) {
        std::vector<double> backward_ends;  // this stage's backward ops in order
        std::vector<int> last_of_chunk(p.vpp, -1);
        for (const auto& op : schedule.stages[stage]) {
          if (op.kind != OpKind::backward && op.kind != OpKind::backward_input) continue;
          last_of_chunk[op.chunk] = static_cast<int>(backward_ends.size());
          backward_ends.push_back(sim.backward_end_s(op.chunk * static_cast<int>(p.pp) + stage, op.microbatch,
                                                     schedule.microbatches));
        }
        for (int k = 0; k < static_cast<int>(p.vpp); ++k) {
          const size_t at = static_cast<size_t>(last_of_chunk[k] + stage);
          launch_s[k] = std::max(launch_s[k], at < backward_ends.size() ? backward_ends[at] : backward_ends.back());
        }
      }
      std::sort(chunks.begin(), chunks.end(), [&](int a, int b) { return launch_s[a] < launch_s[b]; });
      for (int k : chunks) {
        if (!bucketed) {
          run(launch_s[k], reduce(chunk_d(k), chunk_x(k)), kind, k, -1);
          continue;
        }
        const double dense_last = std::min(chunk_d(k), k == 0 && stage == 0 ? std::max(bucket, vocab_rank * h) : bucket);
        const double expert_last = std::min(chunk_x(k), bucket);
        run(fill_s[k], reduce(chunk_d(k) - dense_last, chunk_x(k) - expert_last), kind, k, -1);
        run(launch_s[k], reduce(dense_last, expert_last), kind, k, -1);
      }
    }
    stage_stream_end_s[stage] = stream_s;
    stream_end_s = std::max(stream_end_s, stream_s);
    out.dp_comm_s = std::max(out.dp_comm_s, comm);
  }
  // The tied word embedding (pp > 1): the first and the last stage each hold it; its gradients are
  // summed between the two once both have finished their data-parallel reductions (Megatron-LM's
  // finalize_model_grads: finish_grad_sync, then _allreduce_word_embedding_grads), so nothing hides it.
  if (p.pp > 1 && m.tie_embeddings) {
    const int last = static_cast<int>(p.pp) - 1;
    const double bytes = vocab_rank * h * grad_bytes;
    // Over the NIC when any first-stage rank's partner in the last stage is on another node.
    const int64_t stage_ranks = p.tp * dp_cp, partner = static_cast<int64_t>(last) * stage_ranks;
    bool crosses = false;
    for (int64_t r = 0; r < stage_ranks && !crosses; ++r)
      crosses = r / spec.cluster.gpus_per_node != (r + partner) / spec.cluster.gpus_per_node;
    const double bw = crosses ? mc.inter_bytes_per_s : mc.intra_bytes_per_s;
    const double start = std::max({sim.makespan_s, stage_stream_end_s[0], stage_stream_end_s[last]});
    const double cost = all_reduce_s(bytes, 2, bw, c);
    // What it adds to the exposed communication: past every stream (one of the stages between may end later).
    out.embedding_all_reduce_s = std::max(0.0, start + cost - stream_end_s);
    stream_end_s = std::max(stream_end_s, start + cost);
    if (record_events)
      for (int stage : {0, last})
        out.dp_events.push_back({stage, stage == 0 ? 0 : static_cast<int>(p.vpp) - 1, -1,
                                 DpEvent::Kind::embedding_all_reduce, start, start + cost});
  }
  // Exposed: what a stage waited for its parameters before a first forward, and what any stream runs
  // past the pipeline's last op.
  out.dp_gather_wait_s = std::max(0.0, gather_delay_s);
  out.dp_exposed_s = out.dp_gather_wait_s + (stream_end_s - sim.makespan_s);
  // The distributed optimizer updates its shard: dense parameters over dp·cp, experts over dp·cp/ep.
  const double dense_shard = zero >= 1 ? static_cast<double>(dp_cp) : 1.0;
  const double expert_shard = zero >= 1 ? static_cast<double>(expert_dp) : 1.0;
  out.optimizer_s = (dense / dense_shard + expert / expert_shard) * c.optimizer_bytes_per_param / mc.hbm_bytes_per_s;

  out.iteration_time_s = out.pipeline_s + out.dp_exposed_s + out.optimizer_s;
  const double world = static_cast<double>(spec.world_size());
  const double peak = gpu->peak_tflops(spec.training.precision) * 1e12;
  out.model_tflops_per_gpu = flops.model_per_iteration / (out.iteration_time_s * world) / 1e12;
  out.hardware_tflops_per_gpu = flops.hardware_per_iteration / (out.iteration_time_s * world) / 1e12;
  out.mfu = out.model_tflops_per_gpu * 1e12 / peak;
  out.hfu = out.hardware_tflops_per_gpu * 1e12 / peak;
  out.tokens_per_s = static_cast<double>(flops.tokens_per_iteration) / out.iteration_time_s;
  return out;
}

}  // namespace tessera::planner
