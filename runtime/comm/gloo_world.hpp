// The world of one run on the CPU path: TCPStore rendezvous, a heartbeat per rank that tells a dead
// peer from a slow one, and Gloo communicators for any subset of ranks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/comm/communicator.hpp"

namespace c10d {
class Store;
}
namespace c10 {
template <class T, class NullType>
class intrusive_ptr;
}

namespace tessera::runtime {

struct WorldOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::chrono::milliseconds timeout{60'000};  ///< every collective, p2p and store operation
  /// The rendezvous at the start and at the end (finish()) and each group's connections, which wait
  /// for ranks that start or end later than others; zero means `timeout`.
  std::chrono::milliseconds connect_timeout{0};

  std::chrono::milliseconds effective_connect_timeout() const {
    return connect_timeout.count() > 0 ? connect_timeout : timeout;
  }
};

/// LibTorch's flight recorder (one per process, 2000 entries by default) records every Gloo operation
/// with a traceback, and registers each new group in a map before taking its lock: the first
/// operations of two groups started at once on different threads corrupt that map (a segfault, seen
/// with the in-process ranks of the tests). Tessera diagnoses a failed operation itself, so this turns
/// the recorder off (TORCH_FR_BUFFER_SIZE=0) unless the user set it. It changes the environment:
/// call it before other threads start (tessera-train's main does); GlooWorld's constructor calls it
/// too, once per process, for programs that did not.
void turn_off_flight_recorder_unless_asked();

class GlooWorld {
 public:
  /// Rendezvous of all ranks (rank 0 hosts the store); throws CommError naming the address on failure.
  explicit GlooWorld(const WorldOptions& options);
  ~GlooWorld();
  GlooWorld(const GlooWorld&) = delete;
  GlooWorld& operator=(const GlooWorld&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }

  /// A communicator over `members` (global ranks, ascending, containing this rank), named `name`.
  /// Only the members call this; `name` must be the same on all of them and unique in the run.
  std::unique_ptr<Communicator> make_group(const std::string& name, const std::vector<int64_t>& members);

  /// Called by every rank at the end of a run: rank 0, which hosts the store, waits until all ranks
  /// have called it (bounded by the connect timeout) so no rank loses the store while finishing.
  void finish();

  /// Returns once every rank of the world has called it with the same `name` (bounded by the
  /// timeout); through the store, so it needs no group.
  void store_barrier(const std::string& name);
  /// Every rank's `value` (indexed by rank), once every rank has called it with the same `name`
  /// (a barrier too); through the store.
  std::vector<int64_t> store_gather(const std::string& name, int64_t value);

  /// The rendezvous store as a small key/value board for what other transports exchange (NCCL's
  /// unique id): set() publishes, get() waits for the key up to the connect timeout (a group's
  /// members may reach it at different times; CommError after it).
  void store_set(const std::string& key, const std::string& value);
  std::string store_get(const std::string& key);
  /// The bound of connecting (WorldOptions::effective_connect_timeout()), for other transports' groups.
  std::chrono::milliseconds connect_timeout() const { return options_.effective_connect_timeout(); }

  /// After a failed operation: which members of the group stopped beating (checked over ~1.5 s).
  /// Returns the message for CommError: the operation, the group, the dead peers or "timed out".
  std::string diagnose(const std::string& what, const std::string& group, const std::vector<int64_t>& members,
                       const std::string& cause);

 private:
  std::vector<int64_t> all_ranks() const;
  struct Impl;
  WorldOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::runtime
