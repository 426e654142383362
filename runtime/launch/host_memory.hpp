// Whether a CPU run's ranks fit in this machine's memory, checked before any rank starts: the
// planner's per-rank peak (the stage each local rank holds) summed over the ranks on this machine,
// against the memory the kernel says is available (MemAvailable). A GPU-sized spec started on the
// CPU by mistake is refused with the figures instead of ending in the kernel's OOM killer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "spec/run_spec.hpp"

namespace tessera::runtime {

/// MemAvailable of /proc/meminfo in bytes, or nullopt where it cannot be read.
std::optional<int64_t> host_available_bytes();

/// What the planner predicts `local_ranks` ranks of `spec` on one machine need in all: the heaviest
/// stage's peak for each when `local_ranks` is less than the world (which stages land here is not
/// known), every rank's own stage when the whole world is local.
int64_t predicted_host_bytes(const spec::RunSpec& spec, int64_t local_ranks);

/// The refusal when `needed_bytes` exceed `available_bytes`, naming both and what to change; empty
/// when they fit.
std::string host_memory_problem(const spec::RunSpec& spec, int64_t local_ranks, int64_t needed_bytes,
                                int64_t available_bytes);

}  // namespace tessera::runtime
