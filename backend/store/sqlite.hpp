// Thin RAII wrappers over the SQLite C API used by the store: a connection, prepared statements and
// transactions. Every SQLite failure becomes a StoreError that names the history file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace tessera::store {

class StoreError;

/// One SQLite connection. Not thread-safe: one connection per thread.
class Connection {
 public:
  /// Opens (and with `create`, creates) the file; no pragmas are set here.
  Connection(const std::string& path, bool create);
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&&) = delete;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

  /// Runs one or more statements without results.
  void exec(const std::string& sql, std::string_view what);
  /// The StoreError for a failed SQLite call `rc` made while doing `what`.
  StoreError error(int rc, std::string_view what) const;
  int64_t changes() const;
  int64_t last_insert_rowid() const;
  bool in_transaction() const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

/// A prepared statement; bind → step → column, then reset for the next use.
class Statement {
 public:
  Statement(Connection& connection, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind_int(int index, int64_t value);
  Statement& bind_real(int index, double value);  ///< NaN is stored as NULL (SQLite has no NaN)
  Statement& bind_text(int index, std::string_view value);
  Statement& bind_null(int index);
  Statement& bind_optional_int(int index, const std::optional<int64_t>& value);

  /// Advances; true while there is a row. Throws StoreError on failure.
  bool step(std::string_view what);
  /// Steps to completion and resets (an INSERT, UPDATE or DELETE).
  void run(std::string_view what);
  void reset();

  int64_t column_int(int column) const;
  double column_real(int column) const;  ///< NULL reads as NaN
  std::string column_text(int column) const;
  bool column_is_null(int column) const;
  std::optional<int64_t> column_optional_int(int column) const;

 private:
  Connection& connection_;
  sqlite3_stmt* stmt_ = nullptr;
};

/// BEGIN on construction, ROLLBACK on destruction unless committed.
class Transaction {
 public:
  enum class Mode { deferred, immediate };
  explicit Transaction(Connection& connection, Mode mode = Mode::immediate);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& connection_;
  bool open_ = true;
};

}  // namespace tessera::store
