// JSON form of the metrics records.
#include "protocol/records.hpp"

#include <stdexcept>

namespace tessera::protocol {

namespace {

template <typename T>
T field(const nlohmann::json& line, const char* name) {
  auto it = line.find(name);
  if (it == line.end()) throw std::invalid_argument(std::string("metrics record has no field \"") + name + "\"");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string("metrics record field \"") + name + "\" has the wrong type");
  }
}

}  // namespace

nlohmann::ordered_json to_json(const StepRecord& r) {
  return {{"type", "step"},          {"step", r.step},       {"rank", r.rank},
          {"wall_time_s", r.wall_time_s}, {"loss", r.loss}, {"grad_norm", r.grad_norm},
          {"lr", r.lr},              {"step_time_s", r.step_time_s}, {"tokens_per_s", r.tokens_per_s},
          {"comm_s", r.comm_s},      {"model_tflops", r.model_tflops}, {"peak_tflops", r.peak_tflops},
          {"mfu", r.mfu},            {"bubble", r.bubble},   {"peak_memory_bytes", r.peak_memory_bytes},
          {"live_memory_bytes", r.live_memory_bytes}, {"peak_reserved_bytes", r.peak_reserved_bytes}};
}

nlohmann::ordered_json to_json(const TimelineRecord& r) {
  return {{"type", "timeline"}, {"step", r.step},   {"rank", r.rank},       {"stage", r.stage},
          {"op", r.op},         {"microbatch", r.microbatch}, {"chunk", r.chunk}, {"start_s", r.start_s},
          {"end_s", r.end_s}};
}

nlohmann::ordered_json to_json(const ArtifactRecord& r) {
  return {{"type", "artifact"}, {"kind", r.kind}, {"path", r.path}, {"step", r.step},
          {"rank", r.rank}, {"size_bytes", r.size_bytes}, {"created_ms", r.created_ms},
          {"wall_time_s", r.wall_time_s}};
}

std::string record_type(const nlohmann::json& line) { return field<std::string>(line, "type"); }

StepRecord step_record_from_json(const nlohmann::json& line) {
  StepRecord r;
  r.step = field<int64_t>(line, "step");
  r.rank = field<int64_t>(line, "rank");
  r.wall_time_s = field<double>(line, "wall_time_s");
  r.loss = field<double>(line, "loss");
  r.grad_norm = field<double>(line, "grad_norm");
  r.lr = field<double>(line, "lr");
  r.step_time_s = field<double>(line, "step_time_s");
  r.tokens_per_s = field<double>(line, "tokens_per_s");
  r.comm_s = field<double>(line, "comm_s");
  r.model_tflops = field<double>(line, "model_tflops");
  r.peak_tflops = field<double>(line, "peak_tflops");
  r.mfu = field<double>(line, "mfu");
  r.bubble = field<double>(line, "bubble");
  r.peak_memory_bytes = field<int64_t>(line, "peak_memory_bytes");
  r.live_memory_bytes = field<int64_t>(line, "live_memory_bytes");
  // Added with the CUDA path; records written before it have no cache: the peak itself.
  r.peak_reserved_bytes = line.contains("peak_reserved_bytes") ? field<int64_t>(line, "peak_reserved_bytes")
                                                                : r.peak_memory_bytes;
  return r;
}

TimelineRecord timeline_record_from_json(const nlohmann::json& line) {
  TimelineRecord r;
  r.step = field<int64_t>(line, "step");
  r.rank = field<int64_t>(line, "rank");
  r.stage = field<int64_t>(line, "stage");
  r.op = field<std::string>(line, "op");
  r.microbatch = field<int64_t>(line, "microbatch");
  r.chunk = field<int64_t>(line, "chunk");
  r.start_s = field<double>(line, "start_s");
  r.end_s = field<double>(line, "end_s");
  return r;
}

}  // namespace tessera::protocol
