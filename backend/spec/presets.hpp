// Model and GPU presets: published shapes and hardware figures, from resources/presets/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/enums.hpp"

namespace tessera::spec {

struct GpuPreset {
  std::string id;
  std::string name;
  double peak_tflops_bf16 = 0;
  double peak_tflops_fp16 = 0;
  double peak_tflops_fp32 = 0;
  int64_t memory_bytes = 0;
  double hbm_bandwidth_GBps = 0;
  double intra_node_bandwidth_GBps = 0;  ///< per GPU, one direction (NVLink or PCIe)
  double inter_node_bandwidth_GBps = 0;  ///< per GPU, one direction (its NIC)
  double gemm_efficiency = 0.75;         ///< fraction of peak a large GEMM reaches
  std::string source;

  double peak_tflops(Precision precision) const;
};

struct ModelPreset {
  std::string id;
  std::string description;
  std::string source;
  nlohmann::json model;  ///< the fields of the spec's model section
};

/// All presets by id; the builtin catalog holds the files compiled in from resources/presets/.
class PresetCatalog {
 public:
  static const PresetCatalog& builtin();
  /// A catalog from JSON texts (used by builtin() and by tests); throws std::runtime_error on a bad file.
  static PresetCatalog from_texts(const std::vector<std::string>& model_texts, const std::vector<std::string>& gpu_texts);

  const ModelPreset* model(const std::string& id) const;
  const GpuPreset* gpu(const std::string& id) const;
  std::vector<std::string> model_ids() const;
  std::vector<std::string> gpu_ids() const;
  const std::map<std::string, ModelPreset>& models() const { return models_; }
  const std::map<std::string, GpuPreset>& gpus() const { return gpus_; }

 private:
  std::map<std::string, ModelPreset> models_;
  std::map<std::string, GpuPreset> gpus_;
};

/// The id of the GPU preset for a CUDA device as the driver names it ("NVIDIA H200", "NVIDIA
/// A100-SXM4-80GB", ...) with `memory_bytes` of memory (telling the A100s apart); "" when no preset
/// has that GPU's peaks (PCIe and NVL H100s have lower ones than the SXM preset).
std::string gpu_preset_id_for_device(const std::string& device_name, int64_t memory_bytes);

}  // namespace tessera::spec
