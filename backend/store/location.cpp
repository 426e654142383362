// Default location of the history file (XDG base directories) and creation of its directory.
#include "store/location.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "store/errors.hpp"

namespace tessera::store {

namespace {
std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}
}  // namespace

std::string non_regular_history_problem(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) return path + " is a directory, not a history file";
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) return path + " is not a regular file, not a history";
  return {};
}

std::string read_only_history_problem(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return "no run history at " + path;
  if (auto problem = non_regular_history_problem(path); !problem.empty()) return problem;
  if (std::filesystem::file_size(path, ec) == 0) return path + " is empty, not a run history";
  return {};
}

std::string default_history_path() {
  if (auto db = env("TESSERA_DB"); !db.empty()) return db;
  if (auto xdg = env("XDG_DATA_HOME"); !xdg.empty() && xdg.front() == '/') return xdg + "/tessera/history.sqlite";
  if (auto home = env("HOME"); !home.empty()) return home + "/.local/share/tessera/history.sqlite";
  throw StoreError(ErrorKind::io, "no place for the run history: set TESSERA_DB, XDG_DATA_HOME or HOME, or pass --db");
}

std::string resolve_history_path(const std::string& explicit_path) {
  return explicit_path.empty() ? default_history_path() : explicit_path;
}

std::string canonical_history_path(const std::string& history_path) {
  std::error_code ec;
  const auto file = std::filesystem::weakly_canonical(std::filesystem::absolute(history_path), ec);
  return ec ? std::filesystem::absolute(history_path).lexically_normal().string() : file.string();
}

void ensure_parent_directory(const std::string& history_path) {
  if (history_path.empty()) throw StoreError(ErrorKind::invalid, "the history path is empty");
  const auto directory = std::filesystem::absolute(std::filesystem::path(history_path)).parent_path();
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    throw StoreError(ErrorKind::io, "cannot create directory " + directory.string() + " for history " + history_path + ": " +
                                        ec.message());
}

}  // namespace tessera::store
