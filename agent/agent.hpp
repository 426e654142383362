// tessera-agent's server: one ROUTER socket facing workbenches (CURVE and a ZAP allow-list off loopback),
// one PULL socket per run facing its ranks, and a single-threaded loop that starts and watches rank
// processes, batches their records into per-run sequenced data frames, keeps them in an outbox until
// acknowledged, and exchanges heartbeats (docs/protocol.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "protocol/keys.hpp"

namespace tessera::agent {

inline constexpr const char* kAgentVersion = "tessera-agent 0.1.0";
/// Ranks at once on a node without GPUs (CPU runs oversubscribe the cores; this bounds the damage).
inline constexpr int64_t kCpuMaxRanks = 64;

struct AgentOptions {
  std::string bind;                          ///< tcp://HOST:PORT (a port of 0 or * picks a free one)
  std::optional<protocol::KeyPair> keys;     ///< CURVE server keys (required off loopback)
  std::set<std::string> authorized_keys;     ///< client public keys the ZAP handler admits
  std::string runtime;                       ///< the only program the agent starts
  std::string workdir;                       ///< run directories go to WORKDIR/runs/<run id>
  int64_t max_ranks = 0;                     ///< ranks running at once (0 = the GPUs, or kCpuMaxRanks without)
  double grace_s = 3.0;                      ///< SIGTERM → SIGKILL delay when stopping ranks
  double exit_when_idle_s = 0;               ///< exit after this long with nothing to do (0 = never)
  int64_t outbox_memory_bytes = 64LL << 20;  ///< per run, beyond it frames are spilled to disk
  int64_t outbox_disk_bytes = 4LL << 30;     ///< per run, the spill file's cap; at it the ranks are paused
  int64_t kept_finished_runs = 64;           ///< ended, wholly acknowledged runs still listed; older ones forgotten
};

/// Throws std::invalid_argument when the options are unsafe or incomplete (a non-loopback bind without
/// keys, keys without authorized keys, a runtime that is not an executable file, a workdir that is
/// not a directory). Creates the workdir's runs/ folder when it is missing.
void check_options(const AgentOptions& options);

/// The address ZeroMQ binds for --bind: localhost as 127.0.0.1, a port of 0 as '*' (a free port).
/// Throws std::invalid_argument when `bind` is not tcp://HOST:PORT with PORT 0-65535 or '*'.
std::string zmq_bind_address(const std::string& bind);

class Agent {
 public:
  /// Binds (throws zmq::error_t / std::runtime_error when it cannot).
  explicit Agent(AgentOptions options);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  /// The bound endpoint with the actual port.
  std::string endpoint() const;
  /// Serves until `stop` becomes true (then stops the runs it holds) or the idle limit passes.
  void serve(const std::atomic<bool>& stop);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::agent
