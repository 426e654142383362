// Parsing and writing the run spec: one table of fields drives reading, writing, suggestions and set_field.
#include "spec/run_spec.hpp"
#include "spec/json_keys.hpp"
#include "spec/json_nesting.hpp"
#include "spec/utf8.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <charconv>
#include <string_view>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera::spec {

using nlohmann::json;

namespace {

// A value quoted in an error: its JSON, cut at 120 bytes (the whole of a 10 MB array is no help).
std::string show(const json& value) {
  constexpr size_t kMost = 120;
  std::string text = value.dump();
  if (text.size() > kMost) text = text.substr(0, kMost) + "… (" + std::to_string(text.size()) + " bytes)";
  return text;
}

struct Field {
  std::string name;
  bool required = false;  ///< must come from the document or the preset
  std::function<void(RunSpec&, const json&, const std::string& path, std::vector<FieldError>&)> read;
  std::function<json(const RunSpec&)> write;
};

template <typename S, typename T>
Field make_field(std::string name, S RunSpec::*section, T S::*member, bool required = false) {
  Field f;
  f.name = name;
  f.required = required;
  f.read = [section, member](RunSpec& spec, const json& v, const std::string& path, std::vector<FieldError>& errors) {
    T& target = spec.*section.*member;
    if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) return errors.push_back({path, path + " must be true or false, got " + show(v)});
      target = v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      if (!v.is_number_integer()) return errors.push_back({path, path + " must be an integer, got " + show(v)});
      // Not wrapped into range: 2^32 + 1 is no ZeRO stage 1, 2^63 no negative size.
      using Limits = std::numeric_limits<T>;
      const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(Limits::max())
                                               : v.get<int64_t>() >= static_cast<int64_t>(Limits::min()) &&
                                                     v.get<int64_t>() <= static_cast<int64_t>(Limits::max());
      if (!fits)
        return errors.push_back({path, path + " must be an integer from " + std::to_string(Limits::min()) + " to " +
                                           std::to_string(Limits::max()) + ", got " + show(v)});
      target = static_cast<T>(v.get<int64_t>());
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) return errors.push_back({path, path + " must be a number, got " + show(v)});
      target = v.get<double>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) return errors.push_back({path, path + " must be a string, got " + show(v)});
      target = v.get<std::string>();
    } else {
      const auto names = enum_spellings<T>();
      if (!v.is_string())
        return errors.push_back({path, path + " must be one of " + join_spellings(names) + ", got " + show(v)});
      const auto text = v.get<std::string>();
      if (auto parsed = enum_from_string<T>(text)) {
        target = *parsed;
      } else {
        std::string message = path + "=\"" + text + "\" must be one of " + join_spellings(names);
        message += did_you_mean(text, names);
        errors.push_back({path, message});
      }
    }
  };
  f.write = [section, member](const RunSpec& spec) -> json {
    const T& value = spec.*section.*member;
    if constexpr (std::is_enum_v<T>) {
      return std::string(to_string(value));
    } else {
      return value;
    }
  };
  return f;
}

struct Section {
  std::string name;
  std::vector<Field> fields;
  const Field* find(std::string_view field) const {
    for (const auto& f : fields)
      if (f.name == field) return &f;
    return nullptr;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& f : fields) out.push_back(f.name);
    return out;
  }
};

const std::vector<Section>& sections() {
  static const std::vector<Section> table = [] {
    using M = ModelSpec;
    using P = ParallelSpec;
    using T = TrainingSpec;
    using C = ClusterSpec;
    constexpr auto m = &RunSpec::model;
    constexpr auto p = &RunSpec::parallel;
    constexpr auto t = &RunSpec::training;
    constexpr auto c = &RunSpec::cluster;
    std::vector<Section> s;
    s.push_back({"model",
                 {make_field("preset", m, &M::preset), make_field("arch", m, &M::arch, true),
                  make_field("num_layers", m, &M::num_layers, true), make_field("hidden_size", m, &M::hidden_size, true),
                  make_field("num_attention_heads", m, &M::num_attention_heads, true),
                  make_field("num_query_groups", m, &M::num_query_groups),
                  make_field("ffn_hidden_size", m, &M::ffn_hidden_size), make_field("vocab_size", m, &M::vocab_size, true),
                  make_field("seq_length", m, &M::seq_length, true), make_field("normalization", m, &M::normalization),
                  make_field("activation", m, &M::activation), make_field("position_embedding", m, &M::position_embedding),
                  make_field("tie_embeddings", m, &M::tie_embeddings), make_field("num_experts", m, &M::num_experts),
                  make_field("moe_top_k", m, &M::moe_top_k), make_field("moe_ffn_hidden_size", m, &M::moe_ffn_hidden_size),
                  make_field("encoder_layers", m, &M::encoder_layers), make_field("decoder_layers", m, &M::decoder_layers),
                  make_field("decoder_seq_length", m, &M::decoder_seq_length)}});
    s.push_back({"parallel",
                 {make_field("tp", p, &P::tp), make_field("pp", p, &P::pp), make_field("dp", p, &P::dp),
                  make_field("cp", p, &P::cp), make_field("ep", p, &P::ep), make_field("vpp", p, &P::vpp),
                  make_field("first_stage_layers", p, &P::first_stage_layers),
                  make_field("last_stage_layers", p, &P::last_stage_layers),
                  make_field("sequence_parallel", p, &P::sequence_parallel), make_field("zero_stage", p, &P::zero_stage),
                  make_field("distributed_optimizer", p, &P::distributed_optimizer),
                  make_field("schedule", p, &P::schedule)}});
    s.push_back({"training",
                 {make_field("micro_batch_size", t, &T::micro_batch_size),
                  make_field("global_batch_size", t, &T::global_batch_size), make_field("precision", t, &T::precision),
                  make_field("recompute", t, &T::recompute), make_field("flash_attention", t, &T::flash_attention),
                  make_field("train_steps", t, &T::train_steps), make_field("lr", t, &T::lr),
                  make_field("min_lr", t, &T::min_lr), make_field("warmup_steps", t, &T::warmup_steps),
                  make_field("weight_decay", t, &T::weight_decay), make_field("grad_clip", t, &T::grad_clip),
                  make_field("seed", t, &T::seed), make_field("save_every", t, &T::save_every)}});
    s.push_back({"cluster",
                 {make_field("gpu", c, &C::gpu), make_field("nodes", c, &C::nodes),
                  make_field("gpus_per_node", c, &C::gpus_per_node)}});
    return s;
  }();
  return table;
}

const Section* find_section(std::string_view name) {
  for (const auto& s : sections())
    if (s.name == name) return &s;
  return nullptr;
}

// Names that Megatron's arguments or Hugging Face configs use for the spec's fields.
std::string alias_of(const std::string& key) {
  static const std::map<std::string, std::string> aliases = {
      {"tensor_model_parallel_size", "tp"}, {"tensor_parallel", "tp"}, {"tensor_parallel_size", "tp"},
      {"pipeline_model_parallel_size", "pp"}, {"pipeline_parallel", "pp"}, {"pipeline_parallel_size", "pp"},
      {"data_parallel_size", "dp"}, {"data_parallel", "dp"}, {"context_parallel_size", "cp"},
      {"context_parallel", "cp"}, {"expert_model_parallel_size", "ep"}, {"expert_parallel", "ep"},
      {"virtual_pipeline_model_parallel_size", "vpp"}, {"num_layers_per_virtual_pipeline_stage", "vpp"},
      {"use_distributed_optimizer", "distributed_optimizer"}, {"num_key_value_heads", "num_query_groups"},
      {"intermediate_size", "ffn_hidden_size"}, {"num_hidden_layers", "num_layers"},
      {"max_position_embeddings", "seq_length"}, {"seq_len", "seq_length"}, {"recompute_granularity", "recompute"},
      {"num_local_experts", "num_experts"}, {"num_experts_per_tok", "moe_top_k"}, {"mbs", "micro_batch_size"},
      {"gbs", "global_batch_size"}, {"clip_grad", "grad_clip"}, {"lr_warmup_iters", "warmup_steps"},
      {"train_iters", "train_steps"}, {"save_interval", "save_every"},
      {"decoder_first_pipeline_num_layers", "first_stage_layers"}, {"num_layers_in_first_pipeline_stage", "first_stage_layers"},
      {"decoder_last_pipeline_num_layers", "last_stage_layers"}, {"num_layers_in_last_pipeline_stage", "last_stage_layers"}};
  auto it = aliases.find(key);
  return it == aliases.end() ? std::string{} : it->second;
}

// The section other than `own` that has `key` (or its Megatron/HF alias) as a field: "parallel.tp"
// for a model.tp; empty when none has.
std::string field_of_other_section(const std::string& own, const std::string& key) {
  const std::string alias = alias_of(key);
  for (const auto& s : sections()) {
    if (s.name == own) continue;
    if (s.find(key)) return s.name + "." + key;
    if (!alias.empty() && s.find(alias)) return s.name + "." + alias;
  }
  return {};
}

std::string unknown_message(const std::string& path, const std::string& key, const std::vector<std::string>& valid) {
  std::string message = "unknown field " + path;
  std::string near = alias_of(key);
  if (near.empty() || std::find(valid.begin(), valid.end(), near) == valid.end()) near.clear();
  const auto section_dot = path.find('.');
  // A field of another section spelled in this one ("model.tp"): that section's field.
  if (near.empty() && section_dot != std::string::npos)
    if (auto other = field_of_other_section(path.substr(0, section_dot), key); !other.empty())
      return message + " (" + other.substr(other.find('.') + 1) + " belongs in " + other.substr(0, other.find('.')) +
             ": did you mean " + other + "?)";
  if (near.empty()) near = closest_name(key, valid);
  if (!near.empty()) {
    const auto dot = path.rfind('.');
    message += " (did you mean " + (dot == std::string::npos ? near : path.substr(0, dot + 1) + near) + "?)";
  } else {
    message += " (valid: " + join_spellings(valid) + ")";
  }
  return message;
}

// The fields whose 0 in the struct means "derive" (apply_derived_defaults, and decoder_seq_length,
// which follows seq_length): what omitting one gives, nullptr for any other field.
const char* derived_when_omitted(const std::string& path) {
  static const std::map<std::string, const char*> derived = {
      {"parallel.dp", "to derive dp from the cluster"},
      {"training.global_batch_size", "for one microbatch per data-parallel rank"},
      {"model.num_query_groups", "for one per attention head, MHA"},
      {"model.ffn_hidden_size", "for 4·hidden_size"},
      {"model.moe_ffn_hidden_size", "for ffn_hidden_size"},
      {"model.decoder_seq_length", "to follow seq_length"},
  };
  const auto it = derived.find(path);
  return it == derived.end() ? nullptr : it->second;
}

// Fields whose 0 in the struct means "derive": fill them from the others.
void apply_derived_defaults(RunSpec& spec) {
  auto& m = spec.model;
  if (m.num_query_groups == 0) m.num_query_groups = m.num_attention_heads;
  // Overflowing defaults stay 0 and are reported by validate() with the field that caused them.
  if (m.ffn_hidden_size == 0 && __builtin_mul_overflow(m.hidden_size, 4, &m.ffn_hidden_size)) m.ffn_hidden_size = 0;
  if (m.moe_ffn_hidden_size == 0) m.moe_ffn_hidden_size = m.ffn_hidden_size;
  if (m.arch == Arch::t5 && m.num_layers == 0 && __builtin_add_overflow(m.encoder_layers, m.decoder_layers, &m.num_layers))
    m.num_layers = 0;
  if (spec.training.global_batch_size == 0) {
    const int64_t dp = spec.data_parallel();
    if (dp > 0 && __builtin_mul_overflow(spec.training.micro_batch_size, dp, &spec.training.global_batch_size))
      spec.training.global_batch_size = 0;
  }
}

}  // namespace

int64_t RunSpec::data_parallel() const {
  if (parallel.dp > 0) return parallel.dp;
  int64_t model_parallel = 0, world = 0;
  // Called on unvalidated specs too: an overflowing product means "cannot be derived".
  if (__builtin_mul_overflow(parallel.tp, parallel.pp, &model_parallel) ||
      __builtin_mul_overflow(model_parallel, parallel.cp, &model_parallel) ||
      __builtin_mul_overflow(cluster.nodes, cluster.gpus_per_node, &world))
    return 0;
  if (model_parallel <= 0 || world <= 0 || world % model_parallel != 0) return 0;
  return world / model_parallel;
}

int64_t RunSpec::num_microbatches() const {
  int64_t per_step = 0;
  if (__builtin_mul_overflow(training.micro_batch_size, data_parallel(), &per_step) || per_step <= 0) return 0;
  return training.global_batch_size / per_step;
}

namespace {

// The shape of a pipeline's split of the layers: the end stages' own counts (0: not set apart), the
// stages between them and what each holds. Overflow-safe on any spec (also one that breaks a rule).
struct Split {
  int64_t first = 0, last = 0;  ///< set end stages' layers, 0 where not set
  int64_t others = 0;           ///< stages sharing the rest
  int64_t share = 0;            ///< the rest's share of each of them; 0 where it does not split
};

Split split_of(const RunSpec& spec) {
  const auto& p = spec.parallel;
  Split out;
  if (p.pp < 1) return out;
  if (p.pp > 1) {
    out.first = std::max<int64_t>(p.first_stage_layers, 0);
    out.last = std::max<int64_t>(p.last_stage_layers, 0);
  }
  out.others = p.pp - (out.first > 0) - (out.last > 0);
  int64_t rest = 0;
  if (__builtin_sub_overflow(spec.model.num_layers, out.first, &rest) || __builtin_sub_overflow(rest, out.last, &rest)) return out;
  if (out.others > 0 && rest > 0 && rest % out.others == 0) out.share = rest / out.others;
  return out;
}

}  // namespace

int64_t RunSpec::stage_layers(int64_t stage) const {
  const auto& p = parallel;
  if (p.pp < 1 || stage < 0 || stage >= p.pp) return 0;
  const Split split = split_of(*this);
  if (stage == 0 && split.first > 0) return split.first;
  if (stage == p.pp - 1 && split.last > 0) return split.last;
  return split.share;
}

bool RunSpec::stages_split_layers() const {
  const auto& p = parallel;
  if (p.pp < 1 || p.vpp < 1 || model.num_layers < 1) return false;
  if (p.pp == 1 && sets_end_stages()) return false;  // validate(): a split needs two stages
  const Split split = split_of(*this);
  for (const int64_t end : {split.first, split.last})
    if (end > 0 && end % p.vpp != 0) return false;
  int64_t ends = 0;
  if (split.others == 0) return !__builtin_add_overflow(split.first, split.last, &ends) && ends == model.num_layers;
  return split.share > 0 && split.share % p.vpp == 0;
}

bool RunSpec::even_stages() const {
  if (!stages_split_layers()) return false;
  const Split split = split_of(*this);
  if (split.others == 0) return split.first == split.last;
  return (split.first == 0 || split.first == split.share) && (split.last == 0 || split.last == split.share);
}

std::optional<std::pair<int64_t, int64_t>> balanced_end_stages(int64_t num_layers, int64_t pp, int64_t vpp) {
  int64_t virtual_stages = 0;
  if (num_layers < 1 || pp < 2 || vpp < 1 || pp > num_layers || __builtin_mul_overflow(pp, vpp, &virtual_stages) ||
      num_layers % vpp != 0 || num_layers % virtual_stages == 0)
    return std::nullopt;
  const int64_t chunks = num_layers / vpp;  // layers in units of vpp: one per virtual stage of a stage
  const int64_t middle = pp == 2 ? 0 : (chunks + pp - 1) / pp;
  const int64_t ends = chunks - (pp - 2) * middle;
  if (ends < 2) return std::nullopt;
  const int64_t last = ends / 2;
  return std::pair{(ends - last) * vpp, last * vpp};
}

bool fit_stage_split(RunSpec& spec) {
  auto& p = spec.parallel;
  const int64_t layers = spec.model.num_layers;
  int64_t virtual_stages = 0;
  if (p.pp < 1 || p.vpp < 1 || layers < 1 || __builtin_mul_overflow(p.pp, p.vpp, &virtual_stages)) return false;
  if (layers % virtual_stages == 0) {
    p.first_stage_layers = p.last_stage_layers = 0;
    return true;
  }
  const auto ends = balanced_end_stages(layers, p.pp, p.vpp);
  if (!ends) return false;
  p.first_stage_layers = ends->first;
  p.last_stage_layers = ends->second;
  return true;
}

std::string RunSpec::stage_layers_text() const {
  if (!stages_split_layers()) return {};
  const Split split = split_of(*this);
  std::vector<std::pair<int64_t, int64_t>> runs;  // (layers, stages), equal neighbours merged
  auto add = [&](int64_t layers, int64_t stages) {
    if (stages <= 0) return;
    if (!runs.empty() && runs.back().first == layers) runs.back().second += stages;
    else runs.emplace_back(layers, stages);
  };
  if (split.first > 0) add(split.first, 1);
  add(split.share, split.others);
  if (split.last > 0) add(split.last, 1);
  std::string out;
  for (const auto& [layers, stages] : runs) {
    if (!out.empty()) out += ", ";
    out += std::to_string(layers);
    if (stages > 1) out += " × " + std::to_string(stages);
  }
  return out;
}

std::pair<int64_t, int64_t> RunSpec::chunk_layers(int64_t virtual_stage) const {
  const auto& p = parallel;
  int64_t virtual_stages = 0;
  if (p.pp < 1 || p.vpp < 1 || __builtin_mul_overflow(p.pp, p.vpp, &virtual_stages) || virtual_stage < 0 ||
      virtual_stage >= virtual_stages || !stages_split_layers())
    return {0, 0};
  const int64_t chunk = virtual_stage / p.pp, stage = virtual_stage % p.pp;
  // Chunk c of every stage starts at c·num_layers/vpp; before this stage's come stage 0's and the
  // middle stages' (stage 1 .. stage-1) shares of 1/vpp.
  int64_t first = chunk * (model.num_layers / p.vpp);
  if (stage > 0) first += stage_layers(0) / p.vpp;
  if (stage > 1) first += (stage - 1) * (stage_layers(1) / p.vpp);
  return {first, first + stage_layers(stage) / p.vpp};
}

int64_t RunSpec::effective_zero_stage() const {
  if (parallel.zero_stage > 0) return parallel.zero_stage;
  return parallel.distributed_optimizer ? 1 : 0;
}

std::string RunSpec::layout_label() const {
  std::string out = "TP" + std::to_string(parallel.tp) + "·PP" + std::to_string(parallel.pp) + "·DP" +
                    std::to_string(data_parallel());
  if (parallel.cp > 1) out += "·CP" + std::to_string(parallel.cp);
  if (parallel.ep > 1) out += "·EP" + std::to_string(parallel.ep);
  if (parallel.vpp > 1) out += "·VPP" + std::to_string(parallel.vpp);
  if (parallel.sequence_parallel) out += "·SP";
  return out;
}

namespace {

// The model preset `from` where the name spells it, in any case and with or without separators
// ("Llama-3-70B", "llama3 70b" for llama3-70b), as the preset `to`; the name as it is when either is
// no preset (a custom model).
std::string rename_model(const std::string& name, const std::string& from, const std::string& to) {
  if (from.empty() || to.empty() || from == to) return name;
  std::string pattern;
  for (const char c : from) {
    if (!std::isalnum(static_cast<unsigned char>(c))) continue;
    if (!pattern.empty()) pattern += "[-_ .]?";
    pattern += c;
  }
  if (pattern.empty()) return name;
  const std::regex spelled("(^|[^A-Za-z0-9])" + pattern + "(?![A-Za-z0-9])", std::regex::icase);
  return std::regex_replace(name, spelled, "$01" + to);
}

// A GPU preset's model as names write it: "H100" of "NVIDIA H100 80GB SXM"; empty for others (cpu).
std::string gpu_model(const std::string& id) {
  const auto* gpu = PresetCatalog::builtin().gpu(id);
  static const std::regex nvidia("^NVIDIA ([A-Z][A-Z0-9]*[0-9][A-Za-z0-9]*)\\b.*");
  std::smatch m;
  return gpu && std::regex_match(gpu->name, m, nvidia) ? m[1].str() : std::string();
}

}  // namespace

std::string relabel_model(const std::string& name, const RunSpec& spec, const RunSpec& before) {
  // A new model or GPU: the preset the name spells ("Llama-3-70B" stayed above Mixtral's figures),
  // and the GPU's model as a word of its own ("64 H100" becomes "64 H200").
  std::string relabelled = rename_model(name, before.model.preset, spec.model.preset);
  const std::string gpu_before = gpu_model(before.cluster.gpu), gpu_now = gpu_model(spec.cluster.gpu);
  if (!gpu_before.empty() && !gpu_now.empty() && gpu_before != gpu_now)
    relabelled = std::regex_replace(relabelled, std::regex("(^|[^A-Za-z0-9])" + gpu_before + "(?![A-Za-z0-9])", std::regex::icase),
                                    "$01" + gpu_now);
  return relabelled;
}

std::string relabel_layout(const std::string& name, const RunSpec& spec, int64_t world_before, const RunSpec* before) {
  // "TP<n>" then any of "·PP<n>", "·DP<n>", "·CP<n>", "·EP<n>", "·VPP<n>", "·SP" ('·' is two bytes of UTF-8).
  static const std::regex layout("TP[0-9]+(\xC2\xB7(PP|DP|CP|EP|VPP)[0-9]+|\xC2\xB7SP)*");
  static const std::regex zero("ZeRO-[0-9]");
  // A spelled layout stays as written unless something it spells is no longer so: a name that leaves out
  // ·SP, PP1 or EP8 is not rewritten by an edit that changed none of what it says (a ZeRO stage).
  static const std::regex part("(TP|PP|DP|CP|EP|VPP)([0-9]+)|SP");
  const auto& p = spec.parallel;
  const std::map<std::string, int64_t> actual{{"TP", p.tp}, {"PP", p.pp}, {"DP", spec.data_parallel()},
                                              {"CP", p.cp}, {"EP", p.ep}, {"VPP", p.vpp}};
  const auto still_true = [&](const std::string& spelled) {
    for (std::sregex_iterator it(spelled.begin(), spelled.end(), part), end; it != end; ++it) {
      if ((*it)[0] == "SP") {
        if (!p.sequence_parallel) return false;
        continue;
      }
      const std::string digits = (*it)[2];
      int64_t count = 0;
      const auto [stop, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
      if (ec != std::errc() || stop != digits.data() + digits.size() || count != actual.at((*it)[1])) return false;
    }
    return true;
  };
  std::string relabelled;
  auto rest = name.cbegin();
  for (std::sregex_iterator it(name.begin(), name.end(), layout), end; it != end; ++it) {
    relabelled.append(rest, (*it)[0].first);
    // The layout label of the spec before, whole, follows the spec: it said everything, and EP8 or ·VPP2
    // added leave it still true but no longer whole.
    const bool was_whole = before && it->str() == before->layout_label();
    relabelled += still_true(it->str()) && !was_whole ? it->str() : spec.layout_label();
    rest = (*it)[0].second;
  }
  relabelled.append(rest, name.cend());
  relabelled = std::regex_replace(relabelled, zero, "ZeRO-" + std::to_string(spec.effective_zero_stage()));
  if (before) relabelled = relabel_model(relabelled, spec, *before);
  if (before && before->parallel.schedule != p.schedule) {
    // The schedule it names, as a word in any case ("interleaved", "1F1B"): a layout applied from the
    // search kept "interleaved" beside its zb-h1.
    const std::string was(to_string(before->parallel.schedule)), now(to_string(p.schedule));
    const std::regex word("(^|[^A-Za-z0-9-])" + was + "(?=$|[^A-Za-z0-9-])", std::regex::icase);  // [a-z0-9-]: no escapes
    relabelled = std::regex_replace(relabelled, word, "$01" + now);  // "$01": "$1" + "1f1b" read as group 11
  }
  const int64_t world = spec.world_size();
  if (world_before <= 0 || world <= 0 || world == world_before) return relabelled;
  // The count of devices alone: after the start, a space or "(" (not "GPT-2", "v1.64" or "x64"), and
  // before a space and GPUs, CPUs, ranks or a GPU's model ("64 H100", "8 B200"; not "8 layers").
  const std::regex count("(^|[\\s(])" + std::to_string(world_before) +
                         "(?= (GPUs?|CPUs?|ranks?|[A-Z][A-Z0-9]*[0-9][A-Za-z0-9]*)\\b)");
  return std::regex_replace(relabelled, count, "$01" + std::to_string(world));  // $01: group 1 before digits
}

std::string nearest_field_path(std::string_view path) {
  const auto dot = path.find('.');
  const Section* section = dot == std::string_view::npos ? nullptr : find_section(path.substr(0, dot));
  const std::string key(path.substr(dot == std::string_view::npos ? 0 : dot + 1));
  std::vector<std::string> names, paths;
  for (const auto& s : sections())
    if (!section || &s == section)
      for (const auto& name : s.names()) {
        names.push_back(name);
        paths.push_back(s.name + "." + name);
      }
  std::string near = alias_of(key);
  if (near.empty() || std::find(names.begin(), names.end(), near) == names.end()) near = closest_name(key, names);
  return near.empty() ? near : paths[std::find(names.begin(), names.end(), near) - names.begin()];
}

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names = {"model", "parallel", "training", "cluster"};
  return names;
}

const std::vector<std::string>& field_names(std::string_view section) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> names = [] {
    std::map<std::string, std::vector<std::string>, std::less<>> out;
    for (const auto& s : sections()) out[s.name] = s.names();
    return out;
  }();
  static const std::vector<std::string> none;
  auto it = names.find(section);
  return it == names.end() ? none : it->second;
}

RunSpec parse_spec(const json& document, const PresetCatalog& presets, Rules rules) {
  std::vector<FieldError> errors;
  if (!document.is_object()) throw SpecError({{"", "a run spec must be a JSON object, got " + show(document)}});

  std::vector<std::string> top_level = {"name"};
  for (const auto& s : section_names()) top_level.push_back(s);
  for (const auto& [key, value] : document.items()) {
    if (std::find(top_level.begin(), top_level.end(), key) == top_level.end())
      errors.push_back({key, unknown_message(key, key, top_level)});
  }

  RunSpec spec;
  if (document.contains("name")) {
    if (document["name"].is_string()) spec.name = document["name"].get<std::string>();
    else errors.push_back({"name", "name must be a string, got " + show(document["name"])});
  }

  std::set<std::string> given;  // dotted paths that the document or a preset set
  for (const auto& section : sections()) {
    if (!document.contains(section.name)) continue;
    const json& body = document[section.name];
    if (!body.is_object()) {
      errors.push_back({section.name, section.name + " must be a JSON object, got " + show(body)});
      continue;
    }
    // A model preset fills the whole section first; explicit fields override it.
    if (section.name == "model" && body.contains("preset")) {
      const json& id = body["preset"];
      if (!id.is_string()) {
        errors.push_back({"model.preset", "model.preset must be a string, got " + show(id)});
      } else if (const ModelPreset* preset = presets.model(id.get<std::string>())) {
        for (const auto& [key, value] : preset->model.items()) {
          if (const Field* f = section.find(key)) {
            f->read(spec, value, "model." + key, errors);
            given.insert("model." + key);
          }
        }
      } else {
        std::string message = "model.preset=\"" + id.get<std::string>() + "\" is not a known model preset";
        if (const auto hint = did_you_mean(id.get<std::string>(), presets.model_ids()); !hint.empty())
          message += hint;
        else
          message += " (known: " + join_spellings(presets.model_ids()) + ")";
        errors.push_back({"model.preset", message});
      }
    }
    for (const auto& [key, value] : body.items()) {
      const std::string path = section.name + "." + key;
      const Field* f = section.find(key);
      if (!f) {
        errors.push_back({path, unknown_message(path, key, section.names())});
        continue;
      }
      if (path == "model.preset" && !value.is_string()) continue;  // said above, once
      f->read(spec, value, path, errors);
      given.insert(path);
      // 0 in the struct means "derive"; given as 0 (or less) it is a mistake, not a request to derive.
      if (const char* omitted = derived_when_omitted(path); omitted && value.is_number_integer() && value.get<int64_t>() <= 0)
        errors.push_back({path, path + "=" + show(value) + " must be a positive integer (omit it " + omitted + ")"});
    }
  }

  // A model.preset that is not known explains every model field it would have given: said once.
  const bool unknown_preset = std::any_of(errors.begin(), errors.end(), [](const FieldError& e) { return e.field == "model.preset"; });
  for (const auto& section : sections()) {
    if (unknown_preset && section.name == "model") continue;
    for (const auto& f : section.fields) {
      const std::string path = section.name + "." + f.name;
      const bool t5_layers = spec.model.arch == Arch::t5 && path == "model.num_layers" &&
                             given.count("model.encoder_layers") && given.count("model.decoder_layers");
      if (f.required && !given.count(path) && !t5_layers)
        errors.push_back({path, path + " is missing: give it, or start from a model.preset"});
    }
  }
  if (!errors.empty()) throw SpecError(std::move(errors));

  apply_derived_defaults(spec);
  if (rules != Rules::none) require_valid(spec, presets, rules);
  return spec;
}

json parse_spec_json(const std::string& text, const std::string& what, const std::string& kind) {
  // A file that is no JSON at all (a binary, a tar): said as such, before the nesting check reads its
  // bytes as brackets ("nests arrays and objects more than 64 deep" of a random file).
  size_t first = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;  // a UTF-8 byte order mark
  first = text.find_first_not_of(" \t\r\n", first);
  if (first == std::string::npos)
    throw SpecError({{"", what + " is empty (" + kind + " is one JSON object, {…})"}});
  if (std::string_view("{[\"-0123456789tfn").find(text[first]) == std::string_view::npos)
    throw SpecError({{"", what + " is not JSON: it starts with " + byte_at(text, first) + " (" + kind + " is one JSON object, {…})"}});
  if (auto error = json_text_error(text, what)) throw SpecError({{"", *error}});
  std::optional<std::string> duplicate;
  json document;
  try {
    document = parse_json_unique_keys(text, duplicate);
  } catch (const json::exception& e) {  // syntax errors, and numbers out of range
    throw SpecError({{"", what + " is not valid JSON: " + json_error_reason(e.what())}});
  }
  if (duplicate)
    throw SpecError({{shown_key_path(*duplicate),
                      what + " gives " + (duplicate->empty() ? "the key \"\"" : shown_key_path(*duplicate)) + " twice (which one is meant?)"}});
  return document;
}

RunSpec parse_stored_spec(const json& stored) {
  json document = stored;
  if (document.is_object() && document.contains("training") && document["training"].is_object()) {
    auto& training = document["training"];
    if (const auto gbs = training.find("global_batch_size"); gbs != training.end() && gbs->is_number_integer() && *gbs == 0)
      training.erase(gbs);
  }
  return parse_spec(document);
}

RunSpec parse_spec_text(const std::string& text, const PresetCatalog& presets, Rules rules) {
  return parse_spec(parse_spec_json(text, "the spec"), presets, rules);
}

std::string read_spec_file_text(const std::string& path, const std::string& what, int pipe_wait_ms) {
  const auto cannot = [&](int error) { return SpecError({{"", "cannot read " + what + " " + path + ": " + std::strerror(error)}}); };
  // Opened without blocking, and a pipe then waited on for up to pipe_wait_ms: a named pipe nobody
  // writes to held the workbench in open() for good (File ▸ Open). A command line waits as before,
  // for a writer that comes after it (`mkfifo p; tessera-cli launch p & cat spec.json > p`).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw cannot(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw cannot(errno);
  if (S_ISDIR(st.st_mode)) throw SpecError({{"", what + " " + path + " is a directory"}});
  if (S_ISFIFO(st.st_mode)) {
    // Until written to, or until a writer that came closes it (a writer not yet there is no end).
    pollfd wanted{fd, POLLIN, 0};
    int ready = 0;
    while ((ready = ::poll(&wanted, 1, pipe_wait_ms)) < 0 && errno == EINTR) {
    }
    if (ready < 0) throw cannot(errno);
    if (ready == 0)
      throw SpecError({{"", what + " " + path + " is a pipe that nothing was written to in " +
                                (pipe_wait_ms % 1000 == 0 ? std::to_string(pipe_wait_ms / 1000) + " s" : std::to_string(pipe_wait_ms) + " ms")}});
  }
  if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) throw cannot(errno);
  // Read up to the limit and no further: /dev/zero took 4.7 GB in 10 s.
  std::string text;
  std::vector<char> chunk(1 << 16);
  for (;;) {
    const ssize_t got = ::read(fd, chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw cannot(errno);
    if (got == 0) break;
    text.append(chunk.data(), static_cast<size_t>(got));
    if (static_cast<int64_t>(text.size()) > kMaxSpecFileBytes)
      throw SpecError({{"", what + " " + path + " is larger than " + std::to_string(kMaxSpecFileBytes >> 20) +
                                " MiB: no run spec is (is it the file meant?)"}});
  }
  return text;
}

namespace {

// The spec in `text`, read from `path`: a problem of the whole document names the file.
RunSpec parse_spec_file_text(const std::string& path, const std::string& text, const PresetCatalog& presets, Rules rules) {
  try {
    return parse_spec_text(text, presets, rules);
  } catch (const SpecError& e) {
    std::vector<FieldError> errors = e.errors();
    if (errors.size() == 1 && errors[0].field.empty()) errors[0].message = path + ": " + errors[0].message;
    throw SpecError(std::move(errors));
  }
}

}  // namespace

RunSpec load_spec_file(const std::string& path, const PresetCatalog& presets, Rules rules, int pipe_wait_ms) {
  return parse_spec_file_text(path, read_spec_file_text(path, "spec file", pipe_wait_ms), presets, rules);
}

RunSpec load_spec_file(const std::string& path, std::string& text) {
  text = read_spec_file_text(path);
  return parse_spec_file_text(path, text, PresetCatalog::builtin(), Rules::all);
}

nlohmann::ordered_json to_json(const RunSpec& spec, JsonFields fields) {
  nlohmann::ordered_json out;
  if (!spec.name.empty()) out["name"] = spec.name;
  for (const auto& section : sections()) {
    nlohmann::ordered_json body = nlohmann::ordered_json::object();
    for (const auto& f : section.fields) {
      if (section.name == "model" && f.name == "preset" && spec.model.preset.empty()) continue;
      if (section.name == "parallel" && f.name == "dp" && spec.parallel.dp == 0) continue;
      if (section.name == "model" && f.name == "decoder_seq_length" && spec.model.decoder_seq_length == 0) continue;
      // An even split is left out for agents, so that those of releases before uneven stages launch it.
      const bool unset_end = (f.name == "first_stage_layers" && spec.parallel.first_stage_layers == 0) ||
                             (f.name == "last_stage_layers" && spec.parallel.last_stage_layers == 0);
      if (fields == JsonFields::for_agents && section.name == "parallel" && unset_end) continue;
      if (fields == JsonFields::for_agents && section.name == "training" && f.name == "save_every" &&
          spec.training.save_every == 0)
        continue;
      if (section.name == "model" && (f.name == "encoder_layers" || f.name == "decoder_layers") &&
          spec.model.arch != Arch::t5)
        continue;
      body[f.name] = f.write(spec);
    }
    out[section.name] = body;
  }
  return out;
}

void set_field(RunSpec& spec, std::string_view dotted_path, const json& value, const PresetCatalog& presets) {
  const auto dot = dotted_path.find('.');
  const std::string path(dotted_path);
  if (path == "name") {
    if (!value.is_string()) throw SpecError({{path, "name must be a string, got " + show(value)}});
    spec.name = value.get<std::string>();
    return;
  }
  const Section* section = dot == std::string_view::npos ? nullptr : find_section(dotted_path.substr(0, dot));
  // "parallel=4": a whole section, which no value sets (its nearest field was suggested, "model" read
  // as "cluster.nodes").
  if (const Section* whole = dot == std::string_view::npos ? find_section(dotted_path) : nullptr)
    throw SpecError({{path, path + " is a section, not a field: set one of its fields, as " + path + "." +
                                whole->fields.front().name + " (its fields: " + join_spellings(whole->names()) + ")"}});
  if (!section) {
    // "tp" or "paralel.tp": the field meant, from every section and the aliases.
    const std::string near = nearest_field_path(path);
    if (near.empty()) throw SpecError({{path, unknown_message(path, path, section_names())}});
    throw SpecError({{path, "unknown field " + path + " (did you mean " + near + "?)"}});
  }
  const std::string key(dotted_path.substr(dot + 1));
  const Field* f = section->find(key);
  if (!f) throw SpecError({{path, unknown_message(path, key, section->names())}});
  std::vector<FieldError> errors;
  if (path == "model.preset") {
    if (!value.is_string()) throw SpecError({{path, "model.preset must be a string, got " + show(value)}});
    const ModelPreset* preset = presets.model(value.get<std::string>());
    if (!preset) throw SpecError({{path, "model.preset=\"" + value.get<std::string>() + "\" is not a known model preset"}});
    RunSpec updated = spec;
    updated.model = ModelSpec{};
    for (const auto& [k, v] : preset->model.items())
      if (const Field* pf = section->find(k)) pf->read(updated, v, "model." + k, errors);
    updated.model.preset = preset->id;
    if (!errors.empty()) throw SpecError(std::move(errors));
    apply_derived_defaults(updated);
    spec = std::move(updated);
    return;
  }
  RunSpec updated = spec;
  f->read(updated, value, path, errors);
  if (!errors.empty()) throw SpecError(std::move(errors));
  spec = std::move(updated);
}

}  // namespace tessera::spec
