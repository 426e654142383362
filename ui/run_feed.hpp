// What the dashboard knows of one run, read from the history incrementally: the run record, the curves
// it plots (appended, never re-read), the log lines, the checkpoints, the latest step with a measured
// timeline and each rank's state. Qt-free; one read-only History connection of its own, so a live run (written by
// the follower's Writer on another connection) and a stored run are read by the same code.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spec/run_spec.hpp"
#include "store/history.hpp"

namespace tessera::ui {

/// One curve as read so far, in step order.
struct SeriesData {
  std::vector<int64_t> steps;
  std::vector<double> wall_time_s;
  std::vector<double> values;
  size_t size() const { return steps.size(); }
};

/// (metric, rank)
using SeriesKey = std::pair<std::string, int64_t>;

enum class RankState { starting, running, done, failed, stopped, lost };
const char* to_string(RankState state);

/// What one poll() brought.
struct FeedUpdate {
  std::vector<std::pair<SeriesKey, size_t>> grown;  ///< series that got points, with their size before
  size_t logs_before = 0;                           ///< logs() size before; new lines follow it
  bool run_changed = false;                         ///< status, reason or end time changed
  bool timeline_changed = false;                    ///< a later step has a measured timeline
  bool artifacts_changed = false;                   ///< a checkpoint was recorded (or replaced)
  bool any() const { return !grown.empty() || run_changed || timeline_changed || artifacts_changed; }
};

class RunFeed {
 public:
  /// The metrics the dashboard plots: one rank (the lowest reporting it) for the run-wide ones, the
  /// first rank of each pipeline stage for `bubble`, every rank for `peak_memory_bytes`.
  static const std::vector<std::string>& runMetrics();

  /// Opens `db_path` read-only (its own connection) on run `run_id` (an id, unique prefix or name).
  /// Throws store::StoreError when the history or the run does not exist.
  RunFeed(const std::string& db_path, const std::string& run_id);

  /// Reads what was added since the last poll.
  FeedUpdate poll();

  const store::RunRecord& run() const { return run_; }
  /// The run's spec when it parses (nullopt for a run imported from elsewhere with a spec this build
  /// cannot read).
  const std::optional<spec::RunSpec>& spec() const { return spec_; }
  int64_t worldSize() const;
  /// Pipeline stage of a rank (0 without a spec).
  int64_t stageOf(int64_t rank) const;
  /// global batch × sequence length (0 without a spec).
  int64_t tokensPerStep() const { return tokens_per_step_; }
  /// Unix time of the first point (the wall-time axis starts there).
  double startWallTimeS() const { return start_wall_s_; }

  const std::map<SeriesKey, SeriesData>& series() const { return series_; }
  const SeriesData* find(const std::string& metric, int64_t rank) const;
  /// The lowest rank with points of `metric`, or nullopt.
  std::optional<int64_t> firstRankOf(const std::string& metric) const;
  /// The peak TFLOP/s the plotted MFU is measured against (the runtime's, recorded with each step), or
  /// nullopt before the first step or for a runtime that did not record it.
  std::optional<double> mfuPeakTflops() const { return mfu_peak_tflops_; }
  const std::vector<store::LogLine>& logs() const { return logs_; }
  /// The run's checkpoints (and any other artifacts) as recorded, in step order.
  const std::vector<store::Artifact>& artifacts() const { return artifacts_; }
  /// The highest step with a measured timeline.
  std::optional<int64_t> lastTimelineStep() const { return last_timeline_step_; }
  /// Measured events of one step (from the history).
  std::vector<store::TimelineEvent> timeline(int64_t step) const;
  /// The highest step any plotted series reached.
  int64_t lastStep() const { return last_step_; }

  RankState rankState(int64_t rank) const;
  /// What a rank's agent said when it exited ("exited with code 0"), "" while it runs.
  std::string rankExit(int64_t rank) const;

 private:
  bool wanted(const std::string& metric) const;
  void noteLog(const store::LogLine& line);

  store::History history_;
  store::RunRecord run_;
  std::optional<spec::RunSpec> spec_;
  int64_t tokens_per_step_ = 0;
  double start_wall_s_ = 0;
  int64_t last_step_ = 0;
  std::map<SeriesKey, SeriesData> series_;
  std::vector<store::LogLine> logs_;
  std::vector<store::Artifact> artifacts_;
  std::map<int64_t, std::string> exits_;  ///< rank -> its agent's exit description
  std::optional<int64_t> last_timeline_step_;
  std::optional<double> mfu_peak_tflops_;
};

}  // namespace tessera::ui
