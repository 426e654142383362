// Fits the performance model's calibration constants to resources/validation/narayanan2021-table1.json
// by grid search (minimising the largest relative error), and prints the errors row by row.
// Usage: calibrate_performance [validation.json]   (docs/formulas.md §4 explains the constants)
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "planner/plan.hpp"

using namespace tessera;

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : TESSERA_SOURCE_DIR "/resources/validation/narayanan2021-table1.json";
  std::ifstream in(path);
  if (!in) {
    std::cerr << "cannot read " << path << "\n";
    return 2;
  }
  const auto doc = nlohmann::json::parse(in);
  std::vector<std::pair<spec::RunSpec, double>> rows;
  for (const auto& row : doc["rows"]) rows.emplace_back(spec::parse_spec(row["spec"]), row["published_tflops_per_gpu"].get<double>());

  auto worst_error = [&](const planner::PerformanceConstants& c) {
    double worst = 0;
    planner::PlanOptions options;
    options.constants = c;
    for (const auto& [s, published] : rows) {
      const auto plan = planner::make_plan(s, options);
      worst = std::max(worst, std::abs(plan.prediction.hardware_tflops_per_gpu / published - 1));
    }
    return worst;
  };

  planner::PerformanceConstants best;
  double best_error = worst_error(best);
  std::printf("current constants: worst error %.1f%%\n", 100 * best_error);
  for (double half : {32.0, 64.0, 128.0, 256.0})
    for (double attention : {0.3, 0.4, 0.5, 0.6, 0.8})
      for (double passes : {1.0, 2.0, 3.0, 4.0})
        for (double network : {0.6, 0.7, 0.8}) {
          planner::PerformanceConstants c;
          c.gemm_half_size = half;
          c.attention_efficiency = attention;
          c.elementwise_passes = passes;
          c.network_efficiency = network;
          const double e = worst_error(c);
          if (e < best_error) {
            best_error = e;
            best = c;
          }
        }
  std::printf("best: gemm_half_size %.0f attention_efficiency %.2f elementwise_passes %.1f network_efficiency %.2f -> worst %.1f%%\n",
              best.gemm_half_size, best.attention_efficiency, best.elementwise_passes, best.network_efficiency,
              100 * best_error);
  planner::PlanOptions options;
  options.constants = best;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto plan = planner::make_plan(rows[i].first, options);
    std::printf("%-10s published %5.0f  predicted %6.1f  error %+5.1f%%\n", doc["rows"][i]["label"].get<std::string>().c_str(),
                rows[i].second, plan.prediction.hardware_tflops_per_gpu,
                100 * (plan.prediction.hardware_tflops_per_gpu / rows[i].second - 1));
  }
  return 0;
}
