// The pipeline's directed links (runtime/comm/directed_links.hpp), what NCCL's order-matched
// point-to-point runs every schedule with: the links and their creation order; for every schedule
// table, each direction's messages sent in the order the receiver expects them, and no stage waiting
// for a message that is never sent when sends start at once; over a group that holds sends until the
// next receive (NCCL's), exactly the tables PipelineExecutor refuses deadlocking; the wrapper over
// Gloo groups (four in-process ranks in a ring); and tessera-train with --pipeline-links directed giving the same
// losses as through the pp group, including the interleaved schedule with more microbatches than pp
// (the case NCCL's grouped sends would deadlock on).
// moc needs none of these (it reads the test class alone); LibTorch would cost it ~20 s.
#ifndef Q_MOC_RUN
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <QtTest/QtTest>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "planner/schedule.hpp"
#include "runtime/comm/directed_links.hpp"
#include "runtime/comm/gloo_world.hpp"
#include "runtime/train/pipeline_executor.hpp"
#include "thread_ranks.hpp"
#include "train_runner.hpp"
#endif

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

// What PipelineExecutor::run receives and sends for each op of a stage (the executor's rule, restated
// here as the specification the replays check): F of virtual stage vs > 0 receives its activation
// from the stage of vs-1 before it runs; F of every vs but the last sends its output to the stage of
// vs+1 after; B of every vs but the last receives its output's gradient from vs+1 before; B of vs > 0
// sends its input's gradient to vs-1 after. Virtual stage vs = chunk * pp + stage.
struct OpP2p {
  std::optional<P2p> recv, send;
};
std::vector<OpP2p> stage_ops_p2p(const planner::ScheduleTable& table, int stage) {
  const int pp = table.pp;
  const int64_t last = static_cast<int64_t>(pp) * table.vpp - 1;
  std::vector<OpP2p> out;
  for (const auto& op : table.stages.at(stage)) {
    const int64_t vs = static_cast<int64_t>(op.chunk) * pp + stage;
    OpP2p p;
    if (op.kind == planner::OpKind::forward) {
      if (vs > 0) p.recv = P2p{false, static_cast<int>((vs - 1) % pp), {false, op.microbatch, vs}};
      if (vs != last) p.send = P2p{true, static_cast<int>((vs + 1) % pp), {false, op.microbatch, vs + 1}};
    } else {
      if (vs != last) p.recv = P2p{false, static_cast<int>((vs + 1) % pp), {true, op.microbatch, vs}};
      if (vs > 0) p.send = P2p{true, static_cast<int>((vs - 1) % pp), {true, op.microbatch, vs - 1}};
    }
    out.push_back(p);
  }
  return out;
}

// The same, flattened in order.
std::vector<P2p> stage_p2p(const planner::ScheduleTable& table, int stage) {
  std::vector<P2p> out;
  for (const OpP2p& op : stage_ops_p2p(table, stage)) {
    if (op.recv) out.push_back(*op.recv);
    if (op.send) out.push_back(*op.send);
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

// The same table over one pp group that holds sends (NCCL's, PipelineExecutor with a group that
// holds_sends()): each op's receive goes out in one group with the sends held since the last group,
// and the stage waits for that group; when the next op receives nothing the held sends go out alone
// (post_sends) and the stage does not wait; wait_sends at the end. A stage's groups run one after
// another (one stream); a send and a receive meet when the groups holding them are both running
// (large messages: no buffering), the k-th send from a to b meeting b's k-th receive from a.
// "" when every stage finishes; else which wait for ever.
std::string replay_grouped(const planner::ScheduleTable& table) {
  const int pp = table.pp;
  struct Group {
    std::vector<P2p> ops;
    std::vector<bool> met;
  };
  struct Stage {
    std::vector<Group> groups;
    std::vector<std::pair<bool, size_t>> program;  // (wait, group): issue it, or wait for it
    size_t pc = 0, running = 0;                    // next step; first group not done (issued ones run in order)
    size_t issued = 0;
  };
  std::vector<Stage> stages(pp);
  for (int s = 0; s < pp; ++s) {
    Stage& st = stages[s];
    const auto ops = stage_ops_p2p(table, s);
    std::vector<P2p> held;
    auto issue = [&](bool wait) {
      st.groups.push_back({held, std::vector<bool>(held.size(), false)});
      held.clear();
      st.program.push_back({false, st.groups.size() - 1});
      if (wait) st.program.push_back({true, st.groups.size() - 1});
    };
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].recv) {
        held.push_back(*ops[i].recv);
        issue(/*wait=*/true);
      }
      if (ops[i].send) held.push_back(*ops[i].send);
      if (i + 1 < ops.size() && !ops[i + 1].recv && !held.empty()) issue(/*wait=*/false);
    }
    if (!held.empty()) issue(/*wait=*/true);
  }
  // Where each message's receive is: (from, to, k) -> the receiving group and the op in it.
  std::map<std::tuple<int, int, int>, std::pair<size_t, size_t>> receive_of;
  for (int s = 0; s < pp; ++s) {
    std::map<int, int> count;
    for (size_t g = 0; g < stages[s].groups.size(); ++g)
      for (size_t o = 0; o < stages[s].groups[g].ops.size(); ++o) {
        const P2p& p = stages[s].groups[g].ops[o];
        if (!p.send) receive_of[{p.peer, s, count[p.peer]++}] = {g, o};
      }
  }
  auto group_done = [](const Group& g) { return std::all_of(g.met.begin(), g.met.end(), [](bool m) { return m; }); };
  for (bool progress = true; progress;) {
    progress = false;
    for (Stage& st : stages) {
      while (st.running < st.issued && group_done(st.groups[st.running])) ++st.running;
      while (st.pc < st.program.size()) {
        const auto [wait, g] = st.program[st.pc];
        if (wait && g >= st.running) break;
        if (!wait) st.issued = g + 1;
        ++st.pc;
        progress = true;
      }
      while (st.running < st.issued && group_done(st.groups[st.running])) ++st.running;
    }
    for (int s = 0; s < pp; ++s) {
      Stage& st = stages[s];
      if (st.running >= st.issued) continue;
      Group& group = st.groups[st.running];
      std::map<int, int> sent_before;  // sends to each peer in earlier groups: this send's k
      for (size_t g = 0; g < st.running; ++g)
        for (const P2p& p : st.groups[g].ops)
          if (p.send) ++sent_before[p.peer];
      for (size_t o = 0; o < group.ops.size(); ++o) {
        const P2p& p = group.ops[o];
        if (!p.send) continue;
        const int k = sent_before[p.peer]++;
        if (group.met[o]) continue;
        const auto it = receive_of.find({s, p.peer, k});
        if (it == receive_of.end()) return "a send from stage " + std::to_string(s) + " is never received";
        Stage& peer = stages[p.peer];
        const auto [g, r] = it->second;
        if (g != peer.running || peer.running >= peer.issued) continue;  // its receive is not running yet
        group.met[o] = true;
        peer.groups[g].met[r] = true;
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int s = 0; s < pp; ++s)
    if (stages[s].pc < stages[s].program.size() || stages[s].running < stages[s].groups.size())
      stuck += (stuck.empty() ? "stage " : ", ") + std::to_string(s);
  return stuck.empty() ? "" : stuck + " wait for ever";
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

  // Over a group that holds sends (NCCL's grouped point-to-point), exactly the tables the executor
  // refuses there (needs_sends_that_start_at_once) deadlock; every other one runs.
  void heldSendsDeadlockExactlyWhereTheExecutorRefuses() {
    int tables = 0, refused = 0;
    auto check = [&](const planner::ScheduleTable& table, const QString& what) {
      const std::string problem = replay_grouped(table);
      const bool refuses = needs_sends_that_start_at_once(table);
      QVERIFY2(refuses == !problem.empty(),
               qPrintable(what + (refuses ? ": refused, but runs over held sends"
                                          : QString(": allowed, but over held sends ") + problem.c_str())));
      ++tables;
      refused += refuses ? 1 : 0;
    };
    for (int pp : {2, 3, 4, 8})
      for (int m : {1, 2, 3, 4, 8, 16}) {
        for (auto schedule : {spec::Schedule::gpipe, spec::Schedule::one_f_one_b})
          check(planner::make_schedule(schedule, pp, 1, m),
                QString("%1 pp=%2 m=%3").arg(spec::to_string(schedule).data()).arg(pp).arg(m));
        for (int vpp : {2, 3, 4})
          if (m % pp == 0)
            check(planner::make_schedule(spec::Schedule::interleaved, pp, vpp, m),
                  QString("interleaved pp=%1 vpp=%2 m=%3").arg(pp).arg(vpp).arg(m));
      }
    qInfo("%d schedule tables replayed over held sends, %d refused", tables, refused);
    QVERIFY(refused > 0 && refused < tables);
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
