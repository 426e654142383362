// Errors of the run history: every failure of backend/store is a StoreError whose kind tells the
// edge (CLI exit code, GUI dialog) whether the user or the environment is at fault.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera::store {

enum class ErrorKind {
  io,            ///< cannot create, open, read or write a file (permissions, read-only directory)
  locked,        ///< another process records this run, or this process writes this history already
  busy,          ///< SQLite's lock was not released in time
  full,          ///< disk full or the history's size limit reached
  corrupt,       ///< not a SQLite database, damaged, or not a Tessera history
  newer_schema,  ///< written by a newer Tessera
  not_found,     ///< no run with that id or name
  ambiguous,     ///< an id prefix that matches several runs
  duplicate,     ///< the run (id or name) is already present
  invalid,       ///< bad input: a bundle row, a value, a filter
};

class StoreError : public std::runtime_error {
 public:
  StoreError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  /// The user can fix it by changing the command's arguments (bad id, bad bundle, duplicate).
  bool is_user_error() const;

 private:
  ErrorKind kind_;
};

}  // namespace tessera::store
