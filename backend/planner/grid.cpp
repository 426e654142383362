// Rank grid and process groups. rank = tp + TP*(cp + CP*(dp + DP*pp)); experts fold into the dp*cp
// ranks (Megatron's MoE "parallel folding"): ep = (cp + CP*dp) % EP, expert_dp = (cp + CP*dp) / EP.
#include "planner/grid.hpp"

#include <algorithm>
#include <set>

namespace tessera::planner {

const std::vector<std::string>& group_kinds() {
  static const std::vector<std::string> kinds = {"tp", "cp", "dp", "dp_cp", "ep", "expert_dp", "pp", "embedding"};
  return kinds;
}

bool is_derived_group_kind(std::string_view kind) { return kind == "dp_cp" || kind == "expert_dp" || kind == "embedding"; }

RankCoord rank_coord(int64_t rank, int64_t tp, int64_t cp, int64_t ep, int64_t dp, int64_t /*pp: outermost, implied*/,
                     int64_t gpus_per_node) {
  RankCoord c;
  c.rank = rank;
  c.node = rank / gpus_per_node;
  c.local = rank % gpus_per_node;
  c.tp = rank % tp;
  c.cp = (rank / tp) % cp;
  c.dp = (rank / (tp * cp)) % dp;
  c.pp = rank / (tp * cp * dp);
  const int64_t dp_cp = c.cp + cp * c.dp;
  c.ep = dp_cp % ep;
  c.expert_dp = dp_cp / ep;
  return c;
}

bool any_group_crosses_node(int64_t stride, int64_t size, int64_t world, int64_t gpus_per_node) {
  if (size <= 1) return false;
  for (int64_t block = 0; block < world; block += stride * size)
    for (int64_t first = block; first < block + stride && first < world; ++first)
      if (first / gpus_per_node != (first + (size - 1) * stride) / gpus_per_node) return true;  // ranks ascend
  return false;
}

std::vector<std::string> RankGrid::cross_node_kinds() const {
  std::vector<std::string> out;
  for (const auto& kind : group_kinds()) {
    auto it = groups.find(kind);
    if (it == groups.end()) continue;
    for (const auto& g : it->second)
      if (g.crosses_node) {
        out.push_back(kind);
        break;
      }
  }
  return out;
}

const ProcessGroup* RankGrid::group_of(const std::string& kind, int64_t rank) const {
  auto it = groups.find(kind);
  if (it == groups.end()) return nullptr;
  for (const auto& g : it->second)
    for (int64_t r : g.ranks)
      if (r == rank) return &g;
  return nullptr;
}

RankGrid make_rank_grid(const spec::RunSpec& spec) {
  RankGrid grid;
  const auto& p = spec.parallel;
  grid.tp = p.tp;
  grid.cp = p.cp;
  grid.ep = p.ep;
  grid.pp = p.pp;
  grid.dp = spec.data_parallel();
  grid.gpus_per_node = spec.cluster.gpus_per_node;
  grid.world = grid.tp * grid.cp * grid.dp * grid.pp;
  grid.ranks.reserve(grid.world);
  for (int64_t r = 0; r < grid.world; ++r)
    grid.ranks.push_back(rank_coord(r, grid.tp, grid.cp, grid.ep, grid.dp, grid.pp, grid.gpus_per_node));

  // A group is the set of ranks that share every coordinate except the varying ones.
  auto build = [&](const std::string& kind, auto key_of) {
    std::map<std::vector<int64_t>, ProcessGroup> by_key;
    for (const auto& c : grid.ranks) by_key[key_of(c)].ranks.push_back(c.rank);
    auto& out = grid.groups[kind];
    for (auto& [key, g] : by_key) {
      std::set<int64_t> nodes;
      for (int64_t r : g.ranks) nodes.insert(r / grid.gpus_per_node);
      g.crosses_node = nodes.size() > 1;
      out.push_back(std::move(g));
    }
    std::sort(out.begin(), out.end(), [](const ProcessGroup& a, const ProcessGroup& b) { return a.ranks < b.ranks; });
  };
  build("tp", [](const RankCoord& c) { return std::vector<int64_t>{c.cp, c.dp, c.pp}; });
  build("cp", [](const RankCoord& c) { return std::vector<int64_t>{c.tp, c.dp, c.pp}; });
  build("dp", [](const RankCoord& c) { return std::vector<int64_t>{c.tp, c.cp, c.pp}; });
  build("dp_cp", [](const RankCoord& c) { return std::vector<int64_t>{c.tp, c.pp}; });
  build("ep", [](const RankCoord& c) { return std::vector<int64_t>{c.tp, c.expert_dp, c.pp}; });
  build("expert_dp", [](const RankCoord& c) { return std::vector<int64_t>{c.tp, c.ep, c.pp}; });
  build("pp", [](const RankCoord& c) { return std::vector<int64_t>{c.tp, c.cp, c.dp}; });
  if (grid.pp > 1) {
    // First and last stage share the tied word embedding's gradient (Megatron's embedding group).
    auto& out = grid.groups["embedding"];
    for (const auto& g : grid.groups["pp"]) {
      ProcessGroup e;
      e.ranks = {g.ranks.front(), g.ranks.back()};
      e.crosses_node = e.ranks[0] / grid.gpus_per_node != e.ranks[1] / grid.gpus_per_node;
      out.push_back(e);
    }
  }
  return grid;
}

}  // namespace tessera::planner
