// The GUI's run path against a real local agent running real tessera-train ranks (tiny-gpt, PP=2, two
// ranks, a few steps, in a temporary config dir and history): the launch dialog's agent checks (bad
// address, missing or malformed key, a pinned key remembered; the local agent's inventory and the fit
// check); launching from RunController, the
// dashboard's curves growing while the run goes and the run ending `done`; replaying the stored run
// drawing the same series; a rank killed with SIGKILL failing the run with that rank named; and a
// controller closed mid-run (the workbench closed) leaving the run going, the run opened again
// (RunWindows::open: tessera --run, the history view) reattaching and backfilling every step exactly once.
#include <signal.h>

#include <QtCore/QDeadlineTimer>
#include <QtCore/QFile>
#include <QtCore/QPointer>
#include <QtCore/QSettings>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <fstream>

#include "dashboard_widget.hpp"
#include "launch_dialog.hpp"
#include "protocol/keys.hpp"
#include "run_controller.hpp"
#include "run_windows.hpp"
#include "store/history.hpp"
#include "store/run_lease.hpp"

using namespace tessera;
using namespace tessera::ui;

namespace {

nlohmann::ordered_json tinySpec(const std::string& name, int steps) {
  return {{"name", name},
          {"model", {{"preset", "tiny-gpt"}}},
          {"parallel", {{"tp", 1}, {"pp", 2}, {"dp", 1}, {"schedule", "1f1b"}}},
          {"training", {{"micro_batch_size", 2}, {"global_batch_size", 8}, {"precision", "fp32"}, {"train_steps", steps},
                        {"flash_attention", false}, {"lr", 0.003}, {"warmup_steps", 2}}},
          {"cluster", {{"gpu", "cpu"}, {"nodes", 1}, {"gpus_per_node", 2}}}};
}

// The graph's points as (key, value) pairs.
std::vector<std::pair<double, double>> pointsOf(const QCPGraph* graph) {
  std::vector<std::pair<double, double>> out;
  for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) out.emplace_back(it->key, it->value);
  return out;
}

}  // namespace

class TestDashboardRun : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  QString db() const { return dir_.path() + "/history.sqlite"; }

  LaunchRequest request(const std::string& name, int steps) const {
    LaunchRequest r;
    r.spec_json = tinySpec(name, steps);
    r.spec = spec::parse_spec(nlohmann::json::parse(r.spec_json.dump()));
    r.name = name;
    r.tags = {"gui-test"};
    r.notes = "launched by test_dashboard_run";
    r.db_path = db().toStdString();
    return r;
  }

  // Opens the dashboard on the run as soon as the controller recorded it.
  static void follow(RunController& controller, DashboardWidget& dashboard, const QString& db) {
    controller.connect(&controller, &RunController::recorded, &dashboard,
                       [&dashboard, db](const QString& id) { QVERIFY(dashboard.openRun(db, id)); });
    dashboard.setController(&controller);
  }

  // What a failed wait prints: the controller's outcome, the dashboard's status, the run's last log
  // lines and the local agent's log (a run that does not reach its first step says why).
  QString diagnosis(const RunController& controller, const DashboardWidget& dashboard, const QString& what) const {
    QString text = what + QString("\ncontroller: %1 (%2)")
                              .arg(launch::to_string(controller.outcome()), controller.reason());
    if (const auto* feed = dashboard.feed()) {
      const std::string_view status = store::to_string(feed->run().status);
      text += QString("\nrun status: %1, last step %2")
                  .arg(QString::fromUtf8(status.data(), static_cast<qsizetype>(status.size())))
                  .arg(feed->lastStep());
      const auto& logs = feed->logs();
      for (size_t i = logs.size() > 20 ? logs.size() - 20 : 0; i < logs.size(); ++i)
        text += QString("\n  [rank %1] %2").arg(logs[i].rank).arg(QString::fromStdString(logs[i].line));
    } else {
      text += "\nthe dashboard has no run open";
    }
    QFile agent_log(dir_.path() + "/config/local-agent/agent.log");
    if (agent_log.open(QIODevice::ReadOnly)) text += "\nagent.log:\n" + QString::fromUtf8(agent_log.readAll().right(3000));
    return text;
  }

  // Launches a run too long to end by itself and waits until the dashboard shows its first step; a
  // run that ends first fails the wait at once, naming why.
  void launchUntilFirstStep(RunController& controller, DashboardWidget& dashboard, const std::string& name) {
    follow(controller, dashboard, db());
    QSignalSpy launched(&controller, &RunController::launched);
    QSignalSpy finished(&controller, &RunController::finished);
    controller.launch(request(name, 100000));
    QVERIFY2(launched.wait(60000), qPrintable(diagnosis(controller, dashboard, "the run did not start within 60 s")));
    const auto first_step = [&] { return dashboard.feed() && dashboard.feed()->lastStep() >= 1; };
    QDeadlineTimer deadline(120000);
    while (!first_step() && finished.isEmpty() && !deadline.hasExpired()) QTest::qWait(20);
    QVERIFY2(first_step(), qPrintable(diagnosis(controller, dashboard,
                                                finished.isEmpty() ? "no step within 120 s of the launch"
                                                                   : "the run ended before its first step")));
  }

  // Ends a run a failed test left going (a detached controller leaves it running for 100,000 steps,
  // slowing the next tests) and waits for it.
  struct StopLeftRun {
    RunController& controller;
    ~StopLeftRun() {
      if (!controller.busy()) return;
      controller.stop();
      controller.wait(30000);
    }
  };

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    qputenv("XDG_CONFIG_HOME", (dir_.path() + "/xdg").toUtf8());  // QSettings of the launch dialog
    QCoreApplication::setOrganizationName("TesseraTest");
    qputenv("TESSERA_CONFIG_DIR", (dir_.path() + "/config").toUtf8());
    qputenv("TESSERA_AGENT", TESSERA_AGENT);
    qputenv("TESSERA_TRAIN", TESSERA_TRAIN);
    qputenv("OMP_NUM_THREADS", "1");
  }

  void cleanupTestCase() {
    // The local agent would exit by itself once idle; the test does not wait for it.
    std::ifstream pid_file((dir_.path() + "/config/local-agent/agent.pid").toStdString());
    int64_t pid = 0;
    if (pid_file >> pid && pid > 0) ::kill(static_cast<pid_t>(pid), SIGTERM);
  }

  void launchDialogChecksAgentsAndFit() {
    const auto spec_json = tinySpec("dialog", 4);
    const auto spec = spec::parse_spec(nlohmann::json::parse(spec_json.dump()));
    LaunchDialog dialog(spec, spec_json, db());
    QString error;
    QVERIFY(!dialog.addAgent("gpu-1:7070", "", &error));
    QVERIFY2(error.contains("is not tcp://HOST:PORT"), qPrintable(error));
    QVERIFY(!dialog.addAgent("tcp://10.0.0.5:7070", "", &error));
    QVERIFY2(error.contains("give its public key"), qPrintable(error));
    QVERIFY(!dialog.addAgent("tcp://10.0.0.5:7070", "not-a-key", &error));
    const std::string key = protocol::generate_keypair().public_key;
    QVERIFY2(dialog.addAgent("tcp://10.0.0.5:7070", QString::fromStdString(key), &error), qPrintable(error));
    QCOMPARE(protocol::KnownAgents(launch::Credentials::from_config_dir().known_agents_path).key_of("tcp://10.0.0.5:7070"),
             std::optional<std::string>(key));
    QCOMPARE(QSettings().value(LaunchDialog::kAgentsKey).toStringList(), QStringList{"tcp://10.0.0.5:7070"});
    // Only the local agent for this one-node spec.
    QSignalSpy checked(&dialog, &LaunchDialog::inventoriesChecked);
    dialog.agentTable()->item(1, 0)->setCheckState(Qt::Unchecked);
    dialog.checkAgents();
    QVERIFY(checked.wait(30000));
    QVERIFY2(dialog.fitText().contains("The layout fits: 2 ranks on 1 node"), qPrintable(dialog.fitText()));
    QVERIFY(!dialog.agentTable()->item(0, 2)->text().isEmpty());  // the local agent's host name
    QVERIFY(dialog.launchEnabled());
    // A name or tag the history would refuse is said under them, and Launch waits (it failed only
    // once the local agent had been started).
    dialog.nameField()->setText(QString(32, QLatin1Char('a')));
    QVERIFY2(dialog.namingProblem().startsWith("Name: a run name cannot be a run id"), qPrintable(dialog.namingProblem()));
    QVERIFY(!dialog.launchEnabled());
    dialog.nameField()->setText("tp sweep");
    dialog.tagsField()->setText(QStringLiteral("baseline, ") + QString(300, QLatin1Char('t')));
    QVERIFY2(dialog.namingProblem().startsWith("Tags: a tag is at most 256 bytes"), qPrintable(dialog.namingProblem()));
    QVERIFY(!dialog.launchEnabled());
    dialog.tagsField()->setText("baseline, tp-sweep");
    QVERIFY(dialog.namingProblem().isEmpty());
    QVERIFY(dialog.launchEnabled());
    dialog.nameField()->clear();
    const auto request = dialog.request();
    QVERIFY(request.agents.empty());  // the local agent
    QCOMPARE(request.db_path, db().toStdString());
  }

  void launchShowsGrowingCurvesUntilDone() {
    constexpr int kSteps = 12;
    RunController controller;
    DashboardWidget dashboard;
    follow(controller, dashboard, db());
    QSignalSpy finished(&controller, &RunController::finished);
    std::vector<int> loss_sizes;  // the loss curve's size at each dashboard update
    connect(&dashboard, &DashboardWidget::updated, this, [&] {
      if (const auto* g = dashboard.graph("loss", 0)) loss_sizes.push_back(g->dataCount());
    });
    controller.launch(request("gui-live", kSteps));
    QVERIFY2(finished.wait(120000), "the run did not end within 120 s");
    QCOMPARE(controller.outcome(), launch::RunOutcome::done);
    QCOMPARE(controller.pids().size(), size_t{2});
    QTRY_COMPARE_WITH_TIMEOUT(dashboard.feed()->run().status, store::RunStatus::done, 5000);

    // The curve grew while the run went: it was seen with some but not all steps.
    QVERIFY(!loss_sizes.empty());
    QVERIFY2(std::any_of(loss_sizes.begin(), loss_sizes.end(), [](int n) { return n > 0 && n < kSteps; }),
             "the loss curve was never seen part-way");
    const auto* loss = dashboard.graph("loss", 0);
    QVERIFY(loss);
    QCOMPARE(loss->dataCount(), kSteps);
    QCOMPARE(loss->data()->at(0)->key, 1.0);
    QCOMPARE(loss->data()->at(kSteps - 1)->key, double(kSteps));
    QCOMPARE(dashboard.smoothedLoss()->dataCount(), kSteps);
    // Loss falls over the run on the shipped corpus (first vs last of the raw curve).
    QVERIFY(loss->data()->at(kSteps - 1)->value < loss->data()->at(0)->value);
    // Memory of both ranks, bubble of both stages, against the stored values.
    store::History history(db().toStdString());
    const auto id = dashboard.runId().toStdString();
    for (int64_t rank : {0, 1}) {
      const auto* memory = dashboard.graph("peak_memory_bytes", rank);
      QVERIFY(memory);
      const auto stored = history.points(id, "peak_memory_bytes", rank);
      QCOMPARE(size_t(memory->dataCount()), stored.size());
      QCOMPARE(memory->data()->at(kSteps - 1)->value, stored.back().value / (1024.0 * 1024.0));
      QCOMPARE(dashboard.rankStateText(rank), QString("done"));
    }
    QVERIFY(dashboard.graph("bubble", 0) && dashboard.graph("bubble", 1));
    // The measured timeline of the last step, both stages, next to the predicted one.
    QCOMPARE(dashboard.shownTimelineStep(), std::optional<int64_t>(kSteps));
    QCOMPARE(dashboard.measuredTimeline().stageCount(), 2);
    for (int stage : {0, 1}) {
      const auto [first, last] = dashboard.measuredTimeline().stageRange(stage);
      QCOMPARE(last - first, size_t{8});  // 4 microbatches × (F + B)
    }
    QVERIFY(dashboard.measuredTimeline().bubbleFraction() > 0 && dashboard.measuredTimeline().bubbleFraction() < 1);
    QCOMPARE(dashboard.predictedTimeline().events().size(), size_t{16});
    // Log lines of both ranks, filterable by rank.
    QVERIFY(dashboard.logView()->toPlainText().contains("[rank 1"));
    dashboard.logRankFilter()->setCurrentIndex(1);  // rank 0
    QVERIFY(!dashboard.logView()->toPlainText().contains("[rank 1"));
    QVERIFY(dashboard.logView()->toPlainText().contains("[rank 0"));
    dashboard.logSearch()->setText("no line says this");
    QVERIFY(dashboard.logView()->toPlainText().isEmpty());
    QVERIFY(dashboard.replots() > 0);

    // Replay of the stored run: the same series, point for point.
    DashboardWidget replay;
    QVERIFY(replay.openRun(db(), dashboard.runId()));
    for (const char* metric : {"loss", "grad_norm", "lr", "tokens_per_s", "model_tflops", "mfu", "bubble", "peak_memory_bytes"})
      for (int64_t rank : {0, 1}) {
        const auto* live = dashboard.graph(metric, rank);
        const auto* again = replay.graph(metric, rank);
        QCOMPARE(bool(live), bool(again));
        if (live) QVERIFY2(pointsOf(live) == pointsOf(again), metric);
      }
    QVERIFY(pointsOf(dashboard.smoothedLoss()) == pointsOf(replay.smoothedLoss()));
    const auto record = history.run(id);
    QCOMPARE(record.tags, std::vector<std::string>{"gui-test"});
    QCOMPARE(record.notes, std::string("launched by test_dashboard_run"));
  }

  void stopButtonStopsTheRunAndLeavesNoRank() {
    RunController controller;
    StopLeftRun stop_left{controller};
    DashboardWidget dashboard;
    launchUntilFirstStep(controller, dashboard, "gui-stopped");
    if (QTest::currentTestFailed()) return;
    QSignalSpy finished(&controller, &RunController::finished);
    QVERIFY(dashboard.stopButton()->isEnabled());
    std::vector<int64_t> pids;
    for (const auto& [rank, pid] : controller.pids()) pids.push_back(pid);
    QCOMPARE(pids.size(), size_t{2});
    QTest::mouseClick(dashboard.stopButton(), Qt::LeftButton);
    QVERIFY(!dashboard.stopButton()->isEnabled());
    QVERIFY2(finished.wait(30000), "the run did not stop within 30 s");
    QCOMPARE(controller.outcome(), launch::RunOutcome::stopped);
    QTRY_COMPARE_WITH_TIMEOUT(dashboard.feed()->run().status, store::RunStatus::stopped, 5000);
    QCOMPARE(store::History(db().toStdString()).run(dashboard.runId().toStdString()).status, store::RunStatus::stopped);
    // No rank process is left.
    for (int64_t pid : pids) QTRY_VERIFY_WITH_TIMEOUT(::kill(static_cast<pid_t>(pid), 0) != 0, 5000);
  }

  void killedRankFailsTheRunNamingIt() {
    RunController controller;
    StopLeftRun stop_left{controller};
    DashboardWidget dashboard;
    launchUntilFirstStep(controller, dashboard, "gui-killed");
    if (QTest::currentTestFailed()) return;
    QSignalSpy finished(&controller, &RunController::finished);
    QCOMPARE(dashboard.rankStateText(1), QString("running"));
    int64_t pid = 0;
    for (const auto& [rank, p] : controller.pids())
      if (rank == 1) pid = p;
    QVERIFY(pid > 0);
    QCOMPARE(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
    QVERIFY(finished.wait(30000));
    QCOMPARE(controller.outcome(), launch::RunOutcome::failed);
    QCOMPARE(controller.failedRank(), std::optional<int64_t>(1));
    QVERIFY2(controller.reason().startsWith("rank 1 killed by signal 9"), qPrintable(controller.reason()));
    QCOMPARE(controller.nodeOf(1), std::optional<int64_t>(0));
    QTRY_COMPARE_WITH_TIMEOUT(dashboard.rankStateText(1), QString("failed"), 5000);
    QCOMPARE(dashboard.rankStateText(0), QString("stopped"));
    QVERIFY2(dashboard.failureText().contains("rank 1 killed by signal 9"), qPrintable(dashboard.failureText()));
    QVERIFY(dashboard.failureText().contains("node 0"));
    QVERIFY(!dashboard.stopButton()->isEnabled());
  }

  void closedWorkbenchReattachesAndBackfills() {
    constexpr int kSteps = 40;
    QString id;
    {
      auto controller = std::make_unique<RunController>();
      QSignalSpy launched(controller.get(), &RunController::launched);
      controller->launch(request("gui-reattach", kSteps));
      QVERIFY(launched.wait(60000));
      id = controller->runId();
      store::History history(db().toStdString());
      QTRY_VERIFY_WITH_TIMEOUT(!history.points(id.toStdString(), "loss", 0).empty(), 60000);
    }  // the workbench closes: the controller detaches, the run goes on
    {
      store::History history(db().toStdString());
      QCOMPARE(history.run(id.toStdString()).status, store::RunStatus::running);
      QVERIFY(history.points(id.toStdString(), "loss", 0).size() < size_t{kSteps});
    }
    // Opening the run (tessera --run, the history view) follows it again, and opening it again raises
    // that window instead of following it twice.
    RunWindows windows(db());
    // While another process follows the run (its lease held: a `runs follow` in a terminal), the
    // window only watches: following too would be refused and say the run did not start. Once that
    // one lets the run go, the window follows it.
    auto other = std::make_unique<store::RunLease>(db().toStdString(), id.toStdString());
    QPointer<DashboardWidget> window = windows.open(id);
    QVERIFY(window && !window->controller());
    QTest::qWait(2 * RunWindows::kTakeOverCheckMs);
    QVERIFY(!window->controller());
    other.reset();
    QTRY_VERIFY_WITH_TIMEOUT(window->controller(), 5 * RunWindows::kTakeOverCheckMs);
    QCOMPARE(windows.open(id.left(8)), window.data());
    RunController& again = *window->controller();
    DashboardWidget& dashboard = *window;
    // It may have ended while the window waited to take over: its end is what counts.
    QTRY_VERIFY2_WITH_TIMEOUT(!again.busy(), "the reattached run did not end within 120 s", 120000);
    QCOMPARE(again.outcome(), launch::RunOutcome::done);
    store::History history(db().toStdString());
    const auto points = history.points(id.toStdString(), "loss", 0);
    QCOMPARE(points.size(), size_t{kSteps});
    for (int i = 0; i < kSteps; ++i) QCOMPARE(points[i].step, int64_t(i + 1));
    QTRY_COMPARE_WITH_TIMEOUT(dashboard.graph("loss", 0) ? dashboard.graph("loss", 0)->dataCount() : 0, kSteps, 5000);
    QCOMPARE(history.run(id.toStdString()).status, store::RunStatus::done);
    delete window;  // a WA_DeleteOnClose window: deleted here, not by a smart pointer
  }
};

QTEST_MAIN(TestDashboardRun)
#include "test_dashboard_run.moc"
