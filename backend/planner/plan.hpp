// A plan: everything the planner derives from a valid run spec, in one value, and its JSON form
// (the `tessera-cli plan --json` document). The GUI, the CLI and the runtime consume this.
#pragma once

#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "planner/flops.hpp"
#include "planner/grid.hpp"
#include "planner/memory.hpp"
#include "planner/params.hpp"
#include "planner/performance.hpp"
#include "planner/schedule.hpp"
#include "spec/run_spec.hpp"

namespace tessera::planner {

struct PlanOptions {
  MemoryProfile memory_profile = MemoryProfile::tessera;
  bool causal_flops = false;   ///< halve the attention-score FLOPs of causal attention
  bool include_grid = false;   ///< build the full rank grid (every rank and group)
  bool record_events = false;  ///< keep the simulated timeline events
  /// Above 0: a plan whose memory peak is above this many bytes gets no prediction (all zeros): the
  /// layout search's over-memory layouts, whose pipeline simulation was most of its time.
  int64_t predict_within_bytes = 0;
  PerformanceConstants constants;
};

struct Plan {
  spec::RunSpec spec;
  ModelParams params;
  std::vector<StageParams> stage_params;
  IterationFlops flops;
  ScheduleTable schedule;
  MemoryEstimate memory;
  Prediction prediction;
  std::optional<RankGrid> grid;
  std::vector<std::string> cross_node_groups;  ///< group kinds with a group spanning nodes
};

/// Plans a spec; throws spec::SpecError when the spec is invalid.
Plan make_plan(const spec::RunSpec& spec, const PlanOptions& options = {});

nlohmann::ordered_json plan_to_json(const Plan& plan);
nlohmann::ordered_json grid_to_json(const RankGrid& grid);
/// The op table and simulated events as JSON (`tessera-cli schedule --json`), written as it goes.
void write_schedule_json(std::ostream& out, const ScheduleTable& table, const Simulation& simulation);

}  // namespace tessera::planner
