// Who records a run: a process that writes a run into a history holds its lease, an flock on
// "<history>.runs/<run id>" holding the pid. Several processes write one history at once, each its own
// runs; a run is recorded by one process at a time. The kernel drops the flock however the process
// ends, so the runs of a killed writer are seen as nobody's (and marked lost by the next writer).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::store {

class RunLease {
 public:
  /// Takes run `run_id`'s lease. Throws StoreError(locked) "run <id> in history … is being recorded by
  /// another process (pid N)" (or "… by this process"), StoreError(invalid) for an id that is not a run
  /// id, StoreError(io) when the lease directory or file cannot be created.
  RunLease(const std::string& history_path, const std::string& run_id);
  /// The lease at one try, nullptr when it is held or cannot be taken (a file of another user's): for a
  /// sweep, which leaves such a run to the next one rather than waiting.
  static std::unique_ptr<RunLease> try_take(const std::string& history_path, const std::string& run_id);
  /// Removes the lease file and drops the lock.
  ~RunLease();
  RunLease(const RunLease&) = delete;
  RunLease& operator=(const RunLease&) = delete;

  /// The pid of the process holding run `run_id`'s lease (0 when it is held but its pid is not yet
  /// written), nullopt when nobody holds it. Takes nothing.
  static std::optional<int64_t> holder(const std::string& history_path, const std::string& run_id);
  /// The run ids that have a lease file (held or left by a killed process), in no order.
  static std::vector<std::string> files(const std::string& history_path);

 private:
  RunLease(const std::string& history_path, const std::string& run_id, int tries);
  std::string path_;
  int fd_ = -1;
};

}  // namespace tessera::store
