// Layout search: the parallel layouts of one model, global batch and cluster (TP, CP, PP, VPP,
// schedule, EP, ZeRO stage, micro-batch size, recompute) planned one by one and ranked by predicted
// tokens/s among those that fit the GPU's memory. Used by `tessera-cli search` and the workbench's
// Search Layouts dialog; docs/user-guide.md ("Layout search") states the default space's rules.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "planner/plan.hpp"
#include "spec/run_spec.hpp"

namespace tessera::planner {

/// The values tried for each choice; every combination is a candidate. Sequence parallelism is not
/// a choice: it is on wherever TP > 1 allows it (same communication volume, 1/tp of the
/// activations that TP alone replicates).
struct SearchSpace {
  std::vector<int64_t> tp, cp, pp, vpp, ep, micro_batch_size;
  std::vector<int> zero_stage;
  std::vector<spec::Recompute> recompute;
  std::vector<spec::Schedule> schedule;
};

/// The space a user of Megatron-LM would try for `spec`'s model and cluster: TP within a node, CP
/// while a rank keeps 1024 tokens or more, PP dividing the layers and the world, up to 8 virtual
/// stages, EP dividing the experts, ZeRO 0-3, micro-batches 1-8, every recompute, and the 1F1B,
/// interleaved and ZB-H1 schedules (GPipe holds more memory than 1F1B for the same time). The spec's
/// own values are in it (those a spec can have). With `tessera_train`, only what tessera-train runs:
/// no CP, EP, ZB-H1 or ZeRO-2/3, whatever the spec's.
SearchSpace default_search_space(const spec::RunSpec& spec, bool tessera_train = false);

/// Throws spec::SpecError naming `search.<choice>` when a list is empty or holds a value no spec
/// could have (tp 0, zero_stage 4).
void check_search_space(const SearchSpace& space);

/// One layout that fits, with what the planner predicts of it.
struct RankedLayout {
  spec::RunSpec spec;  ///< the searched spec with this layout
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double bubble_fraction = 0;
  int64_t peak_bytes = 0;
};

struct SearchOptions {
  size_t top = 10;           ///< layouts kept, fastest first
  int threads = 0;           ///< 0: one per hardware thread
  double memory_fraction = 1.0;  ///< a layout fits when its peak is at most this share of the GPU's memory
  bool tessera_train = false;  ///< only layouts tessera-train runs (planner::tessera_train_problems)
  PlanOptions plan;          ///< memory profile, causal FLOPs, constants (grid and events are never built)
  /// Called on the calling thread about ten times a second, and once at the end: (planned, candidates).
  std::function<void(int64_t, int64_t)> progress;
  const std::atomic<bool>* cancel = nullptr;  ///< set to stop early; the result says cancelled
};

struct SearchResult {
  std::vector<RankedLayout> best;  ///< at most `top`, fastest first (ties: the simpler layout first)
  /// Layouts of the space whose TP·CP·PP divides the world and whose PP·VPP split the layers, evenly
  /// or with the end stages set apart (spec::balanced_end_stages; the spec's own split on its own stages).
  int64_t candidates = 0;
  int64_t planned = 0;             ///< candidates looked at (all of them unless cancelled)
  int64_t invalid = 0;             ///< broke a rule of the spec (docs/spec.md)
  int64_t unsupported = 0;         ///< kept the spec's rules but not tessera-train's limits (only when asked)
  int64_t over_memory = 0;         ///< valid, but peak above the limit
  int64_t fitting = 0;             ///< valid and within the limit
  /// The first broken field of each invalid candidate → count, most first ("planner" when the
  /// planner refused a valid spec: non-finite costs from extreme sizes).
  std::vector<std::pair<std::string, int64_t>> invalid_fields;
  /// The same for the unsupported candidates: the field of tessera-train's first limit.
  std::vector<std::pair<std::string, int64_t>> unsupported_fields;
  int64_t memory_limit_bytes = 0;
  int64_t global_batch_size = 0;   ///< held fixed (the spec's, or its one microbatch per DP rank when 0)
  std::optional<RankedLayout> given;  ///< the searched spec's own layout, planned the same way
  std::string given_problem;       ///< why there is no `given`: its layout breaks a rule on this cluster
  bool given_fits = false;
  int64_t given_place = 0;         ///< 1 + fitting layouts strictly faster than the given one (when it fits)
  bool given_searched = false;     ///< the given layout is one of the space's fitting layouts (else it is not in the space)
  /// How many the given layout is placed among: the fitting layouts, and itself when not one of them.
  int64_t given_among() const { return given_searched ? fitting : fitting + 1; }
  /// Why a given layout that fits is not in the space (outside_space), when the search ran to its end.
  std::string given_outside;
  bool cancelled = false;
  int threads = 0;
  double elapsed_s = 0;
};

/// The first choice of `spec`'s layout that `space` does not try, in words ("TP 3 is not among the
/// values tried", "sequence parallelism is off, and the search turns it on wherever TP > 1"); empty
/// when every choice is in it. A search names it for the spec's own layout, placed beside the
/// layouts that fit though it is not one of the space's.
std::string outside_space(const spec::RunSpec& spec, const SearchSpace& space);

/// Plans every candidate of `space` for `spec`, whose model, training and cluster must be valid
/// (its own layout need not be: spec::Rules::except_layout). Throws spec::SpecError for an invalid
/// spec or space, or a space without candidates; rethrows what `options.progress` throws.
SearchResult search_layouts(const spec::RunSpec& spec, const SearchSpace& space, const SearchOptions& options = {});

/// The most candidates one search plans (a larger space is refused naming its size).
inline constexpr int64_t kMaxSearchCandidates = 2'000'000;

}  // namespace tessera::planner
