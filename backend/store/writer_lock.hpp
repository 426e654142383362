// The one-writer-per-history rule: an flock on "<history>.lock" holding the writer's pid. The
// kernel drops it when the process ends, however it ends, so a killed writer never leaves it stale.
#pragma once

#include <string>

namespace tessera::store {

class WriterLock {
 public:
  /// Throws StoreError(locked) "history … is being written by another process (pid N)", or
  /// StoreError(io) when the lock file cannot be created (read-only directory).
  explicit WriterLock(const std::string& history_path);
  ~WriterLock();
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tessera::store
