// The records a training rank reports: one StepRecord per step, one TimelineRecord per executed
// pipeline operation and one ArtifactRecord per file of the run it wrote (a checkpoint). Written one
// JSON object per line to DIR/metrics.jsonl (docs/runtime.md) and, later, streamed by the agent: both
// use these definitions.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::protocol {

struct StepRecord {
  int64_t step = 0;          ///< 1-based
  int64_t rank = 0;
  double wall_time_s = 0;    ///< seconds since the rank started training
  double loss = 0;           ///< mean cross-entropy of the global batch (nats per token)
  double grad_norm = 0;      ///< global L2 norm before clipping
  double lr = 0;
  double step_time_s = 0;
  double tokens_per_s = 0;   ///< global batch tokens / step time
  double comm_s = 0;         ///< time this rank spent inside communication during the step
  double model_tflops = 0;   ///< model FLOPs of the iteration / world size / step time
  double peak_tflops = 0;    ///< this rank's peak (on CPU: a GEMM measured at start-up)
  double mfu = 0;            ///< model_tflops / peak_tflops
  double bubble = 0;         ///< idle fraction of this rank's pipeline stage between its first and last op
  int64_t peak_memory_bytes = 0;  ///< most bytes of live tensors so far (CPU: counting allocator; CUDA: allocated)
  int64_t live_memory_bytes = 0;  ///< bytes live at the end of the step
  int64_t peak_reserved_bytes = 0;  ///< most bytes the CUDA caching allocator held; CPU: = peak_memory_bytes
  bool operator==(const StepRecord&) const = default;
};

struct TimelineRecord {
  int64_t step = 0;
  int64_t rank = 0;
  int64_t stage = 0;
  std::string op;            ///< "F", "B" (planner::op_kind_name)
  int64_t microbatch = 0;
  int64_t chunk = 0;
  double start_s = 0;        ///< from the start of the step
  double end_s = 0;
  bool operator==(const TimelineRecord&) const = default;
};

/// A file of the run: rank 0 reports a checkpoint once every rank has saved it and the manifest is written.
struct ArtifactRecord {
  std::string kind;         ///< "checkpoint"
  std::string path;         ///< absolute, on the node of the rank that reports it
  int64_t step = 0;
  int64_t rank = 0;
  int64_t size_bytes = 0;   ///< a checkpoint: its files of every rank together
  int64_t created_ms = 0;   ///< Unix milliseconds
  double wall_time_s = 0;   ///< when written, in the step records' clock (seconds since the rank started training)
  bool operator==(const ArtifactRecord&) const = default;
};

/// {"type":"step", "step", "rank", "wall_time_s", "loss", ...} with the fields in declaration order.
nlohmann::ordered_json to_json(const StepRecord& record);
nlohmann::ordered_json to_json(const TimelineRecord& record);
nlohmann::ordered_json to_json(const ArtifactRecord& record);
/// The record type of a line ("step", "timeline" or "artifact"); throws std::invalid_argument when absent.
std::string record_type(const nlohmann::json& line);
/// Throw std::invalid_argument naming the missing or mistyped field.
StepRecord step_record_from_json(const nlohmann::json& line);
TimelineRecord timeline_record_from_json(const nlohmann::json& line);

}  // namespace tessera::protocol
