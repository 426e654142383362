// History queries over metrics: series lists, full series, downsampling on the 32-step rollup,
// per-run summaries, config diffs and the tokens-per-step of a run.
#include <algorithm>
#include <cmath>
#include <limits>

#include "spec/run_spec.hpp"
#include "store/errors.hpp"
#include "store/history.hpp"
#include "store/schema.hpp"

namespace tessera::store {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::optional<int64_t> metric_id(Connection& connection, const std::string& name) {
  Statement statement(connection, "SELECT id FROM metric_names WHERE name = ?");
  if (!statement.bind_text(1, name).step("looking up a metric name")) return std::nullopt;
  return statement.column_int(0);
}

/// The series (run, metric, rank), if it exists.
std::optional<int64_t> series_id(Connection& connection, int64_t run, const std::string& metric, int64_t rank) {
  Statement statement(connection,
                      "SELECT s.id FROM series s JOIN metric_names n ON n.id = s.metric WHERE s.run = ? AND n.name = ? AND s.rank = ?");
  if (!statement.bind_int(1, run).bind_text(2, metric).bind_int(3, rank).step("looking up a series")) return std::nullopt;
  return statement.column_int(0);
}

/// Per-step means over ranks of one metric, by step.
std::vector<double> step_means(Connection& connection, int64_t run, const std::optional<int64_t>& metric) {
  std::vector<double> out;
  if (!metric) return out;
  Statement rows(connection,
                 "SELECT avg(value) FROM metrics WHERE series IN (SELECT id FROM series WHERE run = ? AND metric = ?) "
                 "GROUP BY step ORDER BY step");
  rows.bind_int(1, run).bind_int(2, *metric);
  while (rows.step("summarising a run")) out.push_back(rows.column_real(0));
  return out;
}

std::optional<double> mean_of(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double sum = 0;
  int64_t n = 0;
  for (double v : values)
    if (!std::isnan(v)) {
      sum += v;
      ++n;
    }
  return n ? sum / static_cast<double>(n) : kNaN;
}

void flatten(const nlohmann::ordered_json& node, const std::string& prefix,
             std::vector<std::pair<std::string, nlohmann::ordered_json>>& out) {
  if (node.is_object() && (!node.empty() || prefix.empty())) {  // an empty spec has no fields, not one named ""
    for (const auto& [key, value] : node.items()) flatten(value, prefix.empty() ? key : prefix + "." + key, out);
  } else {
    out.emplace_back(prefix, node);
  }
}

/// Accumulates the points and blocks that fall in one bucket.
struct BucketAccumulator {
  int64_t count = 0;
  double min = kNaN, max = kNaN;
  int64_t last_step = -1;
  double last_x = 0, last = kNaN;
  void add(int64_t n, double lo, double hi, int64_t step, double x, double value) {
    count += n;
    min = std::fmin(min, lo);
    max = std::fmax(max, hi);
    if (step > last_step) {
      last_step = step;
      last_x = x;
      last = value;
    }
  }
};

}  // namespace

std::vector<SeriesInfo> History::series(const std::string& id) const {
  Statement rows(connection_,
                 "SELECT n.name, s.rank, sum(b.n), min(b.first_step), max(b.last_step) FROM series s "
                 "JOIN metric_names n ON n.id = s.metric JOIN metric_blocks b ON b.series = s.id WHERE s.run = ? "
                 "GROUP BY s.id ORDER BY n.name, s.rank");
  rows.bind_int(1, key_of(id));
  std::vector<SeriesInfo> out;
  while (rows.step("listing series"))
    out.push_back({rows.column_text(0), rows.column_int(1), rows.column_int(2), rows.column_int(3), rows.column_int(4)});
  return out;
}

std::vector<SeriesPoint> History::points(const std::string& id, const std::string& metric, int64_t rank) const {
  std::vector<SeriesPoint> out;
  const auto series = series_id(connection_, key_of(id), metric, rank);
  if (!series) return out;
  Statement rows(connection_, "SELECT step, wall_time_s, value FROM metrics WHERE series = ? ORDER BY step");
  rows.bind_int(1, *series);
  while (rows.step("reading a series")) out.push_back({rows.column_int(0), rows.column_real(1), rows.column_real(2)});
  return out;
}

std::vector<SeriesPoint> History::points_after(const std::string& id, const std::string& metric, int64_t rank,
                                              int64_t after_step) const {
  std::vector<SeriesPoint> out;
  const auto series = series_id(connection_, key_of(id), metric, rank);
  if (!series) return out;
  Statement rows(connection_, "SELECT step, wall_time_s, value FROM metrics WHERE series = ? AND step > ? ORDER BY step");
  rows.bind_int(1, *series).bind_int(2, after_step);
  while (rows.step("reading a series")) out.push_back({rows.column_int(0), rows.column_real(1), rows.column_real(2)});
  return out;
}

std::vector<Bucket> History::downsample(const std::string& id, const std::string& metric, int64_t rank, int64_t buckets,
                                        XAxis axis) const {
  if (buckets < 1) throw StoreError(ErrorKind::invalid, "downsampling needs at least one bucket");
  const auto series = series_id(connection_, key_of(id), metric, rank);
  if (!series) return {};
  const double tokens = axis == XAxis::tokens ? static_cast<double>(tokens_per_step(id)) : 1.0;

  struct Block {
    int64_t n, first_step, last_step;
    double min_value, max_value, last_value, min_wall_s, max_wall_s, last_wall_s;
  };
  std::vector<Block> blocks;
  {
    Statement rows(connection_,
                   "SELECT n, first_step, last_step, min_value, max_value, last_value, min_wall_s, max_wall_s, last_wall_s "
                   "FROM metric_blocks WHERE series = ? ORDER BY block");
    rows.bind_int(1, *series);
    while (rows.step("reading the metric rollup"))
      blocks.push_back({rows.column_int(0), rows.column_int(1), rows.column_int(2), rows.column_real(3), rows.column_real(4),
                        rows.column_real(5), rows.column_real(6), rows.column_real(7), rows.column_real(8)});
  }
  if (blocks.empty()) return {};

  const bool by_wall = axis == XAxis::wall_time;
  auto x_of_step = [&](int64_t step) { return static_cast<double>(step) * tokens; };
  double lo, hi;
  if (by_wall) {
    lo = std::numeric_limits<double>::infinity();
    hi = -lo;
    for (const auto& b : blocks) {
      lo = std::min(lo, b.min_wall_s);
      hi = std::max(hi, b.max_wall_s);
    }
  } else {
    lo = x_of_step(blocks.front().first_step);
    hi = x_of_step(blocks.back().last_step);
  }
  const double width = hi > lo ? (hi - lo) / static_cast<double>(buckets) : 1.0;
  auto bucket_of = [&](double x) {
    const auto b = static_cast<int64_t>(std::floor((x - lo) / width));
    return std::clamp<int64_t>(b, 0, buckets - 1);
  };

  std::vector<BucketAccumulator> acc(static_cast<size_t>(buckets));
  Statement raw(connection_, "SELECT step, wall_time_s, value FROM metrics WHERE series = ? AND step BETWEEN ? AND ?");
  raw.bind_int(1, *series);
  for (const auto& b : blocks) {
    const double x_first = by_wall ? b.min_wall_s : x_of_step(b.first_step);
    const double x_last = by_wall ? b.max_wall_s : x_of_step(b.last_step);
    const int64_t first_bucket = bucket_of(x_first);
    if (first_bucket == bucket_of(x_last)) {
      const double last_x = by_wall ? b.last_wall_s : x_of_step(b.last_step);
      acc[static_cast<size_t>(first_bucket)].add(b.n, b.min_value, b.max_value, b.last_step, last_x, b.last_value);
      continue;
    }
    raw.bind_int(2, b.first_step).bind_int(3, b.last_step);  // the block straddles an edge: split its points
    while (raw.step("reading a metric block")) {
      const int64_t step = raw.column_int(0);
      const double value = raw.column_real(2);
      const double x = by_wall ? raw.column_real(1) : x_of_step(step);
      acc[static_cast<size_t>(bucket_of(x))].add(1, value, value, step, x, value);
    }
    raw.reset();
  }

  std::vector<Bucket> out;
  for (int64_t i = 0; i < buckets; ++i) {
    const auto& a = acc[static_cast<size_t>(i)];
    if (a.count == 0) continue;
    out.push_back({lo + static_cast<double>(i) * width, lo + static_cast<double>(i + 1) * width, a.count, a.min, a.max,
                   a.last_step, a.last_x, a.last});
  }
  return out;
}

bool same_mfu_peak(const RunSummary& a, const RunSummary& b) {
  const auto& pa = a.mfu_peak_tflops;
  const auto& pb = b.mfu_peak_tflops;
  if (!pa || !pb || !std::isfinite(*pa) || !std::isfinite(*pb)) return true;
  return std::fabs(*pa - *pb) <= 0.01 * std::max(*pa, *pb);
}

RunSummary History::summary(const std::string& id) const {
  const int64_t run = key_of(id);
  RunSummary summary;
  {
    Statement totals(connection_,
                     "SELECT coalesce(sum(n), 0), max(last_step) FROM metric_blocks "
                     "WHERE series IN (SELECT id FROM series WHERE run = ?)");
    totals.bind_int(1, run).step("summarising a run");
    summary.points = totals.column_int(0);
    summary.last_step = totals.column_optional_int(1);
  }
  const auto loss = step_means(connection_, run, metric_id(connection_, metric_name::loss));
  if (!loss.empty()) {
    summary.final_loss = loss.back();
    double lowest = kNaN;
    for (double v : loss) lowest = std::fmin(lowest, v);
    summary.min_loss = lowest;
  }
  summary.mean_mfu = mean_of(step_means(connection_, run, metric_id(connection_, metric_name::mfu)));
  summary.mfu_peak_tflops = mean_of(step_means(connection_, run, metric_id(connection_, metric_name::peak_tflops)));
  summary.mean_bubble = mean_of(step_means(connection_, run, metric_id(connection_, metric_name::bubble)));
  summary.mean_tokens_per_s = mean_of(step_means(connection_, run, metric_id(connection_, metric_name::tokens_per_s)));
  summary.mean_step_time_s = mean_of(step_means(connection_, run, metric_id(connection_, metric_name::step_time_s)));
  if (const auto memory = metric_id(connection_, metric_name::peak_memory_bytes)) {
    Statement peak(connection_,
                   "SELECT max(value), count(*) FROM metrics WHERE series IN (SELECT id FROM series WHERE run = ? AND metric = ?)");
    peak.bind_int(1, run).bind_int(2, *memory).step("summarising a run");
    if (peak.column_int(1) > 0 && !peak.column_is_null(0)) summary.peak_memory_bytes = std::llround(peak.column_real(0));
  }
  return summary;
}

std::vector<ConfigDiffRow> History::config_fields(const std::vector<std::string>& ids) const {
  std::vector<std::string> paths;
  std::vector<std::vector<std::pair<std::string, nlohmann::ordered_json>>> fields;
  for (const auto& id : ids) {
    fields.emplace_back();
    flatten(effective_spec(run(id).spec), "", fields.back());
    for (const auto& [path, value] : fields.back())
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  }
  std::vector<ConfigDiffRow> out;
  for (const auto& path : paths) {
    ConfigDiffRow row{path, {}};
    for (const auto& run_fields : fields) {
      const auto it = std::find_if(run_fields.begin(), run_fields.end(), [&](const auto& f) { return f.first == path; });
      row.values.push_back(it == run_fields.end() ? std::nullopt : std::optional(it->second));
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<ConfigDiffRow> History::config_diff(const std::vector<std::string>& ids) const {
  auto rows = config_fields(ids);
  std::erase_if(rows, [](const ConfigDiffRow& row) {
    return std::all_of(row.values.begin(), row.values.end(), [&](const auto& v) { return v == row.values.front(); });
  });
  return rows;
}

int64_t History::tokens_per_step(const std::string& id) const {
  const auto stored = run(id).spec;
  try {
    const auto s = spec::parse_stored_spec(nlohmann::json::parse(stored.dump()));
    return s.training.global_batch_size * s.model.seq_length;
  } catch (const spec::SpecError& e) {
    std::string problems;
    for (const auto& error : e.errors()) problems += (problems.empty() ? "" : "; ") + error.message;
    throw StoreError(ErrorKind::invalid, "run " + id + " has no tokens axis: its spec does not parse (" + problems + ")");
  }
}

}  // namespace tessera::store
