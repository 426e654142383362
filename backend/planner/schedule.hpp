// Pipeline schedules as data: the ordered operations of every stage for GPipe, 1F1B, interleaved
// 1F1B and ZB-H1, and a simulator that times such a table into timeline events and a bubble.
// The runtime executes these tables, the simulator times them and the GUI draws them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/enums.hpp"

namespace tessera::planner {

/// F = forward; B = whole backward; Bi = backward for the input gradient only (ZB); W = weight gradient (ZB).
enum class OpKind : uint8_t { forward, backward, backward_input, backward_weight };
std::string_view op_kind_name(OpKind kind);  ///< "F", "B", "Bi", "W"

struct PipelineOp {
  OpKind kind = OpKind::forward;
  int32_t microbatch = 0;
  int32_t chunk = 0;  ///< model chunk on this stage (virtual stage = chunk * pp + stage)
  bool operator==(const PipelineOp&) const = default;
};

struct ScheduleTable {
  spec::Schedule schedule = spec::Schedule::one_f_one_b;
  int pp = 1;
  int vpp = 1;
  int microbatches = 1;
  std::vector<std::vector<PipelineOp>> stages;  ///< per pipeline stage, in execution order
};

/// The operation table of a schedule; throws std::invalid_argument naming the rule on a bad shape
/// (interleaved needs vpp >= 2 and microbatches % pp == 0; others need vpp == 1).
ScheduleTable make_schedule(spec::Schedule schedule, int pp, int vpp, int microbatches);

/// Per-op durations in seconds, indexed by virtual stage (chunk * pp + stage).
struct OpCosts {
  std::vector<double> forward_s;
  std::vector<double> backward_s;         ///< whole backward (B); Bi + W when split
  std::vector<double> backward_input_s;   ///< ZB: input-gradient part
  std::vector<double> backward_weight_s;  ///< ZB: weight-gradient part
  double p2p_s = 0;                       ///< send of an activation or gradient between consecutive virtual stages
  /// The same cost for every virtual stage; Bi and W each half of B.
  static OpCosts uniform(int virtual_stages, double forward_s, double backward_s, double p2p_s = 0);
};

struct TimelineEvent {
  int32_t stage = 0;
  PipelineOp op;
  double start_s = 0;
  double end_s = 0;
};

struct Simulation {
  std::vector<TimelineEvent> events;   ///< empty when not recorded
  double makespan_s = 0;               ///< end of the last op
  std::vector<double> busy_s;          ///< per stage
  std::vector<int> peak_in_flight;     ///< per stage: most chunk-microbatches whose activations are held
  double bubble_fraction = 0;          ///< idle / makespan on the busiest stage
  /// Per virtual stage: end of its first forward: by then the chunk's parameters must be there.
  std::vector<double> first_forward_end_s;
  /// Per virtual stage: start of its last op that computes weight gradients (the last B, or W when
  /// split): from then on its gradients can be reduced, bucket by bucket.
  std::vector<double> last_weight_gradient_s;
  /// Per virtual stage: end of that op, when the last bucket (the chunk's first layers) is complete.
  std::vector<double> last_weight_gradient_end_s;
  /// End of every op that hands on a result: F of (virtual stage vs, microbatch mb) at [vs·m + mb],
  /// B (or Bi) at the same index in the second half; backward_end_s reads that half.
  std::vector<double> op_end_s;
  double backward_end_s(int virtual_stage, int microbatch, int microbatches) const {
    return op_end_s[op_end_s.size() / 2 + static_cast<size_t>(virtual_stage) * microbatches + microbatch];
  }
};

/// Times a table: each stage runs its ops in order, each op as soon as its stage is free and its
/// inputs have arrived. Throws std::invalid_argument when the table deadlocks.
Simulation simulate(const ScheduleTable& table, const OpCosts& costs, bool record_events = true);

/// Whether `kind` ends the hold of a chunk-microbatch's activations: its backward B, or under a split
/// backward (zb-h1) its weight-gradient pass W, which still needs every GEMM's input and output gradient
/// (Qi et al. 2023, Table 1: 32·sbh of a layer's 34·sbh + 5·as²b stay until W; counted whole here).
constexpr bool releases_activations(OpKind kind) { return kind == OpKind::backward || kind == OpKind::backward_weight; }

/// Peak number of chunk-microbatches with activations held on a stage (from F until its B or W).
int peak_in_flight(const ScheduleTable& table, int stage);

/// A measured step's events on one clock. Each rank times its ops from its own step start, and the
/// ranks start a step at different moments (a later stage leaves the last step's optimizer later),
/// so stage s+1 could seem to run F(m) before stage s finished it. Shifts each stage's events by
/// the least offset at which every pipeline dependency holds (F(m) of virtual stage v after F(m) of
/// v-1 ends, B or Bi of v after v+1's ends), the first stage fixed: the tightest alignment the
/// events themselves prove, without synchronised clocks (across nodes they are not). Stages with no
/// event in common are left as they are; so is everything when the dependencies contradict each
/// other (not one step's events).
void align_stage_clocks(std::vector<TimelineEvent>& events, int pp);

}  // namespace tessera::planner
