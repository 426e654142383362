// Pipeline schedule tables (op orders checked by hand against Megatron's rules), the simulator's
// bubble identities and dependency rules, deadlock and shape errors, and the simulator's speed.
#include <QtTest/QtTest>

#include <chrono>
#include <map>
#include <stdexcept>
#include <tuple>

#include "planner/schedule.hpp"

using namespace tessera;
using planner::OpKind;
using planner::PipelineOp;
using spec::Schedule;
using Ops = std::vector<PipelineOp>;

namespace {
PipelineOp F(int mb, int chunk = 0) { return {OpKind::forward, mb, chunk}; }
PipelineOp B(int mb, int chunk = 0) { return {OpKind::backward, mb, chunk}; }
PipelineOp Bi(int mb) { return {OpKind::backward_input, mb, 0}; }
PipelineOp W(int mb) { return {OpKind::backward_weight, mb, 0}; }

/// Most microbatches on a stage between their F and their op of kind `until` (Bi or W).
int peak_until(const Ops& ops, OpKind until) {
  int held = 0, peak = 0;
  for (const auto& op : ops) {
    if (op.kind == OpKind::forward) peak = std::max(peak, ++held);
    if (op.kind == until) --held;
  }
  return peak;
}

double bubble(Schedule schedule, int pp, int vpp, int m, double forward_s, double backward_s) {
  const auto table = planner::make_schedule(schedule, pp, vpp, m);
  return planner::simulate(table, planner::OpCosts::uniform(pp * vpp, forward_s, backward_s), false).bubble_fraction;
}

/// Idle time of the busiest stage: makespan - busy.
double idle_s(const planner::Simulation& sim) {
  return sim.makespan_s - *std::max_element(sim.busy_s.begin(), sim.busy_s.end());
}

/// The message of the std::invalid_argument that `fn` throws, or "" when it does not throw one.
template <typename Fn>
std::string invalid_argument_of(Fn fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}
}  // namespace

namespace QTest {
template <>
char* toString(const PipelineOp& op) {
  const auto text = std::string(planner::op_kind_name(op.kind)) + "(mb " + std::to_string(op.microbatch) + ", chunk " +
                    std::to_string(op.chunk) + ")";
  return qstrdup(text.c_str());
}
}  // namespace QTest

class TestSchedule : public QObject {
  Q_OBJECT
 private slots:
  void everyOpExactlyOnce() {
    struct Shape {
      Schedule schedule;
      int pp, vpp, m;
    };
    std::vector<Shape> shapes;
    for (int pp : {1, 2, 3, 4, 8})
      for (int m : {1, 2, 3, 5, 8, 13}) {
        shapes.push_back({Schedule::gpipe, pp, 1, m});
        shapes.push_back({Schedule::one_f_one_b, pp, 1, m});
        shapes.push_back({Schedule::zb_h1, pp, 1, m});
      }
    for (int pp : {2, 3, 4})
      for (int vpp : {2, 3})
        for (int groups : {1, 2, 3}) shapes.push_back({Schedule::interleaved, pp, vpp, pp * groups});

    for (const auto& shape : shapes) {
      const auto table = planner::make_schedule(shape.schedule, shape.pp, shape.vpp, shape.m);
      const std::string where = std::string(spec::to_string(shape.schedule)) + " pp=" + std::to_string(shape.pp) +
                                " vpp=" + std::to_string(shape.vpp) + " m=" + std::to_string(shape.m);
      QVERIFY2(static_cast<int>(table.stages.size()) == shape.pp, where.c_str());
      const bool split = shape.schedule == Schedule::zb_h1;
      const std::vector<OpKind> kinds =
          split ? std::vector{OpKind::forward, OpKind::backward_input, OpKind::backward_weight}
                : std::vector{OpKind::forward, OpKind::backward};
      for (int s = 0; s < shape.pp; ++s) {
        const auto& ops = table.stages[s];
        std::map<std::tuple<OpKind, int, int>, int> count;
        for (const auto& op : ops) ++count[{op.kind, op.microbatch, op.chunk}];
        QVERIFY2(ops.size() == kinds.size() * shape.m * shape.vpp, where.c_str());
        for (OpKind kind : kinds)
          for (int mb = 0; mb < shape.m; ++mb)
            for (int c = 0; c < shape.vpp; ++c) QVERIFY2((count[{kind, mb, c}] == 1), where.c_str());
        if (split) {  // each W after its own Bi, and the stage ends with all W done (counted above)
          std::vector<bool> input_grad_done(shape.m, false);
          for (const auto& op : ops) {
            if (op.kind == OpKind::backward_input) input_grad_done[op.microbatch] = true;
            if (op.kind == OpKind::backward_weight) QVERIFY2(input_grad_done[op.microbatch], where.c_str());
          }
          QVERIFY2(peak_until(ops, OpKind::backward_weight) <= shape.pp, where.c_str());
        }
      }
      // Every schedule runs to completion, and the simulator's peak agrees with peak_in_flight().
      const auto sim = planner::simulate(table, planner::OpCosts::uniform(shape.pp * shape.vpp, 1.0, 2.0, 0.1));
      for (int s = 0; s < shape.pp; ++s) QCOMPARE(sim.peak_in_flight[s], planner::peak_in_flight(table, s));
    }
  }

  void oneFOneBByHand() {
    const auto table = planner::make_schedule(Schedule::one_f_one_b, 4, 1, 6);
    // Stage 0: 3 warm-up forwards, 3 F/B pairs, 3 cool-down backwards.
    QCOMPARE(table.stages[0], (Ops{F(0), F(1), F(2), F(3), B(0), F(4), B(1), F(5), B(2), B(3), B(4), B(5)}));
    // Stage 2: 1 warm-up forward.
    QCOMPARE(table.stages[2], (Ops{F(0), F(1), B(0), F(2), B(1), F(3), B(2), F(4), B(3), F(5), B(4), B(5)}));
    // Last stage: no warm-up, strict alternation.
    QCOMPARE(table.stages[3], (Ops{F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3), F(4), B(4), F(5), B(5)}));
    // More stages than microbatches: stage 0 of pp=4, m=2 warms up with both and never alternates.
    QCOMPARE(planner::make_schedule(Schedule::one_f_one_b, 4, 1, 2).stages[0], (Ops{F(0), F(1), B(0), B(1)}));
  }

  void gpipeByHand() {
    const auto table = planner::make_schedule(Schedule::gpipe, 3, 1, 3);
    for (const auto& ops : table.stages) QCOMPARE(ops, (Ops{F(0), F(1), F(2), B(0), B(1), B(2)}));
  }

  void interleavedByHand() {
    // pp=2, vpp=2, m=4 on rank 0: warm-up (2-0-1)*2 + (2-1)*2 = 4 of the 8 chunk-forwards.
    // k-th F: chunk (k/2)%2, microbatch (k/4)*2 + k%2; k-th B: chunk 1 - (k/2)%2, same microbatch.
    const auto table = planner::make_schedule(Schedule::interleaved, 2, 2, 4);
    QCOMPARE(table.stages[0], (Ops{F(0, 0), F(1, 0), F(0, 1), F(1, 1),                                      // warm-up
                                   F(2, 0), B(0, 1), F(3, 0), B(1, 1), F(2, 1), B(0, 0), F(3, 1), B(1, 0),  // 1F1B
                                   B(2, 1), B(3, 1), B(2, 0), B(3, 0)}));                                   // cool-down
    // Rank 1 warms up with (vpp-1)*pp = 2 forwards.
    QCOMPARE(table.stages[1], (Ops{F(0, 0), F(1, 0), F(0, 1), B(0, 1), F(1, 1), B(1, 1), F(2, 0), B(0, 0), F(3, 0),
                                   B(1, 0), F(2, 1), B(2, 1), F(3, 1), B(3, 1), B(2, 0), B(3, 0)}));
  }

  void zeroBubbleH1ByHand() {
    const auto table = planner::make_schedule(Schedule::zb_h1, 4, 1, 6);
    // Stage 0: 1F1B's order with each W right after its Bi.
    QCOMPARE(table.stages[0], (Ops{F(0), F(1), F(2), F(3), Bi(0), W(0), F(4), Bi(1), W(1), F(5), Bi(2), W(2), Bi(3),
                                   W(3), Bi(4), W(4), Bi(5), W(5)}));
    // Last stage: no warm-up; the first 3 W's are held back and fill the end.
    QCOMPARE(table.stages[3], (Ops{F(0), Bi(0), F(1), Bi(1), F(2), Bi(2), F(3), Bi(3), W(0), F(4), Bi(4), W(1), F(5),
                                   Bi(5), W(2), W(3), W(4), W(5)}));
  }

  void bubbleIdentities() {
    // 1F1B with equal per-stage costs: bubble = (p-1)/(m+p-1), whatever F and B are.
    const double b8 = bubble(Schedule::one_f_one_b, 16, 1, 8, 1.0, 2.0);
    const double b32 = bubble(Schedule::one_f_one_b, 16, 1, 32, 1.0, 2.0);
    qInfo("1F1B p=16: bubble m=8 %.4f (speed-up %.2f), m=32 %.4f (speed-up %.2f)", b8, 16 * (1 - b8), b32,
          16 * (1 - b32));
    QVERIFY(std::abs(b8 - 15.0 / 23.0) < 1e-12);
    QVERIFY(std::abs(b32 - 15.0 / 47.0) < 1e-12);
    QVERIFY(std::abs(16 * (1 - b8) - 5.565) < 1e-3);
    QVERIFY(std::abs(16 * (1 - b32) - 10.894) < 1e-3);
    QVERIFY(std::abs(bubble(Schedule::one_f_one_b, 4, 1, 8, 1.0, 1.0) - 3.0 / 11.0) < 1e-12);
    // GPipe has the same bubble; only its activation memory differs.
    QVERIFY(std::abs(bubble(Schedule::gpipe, 16, 1, 8, 1.0, 2.0) - b8) < 1e-12);
    QVERIFY(std::abs(bubble(Schedule::gpipe, 16, 1, 32, 1.0, 2.0) - b32) < 1e-12);
    // Interleaved with v chunks (each 1/v of the stage's work): (p-1)/(v*m+p-1).
    for (auto [p, v, m] : {std::tuple{4, 2, 8}, std::tuple{4, 4, 8}, std::tuple{8, 2, 16}, std::tuple{16, 2, 32}}) {
      const double measured = bubble(Schedule::interleaved, p, v, m, 1.0 / v, 2.0 / v);
      const double expected = (p - 1.0) / (v * m + p - 1.0);
      qInfo("interleaved p=%d v=%d m=%d: bubble %.4f, (p-1)/(v*m+p-1) = %.4f", p, v, m, measured, expected);
      QVERIFY2(std::abs(measured - expected) < 1e-12, std::to_string(measured).c_str());
    }
  }

  void zeroBubbleH1CutsTheBubbleToAThird() {
    for (auto [p, m] : {std::pair{4, 8}, std::pair{8, 24}, std::pair{16, 64}}) {
      // F = Bi = W = 1 against 1F1B's F = 1, B = 2: the same work per microbatch.
      const auto costs = planner::OpCosts::uniform(p, 1.0, 2.0);
      const auto zb = planner::simulate(planner::make_schedule(Schedule::zb_h1, p, 1, m), costs, false);
      const auto base = planner::simulate(planner::make_schedule(Schedule::one_f_one_b, p, 1, m), costs, false);
      const double ratio = idle_s(zb) / idle_s(base);
      qInfo("zb-h1 p=%d m=%d: idle %.1f vs 1F1B %.1f (ratio %.3f), bubble %.4f vs %.4f", p, m, idle_s(zb), idle_s(base),
            ratio, zb.bubble_fraction, base.bubble_fraction);
      QCOMPARE(idle_s(base), 3.0 * (p - 1));  // (p-1)(F+Bi+W)
      QVERIFY2(ratio >= 0.25 && ratio <= 0.42, std::to_string(ratio).c_str());
      // 1F1B's activation bound: stage i holds at most p-i microbatches between F and Bi, and the held-back
      // W's keep p (1F1B's peak, on stage 0) between F and W on every stage, which is what stays held.
      const auto table = planner::make_schedule(Schedule::zb_h1, p, 1, m);
      for (int s = 0; s < p; ++s) {
        QCOMPARE(peak_until(table.stages[s], OpKind::backward_input), std::min(p - s, m));
        QCOMPARE(zb.peak_in_flight[s], std::min(p, m));
        QCOMPARE(planner::peak_in_flight(table, s), std::min(p, m));
      }
    }
    // Fewer microbatches than stages: each stage holds all of them until their W's.
    for (auto [p, m] : {std::pair{4, 2}, std::pair{8, 3}}) {
      const auto table = planner::make_schedule(Schedule::zb_h1, p, 1, m);
      for (int s = 0; s < p; ++s) QCOMPARE(planner::peak_in_flight(table, s), m);
    }
  }

  void peakInFlight() {
    const int p = 8;
    for (int m : {3, 8, 20}) {
      const auto f1b = planner::make_schedule(Schedule::one_f_one_b, p, 1, m);
      const auto gpipe = planner::make_schedule(Schedule::gpipe, p, 1, m);
      for (int s = 0; s < p; ++s) {
        QCOMPARE(planner::peak_in_flight(f1b, s), std::min(p - s, m));
        QCOMPARE(planner::peak_in_flight(gpipe, s), m);
      }
    }
    for (auto [pp, v, m] : {std::tuple{2, 2, 4}, std::tuple{4, 2, 8}, std::tuple{4, 3, 4}, std::tuple{8, 2, 8}}) {
      const auto table = planner::make_schedule(Schedule::interleaved, pp, v, m);
      QCOMPARE(planner::peak_in_flight(table, 0), std::min((pp - 1) * 2 + (v - 1) * pp + 1, m * v));
    }
    QVERIFY(!invalid_argument_of([] {
               planner::peak_in_flight(planner::make_schedule(Schedule::gpipe, 2, 1, 2), 2);
             }).empty());
  }

  void simulationRespectsDependencies() {
    for (auto [schedule, pp, vpp, m] :
         {std::tuple{Schedule::one_f_one_b, 4, 1, 7}, std::tuple{Schedule::interleaved, 3, 2, 6},
          std::tuple{Schedule::zb_h1, 4, 1, 9}, std::tuple{Schedule::gpipe, 3, 1, 4}}) {
      const auto table = planner::make_schedule(schedule, pp, vpp, m);
      auto costs = planner::OpCosts::uniform(pp * vpp, 1.0, 2.0, 0.25);
      for (int vs = 0; vs < pp * vpp; ++vs) costs.forward_s[vs] += 0.1 * vs;  // unequal stages
      const auto sim = planner::simulate(table, costs);
      const int last = pp * vpp - 1;
      std::map<std::tuple<OpKind, int, int>, const planner::TimelineEvent*> at;  // (kind, mb, vs)
      QCOMPARE(sim.events.size(), static_cast<size_t>(m * vpp * pp * (schedule == Schedule::zb_h1 ? 3 : 2)));
      for (const auto& e : sim.events) at[{e.op.kind, e.op.microbatch, e.op.chunk * pp + e.stage}] = &e;
      const double eps = 1e-12;
      double makespan_s = 0;
      std::vector<double> ready_s;  // per event: when its input has arrived
      for (const auto& e : sim.events) {
        const int vs = e.op.chunk * pp + e.stage, mb = e.op.microbatch;
        makespan_s = std::max(makespan_s, e.end_s);
        double ready = 0;
        switch (e.op.kind) {
          case OpKind::forward:
            QVERIFY(std::abs(e.end_s - e.start_s - costs.forward_s[vs]) < eps);
            if (vs > 0) ready = at.at({OpKind::forward, mb, vs - 1})->end_s + costs.p2p_s;
            break;
          case OpKind::backward:
          case OpKind::backward_input:
            ready = vs == last ? at.at({OpKind::forward, mb, vs})->end_s
                               : at.at({e.op.kind, mb, vs + 1})->end_s + costs.p2p_s;
            break;
          case OpKind::backward_weight:
            ready = at.at({OpKind::backward_input, mb, vs})->end_s;
            break;
        }
        QVERIFY(e.start_s >= ready - eps);
        ready_s.push_back(ready);
      }
      QVERIFY(std::abs(makespan_s - sim.makespan_s) < eps);
      // Each virtual stage's first forward end and last weight-gradient op start (B, or W when
      // split), read from the events: where the data-parallel gather of that chunk must have ended
      // and where its reduction may start.
      std::vector<double> first_forward(pp * vpp, 1e300), last_gradient(pp * vpp, -1.0);
      for (const auto& e : sim.events) {
        const int vs = e.op.chunk * pp + e.stage;
        if (e.op.kind == OpKind::forward) first_forward[vs] = std::min(first_forward[vs], e.end_s);
        if (e.op.kind == OpKind::backward || e.op.kind == OpKind::backward_weight)
          last_gradient[vs] = std::max(last_gradient[vs], e.start_s);
      }
      QCOMPARE(sim.first_forward_end_s, first_forward);
      QCOMPARE(sim.last_weight_gradient_s, last_gradient);
      // Events come stage by stage in table order; a stage never runs two ops at once and starts each op as
      // soon as both the stage and the op's input are ready.
      size_t k = 0;
      for (int s = 0; s < pp; ++s) {
        double free_s = 0;
        for (const auto& op : table.stages[s]) {
          const auto& e = sim.events[k];
          QCOMPARE(e.stage, s);
          QCOMPARE(e.op, op);
          QVERIFY(std::abs(e.start_s - std::max(free_s, ready_s[k])) < eps);
          free_s = e.end_s;
          ++k;
        }
      }
      // Without events the timing is the same.
      const auto quiet = planner::simulate(table, costs, false);
      QVERIFY(quiet.events.empty());
      QCOMPARE(quiet.makespan_s, sim.makespan_s);
      QCOMPARE(quiet.busy_s, sim.busy_s);
      QCOMPARE(quiet.first_forward_end_s, sim.first_forward_end_s);
      QCOMPARE(quiet.last_weight_gradient_s, sim.last_weight_gradient_s);
    }
  }

  // Measured events, each stage on a clock of its own: aligned back onto the simulation's one clock
  // (exactly when sends take no time: a stage's first op then starts as its input's producer ends).
  void alignStageClocksRestoresOneClock() {
    for (auto [schedule, pp, vpp, m] :
         {std::tuple{Schedule::one_f_one_b, 4, 1, 7}, std::tuple{Schedule::interleaved, 3, 2, 6},
          std::tuple{Schedule::zb_h1, 4, 1, 9}, std::tuple{Schedule::gpipe, 3, 1, 4}}) {
      auto costs = planner::OpCosts::uniform(pp * vpp, 1.0, 2.0, 0.0);
      for (int vs = 0; vs < pp * vpp; ++vs) costs.forward_s[vs] += 0.1 * vs;
      const auto truth = planner::simulate(planner::make_schedule(schedule, pp, vpp, m), costs).events;
      auto measured = truth;
      for (auto& e : measured) {  // stage s's clock 0.37·s − 0.5 ahead or behind
        e.start_s -= 0.37 * e.stage - 0.5 * (e.stage % 2);
        e.end_s -= 0.37 * e.stage - 0.5 * (e.stage % 2);
      }
      planner::align_stage_clocks(measured, pp);
      for (size_t i = 0; i < truth.size(); ++i) {
        QVERIFY2(std::abs(measured[i].start_s - truth[i].start_s) < 1e-9, QTest::toString(measured[i].start_s));
        QVERIFY(std::abs(measured[i].end_s - truth[i].end_s) < 1e-9);
      }
    }
    // With sends that take time the least offsets still satisfy every dependency, one of them tight.
    const auto truth = planner::simulate(planner::make_schedule(Schedule::one_f_one_b, 2, 1, 4),
                                         planner::OpCosts::uniform(2, 1.0, 2.0, 0.25)).events;
    auto measured = truth;
    for (auto& e : measured)
      if (e.stage == 1) e.start_s -= 5, e.end_s -= 5;
    planner::align_stage_clocks(measured, 2);
    std::map<std::pair<OpKind, int>, std::pair<double, double>> by_op[2];
    for (const auto& e : measured) by_op[e.stage][{e.op.kind, e.op.microbatch}] = {e.start_s, e.end_s};
    double tightest_s = 1e9;
    for (int mb = 0; mb < 4; ++mb) {
      const double forward_gap = by_op[1][{OpKind::forward, mb}].first - by_op[0][{OpKind::forward, mb}].second;
      const double backward_gap = by_op[0][{OpKind::backward, mb}].first - by_op[1][{OpKind::backward, mb}].second;
      QVERIFY(forward_gap > -1e-9 && backward_gap > -1e-9);
      tightest_s = std::min({tightest_s, forward_gap, backward_gap});
    }
    QVERIFY(std::abs(tightest_s) < 1e-9);
    // Events that contradict each other (stage 1's B before stage 0 sent F, and stage 0's B before
    // stage 1's): left as they are.
    std::vector<planner::TimelineEvent> odd = {{0, {OpKind::forward, 0, 0}, 0, 1}, {1, {OpKind::forward, 0, 0}, 0, 1},
                                               {1, {OpKind::backward, 0, 0}, 1, 2}, {0, {OpKind::backward, 0, 0}, 1, 2}};
    const auto before = odd;
    planner::align_stage_clocks(odd, 2);
    for (size_t i = 0; i < odd.size(); ++i) QCOMPARE(odd[i].start_s, before[i].start_s);
  }

  void deadlockDetected() {
    planner::ScheduleTable table;
    table.pp = 2;
    table.microbatches = 1;
    table.stages = {{B(0), F(0)}, {F(0), B(0)}};  // stage 0 needs its own F before the gradient can arrive
    const auto message = invalid_argument_of([&] { planner::simulate(table, planner::OpCosts::uniform(2, 1, 2)); });
    QVERIFY2(message.find("deadlock") != std::string::npos && message.find("stage 0") != std::string::npos,
             message.c_str());
    // A W before its Bi on the same stage waits forever too.
    table.pp = 1;
    table.stages = {{F(0), {OpKind::backward_weight, 0, 0}, {OpKind::backward_input, 0, 0}}};
    QVERIFY(invalid_argument_of([&] {
              planner::simulate(table, planner::OpCosts::uniform(1, 1, 2));
            }).find("deadlock") != std::string::npos);
    // Ops outside the table's shape and missing costs are named.
    table.stages = {{F(1), B(1)}};
    QVERIFY(!invalid_argument_of([&] { planner::simulate(table, planner::OpCosts::uniform(1, 1, 2)); }).empty());
    table.stages = {{F(0), B(0)}};
    auto costs = planner::OpCosts::uniform(1, 1, 2);
    costs.backward_s.clear();
    QVERIFY(invalid_argument_of([&] { planner::simulate(table, costs); }).find("costs for B") != std::string::npos);
  }

  void badShapesThrow() {
    auto message = [](Schedule s, int pp, int vpp, int m) {
      return invalid_argument_of([&] { planner::make_schedule(s, pp, vpp, m); });
    };
    QCOMPARE(message(Schedule::interleaved, 4, 2, 6),
             std::string("interleaved schedule needs microbatches (6) to be a multiple of pp (4)"));
    QCOMPARE(message(Schedule::interleaved, 4, 1, 8), std::string("interleaved schedule needs vpp >= 2, got 1"));
    QCOMPARE(message(Schedule::interleaved, 1, 2, 4), std::string("interleaved schedule needs pp >= 2, got 1"));
    QCOMPARE(message(Schedule::one_f_one_b, 0, 1, 4), std::string("1f1b schedule needs pp >= 1, got 0"));
    QCOMPARE(message(Schedule::gpipe, 2, 1, 0), std::string("gpipe schedule needs microbatches >= 1, got 0"));
    QVERIFY(message(Schedule::zb_h1, 2, 2, 4).find("vpp = 1") != std::string::npos);
    QVERIFY(message(Schedule::one_f_one_b, 2, 2, 4).find("vpp = 1") != std::string::npos);
  }

  void opKindNames() {
    QCOMPARE(planner::op_kind_name(OpKind::forward), std::string_view("F"));
    QCOMPARE(planner::op_kind_name(OpKind::backward), std::string_view("B"));
    QCOMPARE(planner::op_kind_name(OpKind::backward_input), std::string_view("Bi"));
    QCOMPARE(planner::op_kind_name(OpKind::backward_weight), std::string_view("W"));
  }

  void simulationSpeed() {
    const auto table = planner::make_schedule(Schedule::one_f_one_b, 16, 1, 128);
    const auto costs = planner::OpCosts::uniform(16, 1e-3, 2e-3, 1e-5);
    const double ops_per_run = 2.0 * 16 * 128;
    double checksum_s = 0;
    int runs = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed_s = 0;
    while (elapsed_s < 0.3) {
      for (int i = 0; i < 50; ++i, ++runs) checksum_s += planner::simulate(table, costs, false).makespan_s;
      elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    const double ops_per_s = runs * ops_per_run / elapsed_s;
    qInfo("simulate 1F1B pp=16 m=128 without events: %.3g ops/s, %.1f us per simulation (%d runs)", ops_per_s,
          1e6 * elapsed_s / runs, runs);
    QVERIFY(checksum_s > 0);
    QVERIFY2(ops_per_s > 5e6, std::to_string(ops_per_s).c_str());  // generous: ~100x below the target
  }
};

QTEST_APPLESS_MAIN(TestSchedule)
#include "test_schedule.moc"
