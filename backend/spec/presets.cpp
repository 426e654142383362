// Loads the preset JSON files compiled into the binary.
#include "spec/presets.hpp"

#include <cctype>
#include <stdexcept>

#include "embedded.hpp"

namespace tessera::spec {

double GpuPreset::peak_tflops(Precision precision) const {
  switch (precision) {
    case Precision::bf16: return peak_tflops_bf16;
    case Precision::fp16: return peak_tflops_fp16;
    case Precision::fp32: return peak_tflops_fp32;
  }
  return peak_tflops_bf16;
}

namespace {
GpuPreset gpu_from_json(const nlohmann::json& j) {
  GpuPreset g;
  g.id = j.at("id").get<std::string>();
  g.name = j.at("name").get<std::string>();
  const auto& peak = j.at("peak_tflops");
  g.peak_tflops_bf16 = peak.at("bf16").get<double>();
  g.peak_tflops_fp16 = peak.at("fp16").get<double>();
  g.peak_tflops_fp32 = peak.at("fp32").get<double>();
  g.memory_bytes = j.at("memory_bytes").get<int64_t>();
  g.hbm_bandwidth_GBps = j.at("hbm_bandwidth_GBps").get<double>();
  g.intra_node_bandwidth_GBps = j.at("intra_node_bandwidth_GBps").get<double>();
  g.inter_node_bandwidth_GBps = j.at("inter_node_bandwidth_GBps").get<double>();
  g.gemm_efficiency = j.value("gemm_efficiency", 0.75);
  g.source = j.value("source", "");
  return g;
}
}  // namespace

PresetCatalog PresetCatalog::from_texts(const std::vector<std::string>& model_texts,
                                        const std::vector<std::string>& gpu_texts) {
  PresetCatalog catalog;
  for (const auto& text : model_texts) {
    const auto j = nlohmann::json::parse(text);
    ModelPreset m;
    m.id = j.at("id").get<std::string>();
    m.description = j.value("description", "");
    m.source = j.value("source", "");
    m.model = j.at("model");
    catalog.models_[m.id] = std::move(m);
  }
  for (const auto& text : gpu_texts) {
    auto g = gpu_from_json(nlohmann::json::parse(text));
    catalog.gpus_[g.id] = std::move(g);
  }
  return catalog;
}

const PresetCatalog& PresetCatalog::builtin() {
  static const PresetCatalog catalog = [] {
    std::vector<std::string> models, gpus;
    for (const auto& [name, text] : resources::model_preset_files()) models.emplace_back(text);
    for (const auto& [name, text] : resources::gpu_preset_files()) gpus.emplace_back(text);
    return from_texts(models, gpus);
  }();
  return catalog;
}

const ModelPreset* PresetCatalog::model(const std::string& id) const {
  auto it = models_.find(id);
  return it == models_.end() ? nullptr : &it->second;
}

const GpuPreset* PresetCatalog::gpu(const std::string& id) const {
  auto it = gpus_.find(id);
  return it == gpus_.end() ? nullptr : &it->second;
}

std::vector<std::string> PresetCatalog::model_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, m] : models_) ids.push_back(id);
  return ids;
}

std::vector<std::string> PresetCatalog::gpu_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, g] : gpus_) ids.push_back(id);
  return ids;
}

std::string gpu_preset_id_for_device(const std::string& device_name, int64_t memory_bytes) {
  std::string name;
  for (char c : device_name) name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  if (has("h200")) return "h200";
  if (has("h100")) return has("pcie") || has("nvl") ? "" : "h100-sxm";
  if (has("a100")) return memory_bytes > (int64_t{60} << 30) ? "a100-80gb" : "a100-40gb";
  if (has("b200")) return "b200";
  if (has("l40s")) return "l40s";
  return "";
}

}  // namespace tessera::spec
