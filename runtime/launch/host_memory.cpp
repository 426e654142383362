// Whether a CPU run's ranks fit in this machine's memory (the planner's prediction against MemAvailable).
#include "runtime/launch/host_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "planner/plan.hpp"

namespace tessera::runtime {

namespace {

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return text;
}

}  // namespace

std::optional<int64_t> host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    int64_t kib = 0;
    if (fields >> kib && kib > 0) return kib * 1024;
  }
  return std::nullopt;
}

int64_t predicted_host_bytes(const spec::RunSpec& spec, int64_t local_ranks) {
  const auto plan = planner::make_plan(spec, planner::PlanOptions{});
  const auto& stages = plan.memory.stages;
  if (stages.empty() || local_ranks <= 0) return 0;
  const int64_t world = spec.world_size();
  if (local_ranks >= world && world % static_cast<int64_t>(stages.size()) == 0) {
    int64_t total = 0;
    for (const auto& stage : stages) total += stage.total_bytes() * (world / static_cast<int64_t>(stages.size()));
    return total;
  }
  int64_t heaviest = 0;
  for (const auto& stage : stages) heaviest = std::max(heaviest, stage.total_bytes());
  return heaviest * local_ranks;
}

std::string host_memory_problem(const spec::RunSpec& spec, int64_t local_ranks, int64_t needed_bytes,
                                int64_t available_bytes) {
  if (needed_bytes <= available_bytes) return {};
  return "--device cpu: the planner predicts " + std::to_string(local_ranks) +
         (local_ranks == 1 ? " rank of this spec needs " : " ranks of this spec need ") + gib(needed_bytes) +
         " on this machine, but only " + gib(available_bytes) + " is available (MemAvailable): " +
         (spec.cluster.gpu == "cpu" ? std::string("use a smaller model or batch")
                                    : "the spec is planned for cluster.gpu=" + spec.cluster.gpu +
                                          ": train it with --device cuda, or use a smaller model or batch") +
         " (--no-memory-check starts it anyway)";
}

}  // namespace tessera::runtime
