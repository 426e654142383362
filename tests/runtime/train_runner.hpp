// Helpers of the tessera-train tests: write a spec for a tiny layout, run tessera-train as a
// process, read the step records of its metrics file.
#pragma once

#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::test {

struct Layout {
  int64_t tp = 1, pp = 1, dp = 1, vpp = 1;
  bool sequence_parallel = false;
  std::string schedule = "1f1b";
  bool distributed_optimizer = false;
  std::string recompute = "none";
  int64_t micro_batch = 2, global_batch = 4;
  std::string precision = "fp32";
  int64_t first_stage_layers = 0, last_stage_layers = 0;  ///< 0: an even share
  int64_t num_layers = 0;  ///< 0: the preset's
  int64_t world() const { return tp * pp * dp; }
};

/// A tiny spec of `preset` (fp32 unless the layout says bf16) in `layout` (cluster sized to the layout, the `cpu` GPU preset).
inline nlohmann::json tiny_spec(const std::string& preset, const Layout& l, int64_t steps) {
  nlohmann::json spec = {{"name", preset + " test"},
          {"model", {{"preset", preset}}},
          {"parallel",
           {{"tp", l.tp}, {"pp", l.pp}, {"dp", l.dp}, {"vpp", l.vpp}, {"sequence_parallel", l.sequence_parallel},
            {"schedule", l.schedule}, {"distributed_optimizer", l.distributed_optimizer}}},
          {"training",
           {{"micro_batch_size", l.micro_batch}, {"global_batch_size", l.global_batch}, {"precision", l.precision},
            {"recompute", l.recompute}, {"flash_attention", false}, {"train_steps", steps}, {"lr", 0.003},
            {"min_lr", 0.0003}, {"warmup_steps", 5}, {"seed", 1234}}},
          {"cluster", {{"gpu", "cpu"}, {"nodes", 1}, {"gpus_per_node", l.world()}}}};
  if (l.num_layers > 0) spec["model"]["num_layers"] = l.num_layers;
  if (l.first_stage_layers > 0) spec["parallel"]["first_stage_layers"] = l.first_stage_layers;
  if (l.last_stage_layers > 0) spec["parallel"]["last_stage_layers"] = l.last_stage_layers;
  return spec;
}

inline std::string write_file(const QTemporaryDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
  std::ofstream(path) << text;
  return path;
}

struct Run {
  int exit_code = -1;  ///< -1: crashed or did not finish in time
  std::string out, err;
};

inline Run tessera_train(const QStringList& args, int timeout_ms = 120000) {
  QProcess process;
  process.start(TESSERA_TRAIN, args);
  if (!process.waitForFinished(timeout_ms)) {
    process.kill();
    process.waitForFinished();
    return {-1, process.readAllStandardOutput().toStdString(), "timed out\n" + process.readAllStandardError().toStdString()};
  }
  return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
          process.readAllStandardOutput().toStdString(), process.readAllStandardError().toStdString()};
}

struct StepMetrics {
  double loss = 0, grad_norm = 0;
};

/// step -> (loss, grad norm) of `rank`'s step records in DIR/metrics.jsonl.
inline std::map<int64_t, StepMetrics> read_steps(const std::string& out_dir, int64_t rank = 0) {
  std::map<int64_t, StepMetrics> steps;
  std::ifstream in(out_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("type") == "step" && j.at("rank") == rank)
      steps[j.at("step").get<int64_t>()] = {j.at("loss").get<double>(), j.at("grad_norm").get<double>()};
  }
  return steps;
}

/// Trains `layout` of `preset` for `steps` steps on synthetic data, one thread per rank, in DIR/NAME
/// (plus `extra` arguments); rank 0's step records, or none when the run failed (its error logged).
/// Synthetic data: on text with lr 3e-3 the run is chaotic enough that fp32 rounding differences of
/// the reduction order grow past 1e-4 within 20 steps in the 8-rank layout.
inline std::map<int64_t, StepMetrics> train_synthetic(const QTemporaryDir& dir, const std::string& name,
                                                      const std::string& preset, const Layout& layout, int64_t steps,
                                                      const QStringList& extra = {}) {
  const std::string spec = write_file(dir, name + ".json", tiny_spec(preset, layout, steps).dump());
  const std::string out = dir.filePath(QString::fromStdString(name)).toStdString();
  const Run run = tessera_train(QStringList{"--spec", QString::fromStdString(spec), "--out", QString::fromStdString(out),
                                            "--nproc", QString::number(layout.world()), "--threads", "1", "--data",
                                            "synthetic"} +
                                extra);
  if (run.exit_code != 0) qWarning("%s", run.err.c_str());
  return run.exit_code == 0 ? read_steps(out) : std::map<int64_t, StepMetrics>{};
}

/// train_synthetic for a run that depends on its spec alone (no extra arguments, nothing read back from
/// its directory): trained once per test process and spec, so that the rows of a suite that share a
/// reference, or a run, do not train it again. A failed run is not kept (the next caller tries again).
inline std::map<int64_t, StepMetrics> train_synthetic_once(const std::string& preset, const Layout& layout, int64_t steps) {
  static std::map<std::string, std::map<int64_t, StepMetrics>> trained;
  const std::string key = tiny_spec(preset, layout, steps).dump();
  if (const auto it = trained.find(key); it != trained.end()) return it->second;
  const QTemporaryDir dir;
  auto result = train_synthetic(dir, "run", preset, layout, steps);
  if (!result.empty()) trained.emplace(key, result);
  return result;
}

/// |a - b| / |b|.
inline double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-12); }

}  // namespace tessera::test
