// tessera-cli presets | validate | plan | search | schedule | export megatron | import hf: the planning
// commands.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/commands.hpp"
#include "spec/interop.hpp"
#include "cli/text_table.hpp"
#include "planner/layout_search.hpp"
#include "planner/plan.hpp"
#include "spec/run_spec.hpp"

namespace tessera::cli {

namespace {

using nlohmann::json;

// Overrides shared by plan, schedule and export (and search, without the layout's): applied to the
// document before parsing, so that every rule of the spec still holds for the result.
struct Overrides {
  std::optional<int64_t> tp, pp, dp, cp, ep, vpp, first_stage_layers, last_stage_layers, zero, mbs, gbs, seq, nodes,
      gpus_per_node;
  std::optional<std::string> recompute, precision, schedule, gpu, preset;
  bool sp = false;
  CLI::Option* sp_option = nullptr;

  /// The layout options too unless `with_layout` is false (the search takes lists for those).
  void add_to(CLI::App* cmd, bool with_layout = true) {
    // Integers refused beyond int64 rather than clamped by CLI11.
    const auto integer = [cmd](const char* name, std::optional<int64_t>& value, const char* help) {
      cmd->add_option(name, value, help)->check(fits_int64());
    };
    if (with_layout) {
      integer("--tp", tp, "Tensor-parallel size");
      integer("--pp", pp, "Pipeline-parallel size");
      integer("--dp", dp, "Data-parallel size (default: derived from the cluster)");
      integer("--cp", cp, "Context-parallel size");
      integer("--ep", ep, "Expert-parallel size");
      integer("--vpp", vpp, "Virtual pipeline stages per rank (interleaved schedule)");
      integer("--first-stage-layers", first_stage_layers, "Layers of the first pipeline stage (0: an even share)");
      integer("--last-stage-layers", last_stage_layers, "Layers of the last pipeline stage (0: an even share)");
      sp_option = cmd->add_flag("--sp,!--no-sp", sp, "Sequence parallelism on (--sp) or off (--no-sp)");
      integer("--zero", zero, "ZeRO stage 0-3");
      integer("--mbs", mbs, "Micro-batch size");
      cmd->add_option("--recompute", recompute, "none|selective|full");
      cmd->add_option("--schedule", schedule, "gpipe|1f1b|interleaved|zb-h1");
    }
    integer("--gbs", gbs, "Global batch size");
    integer("--seq", seq, "Sequence length");
    cmd->add_option("--precision", precision, "fp32|bf16|fp16");
    cmd->add_option("--gpu", gpu, "GPU preset id");
    integer("--nodes", nodes, with_layout ? "Number of nodes (a spec's dp is derived again unless --dp is given)" : "Number of nodes");
    integer("--gpus-per-node", gpus_per_node,
            with_layout ? "GPUs per node (a spec's dp is derived again unless --dp is given)" : "GPUs per node");
    cmd->add_option("--preset", preset, "Model preset id (replaces the spec's model section)");
  }

  /// What a run's name may spell: the layout, the cluster, the model preset and the GPU (relabel_layout).
  bool changes_layout() const {
    return tp || pp || dp || cp || ep || vpp || first_stage_layers || last_stage_layers || zero || nodes || gpus_per_node ||
           (sp_option && sp_option->count() > 0) || gpu || preset || schedule;
  }

  void apply(json& doc) const {
    if (sp_option && sp_option->count() > 1) {
      const auto given = sp_option->results();
      if (std::adjacent_find(given.begin(), given.end(), std::not_equal_to<>()) != given.end())
        throw UsageError("--sp and --no-sp contradict each other: give one");
    }
    auto set = [&](const char* section, const char* field, const auto& value) {
      if (!value) return;
      // Not silently made an object (null) or thrown out of nlohmann ("x"): the spec's error.
      if (doc.contains(section) && !doc[section].is_object())
        throw spec::SpecError({{section, std::string(section) + " must be a JSON object, got " + doc[section].dump().substr(0, 120)}});
      doc[section][field] = *value;
    };
    if (preset) doc["model"] = json{{"preset", *preset}};
    set("model", "seq_length", seq);
    set("parallel", "tp", tp);
    set("parallel", "pp", pp);
    set("parallel", "dp", dp);
    set("parallel", "cp", cp);
    set("parallel", "ep", ep);
    set("parallel", "vpp", vpp);
    set("parallel", "first_stage_layers", first_stage_layers);
    set("parallel", "last_stage_layers", last_stage_layers);
    set("parallel", "zero_stage", zero);
    // --zero 0 means no sharding even for a spec that spells ZeRO-1 as distributed_optimizer.
    if (zero && doc["parallel"].is_object()) doc["parallel"]["distributed_optimizer"] = *zero >= 1;
    set("parallel", "schedule", schedule);
    if (sp_option && sp_option->count() > 0) doc["parallel"]["sequence_parallel"] = sp;
    set("training", "micro_batch_size", mbs);
    set("training", "global_batch_size", gbs);
    set("training", "recompute", recompute);
    set("training", "precision", precision);
    set("cluster", "gpu", gpu);
    set("cluster", "nodes", nodes);
    set("cluster", "gpus_per_node", gpus_per_node);
    // A new layout that no longer matches an explicit dp: derive dp again unless it was given here.
    if (!dp && (tp || pp || cp || nodes || gpus_per_node) && doc.contains("parallel") &&
        doc["parallel"].is_object())
      doc["parallel"].erase("dp");
  }
};

json read_json_file(const std::string& path) { return spec::parse_spec_json(spec::read_spec_file_text(path), path); }

// The GPU count a spec file was written for (nodes × gpus_per_node as its cluster section spells
// them), or 0 where it spells no such count.
int64_t written_world_size(const json& doc) {
  const auto cluster = doc.find("cluster");
  if (cluster == doc.end() || !cluster->is_object()) return 0;
  const auto nodes = cluster->find("nodes"), per_node = cluster->find("gpus_per_node");
  if (nodes == cluster->end() || per_node == cluster->end() || !nodes->is_number_integer() || !per_node->is_number_integer()) return 0;
  int64_t world = 0;
  if (__builtin_mul_overflow(nodes->get<int64_t>(), per_node->get<int64_t>(), &world) || world <= 0) return 0;
  return world;
}

spec::RunSpec load_with_overrides(const std::string& path, const Overrides& overrides, spec::Rules rules = spec::Rules::all) {
  json doc = read_json_file(path);
  if (!doc.is_object()) throw spec::SpecError({{"", path + ": a run spec must be a JSON object"}});
  const int64_t world_before = written_world_size(doc);
  std::optional<spec::RunSpec> before;  // the spec as written, where it plans: its whole layout label follows
  if (rules == spec::Rules::all && overrides.changes_layout()) try {
      before = spec::parse_spec(doc, spec::PresetCatalog::builtin(), rules);
    } catch (const spec::SpecError&) {
    }
  const json written = doc;
  overrides.apply(doc);
  // Uneven stages under a new PP, VPP or model (--pp, --vpp, --preset) are split again as the layout
  // search and the workbench split them (spec::fit_stage_split), unless --first/last-stage-layers say
  // how; the same values given again change nothing.
  if ((overrides.pp || overrides.vpp || overrides.preset) && !overrides.first_stage_layers && !overrides.last_stage_layers) try {
      const auto none = spec::Rules::none;
      const spec::RunSpec was = spec::parse_spec(written, spec::PresetCatalog::builtin(), none);
      spec::RunSpec read = spec::parse_spec(doc, spec::PresetCatalog::builtin(), none);
      const bool moved = read.parallel.pp != was.parallel.pp || read.parallel.vpp != was.parallel.vpp ||
                         read.model.num_layers != was.model.num_layers;
      if (moved && read.sets_end_stages() && spec::fit_stage_split(read)) {
        doc["parallel"]["first_stage_layers"] = read.parallel.first_stage_layers;
        doc["parallel"]["last_stage_layers"] = read.parallel.last_stage_layers;
      }
    } catch (const spec::SpecError&) {  // the parse below says what is wrong
    }
  spec::RunSpec spec = spec::parse_spec(doc, spec::PresetCatalog::builtin(), rules);
  // A name that spells the layout ("… on 64 H100 (TP8·PP4·DP2)") spells the one planned.
  if (rules == spec::Rules::all && overrides.changes_layout())
    spec.name = spec::relabel_layout(spec.name, spec, world_before, before ? &*before : nullptr);
  return spec;
}

std::string pct(double fraction) { return format_fixed(100 * fraction, 1) + "%"; }

// The layout as the search's table names it: its label, and the layers of each stage when uneven.
std::string layout_with_stages(const spec::RunSpec& s) {
  return s.uneven_stages() ? s.layout_label() + " (layers " + s.stage_layers_text() + ")" : s.layout_label();
}

std::string layer_span(const std::vector<int64_t>& layers) {
  if (layers.empty()) return "-";
  std::string out;
  size_t i = 0;
  while (i < layers.size()) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(layers[i]) + (j > i ? "-" + std::to_string(layers[j]) : "");
    i = j + 1;
  }
  return out;
}

void print_plan(const planner::Plan& plan) {
  const auto& s = plan.spec;
  const auto& gpu = *spec::PresetCatalog::builtin().gpu(s.cluster.gpu);
  std::cout << (s.name.empty() ? "Plan" : printable(s.name)) << "\n";
  // The model planned, whatever the name says (a --preset or --set may have changed it).
  const auto& m = s.model;
  std::cout << "  " << (m.preset.empty() ? "" : m.preset + ": ") << spec::to_string(m.arch) << ", " << m.num_layers
            << " layers, hidden " << m.hidden_size << ", " << m.num_attention_heads << " heads"
            << (m.num_experts > 1 ? ", " + std::to_string(m.num_experts) + " experts (top " + std::to_string(m.moe_top_k) + ")" : "")
            << "\n";
  // A CPU cluster's ranks are no GPUs; its sizes are MiB and its speeds GFLOP/s.
  const bool cpu = s.cluster.gpu == "cpu";
  const std::string per = cpu ? "rank" : "GPU";
  std::cout << "  " << s.world_size() << (cpu ? " CPU ranks (" : " GPUs (") << s.cluster.nodes << " × " << s.cluster.gpus_per_node << " "
            << gpu.name << ") · " << s.layout_label()
            << " · ZeRO-" << s.effective_zero_stage() << " · " << spec::to_string(s.training.precision) << " · recompute "
            << spec::to_string(s.training.recompute) << "\n";
  std::cout << "  " << s.num_microbatches() << " microbatches of " << s.training.micro_batch_size << " × "
            << s.model.seq_length << " tokens per DP rank"
            << (s.model.output_seq_length() != s.model.seq_length ? " (decoder " + std::to_string(s.model.output_seq_length()) + ")" : "")
            << " · " << format_count(plan.flops.tokens_per_iteration) << " tokens per step\n";
  std::string kinds;
  for (const auto& k : plan.cross_node_groups)
    if (!planner::is_derived_group_kind(k)) kinds += (kinds.empty() ? "" : ", ") + k;
  if (!kinds.empty()) std::cout << "  groups crossing a node boundary: " << kinds << "\n";
  std::cout << "\nParameters: " << format_count(plan.params.total) << " (" << format_si(static_cast<double>(plan.params.total), "")
            << ")";
  if (plan.params.active_per_token != plan.params.total)
    std::cout << ", " << format_count(plan.params.active_per_token) << " ("
              << format_si(static_cast<double>(plan.params.active_per_token), "") << ") active per token: top "
              << s.model.moe_top_k << " of " << s.model.num_experts << " experts";
  std::cout << "\n";
  TextTable params({"stage", "layers", "parameters", "per rank (after TP/EP)"});
  for (size_t i = 0; i < plan.stage_params.size(); ++i) {
    const auto& st = plan.stage_params[i];
    params.add_row({std::to_string(i), layer_span(st.layers), format_count(st.total), format_count(st.on_rank())});
  }
  std::cout << params.str();

  const auto& mem = plan.memory;
  const bool mib = mem.peak_bytes < int64_t{1} << 30;  // a peak of a few MiB read "0.00" GiB
  const auto in_unit = [&](int64_t bytes) {
    // The cap is no size: a micro-batch of 65536 at 2^24 tokens read 1073741824.00 GiB.
    if (bytes >= planner::kMaxMemoryTermBytes) return std::string("over 1 EiB");
    return format_fixed(static_cast<double>(bytes) / (mib ? 1024.0 * 1024 : 1024.0 * 1024 * 1024), 2);
  };
  std::cout << "\nMemory per " << per << " (" << planner::memory_profile_name(mem.profile) << " profile, "
            << (mib ? "MiB" : "GiB") << "; capacity " << format_bytes(mem.capacity_bytes) << ")\n";
  TextTable memory({"stage", "weights", "gradients", "optimizer", "activations", "buffers", "total", "verdict"});
  for (const auto& st : mem.stages) {
    const int64_t over = st.total_bytes() - mem.capacity_bytes;
    memory.add_row({std::to_string(st.stage), in_unit(st.weights_bytes), in_unit(st.gradients_bytes),
                    in_unit(st.optimizer_bytes), in_unit(st.activations_bytes), in_unit(st.buffers_bytes),
                    in_unit(st.total_bytes()), over > 0 ? "OOM by " + format_bytes(over) : "fits"});
  }
  std::cout << memory.str();
  std::cout << "  peak " << format_bytes(mem.peak_bytes) << " of " << format_bytes(mem.capacity_bytes) << ": "
            << (mem.fits ? "fits" : "does NOT fit") << "\n";
  for (const auto& note : planner::memory_profile_notes(s, mem.profile)) std::cout << "  note: " << note << "\n";

  const auto& pr = plan.prediction;
  std::cout << "\nPipeline: " << spec::to_string(s.parallel.schedule) << ", " << plan.schedule.microbatches
            << " microbatches, " << plan.schedule.vpp << " virtual stage(s) per rank, bubble " << pct(pr.bubble_fraction)
            << "\n";
  std::cout << "\nPredicted (" << (plan.flops.causal ? "causal attention FLOPs halved" : "attention FLOPs counted in full")
            << ")\n";
  const bool giga = pr.model_tflops_per_gpu < 1.0;  // "0.0" TFLOP/s said nothing
  const std::string flops = (giga ? "GFLOP/s/" : "TFLOP/s/") + per;
  const double flops_unit = giga ? 1000.0 : 1.0;
  TextTable prediction({"iteration", "model " + flops, "hardware " + flops, "MFU", "HFU", "tokens/s"});
  prediction.add_row({format_fixed(pr.iteration_time_s, 3) + " s", format_fixed(pr.model_tflops_per_gpu * flops_unit, 1),
                      format_fixed(pr.hardware_tflops_per_gpu * flops_unit, 1), pct(pr.mfu), pct(pr.hfu),
                      format_si(pr.tokens_per_s, "")});
  std::cout << prediction.str();
  std::cout << "  of which: pipeline " << format_fixed(pr.pipeline_s, 3) << " s, exposed DP communication "
            << format_fixed(pr.dp_exposed_s, 3) << " s";
  if (pr.embedding_all_reduce_s > 0)
    std::cout << " (" << format_fixed(pr.embedding_all_reduce_s, 3) << " s the tied embedding's all-reduce)";
  std::cout << ", optimizer " << format_fixed(pr.optimizer_s, 3) << " s\n";
}

std::string op_label(const planner::PipelineOp& op, int vpp) {
  std::string out(planner::op_kind_name(op.kind));
  out += std::to_string(op.microbatch);
  if (vpp > 1) out += "." + std::to_string(op.chunk);
  return out;
}


// The search's list options: "1,2,4" (CLI11 splits at commas), each value named in its error.
struct SearchLists {
  std::vector<int64_t> tp, cp, pp, vpp, ep, mbs, zero;
  std::vector<std::string> recompute, schedule;

  void add_to(CLI::App* cmd) {
    const auto list = [cmd](const char* name, std::vector<int64_t>& values, const char* help) {
      return cmd->add_option(name, values, help)->delimiter(',')->check(fits_int64());
    };
    list("--tp", tp, "Tensor-parallel sizes to try, e.g. 1,2,4,8 (default: the divisors of the GPUs per node)")
        ->check(integer_range(1));
    list("--cp", cp, "Context-parallel sizes (default: powers of two keeping 1024 tokens or more per rank)")
        ->check(integer_range(1));
    list("--pp", pp, "Pipeline-parallel sizes (default: the divisors of the world that split the layers, evenly or with the "
                        "end stages set apart)")
        ->check(integer_range(1));
    list("--vpp", vpp, "Virtual stages for the interleaved schedule (default: 2,4,8)")->check(integer_range(1));
    list("--ep", ep, "Expert-parallel sizes (default: the divisors of the experts; 1 for a dense model)")
        ->check(integer_range(1));
    list("--mbs", mbs, "Micro-batch sizes (default: 1,2,4,8)")->check(integer_range(1));
    list("--zero", zero, "ZeRO stages (default: 0,1,2,3; 2 and 3 only without a pipeline)")->check(integer_range(0, 3));
    cmd->add_option("--recompute", recompute, "Recompute settings, none|selective|full (default: all three)")->delimiter(',');
    cmd->add_option("--schedule", schedule, "Pipeline schedules, gpipe|1f1b|interleaved|zb-h1 (default: 1f1b,interleaved,zb-h1)")
        ->delimiter(',');
  }

  /// The default space of `s` with every list given here in place of its default.
  planner::SearchSpace space_for(const spec::RunSpec& s, bool tessera_train) const {
    auto space = planner::default_search_space(s, tessera_train);
    if (!tp.empty()) space.tp = tp;
    if (!cp.empty()) space.cp = cp;
    if (!pp.empty()) space.pp = pp;
    if (!vpp.empty()) space.vpp = vpp;
    if (!ep.empty()) space.ep = ep;
    if (!mbs.empty()) space.micro_batch_size = mbs;
    if (!zero.empty()) space.zero_stage.assign(zero.begin(), zero.end());
    if (!recompute.empty()) space.recompute = enums<spec::Recompute>("--recompute", recompute);
    if (!schedule.empty()) space.schedule = enums<spec::Schedule>("--schedule", schedule);
    return space;
  }

  template <typename E>
  static std::vector<E> enums(const std::string& option, const std::vector<std::string>& names) {
    std::vector<E> out;
    for (const auto& name : names) {
      auto value = spec::enum_from_string<E>(name);
      if (!value) throw UsageError(option + " " + name + ": must be one of " + spec::join_spellings(spec::enum_spellings<E>()));
      out.push_back(*value);
    }
    return out;
  }
};

void print_search(const planner::SearchResult& r, const spec::RunSpec& s, const planner::SearchSpace& space,
                  double memory_fraction) {
  const auto& gpu = *spec::PresetCatalog::builtin().gpu(s.cluster.gpu);
  // The model rather than the spec's name, which may spell a layout of another cluster.
  std::cout << "Layout search: " << (s.model.preset.empty() ? std::string("custom model") : s.model.preset)
            << (s.name.empty() ? "" : " (from \"" + s.name + "\")") << " on " << s.world_size() << " × " << gpu.name
            << ", global batch " << r.global_batch_size << " × " << s.model.seq_length << " tokens, "
            << spec::to_string(s.training.precision) << "\n";
  const auto field_list = [](const std::vector<std::pair<std::string, int64_t>>& counts) {
    std::string text;
    for (size_t i = 0; i < counts.size() && i < 3; ++i) text += (i ? ", " : "") + counts[i].first + " " + format_count(counts[i].second);
    if (counts.size() > 3) text += ", …";
    return text.empty() ? text : " (" + text + ")";
  };
  std::cout << "  " << format_count(r.candidates) << " layouts: " << format_count(r.invalid) << " break a rule of the spec"
            << field_list(r.invalid_fields)
            << (r.unsupported > 0 ? ", " + format_count(r.unsupported) + " are beyond tessera-train" + field_list(r.unsupported_fields) : "")
            << ", " << format_count(r.over_memory)
            << " need more than " << format_bytes(r.memory_limit_bytes) << ", " << format_count(r.fitting) << " fit; "
            << format_fixed(r.elapsed_s, 2) << " s on " << r.threads << " thread" << (r.threads == 1 ? "" : "s")
            << (r.cancelled ? " (stopped early)" : "") << "\n\n";
  if (r.best.empty() && r.invalid + r.unsupported == r.planned) {
    std::cout << "No layout of this space keeps the spec's rules" << (r.unsupported > 0 ? " and tessera-train's limits" : "")
              << " for this model, batch and cluster (the fields above name them); other values for those choices, or "
                 "another --gbs, may.\n";
  } else if (r.best.empty()) {
    // What may help, less what this search tried already.
    std::vector<std::string> remedies{"more GPUs (--nodes)", "a smaller global batch (--gbs)"};
    if (std::find(space.recompute.begin(), space.recompute.end(), spec::Recompute::full) == space.recompute.end())
      remedies.push_back("full recompute (add full to --recompute)");
    if (memory_fraction < 1.0) remedies.push_back("a larger --memory-fraction");
    std::string text = spec::join_alternatives(remedies);
    text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
    std::cout << "No layout of this space fits. " << text << " may.\n";
  } else {
    TextTable table({"#", "layout", "schedule", "ZeRO", "mbs", "recompute", "step s", "tokens/s", "MFU", "bubble", "peak memory"},
                    {true, false, false, true, true, false, true, true, true, true, true});
    for (size_t i = 0; i < r.best.size(); ++i) {
      const auto& b = r.best[i];
      table.add_row({std::to_string(i + 1), layout_with_stages(b.spec), std::string(spec::to_string(b.spec.parallel.schedule)),
                     std::to_string(b.spec.effective_zero_stage()), std::to_string(b.spec.training.micro_batch_size),
                     std::string(spec::to_string(b.spec.training.recompute)), format_fixed(b.iteration_time_s, 3),
                     format_si(b.tokens_per_s, ""), pct(b.mfu), pct(b.bubble_fraction), format_bytes(b.peak_bytes)});
    }
    std::cout << table.str();
  }
  if (!r.given) {
    std::cout << "\nThe spec's own layout is not valid here: " << r.given_problem << "\n";
    return;
  }
  const auto& g = *r.given;
  std::cout << "\nThe spec's own layout (" << layout_with_stages(g.spec) << ", " << spec::to_string(g.spec.parallel.schedule)
            << ", ZeRO " << g.spec.effective_zero_stage() << ", mbs " << g.spec.training.micro_batch_size << ", recompute "
            << spec::to_string(g.spec.training.recompute) << "): ";
  if (!r.given_fits) {
    std::cout << "needs " << format_bytes(g.peak_bytes) << ", more than " << format_bytes(r.memory_limit_bytes) << "\n";
  } else {
    std::cout << format_fixed(g.iteration_time_s, 3) << " s a step, " << format_si(g.tokens_per_s, "") << " tokens/s, place "
              << format_count(r.given_place) << " of " << format_count(r.given_among())
              << (r.given_searched ? ""
                                   : " (itself and the " + format_count(r.fitting) + " that fit; it is not in the space searched" +
                                         (r.given_outside.empty() ? "" : ": " + r.given_outside) + ")");
    if (!r.best.empty() && r.best.front().tokens_per_s > g.tokens_per_s)
      std::cout << "; the best is " << format_fixed(r.best.front().tokens_per_s / g.tokens_per_s, 2) << "× its tokens/s";
    std::cout << "\n";
  }
}

json ranked_json(const planner::RankedLayout& l) {
  json parallel = spec::to_json(l.spec)["parallel"];
  parallel["dp"] = l.spec.data_parallel();
  return {{"label", l.spec.layout_label()},
          {"parallel", parallel},
          {"micro_batch_size", l.spec.training.micro_batch_size},
          {"recompute", std::string(spec::to_string(l.spec.training.recompute))},
          {"iteration_time_s", l.iteration_time_s},
          {"tokens_per_s", l.tokens_per_s},
          {"mfu", l.mfu},
          {"bubble_fraction", l.bubble_fraction},
          {"peak_bytes", l.peak_bytes}};
}

json search_json(const planner::SearchResult& r) {
  json fields = json::object();
  for (const auto& [field, count] : r.invalid_fields) fields[field] = count;
  json limits = json::object();
  for (const auto& [field, count] : r.unsupported_fields) limits[field] = count;
  json best = json::array();
  for (const auto& b : r.best) best.push_back(ranked_json(b));
  json given = r.given ? ranked_json(*r.given) : json{{"problem", r.given_problem}};
  if (r.given) given["fits"] = r.given_fits;
  if (r.given && r.given_fits) {
    given["place"] = r.given_place;
    given["among"] = r.given_among();
    given["searched"] = r.given_searched;
    if (!r.given_outside.empty()) given["outside"] = r.given_outside;  // why it is not in the space
  }
  return {{"candidates", r.candidates}, {"planned", r.planned},        {"invalid", r.invalid},
          {"invalid_fields", fields},   {"unsupported", r.unsupported}, {"unsupported_fields", limits},
          {"over_memory", r.over_memory}, {"fitting", r.fitting},
          {"memory_limit_bytes", r.memory_limit_bytes}, {"global_batch_size", r.global_batch_size},
          {"best", best},               {"given", given},               {"elapsed_s", r.elapsed_s},
          {"threads", r.threads}};
}

}  // namespace

void add_plan_commands(CLI::App& app) {
  app.add_subcommand("presets", "List the model and GPU presets")->callback([] {
    const auto& catalog = spec::PresetCatalog::builtin();
    TextTable models({"model preset", "arch", "layers", "hidden", "heads", "parameters", "description"},
                     {false, false, true, true, true, true, false});
    for (const auto& [id, preset] : catalog.models()) {
      json doc = {{"model", {{"preset", id}}}, {"cluster", {{"gpu", "cpu"}, {"nodes", 1}, {"gpus_per_node", 1}}}};
      const auto s = spec::parse_spec(doc);
      models.add_row({id, std::string(spec::to_string(s.model.arch)), std::to_string(s.model.num_layers),
                      std::to_string(s.model.hidden_size), std::to_string(s.model.num_attention_heads),
                      format_count(planner::count_parameters(s.model).total), preset.description});
    }
    std::cout << models.str() << "\n";
    TextTable gpus({"gpu preset", "bf16 TFLOP/s", "memory GiB", "HBM GB/s", "intra-node GB/s", "inter-node GB/s", "name"},
                   {false, true, true, true, true, true, false});
    for (const auto& [id, g] : catalog.gpus())
      gpus.add_row({id, format_fixed(g.peak_tflops_bf16, 1), format_gib(g.memory_bytes), format_fixed(g.hbm_bandwidth_GBps, 0),
                    format_fixed(g.intra_node_bandwidth_GBps, 0), format_fixed(g.inter_node_bandwidth_GBps, 1), g.name});
    std::cout << gpus.str();
  });

  {
    auto* cmd = app.add_subcommand("validate", "Check a run spec; every problem names its field and rule");
    static std::string path;
    cmd->add_option("spec", path, "Run spec (JSON)")->required();
    cmd->callback([] {
      const auto s = spec::load_spec_file(path);
      std::cout << path << ": valid (world size " << s.world_size() << ", " << s.layout_label() << ", "
                << s.num_microbatches() << (s.num_microbatches() == 1 ? " microbatch" : " microbatches") << " per step)\n";
    });
  }

  {
    auto* cmd = app.add_subcommand("plan", "Parameters, memory per stage, FLOPs, bubble and predicted speed of a run");
    static std::string path, profile = "tessera";
    static bool as_json = false, with_grid = false, causal = false;
    static Overrides overrides;
    cmd->add_option("spec", path, "Run spec (JSON)")->required();
    cmd->add_flag("--json", as_json, "Print the plan as JSON");
    cmd->add_option("--memory-profile", profile, "tessera (default) or megatron")
        ->check(CLI::IsMember({"tessera", "megatron"}));
    cmd->add_flag("--grid", with_grid, "Include every rank and the process groups (in text the first 8 of each kind; all with --json)");
    cmd->add_flag("--causal-flops", causal, "Count causal attention scores as half (default: in full, as Megatron and PaLM)");
    overrides.add_to(cmd);
    cmd->callback([] {
      planner::PlanOptions options;
      options.memory_profile = planner::memory_profile_from_string(profile);
      options.include_grid = with_grid;
      options.causal_flops = causal;
      const auto plan = planner::make_plan(load_with_overrides(path, overrides), options);
      if (as_json) {
        std::cout << planner::plan_to_json(plan).dump(2) << "\n";
        return;
      }
      print_plan(plan);
      if (plan.grid) {
        std::cout << "\nRank grid (rank: node/local tp cp ep dp pp)\n";
        TextTable grid({"rank", "node", "local", "tp", "cp", "ep", "dp", "pp"});
        for (const auto& r : plan.grid->ranks)
          grid.add_row({std::to_string(r.rank), std::to_string(r.node), std::to_string(r.local), std::to_string(r.tp),
                        std::to_string(r.cp), std::to_string(r.ep), std::to_string(r.dp), std::to_string(r.pp)});
        std::cout << grid.str();
        // The process groups of each kind, the first 8 in full in text (--json has every one); * marks a
        // group that spans nodes.
        std::cout << "\nProcess groups (* crosses a node boundary)\n";
        for (const auto& kind : planner::group_kinds()) {
          const auto it = plan.grid->groups.find(kind);
          if (it == plan.grid->groups.end() || it->second.empty()) continue;
          const auto& groups = it->second;
          std::cout << "  " << kind << " (" << groups.size() << (groups.size() == 1 ? " group" : " groups") << "):";
          for (size_t g = 0; g < groups.size() && g < 8; ++g) {
            std::cout << " [";
            for (size_t i = 0; i < groups[g].ranks.size() && i < 16; ++i) std::cout << (i ? "," : "") << groups[g].ranks[i];
            if (groups[g].ranks.size() > 16) std::cout << ",… " << groups[g].ranks.size() << " ranks";
            std::cout << "]" << (groups[g].crosses_node ? "*" : "");
          }
          if (groups.size() > 8) std::cout << " … " << groups.size() - 8 << " more";
          std::cout << "\n";
        }
      }
    });
  }

  {
    auto* cmd = app.add_subcommand("search", "The fastest layouts of a spec's model, batch and cluster that fit in memory");
    static std::string path, profile = "tessera", save_path;
    static bool as_json = false, causal = false, tessera_train = false;
    static size_t top = 10, pick = 1;
    static int threads = 0;
    static double memory_fraction = 1.0, progress_every_s = 10.0;
    static Overrides overrides;
    static SearchLists lists;
    cmd->add_option("spec", path, "Run spec (JSON): its model, global batch, precision and cluster are kept")->required();
    lists.add_to(cmd);
    overrides.add_to(cmd, false);
    cmd->add_option("--top", top, "How many layouts to list (default 10)")->check(CLI::Range(1, 10000));
    cmd->add_option("--memory-fraction", memory_fraction,
                    "A layout fits when its peak is at most this share of the GPU's memory (default 1; 0.9 leaves 10%)")
        ->check(finite_range(0.01, 1.0));
    cmd->add_option("--memory-profile", profile, "tessera (default) or megatron")
        ->check(CLI::IsMember({"tessera", "megatron"}));
    cmd->add_flag("--causal-flops", causal, "Count causal attention scores as half (default: in full)");
    cmd->add_option("--threads", threads, "Planning threads (default: one per hardware thread)")->check(CLI::Range(1, 1024));
    cmd->add_option("--progress-every-s", progress_every_s,
                    "Where stderr is no terminal (a log), a progress line this often once a search lasts that long")
        ->check(finite_range(0.1, 86400.0))
        ->capture_default_str();
    cmd->add_option("--save", save_path, "Write the spec with the chosen layout (--pick) to this file");
    cmd->add_option("--pick", pick, "Which listed layout --save writes (default 1, the fastest; at most --top)")
        ->check(CLI::Range(1, 10000));
    cmd->add_flag("--tessera-train", tessera_train,
                  "Only layouts tessera-train runs (no CP, EP, ZB-H1 or ZeRO-2/3); always so on a CPU cluster, which only it runs");
    cmd->add_flag("--json", as_json, "Print the result as JSON");
    cmd->callback([] {
      if (pick > top) throw UsageError("--pick " + std::to_string(pick) + " is beyond the --top " + std::to_string(top) + " listed");
      // The spec's own layout need not suit the cluster the options give: the search finds one that does.
      const auto s = load_with_overrides(path, overrides, spec::Rules::except_layout);
      planner::SearchOptions options;
      options.top = top;
      options.threads = threads;
      options.tessera_train = tessera_train || s.cluster.gpu == "cpu";
      options.memory_fraction = memory_fraction;
      options.plan.memory_profile = planner::memory_profile_from_string(profile);
      options.plan.causal_flops = causal;
      // Progress on a terminal: one line rewritten in place, cleared at the end. Where stderr is a log
      // (a pipe, a file), a line of its own every --progress-every-s once the search lasts that long, so
      // that a short search writes nothing there. --json output gets none.
      if (isatty(STDERR_FILENO) && !as_json) {
        options.progress = [](int64_t planned, int64_t candidates) {
          std::cerr << "\rplanned " << format_count(planned) << " of " << format_count(candidates) << " layouts" << std::flush;
          if (planned == candidates) std::cerr << "\r\033[K" << std::flush;
        };
      } else if (!as_json) {
        options.progress = [start = std::chrono::steady_clock::now(), said = 0](int64_t planned, int64_t candidates) mutable {
          const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          if (planned == candidates || elapsed_s < (said + 1) * progress_every_s) return;
          said = static_cast<int>(elapsed_s / progress_every_s);
          std::cerr << "search: planned " << format_count(planned) << " of " << format_count(candidates) << " layouts ("
                    << static_cast<int>(100.0 * static_cast<double>(planned) / static_cast<double>(candidates)) << " %) in "
                    << format_fixed(elapsed_s, 1) << " s" << std::endl;
        };
      }
      const auto space = lists.space_for(s, options.tessera_train);
      const auto result = planner::search_layouts(s, space, options);
      if (as_json) std::cout << search_json(result).dump(2) << "\n";
      else print_search(result, s, space, memory_fraction);
      if (save_path.empty()) return;
      if (pick > result.best.size())
        throw UsageError("--pick " + std::to_string(pick) + ": the search found " + std::to_string(result.best.size()) +
                                 " layout(s) that fit; nothing written to " + save_path);
      // Named for what it now is: the old name may spell the old layout.
      auto chosen = result.best[pick - 1].spec;
      chosen.name = (chosen.model.preset.empty() ? std::string("custom model") : chosen.model.preset) + " " +
                    chosen.layout_label() + " on " + std::to_string(chosen.world_size()) + " " + chosen.cluster.gpu;
      write_file_whole(save_path, spec::to_json(chosen).dump(2) + "\n");
      std::cerr << "wrote layout " << pick << " to " << save_path << "\n";
    });
  }

  {
    auto* cmd = app.add_subcommand("schedule", "The pipeline schedule's operation table and its simulated timeline");
    static std::string path;
    static bool as_json = false;
    static Overrides overrides;
    cmd->add_option("spec", path, "Run spec (JSON)")->required();
    cmd->add_flag("--json", as_json, "Print the table and the events as JSON");
    overrides.add_to(cmd);
    cmd->callback([] {
      planner::PlanOptions options;
      options.record_events = true;
      const auto plan = planner::make_plan(load_with_overrides(path, overrides), options);
      if (as_json) {
        planner::write_schedule_json(std::cout, plan.schedule, plan.prediction.simulation);
        return;
      }
      const auto& sim = plan.prediction.simulation;
      std::cout << spec::to_string(plan.schedule.schedule) << ": " << plan.schedule.pp << " stages, " << plan.schedule.vpp
                << " chunk(s) per stage, " << plan.schedule.microbatches << " microbatches; makespan "
                << format_fixed(sim.makespan_s * 1e3, 2) << " ms, bubble " << pct(sim.bubble_fraction) << "\n";
      for (size_t stage = 0; stage < plan.schedule.stages.size(); ++stage) {
        std::cout << "stage " << stage << " (busy " << format_fixed(sim.busy_s[stage] * 1e3, 2) << " ms, "
                  << sim.peak_in_flight[stage] << " in flight):";
        for (const auto& op : plan.schedule.stages[stage]) std::cout << " " << op_label(op, plan.schedule.vpp);
        std::cout << "\n";
      }
    });
  }

  {
    auto* exp = app.add_subcommand("export", "Export a spec for another tool");
    exp->require_subcommand(1);
    auto* cmd = exp->add_subcommand("megatron", "The Megatron-LM pretrain_*.py command line for the same run");
    static std::string path;
    static Overrides overrides;
    cmd->add_option("spec", path, "Run spec (JSON)")->required();
    overrides.add_to(cmd);
    cmd->callback([] {
      const auto s = load_with_overrides(path, overrides);
      const auto exported = spec::megatron_command(s);
      for (const auto& note : exported.notes) std::cerr << "note: " << note << "\n";
      std::cout << exported.command << "\n";
    });
  }

  {
    auto* imp = app.add_subcommand("import", "Import a model from another tool");
    imp->require_subcommand(1);
    auto* cmd = imp->add_subcommand("hf", "A run spec from a Hugging Face config.json (Llama, Mistral, Mixtral, GPT-2)");
    static std::string path, out_path, gpu = "h100-sxm";
    static int64_t nodes = 1, gpus_per_node = 8;
    cmd->add_option("config", path, "Hugging Face config.json")->required();
    cmd->add_option("-o,--output", out_path, "Write the spec here instead of stdout");
    cmd->add_option("--gpu", gpu, "GPU preset of the cluster section");
    cmd->add_option("--nodes", nodes, "Nodes of the cluster section")->check(fits_int64());
    cmd->add_option("--gpus-per-node", gpus_per_node, "GPUs per node of the cluster section")->check(fits_int64());
    cmd->callback([] {
      std::vector<std::string> notes;
      std::map<std::string, std::string> config_fields;
      json doc = spec::spec_from_hf_config(spec::read_hf_config_file(path), path, &notes, &config_fields);
      for (const auto& note : notes) std::cerr << "note: " << note << "\n";
      doc["cluster"] = {{"gpu", gpu}, {"nodes", nodes}, {"gpus_per_node", gpus_per_node}};
      spec::RunSpec s;
      try {
        s = spec::parse_spec(doc);  // validate what we produce, its rules naming the config's fields
      } catch (const spec::SpecError& e) {
        throw spec::SpecError(spec::naming_config_fields(e.errors(), config_fields, path));
      }
      const std::string text = spec::to_json(s).dump(2) + "\n";
      if (out_path.empty()) {
        std::cout << text;
      } else {
        write_file_whole(out_path, text);
        std::cerr << "wrote " << out_path << "\n";
      }
    });
  }
}

}  // namespace tessera::cli
