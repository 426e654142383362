// tessera-agent with the REAL runtime (tessera-train, LibTorch, Gloo): two agents on 127.0.0.1 and
// 127.0.0.2 (CURVE) act as two nodes of a tiny-gpt TP2×DP2 run followed through RunSession and
// HistorySink into a SQLite history. The losses equal the single-process run of the same spec (the gold
// tests' 1e-4 relative), every (step, rank, metric) is stored exactly once; a rank killed with SIGKILL
// mid-run fails the run within 5 s naming it, and leaves no process of the run behind.
#include "agent_test_support.hpp"

#include <sqlite3.h>

#include <cmath>

#include "launch/history_sink.hpp"
#include "store/history.hpp"
#include "store/writer.hpp"

using namespace tessera;
using namespace std::chrono_literals;
using test::AgentProcess;

namespace {

constexpr int64_t kSteps = 5;
constexpr double kTolerance = 1e-4;  // tests/runtime/test_train_gold.cpp

// tiny-gpt with a short sequence, fp32, on the CPU; TP2×DP2 over two nodes, or one process.
nlohmann::json spec_json(int64_t steps, bool single) {
  return {{"name", single ? "single" : "two nodes"},
          {"model", {{"preset", "tiny-gpt"}, {"seq_length", 32}}},
          {"parallel", single ? nlohmann::json{{"tp", 1}, {"dp", 1}} : nlohmann::json{{"tp", 2}, {"dp", 2}}},
          {"training", {{"micro_batch_size", 1}, {"global_batch_size", 4}, {"precision", "fp32"}, {"train_steps", steps},
                        {"warmup_steps", 2}, {"lr", 0.003}, {"seed", 1234}, {"flash_attention", false}}},
          {"cluster", {{"gpu", "cpu"}, {"nodes", single ? 1 : 2}, {"gpus_per_node", single ? 1 : 2}}}};
}

struct TwoRealNodes {
  explicit TwoRealNodes(const QString& dir)
      : keys(dir),
        a("127.0.0.1", dir + "/work-a", keys.agent("a"), keys.authorized, {}, {}, TESSERA_TRAIN),
        b("127.0.0.2", dir + "/work-b", keys.agent("b"), keys.authorized, {}, {}, TESSERA_TRAIN) {
    keys.pin(a.endpoint(), "a");
    keys.pin(b.endpoint(), "b");
  }
  std::vector<std::string> endpoints() const { return {a.endpoint(), b.endpoint()}; }
  test::TestKeys keys;
  AgentProcess a, b;
};

// step -> loss of rank 0 in the single-process run's metrics.jsonl.
std::map<int64_t, double> single_process_losses(const QString& dir) {
  const QString spec = dir + "/single.json", out = dir + "/single";
  std::ofstream(spec.toStdString()) << spec_json(kSteps, true).dump();
  QProcess train;
  // One intra-op thread, as each of the agent's two ranks per node gets on a 2-core machine; the
  // default data (the shipped corpus), as the agent passes no --data.
  train.start(TESSERA_TRAIN, {"--spec", spec, "--out", out, "--threads", "1"});
  if (!train.waitForFinished(60000) || train.exitCode() != 0) {
    qWarning("single-process run failed: %s", train.readAllStandardError().constData());
    return {};
  }
  std::map<int64_t, double> losses;
  std::ifstream in((out + "/metrics.jsonl").toStdString());
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.at("type") == "step" && record.at("rank") == 0) losses[record.at("step").get<int64_t>()] = record.at("loss").get<double>();
  }
  return losses;
}

// Counts the step records handed over, readable from another thread.
struct CountingSink : test::MemorySink {
  void records(int64_t node, int64_t seq, const std::vector<protocol::Record>& records) override {
    for (const auto& r : records) step_records += r.type() == "step" ? 1 : 0;
    MemorySink::records(node, seq, records);
  }
  std::atomic<int64_t> step_records{0};
};

std::vector<int64_t> all_pids(const launch::RunSession& session) {
  std::vector<int64_t> pids;
  for (const auto& node : session.nodes())
    for (const auto& [rank, pid] : node.pids) pids.push_back(pid);
  return pids;
}

bool none_alive(const std::vector<int64_t>& pids) {
  for (auto pid : pids)
    if (test::process_alive(pid)) return false;
  return true;
}

// Rows of each (metric, rank, step) of `run` in the history file, straight from SQLite.
std::map<std::tuple<std::string, int64_t, int64_t>, int64_t> metric_rows(const std::string& db, const std::string& run) {
  std::map<std::tuple<std::string, int64_t, int64_t>, int64_t> rows;
  sqlite3* connection = nullptr;
  if (sqlite3_open_v2(db.c_str(), &connection, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return rows;
  sqlite3_stmt* statement = nullptr;
  sqlite3_prepare_v2(connection,
                     "SELECT n.name, s.rank, m.step, count(*) FROM metrics m JOIN series s ON s.id = m.series "
                     "JOIN metric_names n ON n.id = s.metric JOIN runs r ON r.key = s.run WHERE r.id = ? "
                     "GROUP BY n.name, s.rank, m.step",
                     -1, &statement, nullptr);
  sqlite3_bind_text(statement, 1, run.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(statement) == SQLITE_ROW)
    rows[{reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)), sqlite3_column_int64(statement, 1),
          sqlite3_column_int64(statement, 2)}] = sqlite3_column_int64(statement, 3);
  sqlite3_finalize(statement);
  sqlite3_close(connection);
  return rows;
}

}  // namespace

class TestAgentRuntime : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void twoNodesMatchTheSingleProcessRunAndStoreEveryStepOnce() {
    const auto reference = single_process_losses(dir_.path());
    QCOMPARE(reference.size(), size_t(kSteps));

    TwoRealNodes nodes(dir_.path() + "/complete");
    QVERIFY(!nodes.a.endpoint().empty() && !nodes.b.endpoint().empty());
    const std::string db = (dir_.path() + "/history.sqlite").toStdString();
    store::Writer writer(db);
    store::RunRecord record;
    record.name = "two nodes";
    record.spec = nlohmann::ordered_json::parse(spec_json(kSteps, false).dump());
    record.hosts = nodes.endpoints();
    const auto run = writer.create_run(record);
    launch::RunSession session(run.id, nodes.endpoints(), nodes.keys.credentials);
    session.launch(spec::parse_spec(spec_json(kSteps, false)));
    QCOMPARE(session.nodes()[0].pids.size(), size_t{2});
    QCOMPARE(session.nodes()[1].pids.size(), size_t{2});
    launch::HistorySink sink(writer, run);
    std::atomic<bool> stop{false};
    const auto outcome = test::follow_for(session, sink, stop, 90s);
    QVERIFY2(outcome == launch::RunOutcome::done, session.reason().c_str());
    writer.flush();
    QCOMPARE(session.duplicate_frames(), int64_t{0});
    QCOMPARE(session.lost_frames(), int64_t{0});
    QCOMPARE(sink.skipped(), int64_t{0});

    const auto rows = metric_rows(db, run.id);
    // Every rank's loss at every step, once, equal to the single-process loss.
    store::History history(db);
    for (int64_t rank = 0; rank < 4; ++rank) {
      const auto points = history.points(run.id, "loss", rank);
      QCOMPARE(points.size(), size_t(kSteps));
      for (const auto& point : points) {
        const double want = reference.at(point.step);
        QVERIFY2(std::abs(point.value - want) / std::abs(want) < kTolerance,
                 qPrintable(QString("rank %1 step %2: loss %3 vs %4").arg(rank).arg(point.step).arg(point.value, 0, 'g', 9)
                                .arg(want, 0, 'g', 9)));
      }
      for (const char* metric : {"loss", "grad_norm", "lr", "tokens_per_s", "step_time_s"})
        for (int64_t step = 1; step <= kSteps; ++step) {
          const auto it = rows.find({metric, rank, step});
          QVERIFY2(it != rows.end() && it->second == 1, qPrintable(QString("%1 rank %2 step %3").arg(metric).arg(rank).arg(step)));
        }
    }
    // Nothing twice: every point the sink appended is its own row (a duplicate would replace one), and
    // every row is a step 1..kSteps of rank 0..3.
    int64_t total = 0;
    for (const auto& [key, count] : rows) {
      QCOMPARE(count, int64_t{1});
      QVERIFY(std::get<1>(key) >= 0 && std::get<1>(key) < 4 && std::get<2>(key) >= 1 && std::get<2>(key) <= kSteps);
      total += count;
    }
    QCOMPARE(total, sink.points());
    QVERIFY(total >= 4 * kSteps * 5);
    QVERIFY(none_alive(all_pids(session)));
  }

  void killedRankFailsTheRunNamingItWithinFiveSeconds() {
    TwoRealNodes nodes(dir_.path() + "/killed");
    const auto id = test::new_run_id();
    launch::RunSession session(id, nodes.endpoints(), nodes.keys.credentials);
    session.launch(spec::parse_spec(spec_json(100000, false)));
    QCOMPARE(session.nodes()[1].pids[1].first, int64_t{3});
    const int64_t victim = session.nodes()[1].pids[1].second;
    CountingSink sink;
    std::atomic<bool> stop{false};
    std::atomic<bool> killed{false};
    std::chrono::steady_clock::time_point killed_at;
    // Killed mid-run: once every rank has reported two steps (the ranks are training, not starting).
    std::thread killer([&] {
      const auto deadline = std::chrono::steady_clock::now() + 60s;
      while (!stop && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(20ms);
        if (sink.step_records >= 8) break;
      }
      killed_at = std::chrono::steady_clock::now();
      ::kill(static_cast<pid_t>(victim), SIGKILL);
      killed = true;
    });
    const auto outcome = test::follow_for(session, sink, stop, 90s);
    const auto took = std::chrono::steady_clock::now() - killed_at;
    killer.join();
    QVERIFY(killed);
    QVERIFY2(sink.step_records >= 8, "the ranks did not train two steps");
    QCOMPARE(outcome, launch::RunOutcome::failed);
    QVERIFY2(took < 5s, std::to_string(std::chrono::duration<double>(took).count()).c_str());
    QCOMPARE(session.first_failed_rank().value_or(-1), int64_t{3});
    QVERIFY2(session.reason().find("rank 3 killed by signal 9") != std::string::npos, session.reason().c_str());
    QVERIFY(none_alive(all_pids(session)));
  }
};

QTEST_APPLESS_MAIN(TestAgentRuntime)
#include "test_agent_runtime.moc"
