// SQLite wrappers: open/close, statements, transactions, and the mapping of SQLite result codes to
// StoreError kinds (full, corrupt, busy, io, invalid) with the history's path in every message.
#include "store/sqlite.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <sqlite3.h>
#include <unistd.h>

#include "store/errors.hpp"

namespace tessera::store {

namespace {

StoreError make_error(const std::string& path, int rc, const char* message, int system_errno, std::string_view what) {
  const std::string detail = message ? message : sqlite3_errstr(rc);
  const std::string os = system_errno != 0 ? std::string(" (") + std::strerror(system_errno) + ")" : "";
  const std::string doing(what);
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return StoreError(ErrorKind::full, "history " + path + " is full (disk full or its size limit reached) while " + doing);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return StoreError(ErrorKind::corrupt,
                        "history " + path + " is corrupt or not a SQLite database (" + detail + ") while " + doing);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StoreError(ErrorKind::busy, "history " + path + " stayed locked by another connection while " + doing +
                                             "; try again when the other process has finished");
    case SQLITE_CONSTRAINT:
      return StoreError(ErrorKind::invalid, doing + ": " + detail);
    case SQLITE_READONLY: {
      // A read of the file while it was read-only leaves its -shm (and -wal) read-only too, and they
      // keep every write out after the file itself is writable again: say which to remove.
      std::vector<std::string> stale;
      for (const char* suffix : {"-shm", "-wal"}) {
        const std::string companion = path + suffix;
        if (::access(companion.c_str(), F_OK) == 0 && ::access(companion.c_str(), W_OK) != 0) stale.push_back(companion);
      }
      const std::string refused = "cannot write history " + path + " while " + doing + ": " + detail + os;
      if (stale.empty() || ::access(path.c_str(), W_OK) != 0) return StoreError(ErrorKind::io, refused);
      const bool both = stale.size() == 2;
      return StoreError(ErrorKind::io, refused + "; " + (both ? stale[0] + " and " + stale[1] + " are" : stale[0] + " is") +
                                           " read-only (left by a read of the file while it was read-only); with no process "
                                           "using the history, remove " + (both ? "them" : "it"));
    }
    default:
      return StoreError(ErrorKind::io, "history " + path + ": " + doing + " failed: " + detail + os);
  }
}

}  // namespace

Connection::Connection(const std::string& path, bool create) : path_(path) {
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const int system_errno = db_ ? sqlite3_system_errno(db_) : 0;
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw StoreError(ErrorKind::io, "cannot open history " + path + ": " + message +
                                        (system_errno ? std::string(" (") + std::strerror(system_errno) + ")" : ""));
  }
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() {
  if (db_) sqlite3_close_v2(db_);
}

Connection::Connection(Connection&& other) noexcept : db_(other.db_), path_(std::move(other.path_)) { other.db_ = nullptr; }

void Connection::exec(const std::string& sql, std::string_view what) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    const std::string text = message ? message : "";
    sqlite3_free(message);
    throw make_error(path_, rc, text.c_str(), sqlite3_system_errno(db_), what);
  }
}

StoreError Connection::error(int rc, std::string_view what) const {
  return make_error(path_, rc, sqlite3_errmsg(db_), sqlite3_system_errno(db_), what);
}

int64_t Connection::changes() const { return sqlite3_changes64(db_); }
int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
bool Connection::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

Statement::Statement(Connection& connection, std::string_view sql) : connection_(connection) {
  const int rc = sqlite3_prepare_v3(connection.handle(), sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) throw connection.error(rc, "preparing a statement");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind_int(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::bind_real(int index, double value) {
  if (std::isnan(value))
    sqlite3_bind_null(stmt_, index);
  else
    sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Statement& Statement::bind_text(int index, std::string_view value) {
  sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Statement& Statement::bind_optional_int(int index, const std::optional<int64_t>& value) {
  return value ? bind_int(index, *value) : bind_null(index);
}

bool Statement::step(std::string_view what) {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const StoreError error = connection_.error(rc, what);
  sqlite3_reset(stmt_);
  throw error;
}

void Statement::run(std::string_view what) {
  while (step(what)) {
  }
  reset();
}

void Statement::reset() { sqlite3_reset(stmt_); }

int64_t Statement::column_int(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::column_real(int column) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::column_text(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return text ? std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))) : std::string();
}

bool Statement::column_is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::optional<int64_t> Statement::column_optional_int(int column) const {
  if (column_is_null(column)) return std::nullopt;
  return column_int(column);
}

Transaction::Transaction(Connection& connection, Mode mode) : connection_(connection) {
  connection_.exec(mode == Mode::immediate ? "BEGIN IMMEDIATE" : "BEGIN", "starting a transaction");
}

Transaction::~Transaction() {
  if (open_ && connection_.in_transaction()) sqlite3_exec(connection_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  connection_.exec("COMMIT", "committing");
  open_ = false;
}

}  // namespace tessera::store
