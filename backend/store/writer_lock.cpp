// flock-based writer lock next to the history file.
#include "store/writer_lock.hpp"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "store/errors.hpp"
#include "store/location.hpp"

namespace tessera::store {

WriterLock::WriterLock(const std::string& history_path) {
  ensure_parent_directory(history_path);
  const std::string lock_path = history_path + ".lock";
  fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw StoreError(ErrorKind::io, "cannot create lock file " + lock_path + " for history " + history_path + ": " +
                                        std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char buffer[32] = {};
    const ssize_t n = ::pread(fd_, buffer, sizeof buffer - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (error != EWOULDBLOCK)
      throw StoreError(ErrorKind::io, "cannot lock " + lock_path + ": " + std::strerror(error));
    std::string pid = n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    if (pid == std::to_string(::getpid()))
      throw StoreError(ErrorKind::locked, "history " + history_path + " is already being written by this process");
    throw StoreError(ErrorKind::locked, "history " + history_path + " is being written by another process (pid " +
                                            (pid.empty() ? "unknown" : pid) + ")");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    throw StoreError(ErrorKind::io, "cannot write lock file " + lock_path + ": " + std::strerror(error));
  }
}

WriterLock::~WriterLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tessera::store
