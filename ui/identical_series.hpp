// Ranks whose curves are the same points so far (the data-parallel replicas of a stage peak at the
// same bytes on a GPU): a plot draws each such group once and names all its ranks, instead of drawing
// curves over each other under a legend of ranks one cannot see. Qt-free; compares each point once.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "run_feed.hpp"

namespace tessera::ui {

class IdenticalSeries {
 public:
  /// Regroups after the series grew: `series` maps each rank to its curve so far. A rank joins the
  /// lowest representative whose leading points (step and value) equal its own as far as both go (one
  /// point at least) and whose length differs from its own by at most `max_lag` points (a live run's
  /// ranks report a step or two apart; a rank that stopped reporting is drawn on its own once it falls
  /// further behind, or at all once the run ended: pass 0). Once two ranks differed at a point they stay
  /// apart. Each point is compared once.
  void update(const std::map<int64_t, const SeriesData*>& series, size_t max_lag);
  /// The rank whose curve stands for `rank` (itself when it is drawn).
  int64_t representative(int64_t rank) const;
  /// The ranks `representative` stands for, ascending, itself first; empty for a rank that is not one.
  const std::vector<int64_t>& members(int64_t representative) const;

 private:
  struct Pair {
    size_t compared = 0;  ///< leading points found equal
    bool differ = false;
  };
  std::map<std::pair<int64_t, int64_t>, Pair> pairs_;  ///< (lower rank, higher rank)
  std::map<int64_t, int64_t> representative_;
  std::map<int64_t, std::vector<int64_t>> members_;
};

}  // namespace tessera::ui
