// Reading and curating the run history: runs with filters, id resolution, tags, notes, deletion,
// series (full or downsampled to min/max/last buckets), per-run summaries, config diffs, and the
// export/import of run bundles. One History = one SQLite connection; it reads while a Writer
// (another connection, maybe another process) writes.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/sqlite.hpp"
#include "store/types.hpp"

namespace tessera::store {

/// A condition on the run spec by dotted path: "model.num_layers=32", "model.arch=llama".
struct SpecCondition {
  std::string path;
  nlohmann::json value;  ///< the right-hand side as JSON when it parses (32, true), else a string; text for text fields
  /// Throws StoreError(invalid) when there is no '=', the path is empty or names no spec field, or the
  /// value is one the field cannot hold (spec::set_field's rule: "parallel.tp=02", "model.arch=gtp").
  static SpecCondition parse(std::string_view text);
};

struct RunFilter {
  std::optional<RunStatus> status;
  std::optional<std::string> tag;
  std::string name_contains;                 ///< substring, any case (Unicode: "ünï" finds "ÜNÏ"); "" = any
  std::optional<int64_t> created_from_ms;    ///< created at or after
  std::optional<int64_t> created_before_ms;  ///< created before
  std::vector<SpecCondition> spec;           ///< all must hold, on the effective spec
};

enum class XAxis { step, tokens, wall_time };

/// One bucket of a downsampled series: every point whose x lies in [x_start, x_end).
struct Bucket {
  double x_start = 0;
  double x_end = 0;
  int64_t count = 0;
  double min = 0;  ///< over the values that are not NaN (NaN when all are)
  double max = 0;
  int64_t last_step = 0;  ///< the latest step in the bucket
  double last_x = 0;      ///< its x
  double last = 0;        ///< its value
};

/// One stored series: (metric, rank) of a run.
struct SeriesInfo {
  std::string metric;
  int64_t rank = 0;
  int64_t points = 0;
  int64_t first_step = 0;
  int64_t last_step = 0;
};

/// docs/store.md gives the rules: per-step means over the ranks that report a metric, then
/// final/min (loss), mean (mfu, peak_tflops, bubble, tokens_per_s) or max (peak_memory_bytes). Absent metric:
/// nullopt; present but NaN: NaN.
struct RunSummary {
  int64_t points = 0;
  std::optional<int64_t> last_step;
  std::optional<double> final_loss;
  std::optional<double> min_loss;
  std::optional<double> mean_mfu;
  std::optional<double> mfu_peak_tflops;  ///< the peak mean_mfu is a share of (TFLOP/s, mean over steps)
  std::optional<double> mean_bubble;
  std::optional<double> mean_tokens_per_s;
  std::optional<double> mean_step_time_s;  ///< mean over steps of the ranks' mean step time
  std::optional<int64_t> peak_memory_bytes;
};

/// Whether the MFU of two runs are shares of one peak: their peaks within 1 % of the larger, or one
/// of them without a (finite) peak, which leaves nothing to tell. CPU ranks time their own GEMM, so
/// two runs of one spec on one machine can have MFU of different peaks (docs/store.md).
bool same_mfu_peak(const RunSummary& a, const RunSummary& b);

/// One spec field that differs between runs; nullopt where a run does not have the field.
struct ConfigDiffRow {
  std::string path;
  std::vector<std::optional<nlohmann::ordered_json>> values;
};

struct RunCounts {
  int64_t points = 0;
  int64_t events = 0;
  int64_t log_lines = 0;
  int64_t artifacts = 0;
};

struct ImportOptions {
  std::string name;  ///< store the run under this name instead of the bundle's
};

struct ImportedRun {
  RunRecord run;
  RunCounts counts;
  std::string format;  ///< "json bundle", "csv bundle" or "tessera-train output"
};

class History {
 public:
  /// Opens (creating the file and its directories, migrating) the history at `path`.
  explicit History(const std::string& path);
  const std::string& path() const { return connection_.path(); }

  /// The full id of a run given by its id, a unique prefix of its id, or its exact name. Throws
  /// StoreError(not_found) or StoreError(ambiguous) listing the candidates.
  std::string resolve(std::string_view reference) const;
  RunRecord run(const std::string& id) const;
  /// Newest first.
  std::vector<RunRecord> runs(const RunFilter& filter = {}) const;
  void add_tag(const std::string& id, const std::string& tag);
  /// False when the run did not have the tag.
  bool remove_tag(const std::string& id, const std::string& tag);
  void set_notes(const std::string& id, const std::string& notes);
  /// Removes the run and all its rows in one transaction; returns what was removed. A run that is
  /// starting or running is refused (ErrorKind::invalid: its ranks would train on with nothing to
  /// stop them by) unless `even_if_active`, for a run whose workbench went away without ending it.
  std::pair<RunRecord, RunCounts> delete_run(const std::string& id, bool even_if_active = false);

  RunCounts counts(const std::string& id) const;
  std::vector<SeriesInfo> series(const std::string& id) const;
  /// Every point of one series, by step.
  std::vector<SeriesPoint> points(const std::string& id, const std::string& metric, int64_t rank) const;
  /// The points of one series with a step above `after_step`, by step (a live view's increment).
  std::vector<SeriesPoint> points_after(const std::string& id, const std::string& metric, int64_t rank,
                                        int64_t after_step) const;
  /// The series in `buckets` equal-width buckets of x over its range (empty buckets left out),
  /// each with min, max and last, so spikes survive. Reads the 32-step rollup and only the raw
  /// points of blocks that straddle a bucket edge. Empty when the series has no points.
  std::vector<Bucket> downsample(const std::string& id, const std::string& metric, int64_t rank, int64_t buckets,
                                 XAxis axis = XAxis::step) const;
  RunSummary summary(const std::string& id) const;
  /// The fields of the effective specs (see effective_spec) that differ between the runs, by
  /// dotted path in the order they first appear.
  std::vector<ConfigDiffRow> config_diff(const std::vector<std::string>& ids) const;
  /// Every field of the effective specs, same order, differing or not (the "all fields" view).
  std::vector<ConfigDiffRow> config_fields(const std::vector<std::string>& ids) const;
  std::vector<TimelineEvent> timeline(const std::string& id) const;
  /// The timeline events of one step, ordered as timeline().
  std::vector<TimelineEvent> timeline_of_step(const std::string& id, int64_t step) const;
  /// The highest step with timeline events; nullopt when there are none.
  std::optional<int64_t> last_timeline_step(const std::string& id) const;
  std::vector<LogLine> logs(const std::string& id) const;
  /// The log lines after the first `skip` of the run, in the order logs() gives (a live view's increment).
  std::vector<LogLine> logs_after(const std::string& id, int64_t skip) const;
  std::vector<Artifact> artifacts(const std::string& id) const;
  /// The stored stream position of each node of a run launched through agents, by node.
  std::vector<StreamPosition> stream_positions(const std::string& id) const;
  /// rank → the wall time of its latest stored step (the latest of its series), where a resumed
  /// follower takes up each rank's clock.
  std::map<int64_t, double> last_wall_times(const std::string& id) const;
  /// training.global_batch_size × model.seq_length of the run's spec (the tokens x-axis).
  int64_t tokens_per_step(const std::string& id) const;

  /// One JSON document (docs/store.md, "Run bundles").
  void export_json(const std::string& id, std::ostream& out) const;
  /// run.json + metrics.csv, timeline.csv, logs.csv, artifacts.csv in `directory` (created; it must
  /// not hold a bundle already).
  void export_csv(const std::string& id, const std::string& directory) const;
  /// Imports a JSON bundle file, a CSV bundle directory or a `tessera-train --out` directory in one
  /// transaction: all of it or nothing. Refuses a run whose id or name is already present.
  ImportedRun import_run(const std::string& path, const ImportOptions& options = {});

 private:
  int64_t key_of(const std::string& id) const;
  mutable Connection connection_;
};

/// The spec with presets applied and defaults filled (the spec library's full form) when it parses,
/// else the spec as stored. Filters and config diffs compare these.
nlohmann::ordered_json effective_spec(const nlohmann::ordered_json& stored);

}  // namespace tessera::store
