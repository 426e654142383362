// The history's schema: forward migrations applied in order on open, the version table that records
// them, and the refusal of a file written by a newer Tessera. docs/store.md describes every table.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "store/sqlite.hpp"

namespace tessera::store {

/// 'TESS' in the SQLite header: tells a Tessera history from another SQLite file.
inline constexpr int kApplicationId = 0x54455353;
/// Steps per row of the metric_blocks rollup (step >> kBlockShift is the block).
inline constexpr int kBlockShift = 5;

/// One step of the schema: applied once, in one transaction with the others pending.
struct Migration {
  int version;
  std::string description;
  std::string sql;
};

/// The migrations of this build, in order; the last one's version is the schema this build writes.
const std::vector<Migration>& schema_migrations();
int latest_schema_version();

/// The schema version of an open file: 0 for an empty file. Throws StoreError(corrupt) for a
/// SQLite file that is not a Tessera history.
int schema_version(Connection& connection);

/// Brings the file to the last version of `migrations` (all pending ones in one transaction);
/// throws StoreError(newer_schema) when the file is newer than the last of them.
void migrate(Connection& connection, std::span<const Migration> migrations);

/// Opens a history for reading and writing: creates the parent directories and the file, sets WAL
/// and synchronous=NORMAL, migrates. The errors name the path (read-only directory, corrupt file,
/// newer schema).
Connection open_history(const std::string& path, std::span<const Migration> migrations = schema_migrations());

}  // namespace tessera::store
