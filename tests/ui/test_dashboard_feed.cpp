// The dashboard's data path without agents, on a history written here with store::Writer: RunFeed reads
// only what is new at each poll, narrows the curves to one rank per metric (per stage for the bubble,
// every rank for memory) and derives each rank's state; the dashboard widget appends instead of
// resetting and switches the x axis; the launch fit check names the node and the rule; and
// `tessera --run ID --view dashboard|timeline --screenshot` renders a stored run and refuses bad input.
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtGui/QImage>
#include <QtTest/QtTest>

#include "active_window.hpp"

#include <limits>

#include "dashboard_widget.hpp"
#include "format.hpp"
#include "launch/run_session.hpp"
#include "launch_dialog.hpp"
#include "run_feed.hpp"
#include "store/writer.hpp"
#include "streaming_graph.hpp"
#include "theme.hpp"

using namespace tessera;
using namespace tessera::ui;

namespace {

nlohmann::ordered_json spec3d() {
  return {{"name", "feed"},
          {"model", {{"preset", "tiny-gpt"}}},
          {"parallel", {{"tp", 2}, {"pp", 2}, {"dp", 2}, {"schedule", "1f1b"}}},
          {"training", {{"micro_batch_size", 4}, {"global_batch_size", 32}, {"precision", "fp32"}, {"train_steps", 50},
                        {"flash_attention", false}}},
          {"cluster", {{"gpu", "cpu"}, {"nodes", 1}, {"gpus_per_node", 8}}}};
}

// Steps [first, last] of every rank: loss 5 - step/10, bubble 0.3 + stage/10, memory (1 + rank) MiB,
// model FLOP/s 1.3 GFLOP/s;
// the timeline of each step on ranks 0 (stage 0) and 4 (stage 1).
void writeSteps(store::Writer& writer, const store::RunHandle& run, int64_t first, int64_t last) {
  for (int64_t step = first; step <= last; ++step) {
    for (int64_t rank = 0; rank < 8; ++rank) {
      const int64_t stage = rank / 4;
      writer.append(run, std::vector<store::MetricPoint>{
                             {"loss", rank, step, 1000.0 + step, 5.0 - step / 10.0},
                             {"bubble", rank, step, 1000.0 + step, 0.3 + stage / 10.0},
                             {"peak_memory_bytes", rank, step, 1000.0 + step, (1.0 + rank) * 1024 * 1024},
                             {"comm_s", rank, step, 1000.0 + step, 0.01},
                             {"mfu", rank, step, 1000.0 + step, 0.06},
                             {"model_tflops", rank, step, 1000.0 + step, 0.0013},
                             {"peak_tflops", rank, step, 1000.0 + step, 0.0221 + rank * 1e-4}});
    }
    // One step of two stages, each rank on its own clock: on one clock stage 0 runs F at 0 and 0.02,
    // B at 0.06 and 0.08; stage 1 F at 0.01 and 0.03, B at 0.04 and 0.06 (each B 0.02 s, each F 0.01
    // s), but stage 1 started its clock 0.01 s late, so it recorded everything 0.01 s early.
    const struct {
      int64_t rank, stage;
      const char* op;
      int64_t microbatch;
      double start_s, end_s;
    } ops[] = {{0, 0, "F", 0, 0.00, 0.01}, {0, 0, "F", 1, 0.02, 0.03}, {0, 0, "B", 0, 0.06, 0.08}, {0, 0, "B", 1, 0.08, 0.10},
               {4, 1, "F", 0, 0.00, 0.01}, {4, 1, "F", 1, 0.02, 0.03}, {4, 1, "B", 0, 0.03, 0.05}, {4, 1, "B", 1, 0.05, 0.07}};
    for (const auto& op : ops)
      writer.append(run, store::TimelineEvent{step, op.rank, op.stage, op.op, op.microbatch, 0, op.start_s, op.end_s});
  }
  writer.flush();
}

}  // namespace

class TestDashboardFeed : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString db_;
  std::unique_ptr<store::Writer> writer_;
  store::RunHandle run_;

  // Another run of the 3D spec in the history, its steps 1 to `steps` written.
  store::RunHandle addRun(const std::string& name, store::RunStatus status, int64_t steps) {
    store::RunRecord record;
    record.name = name;
    record.spec = spec3d();
    record.status = status;
    const auto run = writer_->create_run(record);
    writeSteps(*writer_, run, 1, steps);
    return run;
  }

 private slots:
  void initTestCase() {
    db_ = dir_.path() + "/history.sqlite";
    writer_ = std::make_unique<store::Writer>(db_.toStdString());
    store::RunRecord record;
    record.name = "feed run";
    record.spec = spec3d();
    record.status = store::RunStatus::running;
    record.hosts = {"tcp://127.0.0.1:7070"};
    run_ = writer_->create_run(record);
    writer_->append(run_, store::LogLine{0, "stdout", 1000, "rank 0 starting"});
    writeSteps(*writer_, run_, 1, 10);
  }

  void feedReadsOnlyWhatIsNew() {
    RunFeed feed(db_.toStdString(), "feed run");
    auto first = feed.poll();
    // loss, mfu, model_tflops: rank 0 only; bubble: ranks 0 and 4 (one per stage); memory: all 8; comm_s
    // and peak_tflops: not plotted (the peak is read once, the MFU rank's, for the MFU plot's title).
    QCOMPARE(feed.series().size(), size_t{1 + 1 + 1 + 2 + 8});
    QVERIFY(!feed.find("peak_tflops", 0));
    QCOMPARE(feed.mfuPeakTflops(), std::optional<double>(0.0221));
    QVERIFY(feed.find("loss", 0) && !feed.find("loss", 1));
    QVERIFY(feed.find("bubble", 0) && feed.find("bubble", 4) && !feed.find("bubble", 1));
    QVERIFY(!feed.find("comm_s", 0));
    QCOMPARE(feed.find("loss", 0)->size(), size_t{10});
    QCOMPARE(first.grown.size(), size_t{13});
    QCOMPARE(feed.lastStep(), int64_t{10});
    QCOMPARE(feed.lastTimelineStep(), std::optional<int64_t>(10));
    QCOMPARE(feed.rankState(3), RankState::running);
    QCOMPARE(feed.tokensPerStep(), int64_t{32 * 64});
    QCOMPARE(feed.stageOf(5), int64_t{1});

    const auto nothing = feed.poll();
    QVERIFY(!nothing.any());

    writeSteps(*writer_, run_, 11, 15);
    writer_->append(run_, store::LogLine{3, "stderr", 1020, "tessera-agent: rank 3 killed by signal 9 (Killed)"});
    // Checkpoints as rank 0 reported them, not in step order: the feed gives them in step order.
    writer_->append(run_, store::Artifact{"checkpoint", "/w/out/checkpoints/step_00000010", 10, 3 << 20, 1'700'000'000'000});
    writer_->append(run_, store::Artifact{"checkpoint", "/w/out/checkpoints/step_00000005", 5, 3 << 20, 1'699'999'000'000});
    writer_->set_status(run_, store::RunStatus::failed, "rank 3 killed by signal 9 (Killed)");
    writer_->flush();
    const auto next = feed.poll();
    QVERIFY(next.run_changed && next.timeline_changed && next.artifacts_changed);
    QCOMPARE(feed.artifacts().size(), size_t{2});
    QCOMPARE(feed.artifacts()[0].step, int64_t{5});
    QCOMPARE(feed.artifacts()[1].path, std::string("/w/out/checkpoints/step_00000010"));
    QCOMPARE(next.grown.size(), size_t{13});
    for (const auto& [key, before] : next.grown) QCOMPARE(before, size_t{10});  // appended after the 10 read
    QCOMPARE(feed.find("loss", 0)->steps.back(), int64_t{15});
    QCOMPARE(feed.find("loss", 0)->size(), size_t{15});
    QCOMPARE(next.logs_before, size_t{1});
    QCOMPARE(feed.logs().size(), size_t{2});
    QCOMPARE(feed.rankState(3), RankState::failed);
    QCOMPARE(feed.rankState(2), RankState::stopped);
    QCOMPARE(feed.rankExit(3), std::string("killed by signal 9 (Killed)"));
    QVERIFY(!feed.poll().any());  // the checkpoints are not news twice
  }

  void dashboardAppendsAndSwitchesAxis() {
    DashboardWidget dashboard;
    QVERIFY(dashboard.openRun(db_, "feed run"));
    auto* loss = dashboard.graph("loss", 0);
    QVERIFY(loss);
    QCOMPARE(loss->dataCount(), 15);
    QCOMPARE(dashboard.graph("bubble", 4)->data()->at(0)->value, 40.0);  // percent
    QCOMPARE(dashboard.graph("peak_memory_bytes", 7)->data()->at(0)->value, 8.0);  // MiB
    // The planner's prediction: per stage, in a colour no rank's curve has, each line's stage named on
    // the right axis at its height (named at the lines' ends, the names hid the ranks' lines), the
    // dashed lines named "predicted" in the legend, which sits under the axes, not over the curves.
    QCOMPARE(dashboard.predictionLines().size(), size_t{2});
    const QMap<double, QString> ticks = dashboard.predictionTicks();
    QCOMPARE(ticks.size(), 2);
    QCOMPARE(ticks.value(dashboard.predictionLines()[0]->point1->coords().y()), QStringLiteral("0"));
    QCOMPARE(ticks.value(dashboard.predictionLines()[1]->point1->coords().y()), QStringLiteral("1"));
    QVERIFY(dashboard.predictionEntry() && dashboard.predictionEntry()->name() == QStringLiteral("predicted"));
    QVERIFY(dashboard.predictionEntry()->dataCount() == 0);
    QCOMPARE(dashboard.predictionEntry()->pen().style(), Qt::DashLine);
    for (const auto* line : dashboard.predictionLines())
      for (int64_t rank = 0; rank < 8; ++rank)
        QVERIFY(line->pen().color() != dashboard.graph("peak_memory_bytes", rank)->pen().color());
    QCustomPlot* memory = dashboard.plot("peak_memory_bytes");
    dashboard.resize(1024, 700);  // shown, so that the plot's viewport is its size (a hidden one stays 100 × 30)
    dashboard.show();
    QCoreApplication::processEvents();
    memory->replot();
    QVERIFY(memory->legend->visible());
    QVERIFY(!memory->legend->outerRect().intersects(memory->axisRect()->rect()));
    QVERIFY(memory->legend->outerRect().top() >= memory->axisRect()->rect().bottom());
    // The predicted lines clear of the axes' frame (the lowest lay on the ticks at 800 px).
    dashboard.resize(800, 600);
    QCoreApplication::processEvents();
    dashboard.flushReplots();
    for (const auto* line : dashboard.predictionLines()) {
      const double y = memory->yAxis->coordToPixel(line->point1->coords().y());
      QVERIFY2(y >= memory->axisRect()->top() + 5 && y <= memory->axisRect()->bottom() - 5,
               qPrintable(QString("%1 px in %2..%3").arg(y).arg(memory->axisRect()->top()).arg(memory->axisRect()->bottom())));
    }
    QCOMPARE(dashboard.mfuTitle(), QStringLiteral("MFU of 22.1 GFLOP/s (the runtime's peak)"));  // rank 0's
    // CPU ranks' model FLOP/s in GFLOP/s, the unit the summary strip gives them ("0.0013" TFLOP/s said little).
    QCOMPARE(dashboard.graph("model_tflops", 0)->data()->at(0)->value, 1.3);
    QCOMPARE(qobject_cast<QCPTextElement*>(dashboard.plot("model_tflops")->plotLayout()->element(0, 0))->text(),
             QStringLiteral("Model GFLOP/s per rank"));
    QVERIFY(dashboard.failureText().contains("node 0"));
    QVERIFY(dashboard.failureText().contains("rank 3"));
    QCOMPARE(dashboard.rankStateText(3), QString("failed"));
    // The Checkpoints tab: one row each, in step order, sized with a unit.
    const QTableWidget* checkpoints = dashboard.checkpointTable();
    QCOMPARE(checkpoints->rowCount(), 2);
    QCOMPARE(checkpoints->item(0, 0)->text(), QStringLiteral("5"));
    QCOMPARE(checkpoints->item(1, 0)->text(), QStringLiteral("10"));
    QCOMPARE(checkpoints->item(1, 1)->text(), QStringLiteral("3.0 MiB"));
    QCOMPARE(checkpoints->item(1, 3)->text(), QStringLiteral("/w/out/checkpoints/step_00000010"));
    // Measured timeline on one clock: stage 1's events moved 0.01 s later, so that its F0 starts as
    // stage 0's ends (0.01) and stage 0's B0 as stage 1's ends (0.06); bubble of the busiest stage over
    // the step's span.
    QCOMPARE(dashboard.shownTimelineStep(), std::optional<int64_t>(15));
    QCOMPARE(dashboard.measuredTimeline().events().size(), size_t{8});
    QVERIFY(std::abs(dashboard.measuredTimeline().makespan() - 0.10) < 1e-9);
    for (const auto& e : dashboard.measuredTimeline().events())
      if (e.stage == 1 && e.op.microbatch == 0)
        QVERIFY2(std::abs(e.start_s - (e.op.kind == planner::OpKind::forward ? 0.01 : 0.04)) < 1e-9, QTest::toString(e.start_s));
    QVERIFY(std::abs(dashboard.measuredTimeline().bubbleFraction() - (1 - 0.06 / 0.10)) < 1e-9);
    // The header's bubble says which one it is: not the per-stage plot's.
    QVERIFY2(dashboard.bubbleText().startsWith(QStringLiteral("bubble of the busiest stage over the step: measured 40.0 % (step 15)")),
             qPrintable(dashboard.bubbleText()));
    QCOMPARE(dashboard.predictedTimeline().caption(), QStringLiteral("Predicted"));
    QCOMPARE(dashboard.measuredTimeline().caption(), QStringLiteral("Measured, step 15"));
    QCOMPARE(dashboard.windowTitle(), QStringLiteral("feed run (run %1) — Tessera").arg(dashboard.runId().left(8)));
    QCOMPARE(DashboardWidget::titleOf("tiny-gpt TP2·PP2·DP2 on CPU ab383daf", "ab383daf0123"),
             QStringLiteral("tiny-gpt TP2·PP2·DP2 on CPU ab383daf — Tessera"));  // a default name holds the id
    QCOMPARE(DashboardWidget::titleOf("", "ab383daf0123"), QStringLiteral("Run ab383daf — Tessera"));
    dashboard.showTimelineStep(3);
    QCOMPARE(dashboard.shownTimelineStep(), std::optional<int64_t>(3));

    dashboard.setXAxis(XAxis::tokens);
    QCOMPARE(loss->data()->at(0)->key, 1.0 * 32 * 64);
    dashboard.setXAxis(XAxis::wall_time_s);
    QCOMPARE(loss->data()->at(14)->key, 14.0);
    dashboard.setXAxis(XAxis::step);
    QCOMPARE(loss->data()->at(14)->key, 15.0);
    // Smoothing: weight 0 is the raw curve; a larger weight lags behind a falling loss.
    dashboard.setSmoothing(0.0);
    QCOMPARE(dashboard.smoothedLoss()->data()->at(14)->value, loss->data()->at(14)->value);
    dashboard.setSmoothing(0.9);
    QVERIFY(dashboard.smoothedLoss()->data()->at(14)->value > loss->data()->at(14)->value);
    QCOMPARE(dashboard.smoothedLoss()->data()->at(0)->value, loss->data()->at(0)->value);  // debiased
  }

  void ranksWithTheSameMemoryAreDrawnOnce() {
    // Stage 0's four ranks peak at the same bytes throughout; stage 1's four do until rank 7 grows at
    // step 8: each group is one curve named by its ranks, and rank 7 comes back as its own.
    store::RunRecord record;
    record.name = "replicas";
    record.spec = spec3d();
    record.status = store::RunStatus::running;
    const auto run = writer_->create_run(record);
    const auto writeMemory = [&](int64_t first, int64_t last) {
      for (int64_t step = first; step <= last; ++step)
        for (int64_t rank = 0; rank < 8; ++rank) {
          const double mib = rank < 4 ? 4.0 : rank == 7 && step >= 8 ? 3.5 : 3.0;
          writer_->append(run, std::vector<store::MetricPoint>{{"peak_memory_bytes", rank, step, 1000.0 + step, mib * 1024 * 1024}});
        }
      writer_->flush();
    };
    writeMemory(1, 5);
    DashboardWidget dashboard;
    QVERIFY(dashboard.openRun(db_, QString::fromStdString(run.id)));
    const auto drawn = [&](int64_t rank) { return dashboard.graph("peak_memory_bytes", rank)->visible(); };
    const auto name = [&](int64_t rank) { return dashboard.graph("peak_memory_bytes", rank)->name(); };
    QCustomPlot* memory = dashboard.plot("peak_memory_bytes");
    // The legend's entries of ranks (it also names the predicted lines, where the run has a plan).
    const auto rankEntries = [&] { return memory->legend->itemCount() - (dashboard.predictionEntry() ? 1 : 0); };
    QVERIFY(drawn(0) && drawn(4));
    for (int64_t rank : {1, 2, 3, 5, 6, 7}) {
      QVERIFY(!drawn(rank));
      QVERIFY(!memory->legend->hasItemWithPlottable(dashboard.graph("peak_memory_bytes", rank)));
    }
    QCOMPARE(name(0), QStringLiteral("ranks 0–3"));
    QCOMPARE(name(4), QStringLiteral("ranks 4–7"));
    QCOMPARE(rankEntries(), 2);

    writeMemory(6, 10);
    dashboard.poll();
    QVERIFY(drawn(0) && drawn(4) && drawn(7));
    QCOMPARE(name(4), QStringLiteral("ranks 4–6"));
    QCOMPARE(name(7), QStringLiteral("rank 7"));
    QCOMPARE(rankEntries(), 3);
    QCOMPARE(dashboard.graph("peak_memory_bytes", 7)->dataCount(), 10);  // hidden, it kept its points

    // A rank that stopped reporting while its group went on: grouped while within a few steps of it
    // during the run; drawn on its own once it falls further behind or the run has ended.
    for (int64_t step = 11; step <= 30; ++step)
      for (int64_t rank = 0; rank < 8; ++rank) {
        if (rank == 5 && step > 25) continue;
        const double mib = rank < 4 ? 4.0 : rank == 7 ? 3.5 : 3.0;
        writer_->append(run, std::vector<store::MetricPoint>{{"peak_memory_bytes", rank, step, 1000.0 + step, mib * 1024 * 1024}});
      }
    writer_->flush();
    dashboard.poll();
    QCOMPARE(name(4), QStringLiteral("ranks 4–6"));  // rank 5 five steps behind: still one curve
    QVERIFY(!drawn(5));
    writer_->set_status(run, store::RunStatus::done);
    writer_->flush();
    dashboard.poll();
    QCOMPARE(name(4), QStringLiteral("ranks 4, 6"));
    QVERIFY(drawn(5));
    QCOMPARE(name(5), QStringLiteral("rank 5"));

    // Another run opened in the same dashboard starts its grouping afresh.
    QVERIFY(dashboard.openRun(db_, "feed run"));
    for (int64_t rank = 0; rank < 8; ++rank) QVERIFY(drawn(rank));  // (1 + rank) MiB: all different

    QCOMPARE(formatRanks({0, 1}), QStringLiteral("ranks 0, 1"));
    QCOMPARE(formatRanks({0, 1, 2, 3, 8, 10, 11}), QStringLiteral("ranks 0–3, 8, 10, 11"));
  }

  void decimationIsBoundedKeepsSpikesAndIgnoresFrames() {
    MinMaxDecimator whole(256);
    std::vector<double> xs, ys;
    for (int i = 0; i < 100000; ++i) {
      xs.push_back(i);
      ys.push_back(i == 77777 ? 1000.0 : i == 4242 ? -50.0 : std::sin(i * 0.01));
    }
    for (size_t i = 0; i < xs.size(); ++i) whole.add(xs[i], ys[i]);
    QVERIFY(whole.xs().size() <= 2 * 256);
    QCOMPARE(whole.points(), int64_t{100000});
    QVERIFY(std::is_sorted(whole.xs().begin(), whole.xs().end()));
    QCOMPARE(*std::max_element(whole.ys().begin(), whole.ys().end()), 1000.0);
    QCOMPARE(*std::min_element(whole.ys().begin(), whole.ys().end()), -50.0);
    QVERIFY(std::find(whole.xs().begin(), whole.xs().end(), 77777.0) != whole.xs().end());

    // The graph: appended frame by frame, it ends with the decimation plus the open bucket's raw points.
    QCustomPlot plot;
    StreamingGraph stream(plot.addGraph(), 256);
    for (size_t at = 0; at < xs.size(); at += 3333) {
      const size_t end = std::min(xs.size(), at + 3333);
      stream.append({xs.begin() + at, xs.begin() + end}, {ys.begin() + at, ys.begin() + end});
    }
    std::vector<double> expected = whole.xs();
    for (const auto& [x, y] : whole.open()) expected.push_back(x);
    std::vector<double> shown;
    for (auto it = stream.graph()->data()->constBegin(); it != stream.graph()->data()->constEnd(); ++it) shown.push_back(it->key);
    QCOMPARE(shown, expected);  // the same as decimating all points at once
    QCOMPARE(shown.back(), 99999.0);
  }

  // Gaps (NaN, and an infinite value drawn as one) never hide the finite points merged with them.
  void decimationKeepsFiniteExtremesBesideGaps() {
    MinMaxDecimator decimator(4);
    const double inf = std::numeric_limits<double>::infinity();
    for (int i = 0; i < 64; ++i) decimator.add(i, i < 10 ? std::numeric_limits<double>::quiet_NaN() : i == 10 ? 7.0 : 1.0);
    QVERIFY(decimator.xs().size() <= 2 * 4);
    QCOMPARE(*std::max_element(decimator.ys().begin(), decimator.ys().end(),
                               [](double a, double b) { return std::isnan(a) || (!std::isnan(b) && a < b); }),
             7.0);
    QVERIFY(std::find(decimator.xs().begin(), decimator.xs().end(), 10.0) != decimator.xs().end());
    QCustomPlot plot;
    StreamingGraph stream(plot.addGraph(), 4);
    stream.append({0, 1, 2}, {1.0, inf, -inf});
    QCOMPARE(stream.graph()->data()->size(), 3);
    QVERIFY(std::isnan((stream.graph()->data()->constBegin() + 1)->value));
    QVERIFY(std::isnan((stream.graph()->data()->constBegin() + 2)->value));
  }

  void aRunWithoutPointsShowsEveryPredictedPeak() {
    // No metric yet (a run just started, or imported without any): the memory axis still spans every
    // stage's predicted peak (it kept its default 0-5 and cut the highest off).
    store::RunRecord record;
    record.name = "no points";
    record.spec = spec3d();
    record.spec["training"]["micro_batch_size"] = 16;  // peaks of 12 and 8 MiB, past QCustomPlot's default 0-5
    record.spec["training"]["global_batch_size"] = 64;
    record.status = store::RunStatus::done;
    writer_->create_run(record);
    writer_->flush();
    DashboardWidget dashboard;
    QVERIFY(dashboard.openRun(db_, "no points"));
    QCustomPlot* memory = dashboard.plot("peak_memory_bytes");
    QCOMPARE(dashboard.predictionLines().size(), size_t{2});
    QVERIFY(dashboard.predictionLines()[0]->point1->coords().y() > 10);  // MiB
    for (const auto* line : dashboard.predictionLines()) {
      const double value = line->point1->coords().y();
      QVERIFY2(memory->yAxis->range().contains(value),
               qPrintable(QString("%1 outside %2..%3").arg(value).arg(memory->yAxis->range().lower).arg(memory->yAxis->range().upper)));
    }
  }

  // In the dark palette the plots are dark too: their background, axes' labels and titles in the
  // palette's colours (they stayed white with black text in a dark window), and the predicted peaks'
  // stages on the right axis in the muted text colour.
  void thePlotsFollowTheDarkPalette() {
    const QPalette before = QApplication::palette();
    applyTheme(ThemeChoice::dark);
    {
      DashboardWidget dashboard;
      QVERIFY(dashboard.openRun(db_, "feed run"));
      dashboard.resize(1400, 900);
      const QColor base = dashboard.palette().color(QPalette::Base);
      QVERIFY(isDarkPalette(dashboard.palette()));
      for (const char* metric : {"loss", "peak_memory_bytes"}) {
        QCustomPlot* plot = dashboard.plot(metric);
        const QImage image = plot->grab().toImage();
        QCOMPARE(image.pixelColor(2, image.height() - 3), base);
        QCOMPARE(plot->xAxis->tickLabelColor(), dashboard.palette().color(QPalette::WindowText));
        const auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0));
        QVERIFY(title);
        QCOMPARE(title->textColor(), dashboard.palette().color(QPalette::WindowText));
      }
      QVERIFY(!dashboard.predictionLines().empty());
      QCOMPARE(dashboard.plot("peak_memory_bytes")->yAxis2->tickLabelColor(), dashboard.palette().color(QPalette::PlaceholderText));
    }
    // A dashboard open when the palette changes follows it, its predicted peaks too (their backing
    // stayed the light base's white box).
    applyTheme(ThemeChoice::light);
    {
      DashboardWidget dashboard;
      QVERIFY(dashboard.openRun(db_, "feed run"));
      applyTheme(ThemeChoice::dark);
      QCoreApplication::processEvents();
      QVERIFY(isDarkPalette(dashboard.palette()));
      QCOMPARE(dashboard.plot("loss")->xAxis->tickLabelColor(), dashboard.palette().color(QPalette::WindowText));
      QVERIFY(!dashboard.predictionTicks().isEmpty());
      QCOMPARE(dashboard.plot("peak_memory_bytes")->yAxis2->tickLabelColor(), dashboard.palette().color(QPalette::PlaceholderText));
      QCOMPARE(dashboard.predictionEntry()->pen().color(), dashboard.palette().color(QPalette::PlaceholderText));
      for (const auto* line : dashboard.predictionLines())
        QCOMPARE(line->pen().color(), dashboard.palette().color(QPalette::PlaceholderText));
    }
    QApplication::setPalette(before);
  }

  // On a small window every plot's title fits whole on its lines (the MFU title was cut at both
  // ends at 1024x700) and the value ticks stay a line apart (the bubble plot crammed 0 to 70).
  void smallPlotsKeepTheirTitlesAndTicksReadable() {
    DashboardWidget dashboard;
    QVERIFY(dashboard.openRun(db_, "feed run"));
    dashboard.resize(1024, 700);
    dashboard.show();
    QCoreApplication::processEvents();
    dashboard.flushReplots();
    for (const char* metric : {"loss", "mfu", "bubble", "peak_memory_bytes", "model_tflops"}) {
      QCustomPlot* plot = dashboard.plot(metric);
      QVERIFY2(plot, metric);
      plot->replot();
      const auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0));
      for (const QString& line : title->text().split('\n'))
        QVERIFY2(QFontMetrics(title->font()).horizontalAdvance(line) <= plot->width(),
                 qPrintable(QString("%1: '%2' wider than %3 px").arg(metric, line).arg(plot->width())));
      const QVector<double> ticks = plot->yAxis->tickVector();
      for (int i = 1; i < ticks.size(); ++i) {
        const double apart = std::abs(plot->yAxis->coordToPixel(ticks[i]) - plot->yAxis->coordToPixel(ticks[i - 1]));
        QVERIFY2(apart >= QFontMetrics(plot->yAxis->tickLabelFont()).height(),
                 qPrintable(QString("%1: ticks %2 px apart in a %3 px plot").arg(metric).arg(apart).arg(plot->axisRect()->height())));
      }
    }
    QVERIFY(dashboard.mfuTitle().startsWith(QStringLiteral("MFU of ")));
    // It fits an 800 px window: it needed 898 px (four plots of 220 px, and the bubble line's and the
    // run name's whole widths).
    QVERIFY2(dashboard.minimumSizeHint().width() <= 800, qPrintable(QString::number(dashboard.minimumSizeHint().width())));
    // There the timeline's bubble line says its brief form whole, both figures kept (the whole line
    // lost its prediction to "…").
    dashboard.resize(800, 600);
    QCoreApplication::processEvents();
    const QString shown = dashboard.shownBubbleText();
    QVERIFY2(shown.startsWith(QStringLiteral("bubble: measured ")) && shown.contains(QStringLiteral(" · predicted ")) &&
                 !shown.contains(QStringLiteral("…")),
             qPrintable(shown));
  }

  // At 800 px the header shows a run's name of 19 characters whole, its step progress too: the
  // smoothing slider, 140 px fixed, cut it to "tiny-3d TP2·PP…".
  void aNarrowHeaderKeepsTheRunsName() {
    const auto run = addRun("tiny-3d TP2·PP2·DP2", store::RunStatus::done, 200);
    DashboardWidget dashboard;
    QVERIFY(dashboard.openRun(db_, QString::fromStdString(run.id)));
    dashboard.resize(800, 600);
    dashboard.show();
    QCoreApplication::processEvents();
    QCOMPARE(dashboard.shownTitleText(), QStringLiteral("tiny-3d TP2·PP2·DP2"));
    for (const QLabel* label : dashboard.findChildren<QLabel*>())
      if (label->text().startsWith(QStringLiteral("done · step 200")))
        QVERIFY2(label->width() >= label->sizeHint().width(), qPrintable(QString("%1 px of %2").arg(label->width()).arg(label->sizeHint().width())));
  }

  // The launch dialog's Tab order has no trap: Tab leaves the notes (it typed a tab into them) and
  // the agents' table (it walked the cells for ever), so Launch and Cancel are reached.
  void theLaunchDialogsTabOrderReachesItsButtons() {
    const auto spec_json = spec3d();
    const auto spec = spec::parse_spec(nlohmann::json::parse(spec_json.dump()));
    LaunchDialog dialog(spec, spec_json, db_);
    QVERIFY(test::shownActive(dialog));
    QString error;
    QVERIFY2(dialog.addAgent("tcp://127.0.0.1:7070", QString(40, QLatin1Char('0')), &error), qPrintable(error));
    QVERIFY(dialog.agentTable()->rowCount() >= 1);
    dialog.agentTable()->setCurrentCell(0, 0);
    for (QWidget* from : {static_cast<QWidget*>(dialog.notesField()), static_cast<QWidget*>(dialog.agentTable())}) {
      from->setFocus();
      QCOMPARE(QApplication::focusWidget(), from);
      QTest::keyClick(from, Qt::Key_Tab);
      QVERIFY2(QApplication::focusWidget() != from, from->metaObject()->className());
    }
    QVERIFY(!dialog.notesField()->toPlainText().contains(QLatin1Char('\t')));
  }

  // A run deleted from the history while its dashboard shows it: the dashboard says so and stops
  // polling (it kept "running", and re-read the history 10 times a second with "cannot read").
  void aDeletedRunEndsItsDashboard() {
    const auto run = addRun("to delete", store::RunStatus::running, 3);
    DashboardWidget dashboard;
    QVERIFY(dashboard.openRun(db_, QString::fromStdString(run.id)));
    QVERIFY(dashboard.polling());
    writer_->release_run(run);  // the writer no longer records it, as after its follower detached
    store::History(db_.toStdString()).delete_run(run.id, /*even_if_active=*/true);
    dashboard.poll();
    QCOMPARE(dashboard.statusText(), QStringLiteral("deleted from the history"));
    QVERIFY(!dashboard.polling());
  }

  void missingRunIsAClearError() {
    DashboardWidget dashboard;
    QString error;
    QVERIFY(!dashboard.openRun(db_, "no-such-run", &error));
    QVERIFY2(error.contains("no run with id or name 'no-such-run'"), qPrintable(error));
  }

  void fitCheckNamesNodeAndRule() {
    auto spec = spec::parse_spec(nlohmann::json::parse(spec3d().dump()));
    const nlohmann::json roomy = {{"hostname", "a"}, {"max_ranks", 16}, {"ranks_in_use", 0}, {"gpus", nlohmann::json::array()}};
    QVERIFY(launch::fit_problems(spec, {roomy}).empty());
    const nlohmann::json busy = {{"hostname", "a"}, {"max_ranks", 16}, {"ranks_in_use", 12}, {"gpus", nlohmann::json::array()}};
    const auto problems = launch::fit_problems(spec, {busy});
    QCOMPARE(problems.size(), size_t{1});
    QCOMPARE(problems[0], std::string("node 0 (a) runs 8 ranks but its agent has 4 free (max_ranks 16)"));
    QVERIFY(launch::fit_problems(spec, {roomy, roomy})[0].find("cluster.nodes=1 needs 1 agent") == 0);
    spec.cluster.gpu = "h100-sxm";
    QVERIFY(launch::fit_problems(spec, {roomy})[0].find("runs 8 ranks on GPU h100-sxm but has 0 GPUs") != std::string::npos);
    // What tessera-train does not train is said before any rank starts.
    spec.cluster.gpu = "cpu";
    spec.parallel.schedule = spec::Schedule::zb_h1;
    QCOMPARE(launch::fit_problems(spec, {roomy}),
             std::vector<std::string>{"parallel.schedule=zb-h1: tessera-train executes gpipe, 1f1b and interleaved"});
    QVERIFY(endpointProblem("tcp://gpu-1:7070").empty());
    // Said once (it read "... is not tcp://HOST:PORT (agent endpoint ... is not tcp://HOST:PORT)").
    QCOMPARE(endpointProblem("gpu-1:7070"), std::string("agent address gpu-1:7070 is not tcp://HOST:PORT — did you mean tcp://gpu-1:7070?"));
    QCOMPARE(endpointProblem("tcp://gpu-1"), std::string("agent address tcp://gpu-1 is not tcp://HOST:PORT"));
    QCOMPARE(endpointProblem("tcp://gpu-1:99999"), std::string("agent address tcp://gpu-1:99999 is not tcp://HOST:PORT (PORT is 1-65535)"));
  }

  void screenshotsOfAStoredRun() {
    writer_->flush();
    for (const QString view : {"dashboard", "timeline"}) {
      const QString out = dir_.path() + "/" + view + ".png";
      QProcess gui;
      gui.start(TESSERA_GUI, {"--run", "feed run", "--db", db_, "--view", view, "--screenshot", out, "--size", "1200x800"});
      QVERIFY(gui.waitForFinished(60000));
      QVERIFY2(gui.exitCode() == 0, gui.readAllStandardError().constData());
      QImage image(out);
      QCOMPARE(image.size(), QSize(1200, 800));
      // Not blank: many distinct colours (curves, timeline blocks, rank cells).
      QSet<QRgb> colours;
      for (int y = 0; y < image.height(); y += 4)
        for (int x = 0; x < image.width(); x += 4) colours.insert(image.pixel(x, y));
      QVERIFY2(colours.size() > 50, qPrintable(QString::number(colours.size())));
    }
    QProcess bad;
    bad.start(TESSERA_GUI, {"--run", "nope", "--db", db_, "--screenshot", dir_.path() + "/x.png"});
    QVERIFY(bad.waitForFinished(30000));
    QCOMPARE(bad.exitCode(), 2);
    QVERIFY(bad.readAllStandardError().contains("--run: no run with id or name 'nope'"));
    QProcess wrong_view;
    wrong_view.start(TESSERA_GUI, {"--run", "feed run", "--db", db_, "--view", "memory", "--screenshot", dir_.path() + "/x.png"});
    QVERIFY(wrong_view.waitForFinished(30000));
    QCOMPARE(wrong_view.exitCode(), 2);
    QVERIFY(wrong_view.readAllStandardError().contains("--view with --run must be dashboard or timeline"));
  }
};

QTEST_MAIN(TestDashboardFeed)
#include "test_dashboard_feed.moc"
