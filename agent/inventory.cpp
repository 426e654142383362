// Node probing: sysconf for CPUs and memory, NVML through dlopen for GPUs.
#include "agent/inventory.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <array>

namespace tessera::agent {

namespace {

// The few NVML entry points used, declared here so that no NVML header is needed at build time.
using NvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
using InitFn = int (*)();
using CountFn = int (*)(unsigned int*);
using HandleFn = int (*)(unsigned int, NvmlDevice*);
using NameFn = int (*)(NvmlDevice, char*, unsigned int);
using MemoryFn = int (*)(NvmlDevice, NvmlMemory*);

std::vector<GpuInfo> probe_gpus() {
  std::vector<GpuInfo> gpus;
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!nvml) return gpus;
  const auto init = reinterpret_cast<InitFn>(dlsym(nvml, "nvmlInit_v2"));
  const auto shutdown = reinterpret_cast<InitFn>(dlsym(nvml, "nvmlShutdown"));
  const auto count = reinterpret_cast<CountFn>(dlsym(nvml, "nvmlDeviceGetCount_v2"));
  const auto handle = reinterpret_cast<HandleFn>(dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2"));
  const auto name = reinterpret_cast<NameFn>(dlsym(nvml, "nvmlDeviceGetName"));
  const auto uuid = reinterpret_cast<NameFn>(dlsym(nvml, "nvmlDeviceGetUUID"));
  const auto memory = reinterpret_cast<MemoryFn>(dlsym(nvml, "nvmlDeviceGetMemoryInfo"));
  if (init && shutdown && count && handle && name && uuid && memory && init() == 0) {
    unsigned int n = 0;
    if (count(&n) == 0) {
      for (unsigned int i = 0; i < n; ++i) {
        NvmlDevice device = nullptr;
        if (handle(i, &device) != 0) continue;
        std::array<char, 128> text{};
        GpuInfo gpu;
        if (name(device, text.data(), text.size()) == 0) gpu.name = text.data();
        text.fill(0);
        if (uuid(device, text.data(), text.size()) == 0) gpu.uuid = text.data();
        NvmlMemory mem{};
        if (memory(device, &mem) == 0) gpu.memory_bytes = static_cast<int64_t>(mem.total);
        gpus.push_back(std::move(gpu));
      }
    }
    shutdown();
  }
  dlclose(nvml);
  return gpus;
}

}  // namespace

NodeInfo probe_node() {
  NodeInfo node;
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) == 0) node.hostname = host.data();
  node.cpu_cores = sysconf(_SC_NPROCESSORS_ONLN);
  node.memory_bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  node.gpus = probe_gpus();
  return node;
}

nlohmann::json to_json(const NodeInfo& node) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& gpu : node.gpus) gpus.push_back({{"name", gpu.name}, {"uuid", gpu.uuid}, {"memory_bytes", gpu.memory_bytes}});
  return {{"hostname", node.hostname}, {"cpu_cores", node.cpu_cores}, {"memory_bytes", node.memory_bytes}, {"gpus", gpus}};
}

}  // namespace tessera::agent
