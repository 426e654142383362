// Inserting into an open transaction: runs, metric points (interning their names and their series
// (run, metric, rank), keeping the 32-step rollup in metric_blocks exact), timeline events, log
// lines and artifacts. Shared by the
// writer thread and the bundle import, so both store exactly the same rows.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "store/sqlite.hpp"
#include "store/types.hpp"

namespace tessera::store {

/// Inserts a new run and its tags; returns its key. Throws StoreError(duplicate) when its id or its
/// name is already present, StoreError(invalid) for a malformed id or an empty name.
int64_t insert_run(Connection& connection, const RunRecord& run);

class Ingest {
 public:
  /// replace: a point already stored for (run, metric, rank, step) takes the new value (a resumed
  /// rank re-reporting a step). fail: it is an error (a bundle must not repeat a point).
  enum class OnDuplicate { replace, fail };
  Ingest(Connection& connection, OnDuplicate on_duplicate);

  /// The id of a metric name, adding it to metric_names when new.
  int64_t metric_id(const std::string& name);
  /// The id of the series (run, metric id, rank), adding it when new.
  int64_t series_id(int64_t run, int64_t metric, int64_t rank);
  void metric(int64_t series, int64_t step, double wall_time_s, double value);
  struct Point {
    int64_t series, step;
    double wall_time_s, value;
  };
  /// metric() for each point in order; with OnDuplicate::replace, kChunkRows rows per INSERT.
  void metrics(const std::vector<Point>& points);
  static constexpr size_t kChunkRows = 32;
  void event(int64_t run, const TimelineEvent& event);
  void log(int64_t run, const LogLine& line);
  void artifact(int64_t run, const Artifact& artifact);
  /// Sets the node's stream position (never moves it back).
  void stream_position(int64_t run, const StreamPosition& position);
  /// Writes the rollup of the points added since the last call; call before COMMIT.
  void finish();
  /// Forgets cached metric ids and the pending rollup (after a rollback).
  void discard();

 private:
  /// (series, block) for the rollup, (run, metric, rank) for the series cache.
  struct Key {
    int64_t a, b, c;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Block {
    int64_t n = 0;
    int64_t first_step = 0, last_step = 0;
    double min_value = 0, max_value = 0, last_value = 0;  // set by the first add()
    double min_wall_s = 0, max_wall_s = 0, last_wall_s = 0;
    void add(int64_t step, double wall_time_s, double value);
  };
  void write_block(const Key& key, const Block& block, Statement& statement);
  void insert_chunk(const Point* points);
  void recompute_block(const Key& key);

  Connection& connection_;
  OnDuplicate on_duplicate_;
  Statement insert_point_, insert_chunk_, update_point_, upsert_block_, replace_block_, block_points_;
  Statement insert_name_, select_name_, insert_series_, select_series_, insert_event_, insert_log_, insert_artifact_,
      upsert_position_;
  std::unordered_map<std::string, int64_t> metric_ids_;
  std::unordered_map<Key, int64_t, KeyHash> series_ids_;
  std::unordered_map<Key, Block, KeyHash> pending_;  ///< by (series, block, 0)
  std::unordered_set<Key, KeyHash> dirty_;
};

}  // namespace tessera::store
