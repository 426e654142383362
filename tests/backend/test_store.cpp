// Tests of backend/store: schema and migrations, ingestion read back exactly, downsampling that
// keeps spikes, summaries, config diffs, filters, id resolution, bundles (round trip, duplicate,
// atomic import, tessera-train output), tags/notes/delete, concurrent reading, default location.
#include <QtTest/QtTest>

#include <sys/stat.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "store/errors.hpp"
#include "store/history.hpp"
#include "store/location.hpp"
#include "store/schema.hpp"
#include "store/writer.hpp"
#include "store_test_support.hpp"

using namespace tessera::store;
using namespace store_test;
namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <class F>
StoreError error_of(F&& f) {
  try {
    f();
  } catch (const StoreError& e) {
    return e;
  }
  return StoreError(ErrorKind::io, "<no error>");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Brute-force buckets from the raw points, the reference the rollup-based downsample must match.
std::vector<Bucket> reference_buckets(const std::vector<SeriesPoint>& points, int64_t n, XAxis axis, double tokens) {
  auto x_of = [&](const SeriesPoint& p) { return axis == XAxis::wall_time ? p.wall_time_s : static_cast<double>(p.step) * tokens; };
  double lo = x_of(points.front()), hi = lo;
  for (const auto& p : points) {
    lo = std::min(lo, x_of(p));
    hi = std::max(hi, x_of(p));
  }
  const double width = hi > lo ? (hi - lo) / static_cast<double>(n) : 1.0;
  std::vector<Bucket> all(static_cast<size_t>(n));
  for (auto& b : all) b.min = b.max = b.last = kNaN, b.last_step = -1;
  for (const auto& p : points) {
    const auto i = std::clamp<int64_t>(static_cast<int64_t>(std::floor((x_of(p) - lo) / width)), 0, n - 1);
    auto& b = all[static_cast<size_t>(i)];
    ++b.count;
    b.min = std::fmin(b.min, p.value);
    b.max = std::fmax(b.max, p.value);
    if (p.step > b.last_step) b.last_step = p.step, b.last_x = x_of(p), b.last = p.value;
  }
  std::vector<Bucket> out;
  for (int64_t i = 0; i < n; ++i) {
    auto b = all[static_cast<size_t>(i)];
    if (!b.count) continue;
    b.x_start = lo + static_cast<double>(i) * width;
    b.x_end = lo + static_cast<double>(i + 1) * width;
    out.push_back(b);
  }
  return out;
}

bool same_buckets(const std::vector<Bucket>& a, const std::vector<Bucket>& b, QString* why) {
  if (a.size() != b.size()) return *why = QString("sizes %1 vs %2").arg(a.size()).arg(b.size()), false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].count != b[i].count || !same(a[i].min, b[i].min) || !same(a[i].max, b[i].max) || a[i].last_step != b[i].last_step ||
        !same(a[i].last, b[i].last) || !same(a[i].last_x, b[i].last_x) || !same(a[i].x_start, b[i].x_start))
      return *why = QString("bucket %1: count %2/%3 min %4/%5 max %6/%7 last_step %8/%9")
                        .arg(i).arg(a[i].count).arg(b[i].count).arg(a[i].min).arg(b[i].min).arg(a[i].max).arg(b[i].max)
                        .arg(a[i].last_step).arg(b[i].last_step),
             false;
  return true;
}

/// A run with every kind of row, written through the writer; returns its id.
std::string write_full_run(const std::string& db, const std::string& name) {
  Writer writer(db);
  auto run = tiny_run(name);
  run.plan = {{"step_time_s", 0.25}, {"mfu", 0.41}};
  run.hosts = {"node-a", "node-b"};
  run.tags = {"baseline", "cpu"};
  run.notes = "first try";
  const auto handle = writer.create_run(run);
  writer.set_status(handle, RunStatus::running);
  for (int64_t step = 1; step <= 100; ++step)
    for (int64_t rank = 0; rank < 2; ++rank)
      writer.append(handle, std::vector<MetricPoint>{
                                {"loss", rank, step, 1.7e9 + step * 0.1 + rank * 1e-3, 1.0 / static_cast<double>(step) + rank},
                                {"grad_norm", rank, step, 1.7e9 + step * 0.1, step == 50 ? kNaN : (step == 60 ? kInf : 0.1 * step)},
                            });
  writer.append(handle, TimelineEvent{1, 0, 0, "F", 0, 0, 1.7e9 + 0.001, 1.7e9 + 0.002});
  writer.append(handle, TimelineEvent{1, 1, 1, "B", 3, 1, 1.7e9 + 0.003, 1.7e9 + 0.0071});
  writer.append(handle, LogLine{0, "stdout", 1.7e9 + 1, "step 1, loss 1.0"});
  writer.append(handle, LogLine{1, "stderr", 1.7e9 + 2, "warning: a \"quoted\", comma\nand a second line"});
  writer.append(handle, Artifact{"checkpoint", "/ckpt/step-100", 100, 123456789, 1'700'000'100'000});
  writer.set_status(handle, RunStatus::done, "finished");
  writer.close();
  return handle.id;
}

void check_same_run(History& a, const std::string& id_a, History& b, const std::string& id_b) {
  QVERIFY(a.run(id_a) == b.run(id_b));
  const auto series = a.series(id_a);
  QCOMPARE(series.size(), b.series(id_b).size());
  for (const auto& s : series) {
    const auto pa = a.points(id_a, s.metric, s.rank), pb = b.points(id_b, s.metric, s.rank);
    QCOMPARE(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
      QCOMPARE(pa[i].step, pb[i].step);
      QVERIFY(same(pa[i].wall_time_s, pb[i].wall_time_s));
      QVERIFY2(same(pa[i].value, pb[i].value), qPrintable(QString("%1 step %2").arg(s.metric.c_str()).arg(pa[i].step)));
    }
  }
  QVERIFY(a.timeline(id_a) == b.timeline(id_b));
  QVERIFY(a.logs(id_a) == b.logs(id_b));
  QVERIFY(a.artifacts(id_a) == b.artifacts(id_b));
}

}  // namespace

class TestStore : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string db(const QString& name) const { return dir_.filePath(name).toStdString(); }

 private slots:
  // One rule for "MFU of one peak", used by runs compare and the comparison view: within 1 % of the
  // larger peak, and a run without a finite peak leaves nothing to tell.
  void sameMfuPeakWithinOnePercent() {
    const auto with_peak = [](std::optional<double> peak) {
      RunSummary s;
      s.mfu_peak_tflops = peak;
      return s;
    };
    QVERIFY(same_mfu_peak(with_peak(0.104), with_peak(0.1045)));
    QVERIFY(!same_mfu_peak(with_peak(0.042), with_peak(0.104)));
    QVERIFY(same_mfu_peak(with_peak(100.0), with_peak(101.0)));
    QVERIFY(!same_mfu_peak(with_peak(100.0), with_peak(101.1)));
    QVERIFY(!same_mfu_peak(with_peak(101.1), with_peak(100.0)));
    QVERIFY(same_mfu_peak(with_peak(std::nullopt), with_peak(5.0)));
    QVERIFY(same_mfu_peak(with_peak(std::nan("")), with_peak(5.0)));
  }

  void schemaCreatedWithVersionAndParentDirectories() {
    const auto path = db("nested/deeper/history.sqlite");
    History history(path);
    QVERIFY(fs::exists(path));
    QCOMPARE(sql_int(path, "SELECT max(version) FROM schema_version"), int64_t{latest_schema_version()});
    QCOMPARE(sql_int(path, "PRAGMA application_id"), int64_t{kApplicationId});
    QCOMPARE(sql_text(path, "PRAGMA journal_mode"), std::string("wal"));
    QVERIFY(history.runs().empty());
  }

  void migrationsForwardAndNewerSchemaRefused() {
    const auto path = db("migrate.sqlite");
    write_full_run(path, "before-migration");
    std::vector<Migration> next = schema_migrations();
    next.push_back({latest_schema_version() + 1, "test: a column for the future", "ALTER TABLE runs ADD COLUMN future TEXT"});
    {
      Connection connection = open_history(path, next);
      QCOMPARE(schema_version(connection), latest_schema_version() + 1);
    }
    QCOMPARE(sql_int(path, "SELECT count(*) FROM schema_version"), int64_t(next.size()));
    QCOMPARE(sql_int(path, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'future'"), int64_t{1});
    QCOMPARE(sql_int(path, "SELECT count(*) FROM runs WHERE name = 'before-migration'"), int64_t{1});
    // This build only knows the schema before that migration: it must refuse the file.
    const auto error = error_of([&] { History history(path); });
    QCOMPARE(error.kind(), ErrorKind::newer_schema);
    QVERIFY2(contains(error.what(), "schema version " + std::to_string(latest_schema_version() + 1)), error.what());
    QVERIFY2(contains(error.what(), "newer"), error.what());
    QCOMPARE(error_of([&] { Writer writer(path); }).kind(), ErrorKind::newer_schema);
    // Refused before anything is written: a file in rollback-journal mode was switched to WAL first.
    {
      Connection connection(path, true);
      connection.exec("PRAGMA journal_mode = DELETE", "leaving WAL mode");
    }
    const auto bytes = [&] {
      std::ifstream in(path, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const std::string before = bytes();
    QCOMPARE(error_of([&] { Writer writer(path); }).kind(), ErrorKind::newer_schema);
    QCOMPARE(error_of([&] { History history(path); }).kind(), ErrorKind::newer_schema);
    QVERIFY(bytes() == before);
    QVERIFY(!std::filesystem::exists(path + "-wal"));
  }

  // A device, pipe or directory is no history: /dev/null took SQLite's "disk I/O error" after SQLite
  // had created /dev/null-journal (a pipe here, so that a regression harms no device).
  void aHistoryIsARegularFile() {
    const auto pipe = db("a-pipe");
    QCOMPARE(::mkfifo(pipe.c_str(), 0600), 0);
    const auto pipe_error = error_of([&] { Writer writer(pipe); });
    QVERIFY2(contains(pipe_error.what(), pipe + " is not a regular file, not a history"), pipe_error.what());
    QVERIFY(!std::filesystem::exists(pipe + "-journal"));
    const auto directory = db("a-directory");
    std::filesystem::create_directories(directory);
    const auto dir_error = error_of([&] { History history(directory); });
    QVERIFY2(contains(dir_error.what(), "is a directory, not a history file"), dir_error.what());
  }

  // A version-1 file kept stream positions as artifacts; version 2 moves them to their own table.
  void streamPositionArtifactsMigrateToTheirTable() {
    const auto path = db("positions-v1.sqlite");
    const std::vector<Migration> v1(schema_migrations().begin(), schema_migrations().begin() + 1);
    QCOMPARE(v1.back().version, 1);
    {
      Connection connection = open_history(path, v1);
      connection.exec("INSERT INTO runs(id, name, status, created_ms, spec_json, plan_json, hosts_json, tessera_version) "
                      "VALUES('0123456789abcdef0123456789abcdef', 'followed', 'running', 1, '{}', '{}', '[\"tcp://a:1\"]', 'x');"
                      "INSERT INTO artifacts VALUES(1, 'stream_position', 'agent-stream/node-0', 41, 0, 0);"
                      "INSERT INTO artifacts VALUES(1, 'stream_position', 'agent-stream/node-12', 7, 0, 0);"
                      "INSERT INTO artifacts VALUES(1, 'checkpoint', 'ckpt/step_5', 5, 100, 0);",
                      "writing a version-1 history");
    }
    History history(path);
    QCOMPARE(sql_int(path, "SELECT max(version) FROM schema_version"), int64_t{2});
    const auto positions = history.stream_positions("0123456789abcdef0123456789abcdef");
    QCOMPARE(positions.size(), size_t{2});
    QCOMPARE(positions[0], (StreamPosition{0, 41}));
    QCOMPARE(positions[1], (StreamPosition{12, 7}));
    const auto artifacts = history.artifacts("0123456789abcdef0123456789abcdef");
    QCOMPARE(artifacts.size(), size_t{1});
    QCOMPARE(artifacts[0].kind, std::string("checkpoint"));
    // The writer keeps the highest position of a node and deletes them with the run.
    {
      Writer writer(path);
      const auto run = writer.open_run("0123456789abcdef0123456789abcdef");
      writer.append(run, StreamPosition{0, 45});
      writer.append(run, StreamPosition{12, 3});
      writer.append(run, StreamPosition{3, 1});
      writer.flush();
    }
    const auto after = history.stream_positions("0123456789abcdef0123456789abcdef");
    QCOMPARE(after.size(), size_t{3});
    QCOMPARE(after[0], (StreamPosition{0, 45}));
    QCOMPARE(after[1], (StreamPosition{3, 1}));
    QCOMPARE(after[2], (StreamPosition{12, 7}));
    history.delete_run("0123456789abcdef0123456789abcdef", /*even_if_active=*/true);  // a migrated run still running
    QCOMPARE(sql_int(path, "SELECT count(*) FROM stream_positions"), int64_t{0});
  }

  void foreignSqliteFileRefused() {
    const auto path = db("foreign.sqlite");
    {
      Connection connection(path, true);
      connection.exec("CREATE TABLE songs(title TEXT)", "test");
    }
    const auto read_header = [&] {
      std::ifstream in(path, std::ios::binary);
      std::string header(20, '\0');
      in.read(header.data(), 20);
      return header;
    };
    const std::string before = read_header();
    const auto error = error_of([&] { History history(path); });
    QCOMPARE(error.kind(), ErrorKind::corrupt);
    QVERIFY2(contains(error.what(), "not a Tessera history"), error.what());
    // Left as it was: WAL mode was switched on in it (header bytes 18-19 from 1 to 2) before the refusal.
    QCOMPARE(read_header(), before);
    QVERIFY(!fs::exists(path + "-wal"));
  }

  void anEndedRunKeepsItsEnd() {
    // A follower attaching again to a run that was done marks it running and done once more: the end
    // it had stays. A lost run (its writer died) followed again ends when its follower sees it end.
    const auto path = db("ended.sqlite");
    const auto id = write_full_run(path, "ended");
    const auto ended = History(path).run(id).ended_ms;
    QVERIFY(ended.has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    {
      Writer writer(path);
      const auto run = writer.open_run(id);
      writer.set_status(run, RunStatus::running);
      writer.set_status(run, RunStatus::done, "finished");
      writer.set_status(run, RunStatus::lost, "lost later");
      writer.close();
    }
    const auto again = History(path).run(id);
    QCOMPARE(again.status, RunStatus::lost);
    QCOMPARE(again.ended_ms, ended);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    {
      Writer writer(path);
      const auto run = writer.open_run(id);
      writer.set_status(run, RunStatus::running);
      writer.set_status(run, RunStatus::done, "finished");
      writer.close();
    }
    const auto found = History(path).run(id);
    QCOMPARE(found.status, RunStatus::done);
    QVERIFY(*found.ended_ms > *ended);  // after lost: the end of the follower that saw it finish
    // An end timed by the agents (at_ms) is kept; one in the future is now, one before the start (an
    // agent's clock behind) the start.
    const auto timed = [&](const char* name, int64_t offset_ms) {
      Writer writer(path);
      RunRecord record;
      record.name = name;
      const auto run = writer.create_run(record);
      writer.set_status(run, RunStatus::running);
      writer.flush();
      const int64_t started = *History(path).run(run.id).started_ms;
      std::this_thread::sleep_for(std::chrono::milliseconds(40));  // the end timed below is in the past
      writer.set_status(run, RunStatus::done, {}, started + offset_ms);
      writer.close();
      const auto got = History(path).run(run.id);
      return std::pair{started, *got.ended_ms};
    };
    const auto [start1, end1] = timed("agent-timed", 10);
    QCOMPARE(end1, start1 + 10);
    const auto [start2, end2] = timed("agent-behind", -60'000);
    QCOMPARE(end2, start2);
    const auto [start3, end3] = timed("agent-ahead", 3'600'000);
    QVERIFY(end3 < start3 + 3'600'000 && end3 >= start3);
  }

  void ingestionReadsBackExactly() {
    const auto path = db("exact.sqlite");
    const auto id = write_full_run(path, "exact");
    History history(path);
    const auto run = history.run(id);
    QCOMPARE(run.name, std::string("exact"));
    QCOMPARE(run.status, RunStatus::done);
    QCOMPARE(run.exit_reason, std::string("finished"));
    QVERIFY(run.started_ms && run.ended_ms && *run.started_ms <= *run.ended_ms && run.created_ms <= *run.started_ms);
    QCOMPARE(run.hosts, (std::vector<std::string>{"node-a", "node-b"}));
    QCOMPARE(run.tags, (std::vector<std::string>{"baseline", "cpu"}));
    QCOMPARE(run.plan["mfu"].get<double>(), 0.41);
    QCOMPARE(run.spec, tiny_spec("exact"));
    QCOMPARE(run.tessera_version, std::string(tessera_version()));
    QVERIFY(is_run_id(run.id));

    const auto loss = history.points(id, "loss", 1);
    QCOMPARE(loss.size(), size_t{100});
    for (int64_t step = 1; step <= 100; ++step) {
      const auto& p = loss[static_cast<size_t>(step - 1)];
      QCOMPARE(p.step, step);
      QVERIFY(same(p.value, 1.0 / static_cast<double>(step) + 1));
      QVERIFY(same(p.wall_time_s, 1.7e9 + step * 0.1 + 1e-3));
    }
    const auto grad = history.points(id, "grad_norm", 0);
    QVERIFY(std::isnan(grad[49].value));
    QVERIFY(std::isinf(grad[59].value));
    QVERIFY(same(grad[9].value, 0.1 * 10));
    QCOMPARE(history.series(id).size(), size_t{4});
    const auto counts = history.counts(id);
    QCOMPARE(counts.points, int64_t{400});
    QCOMPARE(counts.events, int64_t{2});
    QCOMPARE(counts.log_lines, int64_t{2});
    QCOMPARE(counts.artifacts, int64_t{1});
    QCOMPARE(history.timeline(id)[1], (TimelineEvent{1, 1, 1, "B", 3, 1, 1.7e9 + 0.003, 1.7e9 + 0.0071}));
    QCOMPARE(history.logs(id)[1].line, std::string("warning: a \"quoted\", comma\nand a second line"));
    QCOMPARE(history.artifacts(id)[0], (Artifact{"checkpoint", "/ckpt/step-100", 100, 123456789, 1'700'000'100'000}));
  }

  void repeatedStepReplacesValueAndRollup() {
    const auto path = db("replace.sqlite");
    Writer writer(path);
    const auto run = writer.create_run(tiny_run("replace"));
    for (int64_t step = 0; step < 64; ++step) writer.append(run, MetricPoint{"loss", 0, step, 100.0 + step, 5.0});
    writer.flush();
    writer.append(run, MetricPoint{"loss", 0, 40, 200.0, 99.0});  // a resumed rank reports step 40 again
    writer.close();
    History history(path);
    const auto points = history.points(run.id, "loss", 0);
    QCOMPARE(points.size(), size_t{64});
    QCOMPARE(points[40].value, 99.0);
    const auto buckets = history.downsample(run.id, "loss", 0, 1);
    QCOMPARE(buckets.size(), size_t{1});
    QCOMPARE(buckets[0].count, int64_t{64});
    QCOMPARE(buckets[0].max, 99.0);
    QCOMPARE(buckets[0].min, 5.0);
    QCOMPARE(history.counts(run.id).points, int64_t{64});
  }

  void pointsOfOneBatchInAnyOrderEndWithTheirLastValue() {
    // The writer inserts a batch's points ordered by series and step: the order they came in must not
    // matter, except that a step repeated within the batch keeps the value appended last.
    const auto path = db("one-batch.sqlite");
    WriterOptions options;
    options.flush_interval = std::chrono::milliseconds(60000);  // everything below is one batch
    Writer writer(path, options);
    const auto run = writer.create_run(tiny_run("one-batch"));
    for (int64_t step = 999; step >= 0; --step)
      for (const char* name : {"loss", "lr"}) writer.append(run, MetricPoint{name, step % 3, step, 1.0, 1.0});
    for (int64_t step = 0; step < 1000; ++step)
      writer.append(run, std::vector<MetricPoint>{{"loss", step % 3, step, 2.0, 2.0}, {"lr", step % 3, step, 2.0, 3.0}});
    QCOMPARE(writer.committed().batches, int64_t{1});  // only the run so far
    writer.close();
    QCOMPARE(writer.committed().batches, int64_t{2});
    History history(path);
    QCOMPARE(history.counts(run.id).points, int64_t{2000});
    for (int64_t rank = 0; rank < 3; ++rank) {
      const auto loss = history.points(run.id, "loss", rank);
      const auto lr = history.points(run.id, "lr", rank);
      QCOMPARE(loss.size(), size_t{rank == 0 ? 334u : 333u});
      QCOMPARE(lr.size(), loss.size());
      for (size_t i = 0; i < loss.size(); ++i) {
        QCOMPARE(loss[i].step, rank + 3 * static_cast<int64_t>(i));
        QCOMPARE(loss[i].value, 2.0);
        QCOMPARE(lr[i].value, 3.0);
      }
      const auto buckets = history.downsample(run.id, "lr", rank, 1);
      QCOMPARE(buckets.size(), size_t{1});
      QCOMPARE(buckets[0].count, static_cast<int64_t>(lr.size()));
      QCOMPARE(buckets[0].min, 3.0);
      QCOMPARE(buckets[0].max, 3.0);
    }
  }

  void aRankReportingManyStepsAgainReplacesThem() {
    // Whole chunks of points already stored (a resumed rank re-reporting 100 steps): each takes its
    // new value and the rollup is recomputed.
    const auto path = db("rewrite.sqlite");
    Writer writer(path);
    const auto run = writer.create_run(tiny_run("rewrite"));
    for (int64_t step = 0; step < 200; ++step) writer.append(run, MetricPoint{"loss", 0, step, 1.0, 5.0});
    writer.flush();
    for (int64_t step = 50; step < 150; ++step) writer.append(run, MetricPoint{"loss", 0, step, 2.0, 7.0});
    writer.close();
    History history(path);
    const auto points = history.points(run.id, "loss", 0);
    QCOMPARE(points.size(), size_t{200});
    for (const auto& p : points) QCOMPARE(p.value, p.step >= 50 && p.step < 150 ? 7.0 : 5.0);
    const auto buckets = history.downsample(run.id, "loss", 0, 1);  // read off the rollup
    QCOMPARE(buckets.size(), size_t{1});
    QCOMPARE(buckets[0].count, int64_t{200});
    QCOMPARE(buckets[0].min, 5.0);
    QCOMPARE(buckets[0].max, 7.0);
    QCOMPARE(history.counts(run.id).points, int64_t{200});
  }

  void duplicateRunRefusedWriterGoesOn() {
    const auto path = db("duplicate-run.sqlite");
    Writer writer(path);
    const auto first = writer.create_run(tiny_run("same-name"));
    const auto error = error_of([&] { writer.create_run(tiny_run("same-name")); });
    QCOMPARE(error.kind(), ErrorKind::duplicate);
    QVERIFY2(contains(error.what(), "a run named 'same-name'") && contains(error.what(), first.id), error.what());
    auto with_id = tiny_run("other-name");
    with_id.id = first.id;
    QCOMPARE(error_of([&] { writer.create_run(with_id); }).kind(), ErrorKind::duplicate);
    writer.append(first, MetricPoint{"loss", 0, 1, 1.0, 2.0});
    writer.close();
    QCOMPARE(History(path).counts(first.id).points, int64_t{1});
  }

  void downsampleKeepsASpikeInAMillionPoints() {
    const auto path = db("spike.sqlite");
    constexpr int64_t n = 1'000'000, spike_step = 612'345, dip_step = 77'777;
    std::string id;
    {
      WriterOptions options;
      options.queue_points = 100'000;
      Writer writer(path, options);
      const auto run = writer.create_run(tiny_run("spike"));
      id = run.id;
      for (int64_t start = 0; start < n; start += 1000) {
        std::vector<MetricPoint> group;
        group.reserve(1000);
        for (int64_t step = start; step < start + 1000; ++step) {
          const double value = step == spike_step ? 1e6 : (step == dip_step ? -1e6 : std::sin(static_cast<double>(step) * 1e-3));
          group.push_back({"loss", 0, step, 1.7e9 + static_cast<double>(step) * 0.25, value});
        }
        writer.append(run, std::move(group));
      }
      writer.close();
      QCOMPARE(writer.committed().points, n);
    }
    History history(path);
    const auto buckets = history.downsample(id, "loss", 0, 2000);
    QCOMPARE(buckets.size(), size_t{2000});
    int64_t total = 0, spikes = 0, dips = 0;
    for (const auto& b : buckets) {
      total += b.count;
      if (b.max == 1e6) {
        ++spikes;
        QVERIFY(b.x_start <= spike_step && spike_step < b.x_end);
      }
      if (b.min == -1e6) ++dips;
      QVERIFY(b.max == 1e6 || b.max <= 1.0);
    }
    QCOMPARE(total, n);
    QCOMPARE(spikes, int64_t{1});
    QCOMPARE(dips, int64_t{1});
    QCOMPARE(buckets.back().last_step, n - 1);
    QCOMPARE(buckets.back().last, std::sin(static_cast<double>(n - 1) * 1e-3));

    // Every axis gives exactly the buckets computed from the raw points.
    const auto points = history.points(id, "loss", 0);
    QCOMPARE(static_cast<int64_t>(points.size()), n);
    QString why;
    QVERIFY2(same_buckets(buckets, reference_buckets(points, 2000, XAxis::step, 1), &why), qPrintable(why));
    QCOMPARE(history.tokens_per_step(id), int64_t{512});
    QVERIFY2(same_buckets(history.downsample(id, "loss", 0, 777, XAxis::tokens), reference_buckets(points, 777, XAxis::tokens, 512), &why),
             qPrintable(why));
    QVERIFY2(same_buckets(history.downsample(id, "loss", 0, 1500, XAxis::wall_time),
                          reference_buckets(points, 1500, XAxis::wall_time, 1), &why),
             qPrintable(why));
    QVERIFY(history.downsample(id, "no-such-metric", 0, 10).empty());
  }

  void summariesFollowTheRules() {
    const auto path = db("summary.sqlite");
    Writer writer(path);
    const auto run = writer.create_run(tiny_run("summary"));
    for (int64_t step = 1; step <= 10; ++step) {
      // Two ranks report the loss: per-step mean 11 - step.
      writer.append(run, MetricPoint{"loss", 0, step, 1.0 * step, 10.0 - step});
      writer.append(run, MetricPoint{"loss", 1, step, 1.0 * step, 12.0 - step});
      writer.append(run, MetricPoint{"mfu", 0, step, 1.0 * step, step % 2 ? 0.4 : 0.5});
      writer.append(run, MetricPoint{"peak_tflops", 0, step, 1.0 * step, step % 2 ? 900.0 : 1000.0});
      writer.append(run, MetricPoint{"bubble", 0, step, 1.0 * step, 0.25});
      writer.append(run, MetricPoint{"tokens_per_s", 0, step, 1.0 * step, 1000.0 * step});
      writer.append(run, MetricPoint{"peak_memory_bytes", step % 2, step, 1.0 * step, 1e9 + step});
    }
    const auto diverged = writer.create_run(tiny_run("diverged"));
    writer.append(diverged, MetricPoint{"loss", 0, 1, 1.0, 3.0});
    writer.append(diverged, MetricPoint{"loss", 0, 2, 2.0, kNaN});
    const auto empty = writer.create_run(tiny_run("empty"));
    writer.close();

    History history(path);
    const auto s = history.summary(run.id);
    QCOMPARE(s.points, int64_t{70});
    QCOMPARE(*s.last_step, int64_t{10});
    QCOMPARE(*s.final_loss, 1.0);
    QCOMPARE(*s.min_loss, 1.0);
    QCOMPARE(*s.mean_mfu, 0.45);
    QCOMPARE(*s.mfu_peak_tflops, 950.0);
    QCOMPARE(*s.mean_bubble, 0.25);
    QCOMPARE(*s.mean_tokens_per_s, 5500.0);
    QCOMPARE(*s.peak_memory_bytes, int64_t{1'000'000'010});

    const auto d = history.summary(diverged.id);
    QVERIFY(std::isnan(*d.final_loss));  // a NaN loss at the end is shown, not hidden
    QCOMPARE(*d.min_loss, 3.0);
    QVERIFY(!d.mean_mfu && !d.mfu_peak_tflops && !d.peak_memory_bytes);

    const auto e = history.summary(empty.id);
    QCOMPARE(e.points, int64_t{0});
    QVERIFY(!e.last_step && !e.final_loss && !e.min_loss && !e.mean_tokens_per_s);
  }

  void configDiffShowsOnlyDifferingFields() {
    const auto path = db("diff.sqlite");
    Writer writer(path);
    const auto a = writer.create_run(tiny_run("a", 1, 3e-4));
    const auto b = writer.create_run(tiny_run("b", 2, 3e-4));
    const auto c = writer.create_run(tiny_run("c", 2, 1e-3));
    auto odd = tiny_run("odd");
    odd.spec = {{"custom", {{"knob", 7}}}};
    const auto o = writer.create_run(odd);
    auto empty = tiny_run("empty");
    empty.spec = nlohmann::ordered_json::object();
    const auto e = writer.create_run(empty);
    writer.close();
    History history(path);
    const auto rows = history.config_diff({a.id, b.id, c.id});
    std::vector<std::string> paths;
    for (const auto& row : rows) paths.push_back(row.path);
    QCOMPARE(paths, (std::vector<std::string>{"name", "parallel.tp", "training.lr"}));
    QCOMPARE(rows[1].values[0]->get<int>(), 1);
    QCOMPARE(rows[1].values[2]->get<int>(), 2);
    QCOMPARE(rows[2].values[2]->get<double>(), 1e-3);
    // Identical specs apart from the name: only the name differs.
    QCOMPARE(history.config_diff({a.id, a.id}).size(), size_t{0});
    // A field only one run has is shown with a gap for the other.
    const auto with_odd = history.config_diff({a.id, o.id});
    const auto knob = std::find_if(with_odd.begin(), with_odd.end(), [](const auto& r) { return r.path == "custom.knob"; });
    QVERIFY(knob != with_odd.end());
    QVERIFY(!knob->values[0] && knob->values[1]->get<int>() == 7);
    // A spec of {} has no fields: it was one row named "" holding {}.
    const auto with_empty = history.config_diff({a.id, e.id});
    QVERIFY(!with_empty.empty());
    for (const auto& row : with_empty) QVERIFY2(!row.path.empty() && !row.values[1], row.path.c_str());
  }

  void filtersByStatusTagNameDateAndSpecField() {
    const auto path = db("filters.sqlite");
    Writer writer(path);
    auto make = [&](const std::string& name, int tp, double lr, int64_t created_ms, std::vector<std::string> tags, RunStatus status) {
      auto run = tiny_run(name, tp, lr);
      run.created_ms = created_ms;
      run.tags = std::move(tags);
      run.status = status;
      return writer.create_run(run).id;
    };
    const auto jan = make("Llama-Baseline", 1, 3e-4, parse_time_utc("2025-01-10"), {"baseline"}, RunStatus::done);
    const auto feb = make("llama-tp2", 2, 3e-4, parse_time_utc("2025-02-10T12:00:00Z"), {"baseline", "tp"}, RunStatus::failed);
    const auto mar = make("gpt-lr ÜBER Ωmega Straße ΟΔΟΣ", 1, 1e-3, parse_time_utc("2025-03-10"), {}, RunStatus::done);
    writer.close();
    History history(path);
    auto ids = [&](const RunFilter& f) {
      std::vector<std::string> out;
      for (const auto& r : history.runs(f)) out.push_back(r.id);
      return out;
    };
    QCOMPARE(ids({}), (std::vector<std::string>{mar, feb, jan}));  // newest first
    RunFilter done;
    done.status = RunStatus::done;
    QCOMPARE(ids(done), (std::vector<std::string>{mar, jan}));
    RunFilter tagged;
    tagged.tag = "baseline";
    QCOMPARE(ids(tagged), (std::vector<std::string>{feb, jan}));
    RunFilter named;
    named.name_contains = "LLAMA";
    QCOMPARE(ids(named), (std::vector<std::string>{feb, jan}));
    named.name_contains = "über ωMEGA";  // any case beyond ASCII too
    QCOMPARE(ids(named), (std::vector<std::string>{mar}));
    named.name_contains = "STRASSE οδος";  // ß as "ss", a final sigma as σ
    QCOMPARE(ids(named), (std::vector<std::string>{mar}));
    named.name_contains = "straẞe ΟΔΟς";
    QCOMPARE(ids(named), (std::vector<std::string>{mar}));
    RunFilter dated;
    dated.created_from_ms = parse_time_utc("2025-02-01");
    dated.created_before_ms = parse_time_utc("2025-03-01");
    QCOMPARE(ids(dated), (std::vector<std::string>{feb}));
    RunFilter by_spec;
    by_spec.spec = {SpecCondition::parse("parallel.tp=2")};
    QCOMPARE(ids(by_spec), (std::vector<std::string>{feb}));
    by_spec.spec = {SpecCondition::parse("model.num_layers=4"), SpecCondition::parse("training.lr=0.001")};
    QCOMPARE(ids(by_spec), (std::vector<std::string>{mar}));  // num_layers comes from the tiny-gpt preset
    by_spec.spec = {SpecCondition::parse("model.arch=gpt")};
    const auto deep = error_of([] { SpecCondition::parse("model.x=" + std::string(100000, '[') + std::string(100000, ']')); });
    QVERIFY2(contains(deep.what(), "spec condition 'model.x' nests arrays and objects more than 64 deep"), deep.what());
    // A path no spec has is refused (it matched nothing, silently), with the field meant when near.
    const auto unknown = error_of([] { SpecCondition::parse("tp=2"); });
    QCOMPARE(unknown.kind(), ErrorKind::invalid);
    QVERIFY2(contains(unknown.what(), "tp is not a spec field (did you mean parallel.tp?)"), unknown.what());
    QVERIFY(contains(error_of([] { SpecCondition::parse("model.x=1"); }).what(), "model.x is not a spec field"));
    QVERIFY(contains(error_of([] { SpecCondition::parse("foo.tp=1"); }).what(), "(did you mean parallel.tp?)"));
    QCOMPARE(SpecCondition::parse("name=x").path, std::string("name"));
    QCOMPARE(SpecCondition::parse(R"(cluster={"gpu": "cpu"})").path, std::string("cluster"));  // a whole section
    QCOMPARE(ids(by_spec).size(), size_t{3});
    by_spec.spec = {SpecCondition::parse("model.arch=llama")};
    QVERIFY(ids(by_spec).empty());
    by_spec.spec = {SpecCondition::parse("training.save_every=0")};  // a default, whether or not stored
    QCOMPARE(ids(by_spec).size(), size_t{3});
    QCOMPARE(error_of([] { SpecCondition::parse("model.num_layers"); }).kind(), ErrorKind::invalid);
    // A value the field cannot hold matched nothing, silently: refused with the field's rule.
    for (const char* text : {"parallel.tp=02", "parallel.tp=abc", "training.flash_attention=True", "model.arch=gtp",
                             "parallel.tp=2.5"}) {
      const auto wrong = error_of([&] { SpecCondition::parse(text); });
      QCOMPARE(wrong.kind(), ErrorKind::invalid);
      QVERIFY2(contains(wrong.what(), std::string("spec condition ") + text + ": "), wrong.what());
    }
    QVERIFY(contains(error_of([] { SpecCondition::parse("parallel.tp=02"); }).what(), "parallel.tp"));
    // A whole section compares as an object only.
    const auto section = error_of([] { SpecCondition::parse("parallel=2"); });
    QVERIFY2(contains(section.what(), "parallel is a whole section; give one of its fields (parallel."), section.what());
    // Text fields keep text that reads as something else.
    QCOMPARE(SpecCondition::parse("name=7").value, nlohmann::json("7"));
    QCOMPARE(SpecCondition::parse(R"(name="my run")").value, nlohmann::json("my run"));
    QCOMPARE(SpecCondition::parse("model.preset=retired-preset").value, nlohmann::json("retired-preset"));
    QCOMPARE(SpecCondition::parse("training.flash_attention=true").value, nlohmann::json(true));
  }

  void idsResolveByPrefixAndName() {
    const auto path = db("resolve.sqlite");
    Writer writer(path);
    std::vector<std::string> ids;
    for (const auto* id : {"aaaa0000000000000000000000000001", "aaaa0000000000000000000000000002", "bbbb0000000000000000000000000003"}) {
      auto run = tiny_run(std::string("run-") + id[0] + id[31]);
      run.id = id;
      ids.push_back(writer.create_run(run).id);
    }
    // Named as another run's id is shown (its first 12 digits): the name was taken for that run and
    // `runs delete` removed the other. Both are listed now; the whole id still means the run.
    auto named_as_id = tiny_run("bbbb00000000");
    named_as_id.id = "cccc0000000000000000000000000004";
    ids.push_back(writer.create_run(named_as_id).id);
    auto short_name = tiny_run("aaaa");
    short_name.id = "dddd0000000000000000000000000005";
    writer.create_run(short_name);
    // A name that is a whole run id, a line break or too long cannot be given.
    for (const auto& [name, rule] : {std::pair<std::string, std::string>{ids[0], "a run name cannot be a run id (32 hex digits)"},
                                     {"AAAA0000000000000000000000000001", "a run name cannot be a run id (32 hex digits)"},
                                     {"two\nlines", "a run name is one line, without control characters (byte 0x0A at offset 3)"},
                                     {"run \xE2\x80\xAE" "evil", "a run name must not hold a bidirectional override (U+202E at offset 4)"},
                                     {std::string(2049, 'n'), "a run name is at most 2048 bytes, this one 2049"}}) {
      const auto refused = error_of([&] { writer.create_run(tiny_run(name)); });
      QCOMPARE(refused.kind(), ErrorKind::invalid);
      QVERIFY2(contains(refused.what(), rule), refused.what());
    }
    writer.close();
    History history(path);
    QCOMPARE(history.resolve("bbbb0000000000000000000000000003"), ids[2]);
    QCOMPARE(history.resolve("cccc"), ids[3]);
    const auto name_or_id = error_of([&] { history.resolve("bbbb00000000"); });
    QCOMPARE(name_or_id.kind(), ErrorKind::ambiguous);
    QVERIFY2(contains(name_or_id.what(), "'bbbb00000000' matches 2 runs: bbbb00000000 (run-b3), cccc00000000 (bbbb00000000); "
                                         "it is the name of one and the start of the other's id: give the whole id"),
             name_or_id.what());
    QCOMPARE(history.resolve("bbbb0"), ids[2]);  // the name is no prefix of anything
    // A short name is the run's, even where it starts other ids ("aaaa" starts two).
    QCOMPARE(history.resolve("aaaa"), short_name.id);
    QCOMPARE(history.resolve("BBBB0000000"), ids[2]);
    QCOMPARE(history.resolve(ids[1]), ids[1]);
    QCOMPARE(history.resolve("run-a1"), ids[0]);
    const auto ambiguous = error_of([&] { history.resolve("aaaa0"); });
    QCOMPARE(ambiguous.kind(), ErrorKind::ambiguous);
    QVERIFY2(contains(ambiguous.what(), "matches 2 runs"), ambiguous.what());
    const auto missing = error_of([&] { history.resolve("eeee"); });
    QCOMPARE(missing.kind(), ErrorKind::not_found);
    QVERIFY2(contains(missing.what(), "'eeee'"), missing.what());
    QVERIFY(is_run_id(new_run_id()) && new_run_id() != new_run_id());
  }

  void exportImportRoundTrip() {
    const auto source_path = db("source.sqlite");
    const auto id = write_full_run(source_path, "round-trip");
    History source(source_path);

    const auto json_file = db("bundle.json");
    {
      std::ofstream out(json_file);
      source.export_json(id, out);
    }
    History from_json(db("from-json.sqlite"));
    const auto imported = from_json.import_run(json_file);
    QCOMPARE(imported.format, std::string("json bundle"));
    QCOMPARE(imported.counts.points, int64_t{400});
    check_same_run(source, id, from_json, id);

    // Exported while running, it comes in lost: stored as running, the next writer to open the history
    // took it for one whose writer had died (a failed runs follow of another run did). A planned run
    // that started is refused.
    {
      auto bundle = nlohmann::ordered_json::parse(std::ifstream(json_file));
      bundle["run"]["status"] = "running";
      bundle["run"]["ended"] = nullptr;
      std::ofstream(db("running.json")) << bundle.dump();
      History from_running(db("from-running.sqlite"));
      const auto running = from_running.import_run(db("running.json")).run;
      QCOMPARE(running.status, RunStatus::lost);
      QCOMPARE(running.exit_reason, std::string("running when it was exported; imported as lost (no process here writes it)"));
      bundle["run"]["status"] = "planned";
      bundle["run"]["id"] = std::string(32, 'e');
      bundle["run"]["name"] = "planned-run";
      std::ofstream(db("planned.json")) << bundle.dump();
      const auto planned = error_of([&] { from_running.import_run(db("planned.json")); });
      QVERIFY2(contains(planned.what(), "run.status is planned, but the run has run.started: a planned run has not started"),
               planned.what());
      QCOMPARE(from_running.runs().size(), size_t{1});
      // A host or a metric name with a control character was stored as it was.
      auto odd_host = bundle;
      odd_host["run"]["status"] = "done";
      odd_host["run"]["hosts"] = {"node-1", std::string("node\0" "2", 6)};
      std::ofstream(db("odd-host.json")) << odd_host.dump();
      const auto host_error = error_of([&] { from_running.import_run(db("odd-host.json")); });
      QVERIFY2(contains(host_error.what(), "run.hosts[1]: a host is one line, without control characters (byte 0x00 at offset 4)"),
               host_error.what());
      auto odd_metric = bundle;
      odd_metric["run"]["status"] = "done";
      QVERIFY(odd_metric["metrics"].is_array() && !odd_metric["metrics"].empty());
      odd_metric["metrics"][0]["name"] = "loss\tnow";
      std::ofstream(db("odd-metric.json")) << odd_metric.dump();
      const auto metric_error = error_of([&] { from_running.import_run(db("odd-metric.json")); });
      QVERIFY2(contains(metric_error.what(), "metrics[0].name: a metric name is one line, without control characters (byte 0x09"),
               metric_error.what());
      QCOMPARE(from_running.runs().size(), size_t{1});
      // A key given twice was read as the last of the two, without a word.
      bundle["run"]["status"] = "done";
      std::string twice = bundle.dump();
      const std::string name = "\"name\":\"planned-run\"";
      QVERIFY(twice.find(name) != std::string::npos);
      twice.replace(twice.find(name), name.size(), name + ",\"name\":\"other\"");
      std::ofstream(db("twice.json")) << twice;
      const auto named_twice = error_of([&] { from_running.import_run(db("twice.json")); });
      QCOMPARE(named_twice.kind(), ErrorKind::invalid);
      QVERIFY2(contains(named_twice.what(), "twice.json gives \"run.name\" twice (which one is meant?)"), named_twice.what());
      QCOMPARE(from_running.runs().size(), size_t{1});
    }

    const auto csv_dir = db("bundle-csv");
    source.export_csv(id, csv_dir);
    QVERIFY(fs::exists(csv_dir + "/run.json") && fs::exists(csv_dir + "/metrics.csv"));
    History from_csv(db("from-csv.sqlite"));
    QCOMPARE(from_csv.import_run(csv_dir).format, std::string("csv bundle"));
    check_same_run(source, id, from_csv, id);
    QCOMPARE(error_of([&] { source.export_csv(id, csv_dir); }).kind(), ErrorKind::invalid);  // never overwrites a bundle

    // The summary and the downsampled series are the same after the trip.
    QCOMPARE(*from_csv.summary(id).final_loss, *source.summary(id).final_loss);
    QString why;
    QVERIFY2(same_buckets(source.downsample(id, "grad_norm", 1, 7), from_json.downsample(id, "grad_norm", 1, 7), &why), qPrintable(why));

    // A CSV bundle whose field is not UTF-8 (a Latin-1 log line) is refused where it is, whole: the
    // history keeps UTF-8 text, as the agents and tessera-train write it.
    const auto odd_dir = db("bundle-odd");
    fs::copy(csv_dir, odd_dir);
    std::ofstream(odd_dir + "/logs.csv", std::ios::app) << "0,stdout,1.5,caf\xe9 au lait\n";
    History odd(db("odd.sqlite"));
    const auto latin1 = error_of([&] { odd.import_run(odd_dir); });
    QCOMPARE(latin1.kind(), ErrorKind::invalid);
    QVERIFY2(contains(latin1.what(), "logs.csv line ") && contains(latin1.what(), ": line is not UTF-8 text (byte 0xE9 at offset 3)"),
             latin1.what());
    QVERIFY(odd.runs().empty());

    // A history edited by hand may still hold such bytes: the run exports as JSON, whole, those bytes
    // as U+FFFD (it stopped half-written on nlohmann's type_error 316).
    {
      Connection connection(db("from-csv.sqlite"), false);
      connection.exec("UPDATE logs SET line = CAST(X'636166FF' AS TEXT) WHERE rowid = (SELECT MAX(rowid) FROM logs)", "test");
    }
    std::stringstream exported;
    History edited(db("from-csv.sqlite"));
    edited.export_json(id, exported);
    const auto document = nlohmann::json::parse(exported.str());
    QCOMPARE(document["logs"].back()["line"].get<std::string>(), std::string("caf\xef\xbf\xbd"));
    // and as a CSV bundle that imports again (import refuses bytes that are not UTF-8).
    const auto edited_csv = db("bundle-edited");
    edited.export_csv(id, edited_csv);
    History reimported(db("reimported.sqlite"));
    reimported.import_run(edited_csv);
    QCOMPARE(reimported.logs(id).back().line, std::string("caf\xef\xbf\xbd"));
  }

  void duplicateImportRefusedByIdAndName() {
    const auto id = write_full_run(db("dup-source.sqlite"), "dup");
    History source(db("dup-source.sqlite"));
    std::stringstream bundle;
    source.export_json(id, bundle);
    const auto file = db("dup.json");
    std::ofstream(file) << bundle.str();
    History target(db("dup-target.sqlite"));
    target.import_run(file);
    const auto again = error_of([&] { target.import_run(file); });
    QCOMPARE(again.kind(), ErrorKind::duplicate);
    QVERIFY2(contains(again.what(), id) && contains(again.what(), "'dup'"), again.what());
    ImportOptions renamed;
    renamed.name = "dup-2";
    QCOMPARE(error_of([&] { target.import_run(file, renamed); }).kind(), ErrorKind::duplicate);  // same id
    // Another run (new id) under a name already present is refused by name.
    auto document = nlohmann::ordered_json::parse(bundle.str());
    document["run"]["id"] = new_run_id();
    const auto other = db("dup-other.json");
    std::ofstream(other) << document.dump();
    const auto by_name = error_of([&] { target.import_run(other); });
    QCOMPARE(by_name.kind(), ErrorKind::duplicate);
    QVERIFY2(contains(by_name.what(), "a run named 'dup'"), by_name.what());
    QCOMPARE(target.import_run(other, renamed).run.name, std::string("dup-2"));
    QCOMPARE(target.runs().size(), size_t{2});
  }

  void importIsAtomic() {
    const auto id = write_full_run(db("atomic-source.sqlite"), "atomic");
    History source(db("atomic-source.sqlite"));
    std::stringstream bundle;
    source.export_json(id, bundle);
    auto document = nlohmann::ordered_json::parse(bundle.str());
    document["metrics"][1]["points"][50][2] = "not a number";  // a bad row in the middle
    const auto file = db("atomic.json");
    std::ofstream(file) << document.dump();
    const auto target_path = db("atomic-target.sqlite");
    History target(target_path);
    const auto error = error_of([&] { target.import_run(file); });
    QCOMPARE(error.kind(), ErrorKind::invalid);
    QVERIFY2(contains(error.what(), "metrics[1].points[50][2]"), error.what());
    for (const char* table : {"runs", "run_tags", "series", "metrics", "metric_blocks", "metric_names", "timeline", "logs", "artifacts"})
      QCOMPARE(sql_int(target_path, std::string("SELECT count(*) FROM ") + table), int64_t{0});

    // The same for a CSV bundle with a bad line in the middle of metrics.csv.
    const auto csv_dir = db("atomic-csv");
    source.export_csv(id, csv_dir);
    std::ifstream in(csv_dir + "/metrics.csv");
    std::stringstream text;
    text << in.rdbuf();
    std::string csv = text.str();
    const size_t line_start = [&] {
      size_t pos = 0;
      for (int line = 0; line < 200; ++line) pos = csv.find('\n', pos) + 1;
      return pos;
    }();
    csv.insert(line_start, "loss,0,oops,1.0,2.0\n");
    std::ofstream(csv_dir + "/metrics.csv") << csv;
    const auto csv_error = error_of([&] { target.import_run(csv_dir); });
    QCOMPARE(csv_error.kind(), ErrorKind::invalid);
    QVERIFY2(contains(csv_error.what(), "metrics.csv line 201"), csv_error.what());
    QCOMPARE(sql_int(target_path, "SELECT count(*) FROM runs"), int64_t{0});
    QCOMPARE(sql_int(target_path, "SELECT count(*) FROM metrics"), int64_t{0});
  }

  // What metrics.jsonl import refuses, a bundle import refuses too; and a bundle's run and tags.
  void bundleImportAppliesTheSameRules() {
    const auto id = write_full_run(db("rules-source.sqlite"), "rules");
    History source(db("rules-source.sqlite"));
    std::stringstream bundle;
    source.export_json(id, bundle);
    const auto original = nlohmann::ordered_json::parse(bundle.str());
    History target(db("rules-target.sqlite"));
    const auto refused = [&](const std::function<void(nlohmann::ordered_json&)>& edit) {
      auto document = original;
      edit(document);
      const auto file = db("rules.json");
      std::ofstream(file) << document.dump();
      return std::string(error_of([&] { target.import_run(file); }).what());
    };
    auto message = refused([](auto& d) { d["metrics"][0]["points"][0][1] = 4e10; });
    QVERIFY2(contains(message, "metrics[0].points[0]: wall_time_s must be from 0 to 32503680000"), message.c_str());
    message = refused([](auto& d) { d["artifacts"][0]["size_bytes"] = -1; });
    QVERIFY2(contains(message, "artifacts[0]: size_bytes must not be negative"), message.c_str());
    message = refused([](auto& d) { d["timeline"][0]["end_s"] = -5.0; });
    QVERIFY2(contains(message, "timeline[0]: end_s must be a finite number at or after start_s"), message.c_str());
    message = refused([](auto& d) {
      d["run"]["started"] = "2025-01-02T00:00:00.000Z";
      d["run"]["ended"] = "2025-01-01T00:00:00.000Z";
    });
    QVERIFY2(contains(message, "run.ended (2025-01-01") && contains(message, "is before run.started"), message.c_str());
    message = refused([](auto& d) { d["run"]["tags"] = nlohmann::ordered_json::array({"a,b"}); });
    QVERIFY2(contains(message, "run.tags[0]: tag 'a,b' has a comma"), message.c_str());
    // 2^63 parses as unsigned: read as a signed step it wrapped to -2^63 ("negative step").
    message = refused([](auto& d) { d["timeline"][0]["step"] = uint64_t{1} << 63; });
    QVERIFY2(contains(message, "timeline[0].step = 9223372036854775808 is out of range (at most 2^63 - 1)"), message.c_str());
    // What the live writer and the tessera-train import keep out, a bundle did not (SQLite's own words
    // for a NaN log time).
    message = refused([](auto& d) { d["logs"][0]["time_s"] = "nan"; });
    QVERIFY2(contains(message, "logs[0]: time_s must be Unix seconds from 0 to 32503680000 (the year 3000), got nan"), message.c_str());
    message = refused([](auto& d) { d["logs"][0]["rank"] = -1; });
    QVERIFY2(contains(message, "logs[0]: rank must not be negative, got -1"), message.c_str());
    message = refused([](auto& d) { d["timeline"][0]["microbatch"] = -3; });
    QVERIFY2(contains(message, "timeline[0]: microbatch must not be negative, got -3"), message.c_str());
    message = refused([](auto& d) { d["timeline"][0]["op"] = ""; });
    QVERIFY2(contains(message, "timeline[0]: op must be 1 to 64 bytes"), message.c_str());
    message = refused([](auto& d) { d["artifacts"][0]["kind"] = ""; });
    QVERIFY2(contains(message, "artifacts[0]: kind must not be empty"), message.c_str());
    message = refused([](auto& d) { d["artifacts"][0]["step"] = -1; });
    QVERIFY2(contains(message, "artifacts[0]: step must not be negative, got -1"), message.c_str());
    message = refused([](auto& d) { d["run"]["created"] = "3500-01-01T00:00:00.000Z"; });
    QVERIFY2(contains(message, "run.created (3500-01-01") && contains(message, "must be from 1970 to the year 3000"), message.c_str());
    message = refused([](auto& d) { d["run"]["name"] = "two\nlines"; });
    QVERIFY2(contains(message, "a run name is one line, without control characters"), message.c_str());
    // A value as a string other than nan/inf/-inf was read as its number ("5" as 5).
    message = refused([](auto& d) { d["metrics"][0]["points"][0][2] = "5"; });
    QVERIFY2(contains(message, "metrics[0].points[0][2] must be a number (or \"nan\", \"inf\", \"-inf\"), got the string \"5\""),
             message.c_str());
    // An artifact (a path) or a timeline event listed twice: named, not SQLite's "UNIQUE constraint failed".
    message = refused([](auto& d) { d["artifacts"].push_back(d["artifacts"][0]); });
    QVERIFY2(contains(message, "artifact " + original["artifacts"][0]["path"].get<std::string>() + " (") &&
                 contains(message, ") is listed twice: a run has one artifact per path"),
             message.c_str());
    message = refused([](auto& d) { d["timeline"].push_back(d["timeline"][0]); });
    QVERIFY2(contains(message, "timeline event repeated or incomplete (step ") && contains(message, ", microbatch "), message.c_str());
    QVERIFY(target.runs().empty());
  }

  // The live writer keeps out what an import would refuse, so every recorded run exports and imports
  // again; each refusal names the record and the rule, and the writer goes on.
  void writerAppliesTheImportRules() {
    const auto path = db("writer-rules.sqlite");
    Writer writer(path);
    const auto run = writer.create_run(tiny_run("rules"));
    const auto refused = [&](const std::function<void()>& append) {
      try {
        append();
      } catch (const StoreError& e) {
        return e.kind() == ErrorKind::invalid ? std::string(e.what()) : std::string("wrong kind: ") + e.what();
      }
      return std::string("accepted");
    };
    auto message = refused([&] { writer.append(run, MetricPoint{"loss", 0, 1, 4e10, 2.0}); });
    QVERIFY2(contains(message, "metric point 'loss' (step 1, rank 0): wall_time_s must be from 0 to 32503680000"), message.c_str());
    message = refused([&] { writer.append(run, std::vector<MetricPoint>{{"loss", 0, 2, 1.0, 2.0}, {"lr", 0, 2, -1.0, 0.1}}); });
    QVERIFY2(contains(message, "metric point 'lr' (step 2, rank 0): wall_time_s"), message.c_str());
    message = refused([&] { writer.append(run, TimelineEvent{1, 0, 0, "F", 0, 0, 2.0, 1.0}); });
    QVERIFY2(contains(message, "timeline event F (step 1, rank 0): end_s must be a finite number at or after start_s (got 2 to 1)"),
             message.c_str());
    message = refused([&] { writer.append(run, TimelineEvent{1, 0, 0, "B", 0, 0, std::nan(""), 1.0}); });
    QVERIFY2(contains(message, "start_s must be a finite number, got nan"), message.c_str());
    message = refused([&] { writer.append(run, Artifact{"checkpoint", "/ckpt/1", 1, -5, 0}); });
    QVERIFY2(contains(message, "artifact /ckpt/1: size_bytes must not be negative, got -5"), message.c_str());
    writer.append(run, MetricPoint{"loss", 0, 3, 1.5, 2.0});
    writer.close();
    History history(path);
    QCOMPARE(history.points(run.id, "loss", 0).size(), size_t{1});
    QVERIFY(history.timeline(run.id).empty());
  }

  void importsTesseraTrainOutput() {
    auto write_out = [&](const QString& name, int64_t last_step, const std::string& extra_line) {
      const auto out = db(name);
      fs::create_directories(out);
      std::ofstream(out + "/spec.json") << tiny_spec("hand-run", 1, 3e-4, 20).dump(2);
      std::ofstream metrics(out + "/metrics.jsonl");
      for (int64_t step = 1; step <= last_step; ++step)
        metrics << nlohmann::json{{"step", step}, {"rank", 0}, {"wall_time_s", 1.7e9 + step}, {"loss", 5.0 - 0.1 * step},
                                  {"grad_norm", step == 3 ? nlohmann::json(nullptr) : nlohmann::json(1.5)}, {"lr", 3e-4},
                                  {"tokens_per_s", 1000.0}, {"mfu", 0.3}, {"bubble", 0.1}, {"peak_memory_bytes", 2e9},
                                  {"phase", "train"}}
                       .dump()
                << "\n";
      metrics << extra_line;
      return out;
    };
    History history(db("train-out.sqlite"));
    // The checkpoint rank 0 reported (docs/runtime.md) becomes the run's artifact.
    const auto finished = write_out("finished-run", 20,
                                    "{\"type\":\"artifact\",\"kind\":\"checkpoint\",\"path\":\"/w/out/checkpoints/step-20\","
                                    "\"step\":20,\"rank\":0,\"size_bytes\":4096,\"created_ms\":1700000021000}\n");
    const auto imported = history.import_run(finished + "/");
    QCOMPARE(imported.counts.artifacts, int64_t{1});
    QCOMPARE(history.artifacts(imported.run.id),
             (std::vector<Artifact>{{"checkpoint", "/w/out/checkpoints/step-20", 20, 4096, 1'700'000'021'000}}));
    QCOMPARE(imported.format, std::string("tessera-train output"));
    QCOMPARE(imported.run.name, std::string("finished-run"));
    QCOMPARE(imported.run.status, RunStatus::done);
    QCOMPARE(imported.counts.points, int64_t{20 * 7});
    QCOMPARE(*imported.run.started_ms, int64_t{1'700'000'001'000});
    QCOMPARE(*imported.run.ended_ms, int64_t{1'700'000'020'000});
    QVERIFY(std::isnan(history.points(imported.run.id, "grad_norm", 0)[2].value));
    const auto s = history.summary(imported.run.id);
    QCOMPARE(*s.final_loss, 5.0 - 0.1 * 20);
    QCOMPARE(*s.peak_memory_bytes, int64_t{2'000'000'000});
    QCOMPARE(*s.mean_mfu, 0.3);
    QCOMPARE(error_of([&] { history.import_run(finished); }).kind(), ErrorKind::duplicate);

    const auto partial = write_out("partial-run", 12, "");
    const auto lost = history.import_run(partial);
    QCOMPARE(lost.run.status, RunStatus::lost);
    QVERIFY2(contains(lost.run.exit_reason, "step 12 of 20"), lost.run.exit_reason.c_str());
    // A rank killed while writing its last line: what came before is the run, which is lost.
    const auto cut = write_out("cut-run", 20, "{\"step\": 21, \"rank\": 0, \"wall_ti");
    const auto cut_run = history.import_run(cut);
    QCOMPARE(cut_run.run.status, RunStatus::lost);
    QCOMPARE(cut_run.counts.points, int64_t{20 * 7});
    QVERIFY2(contains(cut_run.run.exit_reason, "metrics.jsonl line 21 is cut off"), cut_run.run.exit_reason.c_str());
    history.delete_run(cut_run.run.id);
    // Only a line the file ends inside is cut off: a last line of junk, or one whole but broken, is
    // refused as any other line is (each was taken for a cut line and left out).
    for (const auto& [name, last] : {std::pair{"junk-run", "junk"}, std::pair{"huge-run", "{\"step\": 21, \"rank\": 0, \"loss\": 1e999}"},
                                     std::pair{"trailing-run", "{\"step\": 21, \"rank\": 0} x"}}) {
      const auto damaged = error_of([&] { history.import_run(write_out(name, 20, last)); });
      QVERIFY2(contains(damaged.what(), "metrics.jsonl line 21") && !contains(damaged.what(), "cut off"), damaged.what());
    }

    const auto broken = write_out("broken-run", 5, "{\"step\": 6, \"rank\": 0}\n");
    const auto error = error_of([&] { history.import_run(broken); });
    QVERIFY2(contains(error.what(), "metrics.jsonl line 6") && contains(error.what(), "wall_time_s"), error.what());
    QCOMPARE(history.runs().size(), size_t{2});
    QCOMPARE(error_of([&] { history.import_run(db("no-such-dir")); }).kind(), ErrorKind::invalid);

    const auto far = write_out("far-run", 5, "{\"step\": 6, \"rank\": 0, \"wall_time_s\": 1e300, \"loss\": 1}\n");
    const auto far_error = error_of([&] { history.import_run(far); });
    QVERIFY2(contains(far_error.what(), "metrics.jsonl line 6: wall_time_s must be from 0 to 32503680000"), far_error.what());

    // tessera-train's own clock (seconds since training started): the checkpoint record's Unix time
    // beside that clock places the run, not the file's mtime (later by the checkpoint's writing).
    {
      const auto relative = db("relative-run");
      fs::create_directories(relative);
      std::ofstream(relative + "/spec.json") << tiny_spec("relative-run", 1, 3e-4, 3).dump(2);
      std::ofstream metrics(relative + "/metrics.jsonl");
      for (int64_t step = 1; step <= 3; ++step)
        metrics << nlohmann::json{{"type", "step"}, {"step", step}, {"rank", 0}, {"wall_time_s", 2.0 * step}, {"loss", 1.0}}.dump() << "\n";
      metrics << "{\"type\":\"artifact\",\"kind\":\"checkpoint\",\"path\":\"/c/step_3\",\"step\":3,\"rank\":0,"
                 "\"size_bytes\":1,\"created_ms\":1700000100000,\"wall_time_s\":100.0}\n";
      metrics.close();
      const auto placed = history.import_run(relative);
      QCOMPARE(*placed.run.started_ms, int64_t{1'700'000'000'000} + 2'000);  // origin 1700000000 s, first step at 2 s
      QCOMPARE(*placed.run.ended_ms, int64_t{1'700'000'000'000} + 6'000);
      history.delete_run(placed.run.id);
    }
    for (const char* bad : {"{\"type\":\"artifact\",\"kind\":\"checkpoint\",\"path\":\"\",\"step\":5}",
                            "{\"type\":\"artifact\",\"kind\":\"checkpoint\",\"path\":\"/c\",\"step\":5,\"created_ms\":1e300}",
                            "{\"type\":\"artifact\",\"kind\":\"checkpoint\",\"path\":\"/c\",\"step\":5,\"size_bytes\":-1}"}) {
      const auto odd = write_out("odd-artifact", 5, std::string(bad) + "\n");
      const auto odd_error = error_of([&] { history.import_run(odd); });
      QVERIFY2(contains(odd_error.what(), "metrics.jsonl line 6"), odd_error.what());
      fs::remove_all(odd);
    }
    QCOMPARE(history.runs().size(), size_t{2});

    // Nesting that would overflow a dump's recursion: refused with where, nothing imported.
    const auto deep = write_out("deep-run", 5, "{\"step\": 6, \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}\n");
    const auto deep_error = error_of([&] { history.import_run(deep); });
    QVERIFY2(contains(deep_error.what(), "metrics.jsonl line 6 nests arrays and objects more than 64 deep"), deep_error.what());
    std::ofstream(deep + "/spec.json") << "{\"model\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
    const auto deep_spec = error_of([&] { history.import_run(deep); });
    QVERIFY2(contains(deep_spec.what(), "spec.json nests arrays and objects more than 64 deep (at byte 73)"), deep_spec.what());
    QCOMPARE(history.runs().size(), size_t{2});

    // A NUL byte ended nlohmann's input: a spec or metrics line with garbage behind one was read as valid.
    std::ofstream(deep + "/spec.json") << std::string("{}\0garbage", 10);
    const auto nul_spec = error_of([&] { history.import_run(deep); });
    QVERIFY2(contains(nul_spec.what(), "spec.json holds a NUL byte at offset 2, which no JSON text has"), nul_spec.what());
    const auto nul_line = write_out("nul-run", 5, std::string("{\"step\": 6, \"rank\": 0, \"loss\": 1.0}\0junk\n", 41));
    const auto nul_error = error_of([&] { history.import_run(nul_line); });
    QVERIFY2(contains(nul_error.what(), "metrics.jsonl line 6 holds a NUL byte at offset 35"), nul_error.what());
    fs::remove_all(nul_line);
    QCOMPARE(history.runs().size(), size_t{2});

    // A key given twice was imported as the last of the two: step 200, loss 9.
    const auto twice = write_out("twice-run", 5, "{\"step\": 6, \"step\": 200, \"rank\": 0, \"wall_time_s\": 6, \"loss\": 1.0}\n");
    const auto twice_error = error_of([&] { history.import_run(twice); });
    QVERIFY2(contains(twice_error.what(), "metrics.jsonl line 6 gives \"step\" twice (which one is meant?)"), twice_error.what());
    fs::remove_all(twice);
    const auto twice_spec = write_out("twice-spec", 5, "");
    std::ofstream(twice_spec + "/spec.json") << R"({"parallel": {"tp": 2, "tp": 1}})";
    const auto twice_spec_error = error_of([&] { history.import_run(twice_spec); });
    QVERIFY2(contains(twice_spec_error.what(), "spec.json gives \"parallel.tp\" twice"), twice_spec_error.what());
    // Control characters in a metric's name or an artifact's kind or path were stored, NUL included
    // (run names, tags and ops refuse them): every list and export would carry them.
    for (const auto& [line, expected] :
         {std::pair{std::string("{\"step\": 6, \"rank\": 0, \"wall_time_s\": 6, \"lo\\nss\": 1.0}"),
                    std::string("metrics.jsonl line 6: a metric name is one line, without control characters (byte 0x0A at offset 2)")},
          std::pair{std::string("{\"step\": 6, \"rank\": 0, \"wall_time_s\": 6, \"loss\\u0000\": 1.0}"),
                    std::string("metrics.jsonl line 6: a metric name is one line, without control characters (byte 0x00 at offset 4)")},
          std::pair{std::string("{\"step\": 6, \"rank\": 0, \"wall_time_s\": 6, \"") + std::string(257, 'm') + "\": 1.0}",
                    std::string("metrics.jsonl line 6: a metric name is at most 256 bytes, this one 257")},
          std::pair{std::string("{\"type\":\"artifact\",\"kind\":\"checkpoint\",\"path\":\"/c/step_5\\u001b[2J\",\"step\":5}"),
                    std::string("metrics.jsonl line 6: path is one line, without control characters (byte 0x1B at offset 9)")}}) {
      const auto odd = write_out("control-run", 5, line + "\n");
      const auto odd_error = error_of([&] { history.import_run(odd); });
      QCOMPARE(odd_error.kind(), ErrorKind::invalid);
      QVERIFY2(contains(odd_error.what(), expected), odd_error.what());
      fs::remove_all(odd);
    }
    QCOMPARE(history.runs().size(), size_t{2});
    // Text that is no JSON says where, in words: without "[json.exception.parse_error.101]" and the raw
    // token nlohmann quotes. An empty spec.json says it ends at once.
    std::ofstream(twice_spec + "/spec.json") << "";
    const auto empty_spec = error_of([&] { history.import_run(twice_spec); });
    QVERIFY2(contains(empty_spec.what(), "spec.json is not valid JSON: parse error at line 1, column 1: syntax error while parsing "
                                         "value - unexpected end of input") &&
                 !contains(empty_spec.what(), "json.exception"),
             empty_spec.what());
    fs::remove_all(twice_spec);
    const auto junk = write_out("junk-run", 5, "{bad\n{\"step\": 7}\n");
    const auto junk_error = error_of([&] { history.import_run(junk); });
    QVERIFY2(contains(junk_error.what(), "metrics.jsonl line 6 is not valid JSON: parse error at line 1, column 2: syntax error "
                                         "while parsing object key - invalid literal; expected string literal") &&
                 !contains(junk_error.what(), "json.exception") && !contains(junk_error.what(), "last read"),
             junk_error.what());
    fs::remove_all(junk);
    QCOMPARE(history.runs().size(), size_t{2});

    // A type that is no string was stored as a metric named type.
    const auto typed = write_out("typed-run", 5, "{\"type\": 5, \"step\": 6, \"rank\": 0, \"loss\": 1.0}\n");
    const auto typed_error = error_of([&] { history.import_run(typed); });
    QVERIFY2(contains(typed_error.what(), "metrics.jsonl line 6: type must be a string (step, timeline, artifact, ...), got 5"),
             typed_error.what());
    // A number beyond a double (1e400) was nlohmann's out_of_range, exit 1 without the file or line.
    const auto huge = write_out("huge-run", 5, "{\"step\": 6, \"rank\": 0, \"loss\": 1e400}\n{\"step\": 7}\n");
    const auto huge_error = error_of([&] { history.import_run(huge); });
    QCOMPARE(huge_error.kind(), ErrorKind::invalid);
    QVERIFY2(contains(huge_error.what(), "metrics.jsonl line 6") && contains(huge_error.what(), "number overflow"), huge_error.what());
    std::ofstream(huge + "/spec.json") << "{\"training\": {\"lr\": 1e400}}";
    const auto huge_spec = error_of([&] { history.import_run(huge); });
    QVERIFY2(contains(huge_spec.what(), "spec.json is not valid JSON") && contains(huge_spec.what(), "number overflow"), huge_spec.what());
    QCOMPARE(history.runs().size(), size_t{2});
    // A directory where metrics.jsonl should be opened as an empty file: it was imported as a run
    // without steps. Refused, nothing imported; the same for a directory named spec.json.
    const QString folder = dir_.filePath("folder-metrics");
    QVERIFY(QDir().mkpath(folder + "/metrics.jsonl"));
    std::ofstream((folder + "/spec.json").toStdString()) << tiny_spec("folder-run", 1, 3e-4, 3).dump(2);
    const auto folder_error = error_of([&] { history.import_run(folder.toStdString()); });
    QVERIFY2(contains(folder_error.what(), "metrics.jsonl is a directory, not a file"), folder_error.what());
    QVERIFY(QFile::remove(folder + "/spec.json"));
    QVERIFY(QDir().mkpath(folder + "/spec.json"));
    const auto spec_folder_error = error_of([&] { history.import_run(folder.toStdString()); });
    QVERIFY2(contains(spec_folder_error.what(), "spec.json is a directory, not a file"), spec_folder_error.what());
    // A pipe there blocked the import until something wrote to it.
    const QString piped = dir_.filePath("piped-metrics");
    QVERIFY(QDir().mkpath(piped));
    std::ofstream((piped + "/spec.json").toStdString()) << tiny_spec("piped-run", 1, 3e-4, 3).dump(2);
    QCOMPARE(::mkfifo((piped + "/metrics.jsonl").toStdString().c_str(), 0600), 0);
    const auto pipe_error = error_of([&] { history.import_run(piped.toStdString()); });
    QVERIFY2(contains(pipe_error.what(), "metrics.jsonl is not a regular file"), pipe_error.what());
    QCOMPARE(history.runs().size(), size_t{2});
  }

  void tagsNotesAndDelete() {
    const auto path = db("curate.sqlite");
    const auto id = write_full_run(path, "curate");
    const auto keep = write_full_run(db("curate-other.sqlite"), "unrelated");
    History history(path);
    history.add_tag(id, "best");
    history.add_tag(id, "best");
    QCOMPARE(history.run(id).tags, (std::vector<std::string>{"baseline", "best", "cpu"}));
    QVERIFY(history.remove_tag(id, "cpu"));
    QVERIFY(!history.remove_tag(id, "cpu"));
    history.set_notes(id, "lr too high after step 40");
    QCOMPARE(history.run(id).notes, std::string("lr too high after step 40"));
    // Bytes that are not UTF-8 are refused (stored, they broke every JSON view of the history); UTF-8 is kept.
    const auto bad_tag = error_of([&] { history.add_tag(id, "x\xff"); });
    QCOMPARE(bad_tag.kind(), ErrorKind::invalid);
    QVERIFY2(contains(bad_tag.what(), "a tag is not UTF-8 text (byte 0xFF at offset 1)"), bad_tag.what());
    // A tag is one short line: runs show broke its line at a newline; 100,000 bytes were taken.
    QVERIFY2(contains(error_of([&] { history.add_tag(id, "nl\ntag"); }).what(),
                      "a tag is one line, without control characters (byte 0x0A at offset 2)"), "");
    QVERIFY2(contains(error_of([&] { history.add_tag(id, std::string(257, 't')); }).what(),
                      "a tag is at most 256 bytes, this one 257"), "");
    QVERIFY2(contains(error_of([&] { history.add_tag(id, "\xE2\x81\xA6" "best"); }).what(),
                      "a tag must not hold a bidirectional override (U+2066 at offset 0)"), "");
    history.add_tag(id, std::string(256, 't'));
    QVERIFY(history.remove_tag(id, std::string(256, 't')));
    const auto bad_notes = error_of([&] { history.set_notes(id, "lr \xc3( spike"); });
    QVERIFY2(contains(bad_notes.what(), "the note is not UTF-8 text (byte 0xC3 at offset 3)"), bad_notes.what());
    QCOMPARE(history.run(id).notes, std::string("lr too high after step 40"));
    QCOMPARE(history.run(id).tags, (std::vector<std::string>{"baseline", "best"}));
    history.set_notes(id, "η = 3·10⁻⁴ ✓");
    QCOMPARE(history.run(id).notes, std::string("η = 3·10⁻⁴ ✓"));
    {
      Writer writer(path);
      RunRecord bad_name = tiny_run("bad\xffname");
      const auto refused = error_of([&] { writer.create_run(bad_name); });
      QCOMPARE(refused.kind(), ErrorKind::invalid);
      QVERIFY2(contains(refused.what(), "a run name is not UTF-8 text (byte 0xFF at offset 3)"), refused.what());
      RunRecord bad_run_tag = tiny_run("tagged");
      bad_run_tag.tags = {"ok", "n\xe9"};
      QVERIFY2(contains(error_of([&] { writer.create_run(bad_run_tag); }).what(), "a tag is not UTF-8 text"), "");
    }
    QCOMPARE(history.runs().size(), size_t{1});
    const auto [run, removed] = history.delete_run(id);
    QCOMPARE(run.name, std::string("curate"));
    QCOMPARE(removed.points, int64_t{400});
    QCOMPARE(removed.log_lines, int64_t{2});
    for (const char* table : {"runs", "run_tags", "series", "metrics", "metric_blocks", "timeline", "logs", "artifacts"})
      QCOMPARE(sql_int(path, std::string("SELECT count(*) FROM ") + table), int64_t{0});
    QCOMPARE(error_of([&] { history.delete_run(id); }).kind(), ErrorKind::not_found);
    QVERIFY(!keep.empty());
    // A starting or running run is refused (its ranks would train on, unstoppable), unless forced.
    for (const auto status : {RunStatus::starting, RunStatus::running}) {
      std::string active;
      {
        Writer writer(path);
        const auto handle = writer.create_run(tiny_run("active"));
        writer.set_status(handle, status);
        active = handle.id;
      }
      const auto refused = error_of([&] { history.delete_run(active); });
      QCOMPARE(refused.kind(), ErrorKind::invalid);
      QVERIFY2(contains(refused.what(), "run " + active.substr(0, 8) + " 'active' is " + std::string(to_string(status)) +
                                            ": stop it first (tessera-cli runs stop " + active.substr(0, 8)),
               refused.what());
      QCOMPARE(history.run(active).name, std::string("active"));  // nothing removed
      QCOMPARE(history.delete_run(active, true).first.id, active);
      QCOMPARE(history.runs().size(), size_t{0});
    }
  }

  void readersWorkWhileAWriterWrites() {
    const auto path = db("concurrent.sqlite");
    WriterOptions options;
    options.batch_points = 500;
    Writer writer(path, options);
    const auto run = writer.create_run(tiny_run("live"));
    std::atomic<bool> done = false;
    std::thread producer([&] {
      for (int64_t start = 0; start < 200'000; start += 100) {
        std::vector<MetricPoint> group;
        for (int64_t step = start; step < start + 100; ++step) group.push_back({"loss", 0, step, 1.0 * step, 1.0});
        writer.append(run, std::move(group));
      }
      writer.flush();
      done = true;
    });
    History reader(path);
    int64_t last = 0, reads = 0;
    while (!done) {
      const auto points = reader.counts(run.id).points;
      QVERIFY(points >= last);
      QCOMPARE(points % 100, int64_t{0});  // whole groups only, never a torn batch
      last = points;
      ++reads;
    }
    producer.join();
    writer.close();
    QCOMPARE(reader.counts(run.id).points, int64_t{200'000});
    QVERIFY(reads > 1);
  }

  void defaultLocationFollowsXdg() {
    const QByteArray saved_db = qgetenv("TESSERA_DB"), saved_xdg = qgetenv("XDG_DATA_HOME"), saved_home = qgetenv("HOME");
    qunsetenv("TESSERA_DB");
    qputenv("XDG_DATA_HOME", "/data/xdg");
    QCOMPARE(default_history_path(), std::string("/data/xdg/tessera/history.sqlite"));
    qputenv("XDG_DATA_HOME", "relative/ignored");
    qputenv("HOME", "/home/someone");
    QCOMPARE(default_history_path(), std::string("/home/someone/.local/share/tessera/history.sqlite"));
    qputenv("TESSERA_DB", "/elsewhere/h.sqlite");
    QCOMPARE(default_history_path(), std::string("/elsewhere/h.sqlite"));
    QCOMPARE(resolve_history_path("/given.sqlite"), std::string("/given.sqlite"));
    qunsetenv("TESSERA_DB");
    qunsetenv("XDG_DATA_HOME");
    qunsetenv("HOME");
    QCOMPARE(error_of([] { default_history_path(); }).kind(), ErrorKind::io);
    auto restore = [](const char* name, const QByteArray& value) { value.isNull() ? qunsetenv(name) : qputenv(name, value); };
    restore("TESSERA_DB", saved_db);
    restore("XDG_DATA_HOME", saved_xdg);
    restore("HOME", saved_home);
  }

  void utcTimesRoundTrip() {
    QCOMPARE(format_time_utc(1'700'000'000'123), std::string("2023-11-14T22:13:20.123Z"));
    QCOMPARE(parse_time_utc("2023-11-14T22:13:20.123Z"), int64_t{1'700'000'000'123});
    QCOMPARE(parse_time_utc("2023-11-14 22:13"), int64_t{1'700'000'000'000 - 20'000});
    QCOMPARE(parse_time_utc("1970-01-02"), int64_t{86'400'000});
    QCOMPARE(error_of([] { parse_time_utc("2023-13-01"); }).kind(), ErrorKind::invalid);
    QCOMPARE(error_of([] { parse_time_utc("yesterday"); }).kind(), ErrorKind::invalid);
  }
};

QTEST_APPLESS_MAIN(TestStore)
#include "test_store.moc"
