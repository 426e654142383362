// The run history as the sink of a followed run: step, metric, timeline and log records become store
// rows; each node's stream position (its last data frame's sequence number, table stream_positions) is
// appended after that frame's records, so it commits with them — a restarted follower resumes exactly
// after what is stored.
// Durable positions are read off the writer's commit count without waiting for it, so receiving and
// committing overlap. Records that fail their checks are counted and skipped, never fatal.
#pragma once

#include <cstdint>
#include <functional>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "launch/run_session.hpp"
#include "store/writer.hpp"

namespace tessera::launch {

/// The history's record of a run about to be launched on `endpoints`: a new id; `name`, or else
/// "<base_name> <the id's first 8 digits>"; the spec as given; the planner's prediction (empty for a
/// spec the planner cannot time, which still runs); the agents as hosts; status starting.
store::RunRecord launch_record(const spec::RunSpec& spec, nlohmann::ordered_json spec_json,
                               const std::vector<std::string>& endpoints, const std::string& name,
                               const std::string& base_name);

class HistorySink : public RunSink {
 public:
  /// `stored`: the run's stream positions already in the history, and `last_wall_s` each rank's latest
  /// stored wall time (History::last_wall_times), of a resumed follower.
  /// Other runs may be appended to `writer` meanwhile (the workbench follows several runs into one
  /// writer): a frame is durable once the writer committed the queue entry of its stream position.
  HistorySink(store::Writer& writer, store::RunHandle run, const std::vector<store::StreamPosition>& stored = {},
              std::map<int64_t, double> last_wall_s = {});

  int64_t durable_seq(int64_t node) override;
  void records(int64_t node, int64_t seq, const std::vector<protocol::Record>& records) override;
  void sync(bool wait) override;

  /// Called with each step record (for live output).
  std::function<void(const nlohmann::json& step)> on_step;

  int64_t points() const { return points_; }
  int64_t skipped() const { return skipped_; }

 private:
  void store_records(int64_t node, int64_t seq, const std::vector<protocol::Record>& records);
  void add(const protocol::Record& record);
  /// The record's wall_time_s; one the store would refuse (store::wall_time_problem) or none is the
  /// rank's last good one (0 before any), so that a glitched clock does not drop the step's metrics.
  double wall_time_s(const protocol::Record& record, int64_t rank);

  struct Mark {
    int64_t node, seq, sequence;  ///< frame seq of node is stored once the writer committed `sequence`
  };
  store::Writer& writer_;
  store::RunHandle run_;
  std::map<int64_t, int64_t> durable_;
  std::deque<Mark> marks_;
  std::vector<store::MetricPoint> frame_points_;  ///< the metric points of the frame being added
  int64_t points_ = 0, skipped_ = 0;
  std::map<int64_t, double> last_wall_s_;  ///< rank → its last good wall_time_s
};

}  // namespace tessera::launch
