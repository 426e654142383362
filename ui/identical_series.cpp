// IdenticalSeries: groups of ranks with the same curve, updated incrementally.
#include "identical_series.hpp"

#include <algorithm>

namespace tessera::ui {

void IdenticalSeries::update(const std::map<int64_t, const SeriesData*>& series, size_t max_lag) {
  representative_.clear();
  members_.clear();
  std::vector<int64_t> representatives;
  for (const auto& [rank, data] : series) {
    int64_t chosen = rank;
    for (int64_t lower : representatives) {
      Pair& pair = pairs_[{lower, rank}];
      if (pair.differ) continue;
      const SeriesData& a = *series.at(lower);
      const SeriesData& b = *data;
      const size_t common = std::min(a.size(), b.size());
      size_t& i = pair.compared;
      while (i < common && a.steps[i] == b.steps[i] && a.values[i] == b.values[i]) ++i;
      if (pair.compared < common) {
        pair.differ = true;
        continue;
      }
      if (common == 0) continue;  // nothing to compare yet: drawn on its own for now
      if (std::max(a.size(), b.size()) - common > max_lag) continue;  // one stopped or fell behind
      chosen = lower;
      break;
    }
    representative_[rank] = chosen;
    members_[chosen].push_back(rank);
    if (chosen == rank) representatives.push_back(rank);
  }
}

int64_t IdenticalSeries::representative(int64_t rank) const {
  const auto it = representative_.find(rank);
  return it == representative_.end() ? rank : it->second;
}

const std::vector<int64_t>& IdenticalSeries::members(int64_t representative) const {
  static const std::vector<int64_t> none;
  const auto it = members_.find(representative);
  return it == members_.end() ? none : it->second;
}

}  // namespace tessera::ui
