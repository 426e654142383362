// Pipeline schedule tables (GPipe, 1F1B, Megatron's interleaved 1F1B, ZB-H1) and the dependency-driven
// simulator that times them. The 1F1B family follows Megatron-core's schedules.py; ZB-H1 follows the
// handcrafted schedule of Qi et al. 2023, "Zero Bubble Pipeline Parallelism" (PyTorch's ZB1P with one chunk).
#include "planner/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

namespace tessera::planner {

namespace {

std::string n(int64_t value) { return std::to_string(value); }

void check_shape(spec::Schedule schedule, int pp, int vpp, int microbatches) {
  const std::string name(spec::to_string(schedule));
  if (pp < 1) throw std::invalid_argument(name + " schedule needs pp >= 1, got " + n(pp));
  if (microbatches < 1) throw std::invalid_argument(name + " schedule needs microbatches >= 1, got " + n(microbatches));
  if (schedule != spec::Schedule::interleaved) {
    if (vpp != 1)
      throw std::invalid_argument(name + " schedule needs vpp = 1 (only interleaved has virtual stages), got " +
                                  n(vpp));
    return;
  }
  if (vpp < 2) throw std::invalid_argument("interleaved schedule needs vpp >= 2, got " + n(vpp));
  if (pp < 2) throw std::invalid_argument("interleaved schedule needs pp >= 2, got " + n(pp));
  if (microbatches % pp != 0)
    throw std::invalid_argument("interleaved schedule needs microbatches (" + n(microbatches) +
                                ") to be a multiple of pp (" + n(pp) + ")");
}

/// GPipe: every forward, then every backward, both in microbatch order.
std::vector<PipelineOp> gpipe_stage(int microbatches) {
  std::vector<PipelineOp> ops;
  ops.reserve(2 * static_cast<size_t>(microbatches));
  for (int mb = 0; mb < microbatches; ++mb) ops.push_back({OpKind::forward, mb, 0});
  for (int mb = 0; mb < microbatches; ++mb) ops.push_back({OpKind::backward, mb, 0});
  return ops;
}

/// The k-th forward and k-th backward of Megatron's 1F1B family, the same sequence on every rank: the k-th
/// forward runs chunk (k / pp) % vpp, the k-th backward chunk vpp - 1 - (k / pp) % vpp, both on microbatch
/// (k / (pp * vpp)) * pp + k % pp. With vpp = 1 both are simply microbatch k.
struct ChunkOrder {
  std::vector<PipelineOp> forwards, backwards;
};
ChunkOrder chunk_order(int pp, int vpp, int microbatches) {
  const int total = microbatches * vpp;
  ChunkOrder order;
  order.forwards.reserve(total);
  order.backwards.reserve(total);
  for (int k = 0; k < total; ++k) {
    const int microbatch = (k / (pp * vpp)) * pp + k % pp, step = (k / pp) % vpp;
    order.forwards.push_back({OpKind::forward, microbatch, step});
    order.backwards.push_back({OpKind::backward, microbatch, vpp - 1 - step});
  }
  return order;
}

/// One rank of Megatron's 1F1B: `warmup` forwards, then alternating F/B, then the remaining B's.
std::vector<PipelineOp> one_f_one_b_stage(const ChunkOrder& order, int warmup) {
  const int total = static_cast<int>(order.forwards.size());
  std::vector<PipelineOp> ops;
  ops.reserve(2 * static_cast<size_t>(total));
  ops.insert(ops.end(), order.forwards.begin(), order.forwards.begin() + warmup);
  for (int k = 0; k < total - warmup; ++k) {
    ops.push_back(order.forwards[warmup + k]);
    ops.push_back(order.backwards[k]);
  }
  ops.insert(ops.end(), order.backwards.begin() + (total - warmup), order.backwards.end());
  return ops;
}

/// ZB-H1 on one stage: 1F1B's warm-up of min(pp - stage - 1, m) forwards and F/Bi alternation, with the
/// weight gradients held back: the k-th Bi is followed by the oldest pending W only once k >= stage, and the
/// W's still pending go last. Stage s thus keeps at most pp - s microbatches between F and Bi and at most
/// pp between F and W (1F1B's peak of pp on stage 0), while the held-back W's fill the cool-down bubbles.
std::vector<PipelineOp> zb_h1_stage(int pp, int stage, int microbatches) {
  const int warmup = std::min(pp - stage - 1, microbatches);
  std::vector<PipelineOp> ops;
  ops.reserve(3 * static_cast<size_t>(microbatches));
  int weight_grads = 0;
  auto input_grad = [&](int k) {
    ops.push_back({OpKind::backward_input, k, 0});
    if (k >= stage) ops.push_back({OpKind::backward_weight, weight_grads++, 0});
  };
  for (int k = 0; k < warmup; ++k) ops.push_back({OpKind::forward, k, 0});
  for (int k = 0; k < microbatches - warmup; ++k) {
    ops.push_back({OpKind::forward, warmup + k, 0});
    input_grad(k);
  }
  for (int k = microbatches - warmup; k < microbatches; ++k) input_grad(k);
  while (weight_grads < microbatches) ops.push_back({OpKind::backward_weight, weight_grads++, 0});
  return ops;
}

}  // namespace

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::forward: return "F";
    case OpKind::backward: return "B";
    case OpKind::backward_input: return "Bi";
    case OpKind::backward_weight: return "W";
  }
  return "?";
}

ScheduleTable make_schedule(spec::Schedule schedule, int pp, int vpp, int microbatches) {
  check_shape(schedule, pp, vpp, microbatches);
  ScheduleTable table;
  table.schedule = schedule;
  table.pp = pp;
  table.vpp = vpp;
  table.microbatches = microbatches;
  table.stages.resize(pp);
  switch (schedule) {
    case spec::Schedule::gpipe:
      for (auto& ops : table.stages) ops = gpipe_stage(microbatches);
      break;
    case spec::Schedule::one_f_one_b:
    case spec::Schedule::interleaved: {
      const ChunkOrder order = chunk_order(pp, vpp, microbatches);
      for (int s = 0; s < pp; ++s) {
        const int warmup = schedule == spec::Schedule::one_f_one_b
                               ? std::min(pp - s - 1, microbatches)
                               : std::min((pp - s - 1) * 2 + (vpp - 1) * pp, microbatches * vpp);
        table.stages[s] = one_f_one_b_stage(order, warmup);
      }
      break;
    }
    case spec::Schedule::zb_h1:
      for (int s = 0; s < pp; ++s) table.stages[s] = zb_h1_stage(pp, s, microbatches);
      break;
  }
  return table;
}

OpCosts OpCosts::uniform(int virtual_stages, double forward_s, double backward_s, double p2p_s) {
  if (virtual_stages < 1)
    throw std::invalid_argument("OpCosts::uniform needs virtual_stages >= 1, got " + n(virtual_stages));
  const auto count = static_cast<size_t>(virtual_stages);
  OpCosts costs;
  costs.forward_s.assign(count, forward_s);
  costs.backward_s.assign(count, backward_s);
  costs.backward_input_s.assign(count, backward_s / 2);
  costs.backward_weight_s.assign(count, backward_s / 2);
  costs.p2p_s = p2p_s;
  return costs;
}

int peak_in_flight(const ScheduleTable& table, int stage) {
  if (stage < 0 || stage >= static_cast<int>(table.stages.size()))
    throw std::invalid_argument("peak_in_flight: stage " + n(stage) + " outside 0.." +
                                n(static_cast<int64_t>(table.stages.size()) - 1));
  int held = 0, peak = 0;
  for (const auto& op : table.stages[stage]) {
    if (op.kind == OpKind::forward)
      peak = std::max(peak, ++held);
    else if (releases_activations(op.kind))
      --held;
  }
  return peak;
}

Simulation simulate(const ScheduleTable& table, const OpCosts& costs, bool record_events) {
  const int pp = table.pp, vpp = table.vpp, m = table.microbatches;
  if (pp < 1 || vpp < 1 || m < 1)
    throw std::invalid_argument("simulate needs pp, vpp and microbatches >= 1, got " + n(pp) + ", " + n(vpp) + ", " +
                                n(m));
  if (static_cast<int>(table.stages.size()) != pp)
    throw std::invalid_argument("simulate: table has " + n(static_cast<int64_t>(table.stages.size())) +
                                " stages for pp=" + n(pp));
  const int virtual_stages = pp * vpp;
  // Cost vector per OpKind; a kind without a finite cost >= 0 per virtual stage is rejected when an op of
  // that kind shows up, so a table without W needs no W costs.
  const std::vector<double>* cost_of[4] = {&costs.forward_s, &costs.backward_s, &costs.backward_input_s,
                                           &costs.backward_weight_s};
  bool cost_ok[4];
  for (int k = 0; k < 4; ++k) {
    const auto& v = *cost_of[k];
    cost_ok[k] =
        static_cast<int>(v.size()) >= virtual_stages &&
        std::all_of(v.begin(), v.begin() + virtual_stages, [](double c) { return std::isfinite(c) && c >= 0; });
  }
  if (!std::isfinite(costs.p2p_s) || costs.p2p_s < 0)
    throw std::invalid_argument("simulate needs a finite p2p_s >= 0, got " + std::to_string(costs.p2p_s));

  // Finish time of every F (first half) and B/Bi (second half), at [half + vs * m + mb]; -1 = not run yet.
  const auto cells = static_cast<ptrdiff_t>(virtual_stages) * m;
  std::vector<double> end_s(2 * static_cast<size_t>(cells), -1.0);
  double* const ends = end_s.data();

  struct StageState {
    size_t next_op = 0;         ///< first op not run yet
    ptrdiff_t waiting_on = -1;  ///< index into end_s of the result it is blocked on
    double free_s = 0, busy_s = 0;
    int held = 0, peak = 0;
    size_t event_offset = 0;
  };
  std::vector<StageState> state(pp);
  size_t total_ops = 0;
  for (int s = 0; s < pp; ++s) {
    state[s].event_offset = total_ops;
    total_ops += table.stages[s].size();
  }
  Simulation sim;
  if (record_events) sim.events.resize(total_ops);
  sim.last_weight_gradient_s.assign(virtual_stages, 0.0);
  sim.last_weight_gradient_end_s.assign(virtual_stages, 0.0);
  sim.first_forward_end_s.assign(virtual_stages, -1.0);

  // Worklist of stages that can advance. A stage runs until an input is missing and records which one;
  // the stage that produces exactly that result (the previous virtual stage's F or the next one's B/Bi,
  // both on a neighbouring stage) pushes it back. A stage waiting on its own later op never returns.
  std::vector<int> worklist(pp);
  for (int s = 0; s < pp; ++s) worklist[s] = pp - 1 - s;  // pop stage 0 first
  const double p2p_s = costs.p2p_s;
  const int last_vs = virtual_stages - 1;
  const double* cost_data[4];
  for (int k = 0; k < 4; ++k) cost_data[k] = cost_of[k]->data();

  while (!worklist.empty()) {
    const int s = worklist.back();
    worklist.pop_back();
    StageState& st = state[s];
    const PipelineOp* const ops = table.stages[s].data();
    const size_t count = table.stages[s].size();
    const int next_stage = s + 1 == pp ? 0 : s + 1, previous_stage = s == 0 ? pp - 1 : s - 1;
    size_t i = st.next_op;
    double free_s = st.free_s, busy_s = st.busy_s;
    int held = st.held, peak = st.peak;
    for (; i < count; ++i) {
      const PipelineOp& op = ops[i];
      const auto kind = static_cast<int>(op.kind);
      if (static_cast<uint32_t>(op.microbatch) >= static_cast<uint32_t>(m) ||
          static_cast<uint32_t>(op.chunk) >= static_cast<uint32_t>(vpp))
        throw std::invalid_argument("simulate: stage " + n(s) + " op " + n(static_cast<int64_t>(i)) + " (" +
                                    std::string(op_kind_name(op.kind)) + " microbatch " + n(op.microbatch) + " chunk " +
                                    n(op.chunk) + ") is outside microbatches=" + n(m) + ", vpp=" + n(vpp));
      if (!cost_ok[kind])
        throw std::invalid_argument("simulate: costs for " + std::string(op_kind_name(op.kind)) +
                                    " need a finite value >= 0 for each of the " + n(virtual_stages) +
                                    " virtual stages");
      const int vs = op.chunk * pp + s;
      const ptrdiff_t cell = static_cast<ptrdiff_t>(vs) * m + op.microbatch;
      ptrdiff_t dep = -1, result = -1;  // indices into end_s
      double delay_s = 0;
      int wake = -1;
      if (op.kind == OpKind::forward) {
        if (vs > 0) {
          dep = cell - m;
          delay_s = p2p_s;
        }
        result = cell;
        if (vs < last_vs) wake = next_stage;
      } else if (op.kind == OpKind::backward_weight) {
        dep = cells + cell;
      } else {
        if (vs == last_vs) {
          dep = cell;
        } else {
          dep = cells + cell + m;
          delay_s = p2p_s;
        }
        result = cells + cell;
        if (vs > 0) wake = previous_stage;
      }
      double ready_s = 0;
      if (dep >= 0) {
        if (ends[dep] < 0) {
          st.waiting_on = dep;
          break;
        }
        ready_s = ends[dep] + delay_s;
      }
      if (op.kind == OpKind::forward)
        peak = std::max(peak, ++held);
      else if (releases_activations(op.kind))
        --held;
      const double cost_s = cost_data[kind][vs];
      const double start_s = std::max(free_s, ready_s);
      free_s = start_s + cost_s;
      busy_s += cost_s;
      if (record_events) sim.events[st.event_offset + i] = {s, op, start_s, free_s};
      if (op.kind == OpKind::backward || op.kind == OpKind::backward_weight) {
        sim.last_weight_gradient_s[vs] = start_s;
        sim.last_weight_gradient_end_s[vs] = free_s;
      }
      if (op.kind == OpKind::forward && sim.first_forward_end_s[vs] < 0) sim.first_forward_end_s[vs] = free_s;
      if (result >= 0) {
        ends[result] = free_s;
        if (wake >= 0 && state[wake].waiting_on == result) {
          state[wake].waiting_on = -1;
          worklist.push_back(wake);
        }
      }
    }
    st.next_op = i;
    st.free_s = free_s;
    st.busy_s = busy_s;
    st.held = held;
    st.peak = peak;
  }

  sim.busy_s.resize(pp);
  sim.peak_in_flight.resize(pp);
  for (int s = 0; s < pp; ++s) {
    const StageState& st = state[s];
    if (st.next_op < table.stages[s].size()) {
      const PipelineOp& op = table.stages[s][st.next_op];
      throw std::invalid_argument("schedule deadlocks: stage " + n(s) + " waits forever at op " +
                                  n(static_cast<int64_t>(st.next_op)) + " (" + std::string(op_kind_name(op.kind)) +
                                  " microbatch " + n(op.microbatch) + " chunk " + n(op.chunk) + ")");
    }
    sim.busy_s[s] = st.busy_s;
    sim.peak_in_flight[s] = st.peak;
    sim.makespan_s = std::max(sim.makespan_s, st.free_s);
  }
  const double busiest_s = *std::max_element(sim.busy_s.begin(), sim.busy_s.end());
  sim.bubble_fraction = sim.makespan_s > 0 ? (sim.makespan_s - busiest_s) / sim.makespan_s : 0.0;
  sim.op_end_s = std::move(end_s);
  return sim;
}

void align_stage_clocks(std::vector<TimelineEvent>& events, int pp) {
  if (pp <= 1 || events.empty()) return;
  // Each op by (kind, microbatch, virtual stage); a backward split into Bi and W passes its gradient on at Bi.
  auto is_backward = [](OpKind k) { return k == OpKind::backward || k == OpKind::backward_input; };
  std::map<std::tuple<bool, int32_t, int64_t>, const TimelineEvent*> by_op;
  for (const auto& e : events) {
    if (e.stage < 0 || e.stage >= pp || e.op.kind == OpKind::backward_weight) continue;
    by_op[{is_backward(e.op.kind), e.op.microbatch, int64_t{e.op.chunk} * pp + e.stage}] = &e;
  }
  // Difference constraints offset[to] >= offset[from] + (end in from - start in to), one per edge
  // between stages; the least offsets are the longest paths from stage 0 (Bellman-Ford).
  // Only the largest gap between two stages binds: one edge per ordered pair, whatever the op count.
  std::map<std::pair<int, int>, double> largest_gap_s;
  for (const auto& [key, consumer] : by_op) {
    const auto& [backward, microbatch, virtual_stage] = key;
    const auto producer = by_op.find({backward, microbatch, backward ? virtual_stage + 1 : virtual_stage - 1});
    if (producer == by_op.end() || producer->second->stage == consumer->stage) continue;
    const double gap_s = producer->second->end_s - consumer->start_s;
    auto [it, inserted] = largest_gap_s.try_emplace({producer->second->stage, consumer->stage}, gap_s);
    if (!inserted) it->second = std::max(it->second, gap_s);
  }
  struct Edge {
    int from, to;
    double gap_s;
  };
  std::vector<Edge> edges;
  for (const auto& [stages, gap_s] : largest_gap_s) edges.push_back({stages.first, stages.second, gap_s});
  constexpr double kUnset = -std::numeric_limits<double>::infinity();
  std::vector<double> offset_s(static_cast<size_t>(pp), kUnset);
  offset_s[0] = 0;
  bool settled = false;
  for (int round = 0; round <= pp && !settled; ++round) {
    settled = true;
    for (const auto& edge : edges) {
      if (offset_s[edge.from] == kUnset) continue;
      if (const double least = offset_s[edge.from] + edge.gap_s; least > offset_s[edge.to] + 1e-12) {
        offset_s[edge.to] = least;
        settled = false;
      }
    }
  }
  if (!settled) return;  // a cycle that keeps growing: the events contradict each other
  for (auto& e : events) {
    if (e.stage < 0 || e.stage >= pp || offset_s[e.stage] == kUnset) continue;
    e.start_s += offset_s[e.stage];
    e.end_s += offset_s[e.stage];
  }
}

}  // namespace tessera::planner
