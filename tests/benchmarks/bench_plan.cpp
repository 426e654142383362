// Planning benchmark: plans N layouts of GPT-3 175B (default 10,000) and prints layouts per second
// next to the target the GUI and the layout search need (10,000/s), as a ratio; then the time of one
// interactive re-plan with timeline events at 1,024 GPUs against the GUI's 50 ms budget.
// Usage: bench_plan [layouts]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "planner/plan.hpp"

using namespace tessera;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<spec::RunSpec> gpt3_layouts() {
  std::vector<spec::RunSpec> out;
  const auto& presets = spec::PresetCatalog::builtin();
  const auto base_spec = spec::parse_spec(nlohmann::json{{"model", {{"preset", "gpt3-175b"}}},
                                                         {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}}});
  for (int64_t nodes : {8, 16, 32, 64, 128, 256})
    for (int64_t tp : {1, 2, 4, 8})
      for (int64_t pp : {1, 2, 4, 6, 8, 12, 16, 24, 32})
        for (int64_t mbs : {1, 2, 4})
          for (int64_t vpp : {1, 2})
            for (auto recompute : {spec::Recompute::none, spec::Recompute::selective, spec::Recompute::full})
              for (bool sp : {false, true}) {
                spec::RunSpec s = base_spec;
                s.cluster.nodes = nodes;
                s.parallel.tp = tp;
                s.parallel.pp = pp;
                s.parallel.vpp = vpp;
                s.parallel.schedule = vpp > 1 ? spec::Schedule::interleaved : spec::Schedule::one_f_one_b;
                s.parallel.sequence_parallel = sp && tp > 1;
                s.parallel.distributed_optimizer = true;
                s.training.micro_batch_size = mbs;
                s.training.global_batch_size = 1536;
                s.training.recompute = recompute;
                if (spec::validate(s, presets).empty()) out.push_back(s);
              }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t count = argc > 1 ? std::atoll(argv[1]) : 10000;
  const auto layouts = gpt3_layouts();
  if (layouts.empty() || count <= 0) {
    std::fprintf(stderr, "no layouts\n");
    return 1;
  }
  double checksum = 0;
  const auto start = Clock::now();
  for (int64_t i = 0; i < count; ++i) {
    const auto plan = planner::make_plan(layouts[static_cast<size_t>(i) % layouts.size()]);
    checksum += plan.prediction.iteration_time_s;
    if (!std::isfinite(plan.prediction.iteration_time_s) || plan.prediction.iteration_time_s <= 0) {
      std::fprintf(stderr, "layout %lld: bad prediction\n", static_cast<long long>(i));
      return 1;
    }
  }
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  const double per_s = static_cast<double>(count) / elapsed_s;
  std::printf("planned %lld GPT-3 175B layouts (%zu distinct valid) in %.3f s\n", static_cast<long long>(count),
              layouts.size(), elapsed_s);
  std::printf("%-28s %12s %12s %8s\n", "benchmark", "ours", "target", "ratio");
  std::printf("%-28s %10.0f/s %10.0f/s %8.2f\n", "plans per second", per_s, 10000.0, per_s / 10000.0);

  // One interactive re-plan at 1,024 GPUs with the full grid and timeline events (what the GUI does).
  spec::RunSpec big = layouts.front();
  big.cluster.nodes = 128;
  big.parallel.tp = 8;
  big.parallel.pp = 8;
  big.parallel.vpp = 2;
  big.parallel.schedule = spec::Schedule::interleaved;
  big.training.micro_batch_size = 1;
  planner::PlanOptions options;
  options.include_grid = true;
  options.record_events = true;
  const auto t0 = Clock::now();
  const auto plan = planner::make_plan(big, options);
  const double replan_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("%-28s %10.2fms %10.2fms %8.2f   (%zu events, %zu ranks)\n", "re-plan 1,024 GPUs + grid", replan_ms, 50.0,
              replan_ms / 50.0, plan.prediction.simulation.events.size(), plan.grid->ranks.size());
  std::printf("checksum %.6g\n", checksum);
  return 0;
}
