// The embedded default agent: with no --agents, the workbench starts (or reuses) a tessera-agent of its
// own on loopback, with CURVE keys generated in the user's config directory on first use, that exits by
// itself once idle. Also where the workbench finds the tessera-agent and tessera-train programs.
#pragma once

#include <string>

#include "launch/agent_connection.hpp"

namespace tessera::launch {

/// A program shipped with Tessera: $ENV_VAR, then next to this executable, then ../SUBDIR/NAME (the
/// build tree), then PATH. Throws std::runtime_error naming where it looked.
std::string find_program(const std::string& name, const std::string& env_var, const std::string& build_subdir);

/// The endpoint of a running local agent, starting one when none answers. Its keys live in
/// CONFIG/local-agent/ (agent.key, authorized_keys = this workbench's client key), its runs in
/// CONFIG/local-agent/work, its output in CONFIG/local-agent/agent.log, its pid in
/// CONFIG/local-agent/agent.pid; its key is pinned for its
/// endpoint. It exits after `idle_exit_s` with no run, no unacknowledged data and no workbench.
std::string ensure_local_agent(const Credentials& credentials, double idle_exit_s = 60);

}  // namespace tessera::launch
