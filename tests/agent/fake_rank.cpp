// TEST DOUBLE, never shipped: a stand-in for one tessera-train rank, so that the agent's mechanics can be
// tested without LibTorch. Takes the runtime's arguments (--spec FILE --out DIR) and environment (RANK,
// WORLD_SIZE, TESSERA_REPORT_ENDPOINT), reports one "step" record per step through protocol::Reporter
// and prints a log line every 10 steps. Knobs, read from the environment the agent passes on:
//   TESSERA_FAKE_START_MS      silent before its first output, as a rank loading LibTorch (default 0)
//   TESSERA_FAKE_STEP_MS       sleep per step (default 10)
//   TESSERA_FAKE_FAIL_RANK/_STEP  that rank exits with code 3 at that step
//   TESSERA_FAKE_FAIL_FILE     ... or (with _RANK) at the first step once this file exists
//   TESSERA_FAKE_METRICS_PER_STEP  extra "metric" records per step (benchmark load; default 0)
//   TESSERA_FAKE_RECORD        a record (any text) each rank also sends after its first step
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "protocol/reporter.hpp"

namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::stoll(value) : fallback;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string spec_path;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--spec") spec_path = argv[i + 1];
  std::ifstream in(spec_path);
  if (!in) {
    std::cerr << "fake_rank: cannot read --spec " << spec_path << "\n";
    return 2;
  }
  const auto spec = nlohmann::json::parse(in);
  const int64_t steps = spec.at("training").at("train_steps").get<int64_t>();
  const int64_t rank = env_int("RANK", -1), world = env_int("WORLD_SIZE", -1);
  if (rank < 0 || world <= 0 || !std::getenv("MASTER_ADDR") || !std::getenv("MASTER_PORT")) {
    std::cerr << "fake_rank: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT must be set\n";
    return 2;
  }
  const auto step_ms = env_int("TESSERA_FAKE_STEP_MS", 10);
  const auto fail_rank = env_int("TESSERA_FAKE_FAIL_RANK", -1), fail_step = env_int("TESSERA_FAKE_FAIL_STEP", -1);
  const auto metrics_per_step = env_int("TESSERA_FAKE_METRICS_PER_STEP", 0);
  const char* fail_file = std::getenv("TESSERA_FAKE_FAIL_FILE");
  auto reporter = tessera::protocol::Reporter::from_environment();
  if (!reporter) {
    std::cerr << "fake_rank: TESSERA_REPORT_ENDPOINT is not set\n";
    return 2;
  }
  if (const auto start_ms = env_int("TESSERA_FAKE_START_MS", 0); start_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(start_ms));
  std::cout << "fake_rank " << rank << "/" << world << " starting " << steps << " steps" << std::endl;
  const double start = now_s();
  for (int64_t step = 1; step <= steps; ++step) {
    if (rank == fail_rank && (step == fail_step || (fail_file && std::ifstream(fail_file).good()))) {
      std::cerr << "fatal: injected failure at step " << step << std::endl;
      return 3;
    }
    const double loss = 10.0 / (1.0 + 0.01 * static_cast<double>(step)) + 0.001 * static_cast<double>(rank);
    reporter->send(nlohmann::json{{"type", "step"}, {"step", step}, {"rank", rank}, {"wall_time_s", now_s() - start},
                                  {"loss", loss}, {"grad_norm", 1.0}, {"lr", 1e-3}}
                       .dump());
    for (int64_t m = 0; m < metrics_per_step; ++m) {  // formatted directly: the rank's cost is not the pipeline's
      char line[160];
      const int n = std::snprintf(line, sizeof line,
                                  "{\"type\":\"metric\",\"name\":\"bench_%lld\",\"rank\":%lld,\"step\":%lld,"
                                  "\"value\":%lld,\"emit_s\":%.6f}",
                                  static_cast<long long>(m % 8), static_cast<long long>(rank),
                                  static_cast<long long>(step * metrics_per_step + m), static_cast<long long>(m), now_s());
      reporter->send(std::string_view(line, static_cast<size_t>(n)));
    }
    if (const char* extra = std::getenv("TESSERA_FAKE_RECORD"); extra && step == 1) reporter->send(extra);
    if (step % 10 == 0) std::cout << "rank " << rank << " step " << step << " loss " << loss << std::endl;
    if (step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
  }
  std::cout << "rank " << rank << " done" << std::endl;
  return 0;
}
