// The values the run history stores: runs with their status and metadata, metric points, timeline
// events, log lines and artifacts; plus run ids and the UTC time format used in bundles and the CLI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::store {

enum class RunStatus : uint8_t { planned, starting, running, done, failed, stopped, lost };
std::string_view to_string(RunStatus status);
/// done, failed or stopped: the run's history is complete (a lost run may be taken up again).
bool has_ended(RunStatus status);
/// Throws StoreError(invalid) naming the allowed values.
RunStatus parse_run_status(std::string_view text);

/// Why `text` cannot be stored as `what` (a run's name, notes, a bundle field): it is not UTF-8
/// ("" when it can).
std::string text_problem(std::string_view what, std::string_view text);
/// Why `tag` cannot be given to a run ("" when it can): empty, not UTF-8, longer than
/// kMaxTagBytes, with a control character (a line break), or with a comma (tags are listed and edited
/// comma-separated; "x,y" would read as two and match neither).
std::string tag_problem(std::string_view tag);
/// Why `name` cannot name a run ("" when it can): empty, not UTF-8, longer than kMaxRunNameBytes, with
/// a control character (a name is one line of every list), or a run id (32 lowercase hex digits: a
/// reference to it means the run with that id).
std::string run_name_problem(std::string_view name);
inline constexpr size_t kMaxTagBytes = 256;
inline constexpr size_t kMaxRunNameBytes = 2048;  ///< a spec's name (1024 bytes) and what a launch adds

/// One run. Times are Unix milliseconds (UTC).
struct RunRecord {
  std::string id;  ///< 32 lowercase hex digits (128 random bits): unique across machines
  std::string name;
  RunStatus status = RunStatus::planned;
  int64_t created_ms = 0;
  std::optional<int64_t> started_ms;
  std::optional<int64_t> ended_ms;
  std::string exit_reason;
  nlohmann::ordered_json spec = nlohmann::ordered_json::object();  ///< the run spec as given
  nlohmann::ordered_json plan = nlohmann::ordered_json::object();  ///< plan summary (prediction)
  std::vector<std::string> hosts;
  std::vector<std::string> tags;  ///< sorted, unique
  std::string notes;
  std::string tessera_version;  ///< the Tessera that recorded the run
  bool operator==(const RunRecord&) const = default;
};

/// One value of one metric on one rank at one step. A NaN value is kept (stored as NULL).
struct MetricPoint {
  std::string name;
  int64_t rank = 0;
  int64_t step = 0;
  double wall_time_s = 0;  ///< Unix time, seconds
  double value = 0;
};

/// A point of one series (run, metric, rank) as read back.
struct SeriesPoint {
  int64_t step = 0;
  double wall_time_s = 0;
  double value = 0;
};

/// One operation of the pipeline timeline, measured or predicted.
struct TimelineEvent {
  int64_t step = 0;
  int64_t rank = 0;
  int64_t stage = 0;
  std::string op;  ///< "F", "B", "Bi", "W" (planner::op_kind_name) or another named phase
  int64_t microbatch = 0;
  int64_t chunk = 0;
  double start_s = 0;
  double end_s = 0;
  bool operator==(const TimelineEvent&) const = default;
};

/// One line a rank printed.
struct LogLine {
  int64_t rank = 0;
  std::string stream;  ///< "stdout" or "stderr"
  double time_s = 0;   ///< Unix time, seconds
  std::string line;
  bool operator==(const LogLine&) const = default;
};

/// How far the history holds the data stream of one node (agent) of a run launched through agents:
/// the sequence number of the last data frame stored (docs/protocol.md). A follower resumes after it.
struct StreamPosition {
  int64_t node = 0;
  int64_t seq = 0;
  bool operator==(const StreamPosition&) const = default;
};

/// 3000-01-01T00:00:00Z in Unix milliseconds: times from outside at or after it are refused (a run of
/// the year 10850 could not be exported and imported again).
inline constexpr int64_t kYear3000Ms = 32503680000000;

/// A file a run produced (a checkpoint).
struct Artifact {
  std::string kind;  ///< "checkpoint", ...
  std::string path;
  int64_t step = 0;
  int64_t size_bytes = 0;
  int64_t created_ms = 0;
  bool operator==(const Artifact&) const = default;
};

/// The rules every value from outside meets before it is stored, by the live writer and by every
/// import alike, so that what the history holds exports and imports again (docs/store.md). Each says
/// why a value cannot be stored, naming the field and the rule, or "" when it can.
/// A metric point's wall time: seconds since the rank started or Unix seconds, from 0 to the year 3000.
std::string wall_time_problem(double wall_time_s);
/// A timeline event: step, rank, stage, microbatch and chunk not negative; op one line of 1 to 64
/// bytes; start_s and end_s finite, end_s not before start_s.
std::string timeline_event_problem(const TimelineEvent& event);
/// An artifact: kind and path not empty and one line, step and size_bytes not negative, created_ms
/// Unix milliseconds before the year 3000.
std::string artifact_problem(const Artifact& artifact);
/// A log line: rank not negative, stream stdout or stderr, time_s Unix seconds from 0 to the year 3000.
std::string log_line_problem(const LogLine& line);
/// A metric's name: 1 to kMaxMetricNameBytes bytes of UTF-8, one line without control characters (a
/// name is a column of every export and a row of every list).
std::string metric_name_problem(std::string_view name);
inline constexpr size_t kMaxMetricNameBytes = 256;
/// A text field shown on one line (an artifact's kind and path, a host): UTF-8 without control
/// characters. "" when it is.
std::string one_line_problem(std::string_view what, std::string_view text);

/// The metric names the summaries, the dashboard and `tessera-train` agree on.
namespace metric_name {
inline constexpr const char* loss = "loss";                            ///< training loss
inline constexpr const char* grad_norm = "grad_norm";                  ///< global gradient norm
inline constexpr const char* lr = "lr";                                ///< learning rate
inline constexpr const char* tokens_per_s = "tokens_per_s";            ///< whole-job throughput
inline constexpr const char* mfu = "mfu";                              ///< model FLOPs utilisation, 0..1
inline constexpr const char* bubble = "bubble";                        ///< pipeline bubble fraction, 0..1
inline constexpr const char* peak_memory_bytes = "peak_memory_bytes";  ///< peak allocated memory of the rank
inline constexpr const char* peak_tflops = "peak_tflops";              ///< the peak the rank's mfu is a share of
inline constexpr const char* step_time_s = "step_time_s";              ///< wall time of the rank's step
}  // namespace metric_name

/// 128 random bits as 32 lowercase hex digits.
std::string new_run_id();
bool is_run_id(std::string_view text);
/// Current Unix time in milliseconds.
int64_t now_ms();
/// "2025-01-02T03:04:05.678Z"
std::string format_time_utc(int64_t unix_ms);
/// Reads "2025-01-02", "2025-01-02T03:04", "2025-01-02T03:04:05", with optional ".mmm" and "Z"
/// (always UTC); a space may replace the T. Throws StoreError(invalid).
int64_t parse_time_utc(std::string_view text);
/// The Tessera version compiled into this build ("0.1.0").
std::string_view tessera_version();

}  // namespace tessera::store
