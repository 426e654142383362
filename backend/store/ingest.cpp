// Row insertion shared by the writer and the import: runs, points with their rollup, events, logs.
#include "store/ingest.hpp"

#include <cmath>
#include <limits>

#include "store/errors.hpp"
#include "store/schema.hpp"

namespace tessera::store {

namespace {

std::string hosts_json(const std::vector<std::string>& hosts) { return nlohmann::json(hosts).dump(); }

// INSERT of `rows` metric points in one statement.
std::string insert_points_sql(size_t rows) {
  std::string sql = "INSERT INTO metrics(series, step, wall_time_s, value) VALUES";
  for (size_t i = 0; i < rows; ++i) sql += i == 0 ? "(?, ?, ?, ?)" : ", (?, ?, ?, ?)";
  return sql + " ON CONFLICT DO NOTHING";
}
}  // namespace

int64_t insert_run(Connection& connection, const RunRecord& run) {
  if (!is_run_id(run.id))
    throw StoreError(ErrorKind::invalid, "run id '" + run.id + "' is not 32 lowercase hex digits");
  if (const auto problem = run_name_problem(run.name); !problem.empty())
    throw StoreError(ErrorKind::invalid, "run " + run.id + ": " + problem);
  for (const auto& [what, text] : {std::pair<const char*, const std::string&>{"its note", run.notes},
                                   {"its exit reason", run.exit_reason}})
    if (const auto problem = text_problem(what, text); !problem.empty())
      throw StoreError(ErrorKind::invalid, "run " + run.id + ": " + problem);
  for (const auto& t : run.tags)
    if (const auto problem = tag_problem(t); !problem.empty()) throw StoreError(ErrorKind::invalid, "run " + run.id + ": " + problem);
  {
    Statement by_id(connection, "SELECT name FROM runs WHERE id = ?");
    if (by_id.bind_text(1, run.id).step("looking up a run id"))
      throw StoreError(ErrorKind::duplicate, "run " + run.id + " is already in history " + connection.path() +
                                                 " (named '" + by_id.column_text(0) + "')");
    Statement by_name(connection, "SELECT id FROM runs WHERE name = ?");
    if (by_name.bind_text(1, run.name).step("looking up a run name"))
      throw StoreError(ErrorKind::duplicate, "a run named '" + run.name + "' is already in history " + connection.path() +
                                                 " (id " + by_name.column_text(0) + ")");
  }
  Statement insert(connection,
                   "INSERT INTO runs(id, name, status, created_ms, started_ms, ended_ms, exit_reason, spec_json, "
                   "plan_json, hosts_json, notes, tessera_version) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  insert.bind_text(1, run.id)
      .bind_text(2, run.name)
      .bind_text(3, to_string(run.status))
      .bind_int(4, run.created_ms)
      .bind_optional_int(5, run.started_ms)
      .bind_optional_int(6, run.ended_ms)
      .bind_text(7, run.exit_reason)
      .bind_text(8, run.spec.dump())
      .bind_text(9, run.plan.dump())
      .bind_text(10, hosts_json(run.hosts))
      .bind_text(11, run.notes)
      .bind_text(12, run.tessera_version)
      .run("adding run '" + run.name + "'");
  const int64_t key = connection.last_insert_rowid();
  Statement tag(connection, "INSERT OR IGNORE INTO run_tags(run, tag) VALUES(?, ?)");
  for (const auto& t : run.tags) tag.bind_int(1, key).bind_text(2, t).run("tagging run '" + run.name + "'");
  return key;
}

size_t Ingest::KeyHash::operator()(const Key& k) const {
  uint64_t h = static_cast<uint64_t>(k.a) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<uint64_t>(k.b) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(k.c) + 0x85EBCA77C2B2AE63ull + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

void Ingest::Block::add(int64_t step, double wall_time_s, double value) {
  if (n == 0) {
    first_step = last_step = step;
    min_value = max_value = last_value = value;
    min_wall_s = max_wall_s = last_wall_s = wall_time_s;
  } else {
    first_step = std::min(first_step, step);
    if (step >= last_step) {
      last_step = step;
      last_value = value;
      last_wall_s = wall_time_s;
    }
    min_value = std::fmin(min_value, value);  // fmin/fmax skip NaN
    max_value = std::fmax(max_value, value);
    min_wall_s = std::min(min_wall_s, wall_time_s);
    max_wall_s = std::max(max_wall_s, wall_time_s);
  }
  ++n;
}

Ingest::Ingest(Connection& connection, OnDuplicate on_duplicate)
    : connection_(connection),
      on_duplicate_(on_duplicate),
      insert_point_(connection,
                    "INSERT INTO metrics(series, step, wall_time_s, value) VALUES(?, ?, ?, ?) ON CONFLICT DO NOTHING"),
      insert_chunk_(connection, insert_points_sql(kChunkRows)),
      update_point_(connection, "UPDATE metrics SET wall_time_s = ?3, value = ?4 WHERE series = ?1 AND step = ?2"),
      upsert_block_(connection, R"sql(
        INSERT INTO metric_blocks(series, block, n, first_step, last_step, min_value, max_value, last_value,
                                  min_wall_s, max_wall_s, last_wall_s)
        VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
        ON CONFLICT(series, block) DO UPDATE SET
          n = n + excluded.n,
          first_step = min(first_step, excluded.first_step),
          last_step = max(last_step, excluded.last_step),
          last_value = CASE WHEN excluded.last_step >= last_step THEN excluded.last_value ELSE last_value END,
          last_wall_s = CASE WHEN excluded.last_step >= last_step THEN excluded.last_wall_s ELSE last_wall_s END,
          min_value = coalesce(min(min_value, excluded.min_value), min_value, excluded.min_value),
          max_value = coalesce(max(max_value, excluded.max_value), max_value, excluded.max_value),
          min_wall_s = min(min_wall_s, excluded.min_wall_s),
          max_wall_s = max(max_wall_s, excluded.max_wall_s))sql"),
      replace_block_(connection,
                     "INSERT OR REPLACE INTO metric_blocks(series, block, n, first_step, last_step, min_value, "
                     "max_value, last_value, min_wall_s, max_wall_s, last_wall_s) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"),
      block_points_(connection,
                    "SELECT step, wall_time_s, value FROM metrics WHERE series = ? AND step BETWEEN ? AND ? ORDER BY step"),
      insert_name_(connection, "INSERT INTO metric_names(name) VALUES(?) ON CONFLICT DO NOTHING"),
      select_name_(connection, "SELECT id FROM metric_names WHERE name = ?"),
      insert_series_(connection, "INSERT INTO series(run, metric, rank) VALUES(?, ?, ?) ON CONFLICT DO NOTHING"),
      select_series_(connection, "SELECT id FROM series WHERE run = ? AND metric = ? AND rank = ?"),
      insert_event_(connection,
                    std::string(on_duplicate == OnDuplicate::replace ? "INSERT OR REPLACE" : "INSERT") +
                        " INTO timeline(run, step, rank, stage, op, microbatch, chunk, start_s, end_s) "
                        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)"),
      insert_log_(connection, "INSERT INTO logs(run, rank, stream, time_s, line) VALUES(?, ?, ?, ?, ?)"),
      insert_artifact_(connection,
                       std::string(on_duplicate == OnDuplicate::replace ? "INSERT OR REPLACE" : "INSERT") +
                           " INTO artifacts(run, kind, path, step, size_bytes, created_ms) VALUES(?, ?, ?, ?, ?, ?)"),
      upsert_position_(connection,
                       "INSERT INTO stream_positions(run, node, seq) VALUES(?, ?, ?) "
                       "ON CONFLICT(run, node) DO UPDATE SET seq = max(seq, excluded.seq)") {}

int64_t Ingest::metric_id(const std::string& name) {
  if (auto it = metric_ids_.find(name); it != metric_ids_.end()) return it->second;
  if (const auto problem = metric_name_problem(name); !problem.empty()) throw StoreError(ErrorKind::invalid, problem);
  insert_name_.bind_text(1, name).run("adding metric name '" + name + "'");
  if (!select_name_.bind_text(1, name).step("reading metric name '" + name + "'"))
    throw StoreError(ErrorKind::corrupt, "history " + connection_.path() + ": metric name '" + name + "' vanished");
  const int64_t id = select_name_.column_int(0);
  select_name_.reset();
  metric_ids_.emplace(name, id);
  return id;
}

int64_t Ingest::series_id(int64_t run, int64_t metric, int64_t rank) {
  const Key key{run, metric, rank};
  if (auto it = series_ids_.find(key); it != series_ids_.end()) return it->second;
  if (rank < 0) throw StoreError(ErrorKind::invalid, "a metric point has a negative rank (" + std::to_string(rank) + ")");
  insert_series_.bind_int(1, run).bind_int(2, metric).bind_int(3, rank).run("adding a series");
  if (!select_series_.bind_int(1, run).bind_int(2, metric).bind_int(3, rank).step("reading a series"))
    throw StoreError(ErrorKind::corrupt, "history " + connection_.path() + ": a series vanished while it was written");
  const int64_t id = select_series_.column_int(0);
  select_series_.reset();
  series_ids_.emplace(key, id);
  return id;
}

void Ingest::metric(int64_t series, int64_t step, double wall_time_s, double value) {
  if (step < 0) throw StoreError(ErrorKind::invalid, "a metric point has a negative step (" + std::to_string(step) + ")");
  insert_point_.bind_int(1, series).bind_int(2, step).bind_real(3, wall_time_s).bind_real(4, value);
  insert_point_.run("writing metric points");
  const Key key{series, step >> kBlockShift, 0};
  if (connection_.changes() == 0) {
    if (on_duplicate_ == OnDuplicate::fail)
      throw StoreError(ErrorKind::invalid, "metric point repeated: step " + std::to_string(step) +
                                               " appears twice for the same metric and rank");
    update_point_.bind_int(1, series).bind_int(2, step).bind_real(3, wall_time_s).bind_real(4, value);
    update_point_.run("replacing a metric point");
    dirty_.insert(key);
    return;
  }
  pending_[key].add(step, wall_time_s, value);
}

void Ingest::metrics(const std::vector<Point>& points) {
  size_t i = 0;
  if (on_duplicate_ == OnDuplicate::replace)
    for (; i + kChunkRows <= points.size(); i += kChunkRows) insert_chunk(points.data() + i);
  for (; i < points.size(); ++i) metric(points[i].series, points[i].step, points[i].wall_time_s, points[i].value);
}

// kChunkRows points in one INSERT (fewer statements to run). When some were stored already, or one
// repeats within the chunk, each point is then set to its value in order and its block recomputed.
void Ingest::insert_chunk(const Point* points) {
  for (size_t j = 0; j < kChunkRows; ++j) {
    const Point& p = points[j];
    if (p.step < 0) throw StoreError(ErrorKind::invalid, "a metric point has a negative step (" + std::to_string(p.step) + ")");
    const int at = static_cast<int>(4 * j);
    insert_chunk_.bind_int(at + 1, p.series).bind_int(at + 2, p.step).bind_real(at + 3, p.wall_time_s).bind_real(at + 4, p.value);
  }
  insert_chunk_.run("writing metric points");
  const bool all_new = connection_.changes() == static_cast<int64_t>(kChunkRows);
  for (size_t j = 0; j < kChunkRows; ++j) {
    const Point& p = points[j];
    const Key key{p.series, p.step >> kBlockShift, 0};
    if (all_new) {
      pending_[key].add(p.step, p.wall_time_s, p.value);
      continue;
    }
    update_point_.bind_int(1, p.series).bind_int(2, p.step).bind_real(3, p.wall_time_s).bind_real(4, p.value);
    update_point_.run("replacing a metric point");
    dirty_.insert(key);
  }
}

void Ingest::event(int64_t run, const TimelineEvent& e) {
  insert_event_.bind_int(1, run)
      .bind_int(2, e.step)
      .bind_int(3, e.rank)
      .bind_int(4, e.stage)
      .bind_text(5, e.op)
      .bind_int(6, e.microbatch)
      .bind_int(7, e.chunk)
      .bind_real(8, e.start_s)
      .bind_real(9, e.end_s);
  try {
    insert_event_.run("writing timeline events");
  } catch (const StoreError& error) {
    if (error.kind() != ErrorKind::invalid) throw;
    // The key is (step, rank, op, microbatch, chunk): all of it names the event given twice.
    throw StoreError(ErrorKind::invalid, "timeline event repeated or incomplete (step " + std::to_string(e.step) + ", rank " +
                                             std::to_string(e.rank) + ", op " + e.op + ", microbatch " +
                                             std::to_string(e.microbatch) + ", chunk " + std::to_string(e.chunk) + "): " + error.what());
  }
}

void Ingest::log(int64_t run, const LogLine& line) {
  if (line.stream != "stdout" && line.stream != "stderr")
    throw StoreError(ErrorKind::invalid, "log stream '" + line.stream + "' must be stdout or stderr");
  insert_log_.bind_int(1, run).bind_int(2, line.rank).bind_text(3, line.stream).bind_real(4, line.time_s).bind_text(5, line.line);
  insert_log_.run("writing log lines");
}

void Ingest::artifact(int64_t run, const Artifact& a) {
  insert_artifact_.bind_int(1, run)
      .bind_text(2, a.kind)
      .bind_text(3, a.path)
      .bind_int(4, a.step)
      .bind_int(5, a.size_bytes)
      .bind_int(6, a.created_ms);
  try {
    insert_artifact_.run("writing artifact " + a.path);
  } catch (const StoreError& error) {
    if (error.kind() != ErrorKind::invalid) throw;
    // A run holds one artifact per path (a bundle listing one twice said SQLite's "UNIQUE constraint failed").
    throw StoreError(ErrorKind::invalid, "artifact " + a.path + " (" + a.kind + ", step " + std::to_string(a.step) +
                                             ") is listed twice: a run has one artifact per path");
  }
}

void Ingest::stream_position(int64_t run, const StreamPosition& position) {
  if (position.node < 0 || position.seq < 0)
    throw StoreError(ErrorKind::invalid, "stream position of node " + std::to_string(position.node) + " at " +
                                             std::to_string(position.seq) + ": node and sequence must not be negative");
  upsert_position_.bind_int(1, run).bind_int(2, position.node).bind_int(3, position.seq);
  upsert_position_.run("writing a stream position");
}

void Ingest::write_block(const Key& key, const Block& b, Statement& statement) {
  statement.bind_int(1, key.a)
      .bind_int(2, key.b)
      .bind_int(3, b.n)
      .bind_int(4, b.first_step)
      .bind_int(5, b.last_step)
      .bind_real(6, b.min_value)
      .bind_real(7, b.max_value)
      .bind_real(8, b.last_value)
      .bind_real(9, b.min_wall_s)
      .bind_real(10, b.max_wall_s)
      .bind_real(11, b.last_wall_s)
      .run("writing the metric rollup");
}

void Ingest::recompute_block(const Key& key) {
  const int64_t first = key.b << kBlockShift;
  block_points_.bind_int(1, key.a).bind_int(2, first).bind_int(3, first + (1 << kBlockShift) - 1);
  Block block;
  while (block_points_.step("reading a metric block"))
    block.add(block_points_.column_int(0), block_points_.column_real(1), block_points_.column_real(2));
  block_points_.reset();
  write_block(key, block, replace_block_);
}

void Ingest::finish() {
  for (const auto& [key, block] : pending_)
    if (!dirty_.contains(key)) write_block(key, block, upsert_block_);
  for (const auto& key : dirty_) recompute_block(key);
  pending_.clear();
  dirty_.clear();
}

void Ingest::discard() {
  metric_ids_.clear();
  series_ids_.clear();
  pending_.clear();
  dirty_.clear();
}

}  // namespace tessera::store
