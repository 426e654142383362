// flock-based run leases in "<history>.runs/".
#include "store/run_lease.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/errors.hpp"
#include "store/location.hpp"
#include "store/types.hpp"

namespace tessera::store {

namespace {

// holder() takes a shared lock for a moment: a lease found locked is tried this often, 10 ms apart,
// before it counts as held.
constexpr int kProbeTries = 5;

// The lease directory of a history: next to the file itself, however the path reaches it (a symlink,
// "..", a relative path), so that every process writing it finds the same leases.
std::string lease_directory(const std::string& history_path) { return canonical_history_path(history_path) + ".runs"; }

std::string lease_path(const std::string& history_path, const std::string& run_id) {
  if (!is_run_id(run_id)) throw StoreError(ErrorKind::invalid, "run id '" + run_id + "' is not 32 lowercase hex digits");
  return lease_directory(history_path) + "/" + run_id;
}

std::optional<int64_t> pid_in(int fd) {
  char buffer[32] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  if (n <= 0) return std::nullopt;
  try {
    return std::stoll(std::string(buffer, static_cast<size_t>(n)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string held_message(const std::string& history_path, const std::string& run_id, std::optional<int64_t> pid) {
  const std::string run = "run " + run_id.substr(0, 8) + " in history " + history_path;
  if (pid && *pid == ::getpid()) return run + " is already being recorded by this process";
  return run + " is being recorded by another process (pid " + (pid && *pid > 0 ? std::to_string(*pid) : "unknown") + ")";
}

// Whether fd still names the file at path: a holder unlinks its file on release, so a lock taken on an
// unlinked file means nothing.
bool names(int fd, const std::string& path) {
  struct stat opened {}, current {};
  return ::fstat(fd, &opened) == 0 && ::stat(path.c_str(), &current) == 0 && opened.st_dev == current.st_dev &&
         opened.st_ino == current.st_ino;
}

}  // namespace

RunLease::RunLease(const std::string& history_path, const std::string& run_id)
    : RunLease(history_path, run_id, kProbeTries) {}

std::unique_ptr<RunLease> RunLease::try_take(const std::string& history_path, const std::string& run_id) {
  try {
    return std::unique_ptr<RunLease>(new RunLease(history_path, run_id, 1));
  } catch (const StoreError& e) {
    if (e.kind() == ErrorKind::invalid) throw;
    return nullptr;
  }
}

RunLease::RunLease(const std::string& history_path, const std::string& run_id, int tries) {
  ensure_parent_directory(history_path);
  path_ = lease_path(history_path, run_id);
  const std::string directory = lease_directory(history_path);
  std::error_code ec;
  std::filesystem::create_directory(directory, ec);
  if (ec && !std::filesystem::is_directory(directory))
    throw StoreError(ErrorKind::io, "cannot create directory " + directory + " for the run leases of history " +
                                        history_path + ": " + ec.message());
  for (int busy = 0;;) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw StoreError(ErrorKind::io, "cannot create lease file " + path_ + " for history " + history_path + ": " +
                                          std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      if (error == EWOULDBLOCK && ++busy < tries) {  // perhaps only a holder() probe's moment
        ::close(fd_);
        fd_ = -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      const auto pid = pid_in(fd_);
      ::close(fd_);
      fd_ = -1;
      if (error != EWOULDBLOCK) throw StoreError(ErrorKind::io, "cannot lock " + path_ + ": " + std::strerror(error));
      throw StoreError(ErrorKind::locked, held_message(history_path, run_id, pid));
    }
    if (names(fd_, path_)) break;
    ::close(fd_);  // its holder released it meanwhile: take the new file
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int error = errno;
    ::unlink(path_.c_str());
    ::close(fd_);
    fd_ = -1;
    throw StoreError(ErrorKind::io, "cannot write lease file " + path_ + ": " + std::strerror(error));
  }
}

RunLease::~RunLease() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  ::close(fd_);
}

std::optional<int64_t> RunLease::holder(const std::string& history_path, const std::string& run_id) {
  const std::string path = lease_path(history_path, run_id);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<int64_t> pid;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) pid = pid_in(fd).value_or(0);
  ::close(fd);
  return pid;
}

std::vector<std::string> RunLease::files(const std::string& history_path) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(lease_directory(history_path), ec), end; !ec && it != end; it.increment(ec))
    if (const std::string name = it->path().filename().string(); is_run_id(name)) ids.push_back(name);
  return ids;
}

}  // namespace tessera::store
