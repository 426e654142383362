// Starting one rank of the runtime: fork + execve of a fixed program with arguments and environment the
// agent built (no shell), in its own process group, killed when the agent dies (PR_SET_PDEATHSIG), with
// its stdout and stderr on non-blocking pipes the agent reads.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tessera::agent {

struct SpawnedProcess {
  pid_t pid = -1;  ///< also its process group id
  int stdout_fd = -1, stderr_fd = -1;
};

/// Starts `program` with `args` (argv[1..]) in `cwd`, with the agent's environment plus `env_overrides`
/// ("NAME=value", replacing inherited ones). Throws std::runtime_error when the program cannot be
/// executed (the child reports the exec error before the call returns).
SpawnedProcess spawn_process(const std::string& program, const std::vector<std::string>& args,
                             const std::vector<std::string>& env_overrides, const std::string& cwd);

/// Human-readable exit of a wait status: "exited with code 1", "killed by signal 9 (Killed)".
std::string describe_exit(int wait_status);

}  // namespace tessera::agent
