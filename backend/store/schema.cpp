// The history's schema (versions 1 and 2) and the migration runner.
#include "store/schema.hpp"

#include <filesystem>
#include <system_error>

#include <unistd.h>

#include "store/errors.hpp"
#include "store/location.hpp"
#include "store/types.hpp"

namespace tessera::store {

namespace {

// Version 1: runs, tags, interned metric names, series (run, metric, rank) interned to one integer,
// metric points keyed by (series, step) with a rollup of 32-step blocks for fast downsampling,
// timeline events, logs and artifacts.
const char* const kSchemaV1 = R"sql(
CREATE TABLE runs(
  key INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL UNIQUE,
  status TEXT NOT NULL CHECK(status IN ('planned','starting','running','done','failed','stopped','lost')),
  created_ms INTEGER NOT NULL,
  started_ms INTEGER,
  ended_ms INTEGER,
  exit_reason TEXT NOT NULL DEFAULT '',
  spec_json TEXT NOT NULL,
  plan_json TEXT NOT NULL,
  hosts_json TEXT NOT NULL,
  notes TEXT NOT NULL DEFAULT '',
  tessera_version TEXT NOT NULL
) STRICT;
CREATE INDEX runs_by_created ON runs(created_ms);
CREATE TABLE run_tags(
  run INTEGER NOT NULL,
  tag TEXT NOT NULL,
  PRIMARY KEY(run, tag)
) WITHOUT ROWID, STRICT;
CREATE INDEX run_tags_by_tag ON run_tags(tag);
CREATE TABLE metric_names(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
) STRICT;
CREATE TABLE series(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run INTEGER NOT NULL,
  metric INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  UNIQUE(run, metric, rank)
) STRICT;
CREATE TABLE metrics(
  series INTEGER NOT NULL,
  step INTEGER NOT NULL,
  wall_time_s REAL NOT NULL,
  value REAL,
  PRIMARY KEY(series, step)
) WITHOUT ROWID, STRICT;
CREATE TABLE metric_blocks(
  series INTEGER NOT NULL,
  block INTEGER NOT NULL,
  n INTEGER NOT NULL,
  first_step INTEGER NOT NULL,
  last_step INTEGER NOT NULL,
  min_value REAL,
  max_value REAL,
  last_value REAL,
  min_wall_s REAL NOT NULL,
  max_wall_s REAL NOT NULL,
  last_wall_s REAL NOT NULL,
  PRIMARY KEY(series, block)
) WITHOUT ROWID, STRICT;
CREATE TABLE timeline(
  run INTEGER NOT NULL,
  step INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  stage INTEGER NOT NULL,
  op TEXT NOT NULL,
  microbatch INTEGER NOT NULL,
  chunk INTEGER NOT NULL,
  start_s REAL NOT NULL,
  end_s REAL NOT NULL,
  PRIMARY KEY(run, step, rank, op, microbatch, chunk)
) WITHOUT ROWID, STRICT;
CREATE TABLE logs(
  run INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  stream TEXT NOT NULL CHECK(stream IN ('stdout','stderr')),
  time_s REAL NOT NULL,
  line TEXT NOT NULL
) STRICT;
CREATE INDEX logs_by_run ON logs(run);
CREATE TABLE artifacts(
  run INTEGER NOT NULL,
  kind TEXT NOT NULL,
  path TEXT NOT NULL,
  step INTEGER NOT NULL,
  size_bytes INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY(run, path)
) WITHOUT ROWID, STRICT;
)sql";

const char* const kVersionTable = R"sql(
CREATE TABLE IF NOT EXISTS schema_version(
  version INTEGER PRIMARY KEY,
  description TEXT NOT NULL,
  applied_ms INTEGER NOT NULL,
  tessera_version TEXT NOT NULL
) STRICT;
)sql";

int64_t query_int(Connection& connection, const std::string& sql, std::string_view what) {
  Statement statement(connection, sql);
  return statement.step(what) ? statement.column_int(0) : 0;
}

// Version 2: the stream positions of runs followed from agents get their own table; version 1 kept
// them as artifacts of kind 'stream_position' at path 'agent-stream/node-<k>' with step = the sequence.
const char* const kSchemaV2 = R"sql(
CREATE TABLE stream_positions(
  run INTEGER NOT NULL,
  node INTEGER NOT NULL CHECK(node >= 0),
  seq INTEGER NOT NULL CHECK(seq >= 0),
  PRIMARY KEY(run, node)
) WITHOUT ROWID, STRICT;
INSERT INTO stream_positions(run, node, seq)
  SELECT run, CAST(substr(path, 19) AS INTEGER), max(step) FROM artifacts
  WHERE kind = 'stream_position' AND path GLOB 'agent-stream/node-[0-9]*' GROUP BY run, path;
DELETE FROM artifacts WHERE kind = 'stream_position';
)sql";

}  // namespace

const std::vector<Migration>& schema_migrations() {
  static const std::vector<Migration> migrations = {
      {1, "runs, tags, series and metrics with a 32-step rollup, timeline, logs, artifacts", kSchemaV1},
      {2, "stream positions of agent runs in their own table (were artifacts of kind stream_position)", kSchemaV2},
  };
  return migrations;
}

int latest_schema_version() { return schema_migrations().back().version; }

int schema_version(Connection& connection) {
  const int64_t objects = query_int(connection, "SELECT count(*) FROM sqlite_master", "reading the schema");
  if (objects == 0) return 0;
  const int64_t application_id = query_int(connection, "PRAGMA application_id", "reading the application id");
  const int64_t has_version_table = query_int(
      connection, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'", "reading the schema");
  if (application_id != kApplicationId || has_version_table == 0)
    throw StoreError(ErrorKind::corrupt, "history " + connection.path() +
                                             " is a SQLite database but not a Tessera history (no Tessera schema in it)");
  return static_cast<int>(query_int(connection, "SELECT max(version) FROM schema_version", "reading the schema version"));
}

namespace {
void refuse_newer_schema(Connection& connection, int found, int latest) {
  if (found > latest)
    throw StoreError(ErrorKind::newer_schema,
                     "history " + connection.path() + " has schema version " + std::to_string(found) +
                         ", newer than this Tessera (" + std::string(tessera_version()) + ") understands (version " +
                         std::to_string(latest) + "); open it with a newer Tessera");
}
}  // namespace

void migrate(Connection& connection, std::span<const Migration> migrations) {
  const int latest = migrations.back().version;
  auto refuse_newer = [&](int found) { refuse_newer_schema(connection, found, latest); };
  int version = schema_version(connection);
  refuse_newer(version);
  if (version == latest) return;

  Transaction transaction(connection);
  version = schema_version(connection);  // another process may have migrated meanwhile
  refuse_newer(version);
  if (version == latest) return;
  connection.exec(kVersionTable, "creating the version table");
  if (version == 0) connection.exec("PRAGMA application_id = " + std::to_string(kApplicationId), "marking the file");
  Statement record(connection,
                   "INSERT INTO schema_version(version, description, applied_ms, tessera_version) VALUES(?, ?, ?, ?)");
  for (const auto& migration : migrations) {
    if (migration.version <= version) continue;
    connection.exec(migration.sql, "migrating to schema version " + std::to_string(migration.version));
    record.bind_int(1, migration.version)
        .bind_text(2, migration.description)
        .bind_int(3, now_ms())
        .bind_text(4, tessera_version())
        .run("recording schema version " + std::to_string(migration.version));
  }
  transaction.commit();
}

Connection open_history(const std::string& path, std::span<const Migration> migrations) {
  // A device, pipe or directory is no history, said before the directory's own checks (/dev is not
  // writable to most users).
  if (const auto problem = non_regular_history_problem(path); !problem.empty()) throw StoreError(ErrorKind::io, problem);
  ensure_parent_directory(path);
  const auto directory = std::filesystem::absolute(std::filesystem::path(path)).parent_path();
  if (::access(directory.c_str(), W_OK) != 0) {
    const std::string reason = std::error_code(errno, std::generic_category()).message();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      throw StoreError(ErrorKind::io, "cannot create history " + path + ": directory " + directory.string() +
                                          " is not writable (" + reason + ")");
    throw StoreError(ErrorKind::io, "cannot open history " + path + ": directory " + directory.string() +
                                        " is not writable (" + reason + "); SQLite's WAL mode keeps " + path +
                                        "-wal and -shm next to it");
  }

  Connection connection(path, true);
  connection.exec("PRAGMA busy_timeout = 10000", "setting the busy timeout");
  // Another program's SQLite database, or a history of a newer schema, is refused before anything is
  // written to it (WAL mode was switched on in it first).
  refuse_newer_schema(connection, schema_version(connection), migrations.back().version);
  // 8 KiB pages: ~10% faster ingestion than 4 KiB (docs/store.md); takes effect only on a new file.
  connection.exec("PRAGMA page_size = 8192", "setting the page size");
  {
    Statement wal(connection, "PRAGMA journal_mode = WAL");
    const bool has_row = wal.step("switching to WAL mode");
    const std::string mode = has_row ? wal.column_text(0) : "";
    wal.reset();
    if (mode != "wal")
      throw StoreError(ErrorKind::io, "cannot use history " + path + " in WAL mode (journal mode stays '" + mode +
                                          "'); is its directory writable?");
  }
  connection.exec("PRAGMA synchronous = NORMAL", "setting synchronous=NORMAL");
  migrate(connection, migrations);
  return connection;
}

}  // namespace tessera::store
