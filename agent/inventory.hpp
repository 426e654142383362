// What a node offers, reported to the workbench on connect: host name, CPU cores, memory, and GPUs read
// through NVML when the driver's libnvidia-ml is present (loaded at run time; no GPUs otherwise).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::agent {

struct GpuInfo {
  std::string name;
  std::string uuid;
  int64_t memory_bytes = 0;
};

struct NodeInfo {
  std::string hostname;
  int64_t cpu_cores = 0;
  int64_t memory_bytes = 0;
  std::vector<GpuInfo> gpus;
};

/// Reads the node once (NVML is opened and closed again).
NodeInfo probe_node();
nlohmann::json to_json(const NodeInfo& node);

}  // namespace tessera::agent
