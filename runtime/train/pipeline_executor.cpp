// The schedule table, executed.
#include "runtime/train/pipeline_executor.hpp"

#include <map>
#include <stdexcept>

#include <torch/torch.h>

namespace tessera::runtime {

namespace {

struct InFlight {
  at::Tensor input;   // received activation (requires grad) or undefined on the first virtual stage
  at::Tensor output;  // chunk output, or the scaled loss on the last virtual stage
};

}  // namespace

bool needs_sends_that_start_at_once(const planner::ScheduleTable& table) {
  return table.pp > 1 && table.schedule == spec::Schedule::interleaved && table.microbatches > table.pp;
}

PipelineExecutor::PipelineExecutor(const Transformer& model, ParallelState& state, planner::ScheduleTable table,
                                   std::vector<int64_t> activation_shape, at::TensorOptions activation_options)
    : model_(model), state_(state), table_(std::move(table)), activation_shape_(std::move(activation_shape)),
      activation_options_(activation_options), timer_(make_op_timer(activation_options.device())) {
  // Refused up front instead of every stage hanging until the group's timeout; the directed links
  // (the default on CUDA) start every send at once.
  if (state_.pp > 1 && state_.pp_group->holds_sends() && needs_sends_that_start_at_once(table_))
    throw std::invalid_argument("the interleaved schedule with " + std::to_string(table_.microbatches) +
                                " microbatches over pp " + std::to_string(table_.pp) +
                                " needs sends that start at once: use --pipeline-links directed (the default on "
                                "CUDA), or microbatches = pp");
}

int PipelineExecutor::tag(int32_t microbatch, int64_t to_virtual_stage, bool gradient) const {
  const int64_t virtual_stages = state_.pp * state_.vpp;
  return static_cast<int>((microbatch * virtual_stages + to_virtual_stage) * 2 + (gradient ? 1 : 0));
}

PipelineResult PipelineExecutor::run(const std::vector<Microbatch>& microbatches) {
  PipelineResult result;
  const int64_t last_virtual = state_.pp * state_.vpp - 1;
  const int64_t pp = state_.pp;
  Communicator& pp_group = *state_.pp_group;
  const double scale = 1.0 / static_cast<double>(microbatches.size());
  std::map<std::pair<int32_t, int32_t>, InFlight> in_flight;  // (microbatch, chunk)
  const at::Device device = activation_options_.device();
  std::vector<std::pair<int, int>> marks;  // (start, end) timer marks of each op
  timer_->begin_step();

  const auto& stage_ops = table_.stages.at(state_.coord.pp);
  // Whether op i starts with a receive (which posts this stage's queued sends on NCCL).
  auto receives = [&](size_t i) {
    const int64_t v = virtual_stage(stage_ops[i].chunk);
    return stage_ops[i].kind == planner::OpKind::forward ? v > 0 : v != last_virtual;
  };
  for (size_t i = 0; i < stage_ops.size(); ++i) {
    const auto& op = stage_ops[i];
    // The op's marks hold its compute: the start moves past its receive and the end comes before its
    // send (a rank preempted while posting it would otherwise end the op after its peer received).
    int start = timer_->mark();
    int end = -1;
    const int64_t vs = virtual_stage(op.chunk);
    const auto key = std::make_pair(op.microbatch, op.chunk);
    const Microbatch& mb = microbatches.at(op.microbatch);
    if (op.kind == planner::OpKind::forward) {
      InFlight f;
      at::Tensor input = mb.tokens.to(device, /*non_blocking=*/true);
      if (vs > 0) {
        f.input = at::empty(activation_shape_, activation_options_);
        pp_group.recv(f.input, static_cast<int>((vs - 1) % pp), tag(op.microbatch, vs, false));
        start = timer_->mark();
        f.input.requires_grad_(true);
        input = f.input;
      }
      const at::Tensor output = model_.forward(op.chunk, input);
      if (vs == last_virtual) {
        const at::Tensor loss = model_.loss(op.chunk, output, mb.targets.to(device, /*non_blocking=*/true));
        // Summed on the device: reading each loss on the host would wait for the GPU per microbatch.
        result.loss_sum = result.loss_sum.defined() ? result.loss_sum + loss.detach() : loss.detach();
        f.output = loss * scale;
      } else {
        end = timer_->mark();
        pp_group.send(output.detach(), static_cast<int>((vs + 1) % pp), tag(op.microbatch, vs + 1, false));
        f.output = output;
      }
      in_flight[key] = std::move(f);
    } else if (op.kind == planner::OpKind::backward) {
      auto it = in_flight.find(key);
      if (it == in_flight.end()) throw std::logic_error("schedule runs B before F");
      InFlight f = std::move(it->second);
      in_flight.erase(it);
      if (vs == last_virtual) {
        f.output.backward();
      } else {
        at::Tensor grad = at::empty(activation_shape_, activation_options_);
        pp_group.recv(grad, static_cast<int>((vs + 1) % pp), tag(op.microbatch, vs, true));
        start = timer_->mark();
        torch::autograd::backward({f.output}, {grad});
      }
      if (vs > 0) {
        end = timer_->mark();
        pp_group.send(f.input.grad(), static_cast<int>((vs - 1) % pp), tag(op.microbatch, vs - 1, true));
      }
    } else {
      throw std::invalid_argument("tessera-train executes F and B operations; zb-h1's split backward is not supported");
    }
    marks.emplace_back(start, end >= 0 ? end : timer_->mark());
    // NCCL holds sends until this stage's next receive: when the next op receives nothing (stage 0's
    // forwards, the last stage's backwards), start them now, or the peer would wait for them until
    // then (GPipe's stage 1 idle until stage 0 ran every forward; 1F1B's warm-up serialised).
    if (i + 1 < stage_ops.size() && !receives(i + 1)) pp_group.post_sends();
  }
  pp_group.wait_sends();
  const std::vector<double> seconds = timer_->seconds();
  for (size_t i = 0; i < marks.size(); ++i)
    result.timeline.push_back({stage_ops[i], seconds.at(marks[i].first), seconds.at(marks[i].second)});
  if (!result.timeline.empty()) {
    double busy_s = 0;
    for (const auto& m : result.timeline) busy_s += m.end_s - m.start_s;
    const double span_s = result.timeline.back().end_s - result.timeline.front().start_s;
    result.bubble = span_s > 0 ? std::max(0.0, 1.0 - busy_s / span_s) : 0.0;
  }
  return result;
}

}  // namespace tessera::runtime
