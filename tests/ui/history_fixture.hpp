// Test runs for the history and compare tests, written through the store's own Writer into a
// temporary history: two tiny-gpt runs with different layouts (and learning rates) and known
// metric points, and a failed llama run. The points are kept so tests compute expected summaries
// by hand.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/writer.hpp"

namespace tessera::test {

struct WrittenRun {
  std::string id;
  std::string name;
  /// Values written per step (index step-1) and rank (index rank).
  std::vector<std::vector<double>> loss, mfu, tokens_per_s, step_time_s;
};

inline nlohmann::ordered_json tinySpec(const std::string& name, int tp, int pp, double lr) {
  return nlohmann::ordered_json::parse(R"({"name": ")" + name + R"(", "model": {"preset": "tiny-gpt"},
      "parallel": {"tp": )" + std::to_string(tp) + R"(, "pp": )" + std::to_string(pp) + R"(, "dp": 2},
      "training": {"micro_batch_size": 4, "global_batch_size": 32, "precision": "fp32", "flash_attention": false,
                   "train_steps": 10, "lr": )" + std::to_string(lr) + R"(, "min_lr": 0.0001},
      "cluster": {"gpu": "cpu", "nodes": 1, "gpus_per_node": )" + std::to_string(tp * pp * 2) + "}}");
}

/// Writes a finished run: `steps` steps on 2 ranks; loss falls from `loss0`, rank 1 sits 0.2 above
/// rank 0; MFU and tokens/s vary by step so their means are not any single value.
inline WrittenRun writeRun(store::Writer& writer, const std::string& name, nlohmann::ordered_json spec,
                           std::vector<std::string> tags, store::RunStatus status, double loss0, double speed,
                           int steps = 10, int64_t created_ms = 0) {
  store::RunRecord record;
  record.name = name;
  record.spec = std::move(spec);
  record.tags = std::move(tags);
  record.created_ms = created_ms;
  const auto handle = writer.create_run(record);
  writer.set_status(handle, store::RunStatus::running);
  WrittenRun run{handle.id, name, {}, {}, {}, {}};
  const double t0 = 1.7e9;
  for (int step = 1; step <= steps; ++step) {
    run.loss.push_back({});
    run.mfu.push_back({});
    run.tokens_per_s.push_back({});
    run.step_time_s.push_back({});
    for (int rank = 0; rank < 2; ++rank) {
      const double loss = loss0 - 0.25 * step + 0.2 * rank + (step % 3 == 0 ? 0.05 : 0.0);
      const double mfu = 0.3 * speed / 20000 + 0.01 * (step % 4) + 0.002 * rank;
      const double tokens = speed * (1.0 + 0.05 * (step % 5));
      run.loss.back().push_back(loss);
      run.mfu.back().push_back(mfu);
      run.tokens_per_s.back().push_back(tokens);
      run.step_time_s.back().push_back(2048.0 / tokens);  // the step's 2048 tokens at that rate
      const double wall = t0 + step * (2048.0 / speed);
      writer.append(handle, std::vector<store::MetricPoint>{{"loss", rank, step, wall, loss},
                                                            {"mfu", rank, step, wall, mfu},
                                                            {"tokens_per_s", rank, step, wall, tokens},
                                                            {"step_time_s", rank, step, wall, 2048.0 / tokens},
                                                            {"grad_norm", rank, step, wall, 1.0 / step},
                                                            {"peak_memory_bytes", rank, step, wall, 1e8 * (rank + 1)}});
    }
  }
  writer.set_status(handle, status, status == store::RunStatus::failed ? "rank 1 exited with code 1" : "");
  writer.flush();
  return run;
}

}  // namespace tessera::test
