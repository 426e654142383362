// The run spec: model + parallel layout + training + cluster, as one validated value.
// JSON field names are Megatron's vocabulary; docs/spec.md documents every field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/enums.hpp"
#include "spec/errors.hpp"
#include "spec/presets.hpp"

namespace tessera::spec {

struct ModelSpec {
  std::string preset;  ///< preset id the section started from ("" = custom)
  Arch arch = Arch::gpt;
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_query_groups = 0;      ///< 0 in JSON = same as num_attention_heads (MHA)
  int64_t ffn_hidden_size = 0;       ///< 0 in JSON = 4 * hidden_size
  int64_t vocab_size = 0;
  int64_t seq_length = 0;
  Normalization normalization = Normalization::layernorm;
  Activation activation = Activation::gelu;
  PositionEmbedding position_embedding = PositionEmbedding::learned;
  bool tie_embeddings = true;
  int64_t num_experts = 1;           ///< 1 = dense MLP
  int64_t moe_top_k = 1;
  int64_t moe_ffn_hidden_size = 0;   ///< 0 in JSON = ffn_hidden_size
  int64_t encoder_layers = 0;        ///< t5 only
  int64_t decoder_layers = 0;        ///< t5 only
  int64_t decoder_seq_length = 0;    ///< t5 only; 0 (or absent) = follows seq_length (Megatron's --decoder-seq-length)

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  /// Tokens of one sample that layer `layer` processes: a t5 decoder layer's decoder_seq_length, else
  /// seq_length (a t5 encoder's, and every layer of the other architectures).
  int64_t layer_seq_length(int64_t layer) const {
    return arch == Arch::t5 && layer >= encoder_layers && decoder_seq_length > 0 ? decoder_seq_length : seq_length;
  }
  /// Tokens of one sample that the output layer and the loss see: the decoder's for t5.
  int64_t output_seq_length() const { return arch == Arch::t5 && decoder_seq_length > 0 ? decoder_seq_length : seq_length; }
  bool is_moe() const { return num_experts > 1; }
  bool operator==(const ModelSpec&) const = default;
};

struct ParallelSpec {
  int64_t tp = 1, pp = 1;
  int64_t dp = 0;  ///< 0 = derived from the cluster size (world / (tp*pp*cp))
  int64_t cp = 1, ep = 1, vpp = 1;
  /// Layers of the first and of the last pipeline stage, 0 = an even share (Megatron-LM's
  /// --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers): the other stages
  /// share the remaining layers evenly. Llama 3 405B trains 126 layers on 16 stages as 7, 8 × 14, 7.
  int64_t first_stage_layers = 0, last_stage_layers = 0;
  bool sequence_parallel = false;
  int zero_stage = 0;
  bool distributed_optimizer = false;
  Schedule schedule = Schedule::one_f_one_b;
  bool operator==(const ParallelSpec&) const = default;
};

struct TrainingSpec {
  int64_t micro_batch_size = 1;
  int64_t global_batch_size = 0;  ///< 0 in JSON = micro_batch_size * dp (one microbatch)
  Precision precision = Precision::bf16;
  Recompute recompute = Recompute::none;
  bool flash_attention = true;
  int64_t train_steps = 100;
  double lr = 3e-4;
  double min_lr = 3e-5;
  int64_t warmup_steps = 10;
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  int64_t seed = 1234;
  int64_t save_every = 0;  ///< checkpoint every N steps; 0: only at the end (tessera-train --save-every overrides)
  bool operator==(const TrainingSpec&) const = default;
};

struct ClusterSpec {
  std::string gpu = "h100-sxm";
  int64_t nodes = 1;
  int64_t gpus_per_node = 8;
  int64_t world_size() const { return nodes * gpus_per_node; }
  bool operator==(const ClusterSpec&) const = default;
};

/// Layers of the first and of the last stage (first_stage_layers, last_stage_layers) that split
/// `num_layers` over `pp` stages of `vpp` virtual stages each where pp·vpp does not divide them: the
/// other stages hold the fewest layers that leave the end stages no more than each of them, the end
/// stages share the rest (the last, which also holds the output layer and the loss, the smaller
/// half). Llama 3 405B's 126 layers on 16 stages: 7 and 7. Nothing where pp·vpp divides num_layers
/// (an even split) or no split can be made.
std::optional<std::pair<int64_t, int64_t>> balanced_end_stages(int64_t num_layers, int64_t pp, int64_t vpp);

/// The longest spec name validate() accepts, in bytes.
inline constexpr int64_t kMaxNameBytes = 1024;

struct RunSpec {
  std::string name;
  ModelSpec model;
  ParallelSpec parallel;
  TrainingSpec training;
  ClusterSpec cluster;
  bool operator==(const RunSpec&) const = default;

  /// dp as given, or derived from the cluster (0 when it cannot be derived).
  int64_t data_parallel() const;
  int64_t world_size() const { return cluster.world_size(); }
  int64_t num_microbatches() const;
  /// ZeRO stage in force: zero_stage, or 1 when only distributed_optimizer is set.
  int64_t effective_zero_stage() const;
  /// Layers that pipeline stage `stage` (0 ≤ stage < pp) holds over all its virtual stages; 0 for a
  /// stage out of range or a split that cannot be made (validate() names the rule).
  int64_t stage_layers(int64_t stage) const;
  /// The layers [first, end) of virtual stage `virtual_stage` = chunk·pp + stage, as Megatron-LM
  /// builds them: chunk c of every stage takes 1/vpp of that stage's layers, in stage order, from
  /// layer c·num_layers/vpp. An empty range for a split that cannot be made.
  std::pair<int64_t, int64_t> chunk_layers(int64_t virtual_stage) const;
  /// Whether stage_layers splits model.num_layers: every stage holds a multiple of vpp layers, at least
  /// vpp, and together they hold them all.
  bool stages_split_layers() const;
  /// Whether every stage holds as many layers (an even split, whether or not first_stage_layers or
  /// last_stage_layers spell it): what fixes which layers a rank holds, for checkpoints and exports.
  bool even_stages() const;
  /// The layers of each stage, a run of equal ones as "count × stages": "7, 8 × 14, 7" (Llama 3 405B on
  /// 16 stages), "8 × 4" for an even split; empty where stages_split_layers() does not hold.
  std::string stage_layers_text() const;
  /// Whether first_stage_layers or last_stage_layers is set (an even split may be so spelled too).
  bool sets_end_stages() const { return parallel.first_stage_layers > 0 || parallel.last_stage_layers > 0; }
  /// Whether the stages split the layers and not all hold as many: what labels, exports and
  /// checkpoints spell out.
  bool uneven_stages() const { return stages_split_layers() && !even_stages(); }
  /// "TP2·PP4·DP8", with ·CP, ·EP and ·VPP when above 1 and ·SP when on: the layout as the CLI and
  /// the GUI name it.
  std::string layout_label() const;
};

/// Sets first_stage_layers and last_stage_layers to the split a layout search gives spec's pp and
/// vpp: an even one where pp·vpp divides the layers, else the end stages set apart
/// (balanced_end_stages). False, the spec unchanged, where neither can be made.
bool fit_stage_split(RunSpec& spec);

/// `name` with every layout it spells ("TP8·PP4·DP2", "TP2·DP4", any layout_label()) that says something
/// no longer so of `spec` (a count, ·SP) replaced by `spec`'s layout_label() — one that leaves out what
/// it does not say stays — and every "ZeRO-<n>" by its ZeRO stage in force; with `world_before` (the
/// GPU count the name was written for) other than spec's world size, also that count where it stands
/// as a number before a word ("on 64 H100" becomes "on 128 H100"). A name that spells none of these
/// comes back as it is. With `before` (the spec the name was written for), a layout that is its whole
/// layout_label() becomes `spec`'s whole label, also where the edit added a part it leaves out (EP8),
/// and the model and GPU it spells follow (relabel_model: "Llama-3-70B" for llama3-70b becomes
/// "mixtral-8x7b", "H100" "H200"), and so does before's schedule named as a word in any case
/// ("interleaved" becomes "zb-h1").
/// What a new layout or cluster does to a run's name.
std::string relabel_layout(const std::string& name, const RunSpec& spec, int64_t world_before = 0,
                           const RunSpec* before = nullptr);
/// relabel_layout's model and GPU part alone (for an edit while the layout does not suit the cluster):
/// before's model preset, spelled in any case with or without separators, becomes spec's preset id,
/// and before's GPU model word, in any case, spec's ("H100" → "H200"; two presets of one model, A100
/// 40GB and 80GB, leave the name as it is).
std::string relabel_model(const std::string& name, const RunSpec& spec, const RunSpec& before);

/// Which rules validate() checks: all, or all but the layout's (the parallel section's counts and
/// ZeRO stage, and the rules that join the layout to the model, the cluster and the batch): what a
/// layout search needs of the spec it starts from, whose own layout may not suit a new cluster.
/// parse_spec also takes `none`: every field read and type-checked, no rule checked — what the
/// workbench opens, so that the designer marks the problems of a file instead of refusing it.
enum class Rules { all, except_layout, none };

/// Reads a spec: presets are applied first, explicit fields override them, defaults fill the
/// rest, then it is validated. Throws SpecError listing every problem.
RunSpec parse_spec(const nlohmann::json& document, const PresetCatalog& presets = PresetCatalog::builtin(),
                   Rules rules = Rules::all);
/// JSON text read as a document the way a spec is (`what` names it in errors, `kind` says what it
/// should be: "a run spec", "a config.json"): nested at most kMaxJsonNesting deep, no key twice in one
/// object (which one was meant?). Throws SpecError.
nlohmann::json parse_spec_json(const std::string& text, const std::string& what, const std::string& kind = "a run spec");
/// Reads a spec from JSON text (a syntax error names the line and column).
RunSpec parse_spec_text(const std::string& text, const PresetCatalog& presets = PresetCatalog::builtin(),
                        Rules rules = Rules::all);
/// A spec a run history stored (any JSON form of it): as parse_spec, with what earlier releases
/// accepted read as they read it (training.global_batch_size 0: derived), so that older runs keep
/// their spec.
RunSpec parse_stored_spec(const nlohmann::json& stored);
/// The bytes of spec file `path` (`what` names it: "spec file", "config file"), at most
/// kMaxSpecFileBytes; throws SpecError naming the file and the reason (a directory, unreadable with
/// the system's reason, larger than the limit). A pipe (`<(jq …)`, /dev/stdin, a named pipe) is read
/// once something is written to it, waiting up to `pipe_wait_ms` (-1: as long as it takes, as a
/// command line does; the workbench, which must not hang on a named pipe nobody writes to, gives a
/// few seconds).
inline constexpr int64_t kMaxSpecFileBytes = int64_t{16} << 20;
std::string read_spec_file_text(const std::string& path, const std::string& what = "spec file", int pipe_wait_ms = -1);
/// Reads a spec file (an unreadable file is a SpecError naming the path); `pipe_wait_ms` as for
/// read_spec_file_text.
RunSpec load_spec_file(const std::string& path, const PresetCatalog& presets = PresetCatalog::builtin(),
                       Rules rules = Rules::all, int pipe_wait_ms = -1);
/// load_spec_file that also gives the bytes it read, for a caller that keeps the file as written (a
/// launch records it): read once, so that what is kept is what was checked, and a pipe
/// (`launch <(…)`) is not opened a second time.
RunSpec load_spec_file(const std::string& path, std::string& text);

/// Every rule of docs/spec.md (or all but the layout's) checked on an assembled spec; empty when valid.
std::vector<FieldError> validate(const RunSpec& spec, const PresetCatalog& presets = PresetCatalog::builtin(),
                                 Rules rules = Rules::all);
/// Throws SpecError when validate() finds anything.
void require_valid(const RunSpec& spec, const PresetCatalog& presets = PresetCatalog::builtin(), Rules rules = Rules::all);

/// Which fields to_json writes: every field (what the history stores, compares and matches, and what
/// the GUI shows), or what an agent is sent: training.save_every left out at 0, its default, so that
/// an agent of the release before it (which refuses unknown fields) still launches a run that does
/// not checkpoint along the way; parallel.first_stage_layers and last_stage_layers likewise at 0.
enum class JsonFields { every, for_agents };

/// The spec as JSON (every field explicit unless `fields` says for_agents); parse_spec(to_json(s)) == s.
nlohmann::ordered_json to_json(const RunSpec& spec, JsonFields fields = JsonFields::every);

/// Names of the fields of each section, in documentation order (for suggestions and the GUI).
const std::vector<std::string>& section_names();
const std::vector<std::string>& field_names(std::string_view section);
/// The "section.field" a path that names no field most likely meant ("tp" or "foo.tp" ->
/// "parallel.tp", "parallel.tensor_parallel" -> "parallel.tp"): within the path's section when it
/// names one, else in every section; Megatron and Hugging Face aliases first. "" when none is near.
std::string nearest_field_path(std::string_view path);

/// Sets one field from its dotted path ("parallel.tp", or "name") and a JSON value, with the same type
/// checks as parse_spec (no validation of cross-field rules). Throws SpecError.
void set_field(RunSpec& spec, std::string_view dotted_path, const nlohmann::json& value,
               const PresetCatalog& presets = PresetCatalog::builtin());

}  // namespace tessera::spec
