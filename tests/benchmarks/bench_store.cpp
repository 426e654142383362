// Benchmark of the run history: ingestion through the writer vs a naive loop of single-row
// autocommit inserts (same points, same file settings), and downsampling one series to 2,000
// buckets vs reading all its points. Quick sizes by default (CTest), `--full` for the figures in
// docs/store.md. Exits 1 when a result is wrong or the writer is not faster than the naive loop.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "store/history.hpp"
#include "store/schema.hpp"
#include "store/sqlite.hpp"
#include "store/writer.hpp"

using namespace tessera::store;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const char* const kMetrics[] = {"loss", "grad_norm", "lr", "tokens_per_s", "mfu", "bubble", "peak_memory_bytes", "step_time_s"};
constexpr int64_t kMetricCount = 8;

RunRecord named_run(const std::string& name) {
  RunRecord run;
  run.name = name;
  run.spec = {{"model", {{"preset", "tiny-gpt"}}}};
  return run;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string thousands(double value) {
  std::string digits = std::to_string(std::llround(value)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

/// The points of a run: every metric on every rank at every step, in the order a stream delivers them.
MetricPoint point_at(int64_t index, int64_t ranks) {
  const int64_t metric = index % kMetricCount, rank = index / kMetricCount % ranks, step = index / (kMetricCount * ranks);
  return {kMetrics[metric], rank, step, 1.7e9 + static_cast<double>(step) * 0.5 + static_cast<double>(rank) * 1e-4,
          std::sin(static_cast<double>(index) * 1e-3) + static_cast<double>(metric)};
}

double writer_rate(const std::string& path, int64_t points, int64_t ranks, bool grouped) {
  Writer writer(path);
  const auto run = writer.create_run(named_run(grouped ? "grouped" : "single"));
  const auto start = Clock::now();
  if (grouped) {
    for (int64_t i = 0; i < points; i += kMetricCount) {
      std::vector<MetricPoint> step_of_rank;
      step_of_rank.reserve(kMetricCount);
      for (int64_t j = i; j < i + kMetricCount; ++j) step_of_rank.push_back(point_at(j, ranks));
      writer.append(run, std::move(step_of_rank));
    }
  } else {
    for (int64_t i = 0; i < points; ++i) writer.append(run, point_at(i, ranks));
  }
  writer.close();
  return static_cast<double>(points) / seconds_since(start);
}

double naive_rate(const std::string& path, int64_t points, int64_t ranks) {
  Connection connection = open_history(path);  // WAL, synchronous=NORMAL: the same settings as the writer
  connection.exec("INSERT INTO runs(id, name, status, created_ms, spec_json, plan_json, hosts_json, tessera_version) "
                  "VALUES('00000000000000000000000000000000', 'naive', 'running', 0, '{}', '{}', '[]', '')",
                  "adding the naive run");
  const int64_t run = connection.last_insert_rowid();
  std::vector<int64_t> series;  // by metric * ranks + rank
  for (const char* name : kMetrics) {
    Statement metric(connection, "INSERT INTO metric_names(name) VALUES(?)");
    metric.bind_text(1, name).run("adding a metric name");
    const int64_t metric_id = connection.last_insert_rowid();
    for (int64_t rank = 0; rank < ranks; ++rank) {
      Statement add(connection, "INSERT INTO series(run, metric, rank) VALUES(?, ?, ?)");
      add.bind_int(1, run).bind_int(2, metric_id).bind_int(3, rank).run("adding a series");
      series.push_back(connection.last_insert_rowid());
    }
  }
  Statement insert(connection, "INSERT INTO metrics(series, step, wall_time_s, value) VALUES(?, ?, ?, ?)");
  const auto start = Clock::now();
  for (int64_t i = 0; i < points; ++i) {  // one transaction per row (autocommit)
    const auto p = point_at(i, ranks);
    insert.bind_int(1, series[static_cast<size_t>(i % kMetricCount * ranks + p.rank)]).bind_int(2, p.step);
    insert.bind_real(3, p.wall_time_s).bind_real(4, p.value).run("naive insert");
  }
  return static_cast<double>(points) / seconds_since(start);
}

template <class F>
double median_ms(int repeats, F&& f) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    f();
    times.push_back(seconds_since(start) * 1e3);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Buckets computed from the raw points: what the downsample must return exactly.
bool matches_raw(const std::vector<Bucket>& buckets, const std::vector<SeriesPoint>& points, int64_t n) {
  const double lo = static_cast<double>(points.front().step), hi = static_cast<double>(points.back().step);
  const double width = (hi - lo) / static_cast<double>(n);
  std::vector<int64_t> count(static_cast<size_t>(n));
  std::vector<double> mn(static_cast<size_t>(n), NAN), mx(static_cast<size_t>(n), NAN), last(static_cast<size_t>(n), NAN);
  for (const auto& p : points) {
    const auto i = static_cast<size_t>(std::clamp<int64_t>(static_cast<int64_t>(std::floor((static_cast<double>(p.step) - lo) / width)), 0, n - 1));
    ++count[i];
    mn[i] = std::fmin(mn[i], p.value);
    mx[i] = std::fmax(mx[i], p.value);
    last[i] = p.value;
  }
  size_t b = 0;
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    if (!count[i]) continue;
    if (b >= buckets.size() || buckets[b].count != count[i] || buckets[b].min != mn[i] || buckets[b].max != mx[i] || buckets[b].last != last[i])
      return false;
    ++b;
  }
  return b == buckets.size();
}

}  // namespace

int main(int argc, char** argv) {
  const bool full = argc > 1 && std::string(argv[1]) == "--full";
  const int64_t ranks = 4;
  const int64_t writer_points = full ? 2'000'000 : 200'000;
  const int64_t naive_points = full ? 200'000 : 20'000;
  const int64_t series_points = full ? 1'000'000 : 100'000;
  const int64_t buckets = 2000;

  char pattern[] = "/tmp/tessera-bench-XXXXXX";
  const char* tmp = ::mkdtemp(pattern);
  if (!tmp) {
    std::perror("mkdtemp");
    return 1;
  }
  const fs::path dir(tmp);
  bool ok = true;

  std::printf("ingestion: %s points (%lld metrics x %lld ranks per step) through the writer; naive on the first %s\n",
              thousands(static_cast<double>(writer_points)).c_str(), static_cast<long long>(kMetricCount), static_cast<long long>(ranks),
              thousands(static_cast<double>(naive_points)).c_str());
  const double single = writer_rate((dir / "single.sqlite").string(), writer_points, ranks, false);
  const double grouped = writer_rate((dir / "grouped.sqlite").string(), writer_points, ranks, true);
  const double naive = naive_rate((dir / "naive.sqlite").string(), naive_points, ranks);
  std::printf("  %-44s %12s points/s\n", "writer, one append per point", thousands(single).c_str());
  std::printf("  %-44s %12s points/s\n", "writer, one append per rank and step (8)", thousands(grouped).c_str());
  std::printf("  %-44s %12s points/s\n", "naive single-row inserts, autocommit", thousands(naive).c_str());
  std::printf("  %-44s %11.1fx (grouped %.1fx)\n", "writer / naive", single / naive, grouped / naive);
  {
    History check((dir / "single.sqlite").string());
    const auto run = check.runs().front();
    if (check.counts(run.id).points != writer_points) {
      std::printf("FAIL: the writer stored %lld points, expected %lld\n", static_cast<long long>(check.counts(run.id).points),
                  static_cast<long long>(writer_points));
      ok = false;
    }
  }
  if (!(single > naive && grouped > naive)) {
    std::printf("FAIL: the writer is not faster than the naive loop\n");
    ok = false;
  }

  const std::string series_path = (dir / "series.sqlite").string();
  std::string id;
  {
    Writer writer(series_path);
    const auto run = writer.create_run(named_run("series"));
    id = run.id;
    for (int64_t step = 0; step < series_points; ++step)
      writer.append(run, MetricPoint{"loss", 0, step, 1.7e9 + static_cast<double>(step), std::sin(static_cast<double>(step) * 1e-3) +
                                                                                          (step == series_points / 3 ? 100.0 : 0.0)});
    writer.close();
  }
  History history(series_path);
  std::vector<Bucket> result;
  std::vector<SeriesPoint> all;
  const double downsample_ms = median_ms(5, [&] { result = history.downsample(id, "loss", 0, buckets); });
  const double read_all_ms = median_ms(3, [&] { all = history.points(id, "loss", 0); });
  std::printf("query: one series of %s points to %lld buckets (min, max, last)\n", thousands(static_cast<double>(series_points)).c_str(),
              static_cast<long long>(buckets));
  std::printf("  %-44s %12.1f ms\n", "downsample (32-step rollup)", downsample_ms);
  std::printf("  %-44s %12.1f ms\n", "read every point", read_all_ms);
  std::printf("  %-44s %11.1fx\n", "read all / downsample", read_all_ms / downsample_ms);
  if (static_cast<int64_t>(all.size()) != series_points || static_cast<int64_t>(result.size()) != buckets || !matches_raw(result, all, buckets)) {
    std::printf("FAIL: the downsampled buckets differ from those computed from the raw points\n");
    ok = false;
  }
  const bool spike_kept = std::any_of(result.begin(), result.end(), [](const Bucket& b) { return b.max > 50; });
  if (!spike_kept) {
    std::printf("FAIL: the spike did not survive downsampling\n");
    ok = false;
  }
  if (full)
    std::printf("targets: writer >= 500,000 points/s: %s; downsample < 50 ms: %s\n", single >= 500'000 ? "met" : "NOT met",
                downsample_ms < 50 ? "met" : "NOT met");

  std::error_code ec;
  fs::remove_all(dir, ec);
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
