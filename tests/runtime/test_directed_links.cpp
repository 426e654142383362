// The pipeline's directed links (runtime/comm/directed_links.hpp), what NCCL's order-matched
// point-to-point runs every schedule with: the links and their creation order; for every schedule
// table, each direction's messages sent in the order the receiver expects them, and no stage waiting
// for a message that is never sent when sends start at once; the wrapper over Gloo groups (four
// in-process ranks in a ring); and tessera-train with --pipeline-links directed giving the same
// losses as through the pp group, including the interleaved schedule with more microbatches than pp
// (the case NCCL's grouped sends would deadlock on).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <QtTest/QtTest>

#include <map>
#include <set>

#include "planner/schedule.hpp"
#include "runtime/comm/directed_links.hpp"
#include "runtime/comm/gloo_world.hpp"
#include "thread_ranks.hpp"
#include "train_runner.hpp"

using namespace tessera;
using namespace tessera::runtime;

namespace {

// One pipeline message: an activation for, or a gradient of, virtual stage `vs` of a microbatch.
struct Message {
  bool gradient;
  int microbatch;
  int64_t vs;
  auto operator<=>(const Message&) const = default;
};
struct P2p {
  bool send;
  int peer;  // stage
  Message message;
};

// What PipelineExecutor::run sends and receives for each op of a stage, in order (the executor's
// rule, restated here as the specification the replay checks): F of virtual stage vs > 0 receives
// its activation from the stage of vs-1; F of every vs but the last sends its output to the stage of
// vs+1; B of every vs but the last receives its output's gradient from vs+1; B of vs > 0 sends its
// input's gradient to vs-1. Virtual stage vs = chunk * pp + stage.
std::vector<P2p> stage_p2p(const planner::ScheduleTable& table, int stage) {
  const int pp = table.pp;
  const int64_t last = static_cast<int64_t>(pp) * table.vpp - 1;
  std::vector<P2p> out;
  for (const auto& op : table.stages.at(stage)) {
    const int64_t vs = static_cast<int64_t>(op.chunk) * pp + stage;
    if (op.kind == planner::OpKind::forward) {
      if (vs > 0) out.push_back({false, static_cast<int>((vs - 1) % pp), {false, op.microbatch, vs}});
      if (vs != last) out.push_back({true, static_cast<int>((vs + 1) % pp), {false, op.microbatch, vs + 1}});
    } else {
      if (vs != last) out.push_back({false, static_cast<int>((vs + 1) % pp), {true, op.microbatch, vs}});
      if (vs > 0) out.push_back({true, static_cast<int>((vs - 1) % pp), {true, op.microbatch, vs - 1}});
    }
  }
  return out;
}

// "" when every direction carries its messages in the order the receiver expects and every stage
// finishes with sends that start at once and receives that wait; else what went wrong.
std::string replay(const planner::ScheduleTable& table) {
  const int pp = table.pp;
  std::vector<std::vector<P2p>> stages;
  for (int s = 0; s < pp; ++s) stages.push_back(stage_p2p(table, s));
  std::map<std::pair<int, int>, std::vector<Message>> sent, expected;  // (from, to)
  for (int s = 0; s < pp; ++s)
    for (const P2p& p : stages[s]) (p.send ? sent[{s, p.peer}] : expected[{p.peer, s}]).push_back(p.message);
  if (sent != expected) return "a direction's sends and receives differ in order or number";
  const auto links = pipeline_links(pp, table.vpp > 1);
  for (const auto& [direction, messages] : sent)
    if (std::find(links.begin(), links.end(), DirectedLink{direction.first, direction.second}) == links.end())
      return "a message from stage " + std::to_string(direction.first) + " to " + std::to_string(direction.second) +
             " has no link";
  // Progress: a stage runs until a receive whose message its sender has not sent yet.
  std::vector<size_t> next(pp, 0);
  std::map<std::pair<int, int>, size_t> sent_so_far, received_so_far;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < pp; ++s)
      while (next[s] < stages[s].size()) {
        const P2p& p = stages[s][next[s]];
        if (p.send) {
          ++sent_so_far[{s, p.peer}];
        } else {
          auto& received = received_so_far[{p.peer, s}];
          if (received >= sent_so_far[{p.peer, s}]) break;
          ++received;
        }
        ++next[s];
        progress = true;
      }
  }
  for (int s = 0; s < pp; ++s)
    if (next[s] < stages[s].size()) return "stage " + std::to_string(s) + " waits for ever";
  return "";
}

void expect_equal(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  if (!at::equal(got, want)) throw std::runtime_error(what + ": got sum " + std::to_string(got.sum().item<double>()));
}

}  // namespace

class TestDirectedLinks : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { at::set_num_threads(1); }

  void linksBetweenNeighboursInOneOrder() {
    using L = DirectedLink;
    QCOMPARE(pipeline_links(1, true), std::vector<L>{});
    QCOMPARE(pipeline_links(2, false), (std::vector<L>{{0, 1}, {1, 0}}));
    QCOMPARE(pipeline_links(2, true), (std::vector<L>{{0, 1}, {1, 0}}));  // the ring adds nothing for two
    QCOMPARE(pipeline_links(3, false), (std::vector<L>{{0, 1}, {1, 0}, {1, 2}, {2, 1}}));
    QCOMPARE(pipeline_links(4, true), (std::vector<L>{{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2}, {3, 0}, {0, 3}}));
  }

  void everyScheduleRunsOnDirectedLinks() {
    int tables = 0;
    for (int pp : {2, 3, 4, 8})
      for (int m : {1, 2, 3, 4, 8, 16}) {
        for (auto schedule : {spec::Schedule::gpipe, spec::Schedule::one_f_one_b}) {
          const std::string problem = replay(planner::make_schedule(schedule, pp, 1, m));
          QVERIFY2(problem.empty(), qPrintable(QString("%1 pp=%2 m=%3: %4").arg(spec::to_string(schedule).data())
                                                   .arg(pp).arg(m).arg(problem.c_str())));
          ++tables;
        }
        for (int vpp : {2, 3, 4}) {
          if (m % pp != 0) continue;  // the interleaved schedule takes whole rounds of pp microbatches
          const std::string problem = replay(planner::make_schedule(spec::Schedule::interleaved, pp, vpp, m));
          QVERIFY2(problem.empty(),
                   qPrintable(QString("interleaved pp=%1 vpp=%2 m=%3: %4").arg(pp).arg(vpp).arg(m).arg(problem.c_str())));
          ++tables;
        }
      }
    qInfo("%d schedule tables replayed", tables);
  }

  // The replay finds what it is for: a stage that receives before its peer sends, in crossing order.
  void theReplayCatchesCrossedOrders() {
    auto table = planner::make_schedule(spec::Schedule::one_f_one_b, 2, 1, 2);
    auto& last = table.stages.at(1);
    std::swap(last.at(0), last.at(2));  // the last stage runs F(mb1) before F(mb0)
    QVERIFY(!replay(table).empty());
  }

  // Four in-process ranks, one pipeline in a ring over Gloo groups: each sends to both neighbours
  // and receives from both; the group's collectives still go through the group itself.
  void theWrapperRoutesSendsAndReceivesByDirection() {
    const auto failures = tessera::test::run_ranks(4, [](int rank, GlooWorld& world) {
      auto pipeline = with_directed_links(world.make_group("pp0", {0, 1, 2, 3}), /*ring=*/true, at::kCPU,
                                          [&](const std::string& name, const std::vector<int64_t>& members) {
                                            return world.make_group(name, members);
                                          });
      const int next = (rank + 1) % 4, previous = (rank + 3) % 4;
      for (int round = 0; round < 3; ++round) {
        pipeline->send(at::full({5}, 100.0 * round + rank), next, 0);
        pipeline->send(at::full({5}, -100.0 * round - rank), previous, 1);
        at::Tensor from_previous = at::empty({5}), from_next = at::empty({5});
        pipeline->recv(from_previous, previous, 0);
        pipeline->recv(from_next, next, 1);
        expect_equal(from_previous, at::full({5}, 100.0 * round + previous), "from the previous stage");
        expect_equal(from_next, at::full({5}, -100.0 * round - next), "from the next stage");
      }
      pipeline->wait_sends();
      at::Tensor sum = at::full({2}, rank + 1.0);
      pipeline->all_reduce(sum);
      expect_equal(sum, at::full({2}, 10.0), "all_reduce through the group");
      if (pipeline->busy_s() <= 0) throw std::runtime_error("busy_s not counted");
      try {
        pipeline->send(at::ones({1}), (rank + 2) % 4, 0);
        throw std::runtime_error("a send to a stage two away was accepted");
      } catch (const std::logic_error& e) {
        if (std::string(e.what()).find("not a neighbouring stage") == std::string::npos) throw;
      }
    });
    QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
  }

  // tessera-train through directed links (Gloo ones here) against through the pp group: the same
  // losses, for the interleaved schedule with 4 microbatches over pp 2 among others.
  void trainingOnDirectedLinksGivesTheSameLosses_data() {
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<int>("vpp");
    QTest::newRow("interleaved vpp 2, 4 microbatches") << "interleaved" << 2;
    QTest::newRow("1f1b, 4 microbatches") << "1f1b" << 1;
  }
  void trainingOnDirectedLinksGivesTheSameLosses() {
    QFETCH(QString, schedule);
    QFETCH(int, vpp);
    test::Layout layout;
    layout.pp = 2;
    layout.vpp = vpp;
    layout.schedule = schedule.toStdString();
    layout.micro_batch = 1;
    layout.global_batch = 4;
    QTemporaryDir dir;
    const auto group = test::train_synthetic(dir, "group", "tiny-llama", layout, 6, {"--pipeline-links", "group"});
    const auto directed = test::train_synthetic(dir, "directed", "tiny-llama", layout, 6, {"--pipeline-links", "directed"});
    QCOMPARE(group.size(), size_t(6));
    QCOMPARE(directed.size(), size_t(6));
    for (const auto& [step, want] : group) {
      QCOMPARE(directed.at(step).loss, want.loss);
      QCOMPARE(directed.at(step).grad_norm, want.grad_norm);
    }
  }
};

QTEST_APPLESS_MAIN(TestDirectedLinks)
#include "test_directed_links.moc"
