// Executes one stage's row of the planner's schedule table (GPipe, 1F1B, interleaved): each F runs a
// chunk on a microbatch whose input comes from the tokens or from the previous virtual stage, each B
// back-propagates the gradient from the loss or from the next virtual stage; activations and
// gradients travel by point-to-point sends over the pp group. Records the measured timeline (host
// clock on the CPU, CUDA events on a GPU).
#pragma once

#include <cstdint>
#include <vector>

#include "planner/schedule.hpp"
#include "runtime/metrics/device_metrics.hpp"
#include "runtime/model/transformer.hpp"
#include "runtime/parallel/parallel_state.hpp"
#include "runtime/train/batches.hpp"

namespace tessera::runtime {

struct MeasuredOp {
  planner::PipelineOp op;
  double start_s = 0, end_s = 0;  ///< from the start of the step
};

/// Whether `table` needs a pp group whose sends start at once (the directed links). Over a group that
/// holds each send until this stage's next receive and then issues them together (NCCL's grouped
/// point-to-point), interleaved 1F1B with more microbatches than pp makes a cycle of such groups
/// (pp=2, vpp=2, m=4: stage 0's group {send G(mb0) to vs1, send A(mb3) to vs1, recv G(mb1) from vs2}
/// needs stage 1's receive of A(mb3), which comes after stage 1's group {send A(mb2) to vs2, recv
/// G(mb0)}, whose send needs stage 0's next group): every stage would wait until the timeout.
/// test_directed_links replays every schedule under those rules and finds exactly these deadlock.
bool needs_sends_that_start_at_once(const planner::ScheduleTable& table);

struct PipelineResult {
  at::Tensor loss_sum;  ///< sum of microbatch losses, fp32 on the device (last stage only; undefined elsewhere)
  std::vector<MeasuredOp> timeline;  ///< compute of each op (from after its receive to its end)
  double bubble = 0;                  ///< 1 - compute / (last op end - first op start)
};

class PipelineExecutor {
 public:
  /// `activation_shape` is what travels between stages: [s (÷ t under SP), b, h] with `activation_options`
  /// (the model's dtype and device). Microbatches may be on the CPU: they are copied to that device.
  PipelineExecutor(const Transformer& model, ParallelState& state, planner::ScheduleTable table,
                   std::vector<int64_t> activation_shape, at::TensorOptions activation_options);

  /// Runs every op of this stage for one step; gradients accumulate into the parameters' .grad,
  /// each microbatch's loss scaled by 1/microbatches.
  PipelineResult run(const std::vector<Microbatch>& microbatches);

 private:
  int64_t virtual_stage(int32_t chunk) const { return chunk * state_.pp + state_.coord.pp; }
  int tag(int32_t microbatch, int64_t to_virtual_stage, bool gradient) const;

  const Transformer& model_;
  ParallelState& state_;
  planner::ScheduleTable table_;
  std::vector<int64_t> activation_shape_;
  at::TensorOptions activation_options_;
  std::unique_ptr<OpTimer> timer_;
};

}  // namespace tessera::runtime
