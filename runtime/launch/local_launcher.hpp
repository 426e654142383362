// `tessera-train --nproc N`: starts N ranks of this executable on this machine (RANK, LOCAL_RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT set as torchrun sets them), each in its own process group and
// killed if the launcher dies; when one rank fails the others are stopped and the failure is named.
#pragma once

#include <string>
#include <vector>

namespace tessera::runtime {

struct LaunchResult {
  int exit_code = 0;        ///< 0 when every rank exited 0
  int failed_rank = -1;     ///< the first rank that failed, or -1
  std::string message;      ///< "rank 3 exited with code 1" / "rank 3 was killed by signal 9 (Killed)"
};

/// Runs `executable args...` as `nproc` ranks and waits for all of them.
LaunchResult launch_local(const std::string& executable, const std::vector<std::string>& args, int nproc);

/// A TCP port on 127.0.0.1 that was free a moment ago.
int free_local_port();

}  // namespace tessera::runtime
