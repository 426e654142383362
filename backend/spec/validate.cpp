// The validation rules of the run spec (docs/spec.md lists them); every message names fields and rule.
#include <charconv>
#include <cmath>
#include <string>
#include <tuple>

#include "spec/run_spec.hpp"
#include "spec/utf8.hpp"

namespace tessera::spec {

namespace {

std::string n(int64_t v) { return std::to_string(v); }
// The shortest text that reads back as `v` ("1e-07", "0.0003"): std::to_string's six decimals
// printed a learning rate of 1e-7 as 0.000000.
std::string real(double v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return ec == std::errc() ? std::string(text, end) : std::to_string(v);
}

class Checker {
 public:
  std::vector<FieldError> errors;
  void fail(std::string field, std::string message) { errors.push_back({std::move(field), std::move(message)}); }
  bool positive(const std::string& path, int64_t value) {
    if (value >= 1) return true;
    fail(path, path + "=" + n(value) + " must be a positive integer");
    return false;
  }
  // Positive and at most `most`: bounds keep every product below int64 overflow and every table
  // the planner builds (layers, ranks, pipeline operations) to a size a desktop can hold.
  bool in_range(const std::string& path, int64_t value, int64_t most) {
    if (!positive(path, value)) return false;
    if (value <= most) return true;
    fail(path, path + "=" + n(value) + " must be at most " + n(most));
    return false;
  }
  void divides(const std::string& divisor_path, int64_t divisor, const std::string& path, int64_t value) {
    if (divisor >= 1 && value >= 1 && value % divisor != 0)
      fail(divisor_path, divisor_path + "=" + n(divisor) + " must divide " + path + "=" + n(value));
  }
};

// " (7 and 7 split them as 7, 8 × 14, 7)": the split a layout search gives spec's pp and vpp
// (fit_stage_split), offered where a split is refused; empty where none can be made.
std::string split_hint(const RunSpec& spec) {
  RunSpec fitted = spec;
  if (!fit_stage_split(fitted)) return {};
  const auto& f = fitted.parallel;
  if (f.first_stage_layers == 0) return " (0 and 0 split them evenly, " + fitted.stage_layers_text() + ")";
  return " (" + n(f.first_stage_layers) + " and " + n(f.last_stage_layers) + " split them as " + fitted.stage_layers_text() + ")";
}

// first_stage_layers and last_stage_layers (Megatron-LM's rules for --decoder-first/last-pipeline-
// num-layers): more than one stage, each end stage's layers a multiple of vpp, and the rest split
// evenly over the other stages, vpp chunks each.
void check_stage_split(Checker& c, const RunSpec& spec) {
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  bool ok = true;
  for (auto [path, value] : {std::pair{"parallel.first_stage_layers", p.first_stage_layers},
                             {"parallel.last_stage_layers", p.last_stage_layers}}) {
    if (value == 0) continue;
    if (p.pp == 1) {
      c.fail(path, std::string(path) + "=" + n(value) + " needs parallel.pp above 1: a single stage holds every layer");
      ok = false;
    } else if (value % p.vpp != 0) {
      c.fail(path, std::string(path) + "=" + n(value) + " must be a multiple of parallel.vpp=" + n(p.vpp) +
                       ": each of the stage's virtual stages holds an equal share" + split_hint(spec));
      ok = false;
    }
  }
  if (!ok) return;
  const int64_t ends = p.first_stage_layers + p.last_stage_layers;
  const int64_t others = p.pp - (p.first_stage_layers > 0) - (p.last_stage_layers > 0);
  const std::string field = p.first_stage_layers > 0 ? "parallel.first_stage_layers" : "parallel.last_stage_layers";
  const std::string set = p.first_stage_layers > 0 && p.last_stage_layers > 0
                              ? "parallel.first_stage_layers + last_stage_layers = " + n(ends)
                              : field + "=" + n(ends);
  if (others == 0) {
    if (ends != m.num_layers)
      c.fail(field, set + " must equal model.num_layers=" + n(m.num_layers) + " on parallel.pp=" + n(p.pp) + " stages" +
                        split_hint(spec));
    return;
  }
  const int64_t rest = m.num_layers - ends;
  const std::string stages = n(others) + " stage" + (others == 1 ? "" : "s");
  std::string message;
  if (rest < 0)
    message = set + " is more than model.num_layers=" + n(m.num_layers);
  else if (rest < others * p.vpp)
    message = set + " leaves " + n(rest) + " of model.num_layers=" + n(m.num_layers) + " for the other " + stages + ", which " +
              (others == 1 ? "needs" : "need") + " at least " + n(others * p.vpp) + (p.vpp > 1 ? " (one per virtual stage)" : "");
  else if (rest % (others * p.vpp) != 0)
    message = "the " + n(rest) + " layers that " + set + " leaves of model.num_layers=" + n(m.num_layers) +
              " must split evenly over the other " + stages +
              (p.vpp > 1 ? " times parallel.vpp=" + n(p.vpp) + " virtual stages" : std::string());
  if (!message.empty()) c.fail(field, message + split_hint(spec));
}

}  // namespace

std::vector<FieldError> validate(const RunSpec& spec, const PresetCatalog& presets, Rules rules) {
  if (rules == Rules::none) return {};
  Checker c;
  const bool layout = rules == Rules::all;
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  const auto& t = spec.training;
  const auto& cl = spec.cluster;

  // Positive integers everywhere.
  constexpr int64_t k64 = 1 << 16, k1M = 1 << 20, k16M = 1 << 24;
  bool shape_ok = true;
  for (auto [path, value, most] :
       {std::tuple{"model.num_layers", m.num_layers, int64_t{10'000}}, {"model.hidden_size", m.hidden_size, k1M},
        {"model.num_attention_heads", m.num_attention_heads, k64}, {"model.num_query_groups", m.num_query_groups, k64},
        {"model.ffn_hidden_size", m.ffn_hidden_size, k16M}, {"model.vocab_size", m.vocab_size, k16M},
        {"model.seq_length", m.seq_length, k16M}, {"model.num_experts", m.num_experts, k64},
        {"model.moe_top_k", m.moe_top_k, k64}})
    shape_ok = c.in_range(path, value, most) && shape_ok;
  // On a dense model the expert width derived from ffn_hidden_size is no field of its own to report.
  if (m.is_moe() || m.moe_ffn_hidden_size != m.ffn_hidden_size)
    shape_ok = c.in_range("model.moe_ffn_hidden_size", m.moe_ffn_hidden_size, k16M) && shape_ok;
  bool layout_ok = layout;
  if (layout) {
    for (auto [path, value] : {std::pair{"parallel.tp", p.tp}, {"parallel.pp", p.pp}, {"parallel.cp", p.cp},
                               {"parallel.ep", p.ep}, {"parallel.vpp", p.vpp}})
      layout_ok = c.in_range(path, value, k64) && layout_ok;
    if (p.dp != 0) layout_ok = c.in_range("parallel.dp", p.dp, k1M) && layout_ok;
    for (auto [path, value] : {std::pair{"parallel.first_stage_layers", p.first_stage_layers},
                               {"parallel.last_stage_layers", p.last_stage_layers}})
      if (value < 0) {
        c.fail(path, std::string(path) + "=" + n(value) + " must be 0 (an even share of the layers) or a positive integer");
        layout_ok = false;
      } else if (value > 0) {
        layout_ok = c.in_range(path, value, int64_t{10'000}) && layout_ok;
      }
  }
  bool batch_ok = c.in_range("training.micro_batch_size", t.micro_batch_size, k1M);
  // 0 means "derive from dp", which fails only when dp itself cannot be derived (reported there,
  // or here when the layout's rules are not checked).
  if (t.global_batch_size == 0 && spec.data_parallel() == 0) {
    batch_ok = false;
    if (!layout)
      c.fail("training.global_batch_size", "training.global_batch_size is needed: the spec's layout does not divide the "
                                           "cluster, so one microbatch per data-parallel rank cannot be derived");
  } else {
    batch_ok = c.in_range("training.global_batch_size", t.global_batch_size, int64_t{1} << 31) && batch_ok;
  }
  c.in_range("training.train_steps", t.train_steps, int64_t{1} << 40);
  bool cluster_ok = c.in_range("cluster.nodes", cl.nodes, k64);
  cluster_ok = c.in_range("cluster.gpus_per_node", cl.gpus_per_node, 1024) && cluster_ok;
  if (cluster_ok && cl.world_size() > k1M) {
    c.fail("cluster.nodes", "the world size cluster.nodes·gpus_per_node = " + n(cl.world_size()) + " must be at most " + n(k1M));
    cluster_ok = false;
  }
  if (layout && (p.zero_stage < 0 || p.zero_stage > 3))
    c.fail("parallel.zero_stage", "parallel.zero_stage=" + n(p.zero_stage) + " must be 0, 1, 2 or 3");
  if (!(t.lr > 0) || !std::isfinite(t.lr))
    c.fail("training.lr", "training.lr=" + real(t.lr) + " must be a finite number greater than 0");
  if (t.min_lr < 0 || t.min_lr > t.lr)
    c.fail("training.min_lr", "training.min_lr=" + real(t.min_lr) + " must be between 0 and training.lr=" + real(t.lr));
  if (t.warmup_steps < 0) c.fail("training.warmup_steps", "training.warmup_steps=" + n(t.warmup_steps) + " must be 0 or more");
  else if (t.train_steps >= 1 && t.warmup_steps > t.train_steps)
    c.fail("training.warmup_steps", "training.warmup_steps=" + n(t.warmup_steps) +
                                        " must not exceed training.train_steps=" + n(t.train_steps));
  if (!(t.weight_decay >= 0) || !std::isfinite(t.weight_decay))
    c.fail("training.weight_decay", "training.weight_decay=" + real(t.weight_decay) + " must be a finite number, 0 or more");
  if (!(t.grad_clip >= 0) || !std::isfinite(t.grad_clip))
    c.fail("training.grad_clip", "training.grad_clip=" + real(t.grad_clip) + " must be a finite number, 0 (off) or more");
  if (t.seed < 0) c.fail("training.seed", "training.seed=" + n(t.seed) + " must be 0 or more");
  if (t.save_every < 0)
    c.fail("training.save_every", "training.save_every=" + n(t.save_every) + " must be 0 (a checkpoint at the end only) or more");
  // A name is one line of the history and part of the launch message, which holds at most 1 MiB: a
  // name of megabytes was recorded as a run that then failed when the agent refused the message.
  if (static_cast<int64_t>(spec.name.size()) > kMaxNameBytes)
    c.fail("name", "name is " + n(static_cast<int64_t>(spec.name.size())) + " bytes long, at most " + n(kMaxNameBytes) +
                       " are allowed");
  // One line: the history refuses a run name with a line break, after the agents had been asked.
  if (const size_t at = control_character_at(spec.name); at != std::string_view::npos)
    c.fail("name", "name is one line, without control characters (" + byte_at(spec.name, at) + ")");
  if (const size_t at = bidi_control_at(spec.name); at != std::string_view::npos)
    c.fail("name", "name must not hold a bidirectional override (" + code_point_at(spec.name, at) +
                       "): it would make the name read as other text");
  if (!presets.gpu(cl.gpu)) {
    std::string message = "cluster.gpu=\"" + cl.gpu + "\" is not a known GPU preset";
    if (const auto hint = did_you_mean(cl.gpu, presets.gpu_ids()); !hint.empty()) message += hint;
    else message += " (known: " + join_spellings(presets.gpu_ids()) + ")";
    c.fail("cluster.gpu", message);
  }

  // Model shape.
  if (shape_ok) {
    if (m.hidden_size % m.num_attention_heads != 0)
      c.fail("model.hidden_size", "model.hidden_size=" + n(m.hidden_size) + " must be divisible by model.num_attention_heads=" +
                                      n(m.num_attention_heads));
    if (m.num_attention_heads % m.num_query_groups != 0)
      c.fail("model.num_query_groups", "model.num_query_groups=" + n(m.num_query_groups) +
                                           " must divide model.num_attention_heads=" + n(m.num_attention_heads));
    if (m.position_embedding == PositionEmbedding::rope && m.head_dim() % 2 != 0)
      c.fail("model.position_embedding", "model.position_embedding=rope needs an even head dimension, got " +
                                             n(m.head_dim()) + " (hidden_size / num_attention_heads)");
    if (m.position_embedding == PositionEmbedding::relative && m.arch != Arch::t5)
      c.fail("model.position_embedding", "model.position_embedding=relative is only for model.arch=t5");
    if (m.moe_top_k > m.num_experts)
      c.fail("model.moe_top_k", "model.moe_top_k=" + n(m.moe_top_k) + " must not exceed model.num_experts=" + n(m.num_experts));
    if (m.arch == Arch::mixtral && m.num_experts < 2)
      c.fail("model.num_experts", "model.arch=mixtral needs model.num_experts >= 2, got " + n(m.num_experts));
    if (m.arch == Arch::t5 && m.encoder_layers == 0 && m.decoder_layers == 0) {
      c.fail("model.encoder_layers", "model.arch=t5 needs model.encoder_layers and model.decoder_layers (a t5 model "
                                     "is an encoder and a decoder; model.preset t5-large has them)");
    } else if (m.arch == Arch::t5) {
      if (c.in_range("model.encoder_layers", m.encoder_layers, 10'000) &&
          c.in_range("model.decoder_layers", m.decoder_layers, 10'000) &&
          m.encoder_layers + m.decoder_layers != m.num_layers)
        c.fail("model.num_layers", "model.num_layers=" + n(m.num_layers) + " must equal model.encoder_layers + " +
                                       "model.decoder_layers = " + n(m.encoder_layers + m.decoder_layers) + " for arch t5");
    } else if (m.encoder_layers != 0 || m.decoder_layers != 0) {
      c.fail(m.encoder_layers != 0 ? "model.encoder_layers" : "model.decoder_layers",
             "model.encoder_layers and model.decoder_layers are only for model.arch=t5");
    }
    if (m.arch == Arch::t5 && m.decoder_seq_length != 0)  // 0: the same as seq_length
      shape_ok = c.in_range("model.decoder_seq_length", m.decoder_seq_length, k16M) && shape_ok;
    else if (m.arch != Arch::t5 && m.decoder_seq_length != 0)
      c.fail("model.decoder_seq_length", "model.decoder_seq_length is only for model.arch=t5 (the other architectures "
                                         "have one sequence, model.seq_length)");
  }

  // Layout against the model.
  if (shape_ok && layout_ok) {
    c.divides("parallel.tp", p.tp, "model.num_attention_heads", m.num_attention_heads);
    c.divides("parallel.tp", p.tp, "model.num_query_groups", m.num_query_groups);
    c.divides("parallel.tp", p.tp, "model.ffn_hidden_size", m.ffn_hidden_size);
    if (m.is_moe()) c.divides("parallel.tp", p.tp, "model.moe_ffn_hidden_size", m.moe_ffn_hidden_size);
    if (!spec.sets_end_stages() && m.num_layers % (p.pp * p.vpp) != 0) {
      std::string message = "parallel.pp·vpp = " + n(p.pp) + "·" + n(p.vpp) + " = " + n(p.pp * p.vpp) +
                            " must divide model.num_layers=" + n(m.num_layers);
      if (const std::string hint = split_hint(spec); !hint.empty())
        message += ", or parallel.first_stage_layers and last_stage_layers set the end stages apart" + hint;
      c.fail("parallel.pp", message);
    }
    if (spec.sets_end_stages()) check_stage_split(c, spec);
    // SP splits what a context-parallel rank holds, seq_length / cp tokens, over the TP ranks.
    if (p.sequence_parallel && p.cp >= 1 && m.seq_length % (p.cp * p.tp) != 0) {
      if (p.cp == 1)
        c.fail("parallel.sequence_parallel", "parallel.sequence_parallel needs parallel.tp=" + n(p.tp) +
                                                 " to divide model.seq_length=" + n(m.seq_length));
      else
        c.fail("parallel.sequence_parallel", "parallel.sequence_parallel needs parallel.tp=" + n(p.tp) +
                                                 " to divide each context-parallel rank's share of the sequence, "
                                                 "model.seq_length / cp = " + n(m.seq_length) + " / " + n(p.cp) +
                                                 (m.seq_length % p.cp == 0 ? " = " + n(m.seq_length / p.cp) : std::string()));
    }
    if (p.cp > 1 && m.seq_length % (2 * p.cp) != 0)
      c.fail("parallel.cp", "parallel.cp=" + n(p.cp) + " needs model.seq_length=" + n(m.seq_length) +
                                " divisible by 2·cp = " + n(2 * p.cp) + " (load-balanced causal chunks)");
    // A t5 decoder's sequence is split the same ways as the encoder's.
    if (const int64_t decoder = m.output_seq_length(); decoder != m.seq_length) {
      if (p.sequence_parallel && decoder % (p.cp * p.tp) != 0)
        c.fail("parallel.sequence_parallel", "parallel.sequence_parallel needs parallel.tp·cp = " + n(p.tp * p.cp) +
                                                 " to divide model.decoder_seq_length=" + n(decoder));
      if (p.cp > 1 && decoder % (2 * p.cp) != 0)
        c.fail("parallel.cp", "parallel.cp=" + n(p.cp) + " needs model.decoder_seq_length=" + n(decoder) +
                                  " divisible by 2·cp = " + n(2 * p.cp));
    }
    if (p.ep > 1) {
      if (!m.is_moe()) c.fail("parallel.ep", "parallel.ep=" + n(p.ep) + " needs a mixture of experts (model.num_experts > 1)");
      else c.divides("parallel.ep", p.ep, "model.num_experts", m.num_experts);
    }
  }
  if (layout_ok) {
    if (p.vpp > 1 && p.schedule != Schedule::interleaved)
      c.fail("parallel.vpp", "parallel.vpp=" + n(p.vpp) + " needs parallel.schedule=interleaved, got " +
                                 std::string(to_string(p.schedule)));
    if (p.schedule == Schedule::interleaved && p.vpp < 2)
      c.fail("parallel.schedule", "parallel.schedule=interleaved needs parallel.vpp >= 2, got " + n(p.vpp));
    if (p.schedule == Schedule::interleaved && p.pp < 2)
      c.fail("parallel.schedule", "parallel.schedule=interleaved needs parallel.pp >= 2, got " + n(p.pp));
    if (p.zero_stage >= 2 && p.pp > 1)
      c.fail("parallel.zero_stage", "parallel.zero_stage=" + n(p.zero_stage) + " shards gradients and cannot be combined " +
                                        "with pipeline parallelism (parallel.pp=" + n(p.pp) + "); use zero_stage 0 or 1");
  }

  // Layout against the cluster and the batch.
  if (layout_ok && cluster_ok) {
    const int64_t world = cl.world_size();
    const int64_t model_parallel = p.tp * p.pp * p.cp;
    int64_t dp = 0;
    if (model_parallel > world) {
      c.fail("parallel.tp", "parallel.tp·pp·cp = " + n(p.tp) + "·" + n(p.pp) + "·" + n(p.cp) + " = " + n(model_parallel) +
                                " exceeds the world size cluster.nodes·gpus_per_node = " + n(world));
    } else if (p.dp > 0) {
      if (model_parallel * p.dp != world)
        c.fail("parallel.dp", "parallel.tp·pp·dp·cp = " + n(p.tp) + "·" + n(p.pp) + "·" + n(p.dp) + "·" + n(p.cp) + " = " +
                                  n(model_parallel * p.dp) + " must equal the world size cluster.nodes·gpus_per_node = " +
                                  n(cl.nodes) + "·" + n(cl.gpus_per_node) + " = " + n(world));
      else dp = p.dp;
    } else if (world % model_parallel != 0) {
      c.fail("parallel.dp", "the world size cluster.nodes·gpus_per_node = " + n(world) +
                                " is not divisible by parallel.tp·pp·cp = " + n(model_parallel) +
                                ", so parallel.dp cannot be derived");
    } else {
      dp = world / model_parallel;
    }
    if (dp > 0) {
      if (p.ep > 1 && (dp * p.cp) % p.ep != 0)
        c.fail("parallel.ep", "parallel.ep=" + n(p.ep) + " must divide parallel.dp·cp = " + n(dp) + "·" + n(p.cp) + " = " +
                                  n(dp * p.cp) + " (experts are folded into the data-parallel ranks)");
      if (batch_ok) {
        const int64_t per_step = t.micro_batch_size * dp;
        if (t.global_batch_size % per_step != 0) {
          c.fail("training.global_batch_size", "training.global_batch_size=" + n(t.global_batch_size) +
                                                   " must be divisible by training.micro_batch_size·parallel.dp = " +
                                                   n(t.micro_batch_size) + "·" + n(dp) + " = " + n(per_step));
        } else if (p.schedule == Schedule::interleaved && p.pp > 1 && (t.global_batch_size / per_step) % p.pp != 0) {
          c.fail("parallel.schedule", "parallel.schedule=interleaved needs the number of microbatches, training.global_batch_size / "
                                      "(micro_batch_size·dp) = " + n(t.global_batch_size) + " / " + n(per_step) + " = " +
                                          n(t.global_batch_size / per_step) + ", to be a multiple of parallel.pp=" + n(p.pp));
        } else if (const int64_t ops = p.pp * p.vpp * (t.global_batch_size / per_step); ops > 10'000'000) {
          c.fail("training.global_batch_size", "training.global_batch_size=" + n(t.global_batch_size) + " gives the pipeline " + n(ops) +
                                                   " operations per step (pp·vpp·microbatches); at most 10,000,000 are supported");
        }
      }
    }
  }
  return c.errors;
}

void require_valid(const RunSpec& spec, const PresetCatalog& presets, Rules rules) {
  auto errors = validate(spec, presets, rules);
  if (!errors.empty()) throw SpecError(std::move(errors));
}

}  // namespace tessera::spec
