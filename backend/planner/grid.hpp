// The rank grid: rank -> node, local GPU and (tp, cp, ep, dp, pp) coordinates in Megatron's default
// order tp-cp-ep-dp-pp (tp innermost, pp outermost), and every process group with its node crossing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "spec/run_spec.hpp"

namespace tessera::planner {

struct RankCoord {
  int64_t rank = 0, node = 0, local = 0;
  int64_t tp = 0, cp = 0, ep = 0, dp = 0, pp = 0;
  int64_t expert_dp = 0;  ///< index among the ranks that hold the same experts
  bool operator==(const RankCoord&) const = default;
};

struct ProcessGroup {
  std::vector<int64_t> ranks;
  bool crosses_node = false;
};

/// Group kinds, in display order: tp, cp, dp, dp_cp (gradient reduction), ep, expert_dp, pp, embedding.
const std::vector<std::string>& group_kinds();
/// dp_cp, expert_dp and embedding: they cross nodes when dp, cp or pp do, so summaries leave them out.
bool is_derived_group_kind(std::string_view kind);

struct RankGrid {
  int64_t world = 0, tp = 1, cp = 1, ep = 1, dp = 1, pp = 1, gpus_per_node = 1;
  std::vector<RankCoord> ranks;
  std::map<std::string, std::vector<ProcessGroup>> groups;
  /// Kinds with at least one group spanning more than one node.
  std::vector<std::string> cross_node_kinds() const;
  /// Groups of `kind` that contain `rank`.
  const ProcessGroup* group_of(const std::string& kind, int64_t rank) const;
};

/// Coordinates of one rank without building the grid (used by the GUI's hover and the runtime).
RankCoord rank_coord(int64_t rank, int64_t tp, int64_t cp, int64_t ep, int64_t dp, int64_t pp, int64_t gpus_per_node);

RankGrid make_rank_grid(const spec::RunSpec& spec);

/// Whether a group of one kind spans more than one node: the kind's groups are {b + i*stride : i < size}
/// for every b of [0, world) with (b / stride) % size == 0, gpus_per_node ranks per node. Every group
/// is checked: where nodes do not align with the groups (6 GPUs a node, TP 4), the first one does not
/// decide for the others.
bool any_group_crosses_node(int64_t stride, int64_t size, int64_t world, int64_t gpus_per_node);

}  // namespace tessera::planner
