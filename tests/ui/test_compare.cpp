// Comparing two stored runs written through the store's Writer: the config diff has exactly the
// fields that differ with both values; summary values and deltas match ones computed here from the
// points written; the baseline can change; the CSV export holds them; the plots draw one curve per
// run from the store's downsample, smoothed with the debiased EMA, on each x axis; PNG/PDF export.
#include <QAbstractItemModelTester>
#include <QScrollBar>
#include <QtTest/QtTest>

#include <cmath>
#include <limits>
#include <map>

#include "compare_view.hpp"
#include "history_window.hpp"
#include "history_fixture.hpp"
#include "run_comparison.hpp"
#include "smoothing.hpp"
#include "store/history.hpp"

using namespace tessera;
using namespace tessera::ui;

namespace {

/// Per-step means over ranks, then the mean over steps (docs/store.md's summary rule), by hand.
double meanOfStepMeans(const std::vector<std::vector<double>>& values) {
  double sum = 0;
  for (const auto& step : values) sum += (step[0] + step[1]) / 2;
  return sum / static_cast<double>(values.size());
}
double finalLoss(const test::WrittenRun& run) { return (run.loss.back()[0] + run.loss.back()[1]) / 2; }

/// Done runs of a tiny spec in a new history at `path`, each four steps of rank 0 holding its metrics
/// (name, value at every step).
void writeFourStepRuns(const std::string& path, const std::vector<std::pair<const char*, std::map<std::string, double>>>& runs) {
  store::Writer writer(path);
  for (const auto& [name, metrics] : runs) {
    store::RunRecord record;
    record.name = name;
    record.spec = test::tinySpec(name, 2, 2, 0.003);
    const auto run = writer.create_run(record);
    for (int64_t step = 1; step <= 4; ++step) {
      std::vector<store::MetricPoint> points;
      for (const auto& [metric, value] : metrics) points.push_back({metric, 0, step, 1.0 * step, value});
      writer.append(run, points);
    }
    writer.set_status(run, store::RunStatus::done);
  }
}

}  // namespace

class TestCompare : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string path_;
  test::WrittenRun a_, b_;

 private slots:
  void initTestCase() {
    path_ = dir_.filePath(QStringLiteral("history.sqlite")).toStdString();
    store::Writer writer(path_);
    a_ = test::writeRun(writer, "tiny-a", test::tinySpec("tiny-a", 2, 2, 0.003), {}, store::RunStatus::done, 5.0, 20000);
    b_ = test::writeRun(writer, "tiny-b", test::tinySpec("tiny-b", 1, 4, 0.001), {}, store::RunStatus::done, 5.5, 15000);
    writer.close();
  }

  void diffHasOnlyTheFieldsThatDifferWithBothValues() {
    store::History history(path_);
    RunComparison comparison(&history, {"tiny-a", b_.id.substr(0, 10)});  // a name and an id prefix
    const auto rows = comparison.configRows(true);
    QStringList paths;
    for (const auto& row : rows) paths << QString::fromStdString(row.path);
    QCOMPARE(paths, (QStringList{"name", "parallel.tp", "parallel.pp", "training.lr"}));
    QCOMPARE(rows[0].values[0]->get<std::string>(), std::string("tiny-a"));
    QCOMPARE(rows[0].values[1]->get<std::string>(), std::string("tiny-b"));
    QCOMPARE(rows[1].values[0]->get<int>(), 2);
    QCOMPARE(rows[1].values[1]->get<int>(), 1);
    QCOMPARE(rows[2].values[0]->get<int>(), 2);
    QCOMPARE(rows[2].values[1]->get<int>(), 4);
    QCOMPARE(rows[3].values[0]->get<double>(), 0.003);
    QCOMPARE(rows[3].values[1]->get<double>(), 0.001);

    ConfigDiffModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setComparison(&comparison);
    QCOMPARE(model.rowCount(), 4);
    QCOMPARE(model.headerData(1, Qt::Horizontal).toString(), QStringLiteral("tiny-a"));
    QCOMPARE(model.index(3, 0).data().toString(), QStringLiteral("training.lr"));
    QCOMPARE(model.index(3, 1).data().toString(), QStringLiteral("0.003"));
    QCOMPARE(model.index(3, 2).data().toString(), QStringLiteral("0.001"));
    model.setOnlyDifferences(false);
    QVERIFY(model.rowCount() > 20);
    int differing = 0;
    for (int r = 0; r < model.rowCount(); ++r) {
      const bool differs = model.index(r, 0).data(ConfigDiffModel::DiffersRole).toBool();
      differing += differs;
      if (model.index(r, 0).data().toString() == QLatin1String("model.num_layers")) {
        QVERIFY(!differs);
        QCOMPARE(model.index(r, 1).data().toString(), QStringLiteral("4"));
        QCOMPARE(model.index(r, 2).data().toString(), QStringLiteral("4"));
      }
    }
    QCOMPARE(differing, 4);
  }

  void summaryDeltasMatchThePointsWritten() {
    store::History history(path_);
    RunComparison comparison(&history, {a_.id, b_.id});
    QCOMPARE(comparison.baseline(), 0);
    const double loss_a = finalLoss(a_), loss_b = finalLoss(b_);
    QCOMPARE(*comparison.value(0, SummaryField::final_loss), loss_a);
    QCOMPARE(*comparison.value(1, SummaryField::final_loss), loss_b);
    QCOMPARE(*comparison.delta(1, SummaryField::final_loss), loss_b - loss_a);
    QCOMPARE(*comparison.delta(0, SummaryField::final_loss), 0.0);
    QVERIFY(qFuzzyCompare(*comparison.relativeDelta(1, SummaryField::final_loss), (loss_b - loss_a) / loss_a));
    const double mfu_a = meanOfStepMeans(a_.mfu), mfu_b = meanOfStepMeans(b_.mfu);
    QVERIFY(qFuzzyCompare(*comparison.delta(1, SummaryField::mean_mfu), mfu_b - mfu_a));
    const double tok_a = meanOfStepMeans(a_.tokens_per_s), tok_b = meanOfStepMeans(b_.tokens_per_s);
    QVERIFY(qFuzzyCompare(*comparison.delta(1, SummaryField::mean_tokens_per_s), tok_b - tok_a));
    // Step time: the runs' own step times, averaged as the other metrics (not the step's 2048 tokens
    // over the mean tokens/s, which the mean of a varying rate makes short).
    const double step_a = meanOfStepMeans(a_.step_time_s), step_b = meanOfStepMeans(b_.step_time_s);
    QVERIFY(qFuzzyCompare(*comparison.value(0, SummaryField::step_time_s), step_a));
    QVERIFY(qFuzzyCompare(*comparison.delta(1, SummaryField::step_time_s), step_b - step_a));
    QVERIFY(std::abs(step_a - 2048.0 / tok_a) > 1e-6 * step_a);
    QCOMPARE(*comparison.value(1, SummaryField::peak_memory_bytes), 2e8);
    QCOMPARE(*comparison.value(1, SummaryField::last_step), 10.0);
    QVERIFY(!comparison.value(0, SummaryField::mean_bubble));  // never reported: absent, not zero
    QVERIFY(!comparison.delta(1, SummaryField::mean_bubble));

    comparison.setBaseline(1);
    QCOMPARE(*comparison.delta(0, SummaryField::final_loss), loss_a - loss_b);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, comparison.setBaseline(2));

    CompareSummaryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setComparison(&comparison);
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.index(1, 0).data().toString(), QStringLiteral("tiny-b  (baseline)"));
    QCOMPARE(model.index(0, 2).data(CompareSummaryModel::DeltaRole).toDouble(), loss_a - loss_b);
    const QString cell = model.index(0, 2).data().toString();
    QVERIFY2(cell.startsWith(QString::number(loss_a, 'f', 4)) && cell.contains(QStringLiteral("−0.5000")), qPrintable(cell));
  }

  void mfuOfAnotherPeakIsMarked() {
    // Two CPU runs whose ranks timed different peaks at start-up: their MFU deltas say so, and a
    // cell's tooltip names its run's peak. Runs of one peak (within 1 %) are not marked.
    const std::string path = dir_.filePath(QStringLiteral("peaks.sqlite")).toStdString();
    std::vector<std::pair<const char*, std::map<std::string, double>>> runs;
    for (auto [name, peak] : {std::pair{"slow", 0.042}, std::pair{"fast", 0.104}, std::pair{"fast-again", 0.1045}})
      runs.push_back({name, {{"mfu", 0.02}, {"peak_tflops", peak}, {"loss", 2.5 + peak * 1e-6}}});
    writeFourStepRuns(path, runs);
    store::History history(path);
    RunComparison comparison(&history, {"slow", "fast", "fast-again"});
    QVERIFY(!comparison.samePeak(0, 1));
    QVERIFY(comparison.samePeak(1, 2));
    QVERIFY2(comparison.formatDelta(1, SummaryField::mean_mfu).endsWith(QStringLiteral("(another peak)")),
             qPrintable(comparison.formatDelta(1, SummaryField::mean_mfu)));
    comparison.setBaseline(1);
    QVERIFY(!comparison.formatDelta(2, SummaryField::mean_mfu).contains(QStringLiteral("peak")));
    // Losses 5e-10 apart and the same last step: no difference at the precision shown, no sign.
    QCOMPARE(comparison.formatDelta(2, SummaryField::final_loss), QStringLiteral("±0.0000"));
    QCOMPARE(comparison.formatDelta(2, SummaryField::last_step), QStringLiteral("±0"));
    QCOMPARE(comparison.formatDelta(2, SummaryField::mean_mfu), QStringLiteral("±0.00 pt"));
    CompareSummaryModel model;
    model.setComparison(&comparison);
    int mfu_column = 1;
    while (RunComparison::summaryFields()[mfu_column - 1] != SummaryField::mean_mfu) ++mfu_column;
    QCOMPARE(model.index(0, mfu_column).data(Qt::ToolTipRole).toString(), QStringLiteral("a share of 42.0 GFLOP/s (the runtime's peak)"));
  }

  // Model FLOP/s of CPU ranks (under 1 TFLOP/s) in GFLOP/s, the dashboard's unit; TFLOP/s otherwise.
  // A column of tokens/s reads in one unit, the largest's: "7.16 k" beside "16.1 k" (it said "7161"
  // beside "16.1 k"), the delta too.
  void tokensPerSecondReadInOneUnit() {
    const std::string path = dir_.filePath("tokens.sqlite").toStdString();
    writeFourStepRuns(path, {{"tok-slow", {{"tokens_per_s", 7161.0}}}, {"tok-fast", {{"tokens_per_s", 16100.0}}}});
    store::History history(path);
    RunComparison comparison(&history, {"tok-slow", "tok-fast"});
    QCOMPARE(comparison.formatInColumn(SummaryField::mean_tokens_per_s, *comparison.value(0, SummaryField::mean_tokens_per_s)),
             QStringLiteral("7.16 k"));
    QCOMPARE(comparison.formatInColumn(SummaryField::mean_tokens_per_s, *comparison.value(1, SummaryField::mean_tokens_per_s)),
             QStringLiteral("16.1 k"));
    QVERIFY2(comparison.formatDelta(1, SummaryField::mean_tokens_per_s).startsWith(QStringLiteral("+8.94 k")),
             qPrintable(comparison.formatDelta(1, SummaryField::mean_tokens_per_s)));
    CompareSummaryModel model;
    model.setComparison(&comparison);
    int column = -1;
    for (int c = 0; c < model.columnCount(); ++c)
      if (model.headerData(c, Qt::Horizontal).toString() == QStringLiteral("Mean tokens/s")) column = c;
    QVERIFY(column > 0);
    QVERIFY2(model.index(0, column).data().toString().startsWith(QStringLiteral("7.16 k")), qPrintable(model.index(0, column).data().toString()));
  }

  void modelFlopsOfCpuRanksAreInGflops() {
    const std::string path = dir_.filePath(QStringLiteral("flops.sqlite")).toStdString();
    writeFourStepRuns(path, {{"cpu-a", {{"model_tflops", 0.0015}, {"loss", 2.5}}},
                             {"cpu-b", {{"model_tflops", 0.0021}, {"loss", 2.5}}},
                             {"gpu", {{"model_tflops", 380.0}, {"loss", 2.5}}}});
    store::History history(path);
    CompareView view(&history);
    QString error;
    int panel = 0;
    while (RunComparison::metrics()[panel].name != std::string("model_tflops")) ++panel;
    QVERIFY2(view.setRuns({"cpu-a", "cpu-b"}, &error), qPrintable(error));
    QCOMPARE(view.plot()->panelTitle(panel), QStringLiteral("Model GFLOP/s per rank"));
    QCOMPARE(view.plot()->rawGraph(panel, 1)->data()->begin()->value, 2.1);
    QVERIFY2(view.setRuns({"cpu-a", "gpu"}, &error), qPrintable(error));
    QCOMPARE(view.plot()->panelTitle(panel), QStringLiteral("Model TFLOP/s per rank"));
    QCOMPARE(view.plot()->rawGraph(panel, 1)->data()->begin()->value, 380.0);
  }

  void csvExportHoldsValuesAndDeltas() {
    store::History history(path_);
    RunComparison comparison(&history, {"tiny-a", "tiny-b"});
    const QStringList lines = comparison.summaryCsv().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    QCOMPARE(lines[0], QStringLiteral("run_id,name,status,baseline,last_step,last_step_delta,final_loss,final_loss_delta,min_loss,"
                                      "min_loss_delta,mean_mfu,mean_mfu_delta,mean_tokens_per_s,mean_tokens_per_s_delta,"
                                      "step_time_s,step_time_s_delta,mean_bubble,mean_bubble_delta,peak_memory_bytes,"
                                      "peak_memory_bytes_delta"));
    const QStringList a = lines[1].split(QLatin1Char(',')), b = lines[2].split(QLatin1Char(','));
    QCOMPARE(a.size(), 20);
    QCOMPARE(a[0], QString::fromStdString(a_.id));
    QCOMPARE(a[1], QStringLiteral("tiny-a"));
    QCOMPARE(a[2], QStringLiteral("done"));
    QCOMPARE(a[3], QStringLiteral("yes"));
    QCOMPARE(b[3], QStringLiteral("no"));
    QCOMPARE(a[4], QStringLiteral("10"));
    QCOMPARE(a[6].toDouble(), finalLoss(a_));
    QCOMPARE(a[7].toDouble(), 0.0);
    QCOMPARE(b[6].toDouble(), finalLoss(b_));
    QCOMPARE(b[7].toDouble(), finalLoss(b_) - finalLoss(a_));  // exact: shortest round-trip text
    QVERIFY(qFuzzyCompare(b[13].toDouble(), meanOfStepMeans(b_.tokens_per_s) - meanOfStepMeans(a_.tokens_per_s)));
    QCOMPARE(b[16], QString());  // bubble never reported: empty
    QCOMPARE(b[17], QString());
  }

  void plotsDrawOneCurvePerRunFromTheDownsample() {
    store::History history(path_);
    CompareView view(&history);
    QString error;
    QVERIFY(!view.setRuns({"tiny-a"}, &error));
    QVERIFY2(error.contains("at least two runs"), qPrintable(error));
    QVERIFY(!view.setRuns({"tiny-a", "zzz"}, &error));
    QVERIFY2(error.contains("no run with id or name 'zzz'"), qPrintable(error));
    QVERIFY(!view.setRuns({"tiny-a", QString::fromStdString(a_.id)}, &error));
    QVERIFY2(error.contains("named twice"), qPrintable(error));
    QVERIFY2(view.setRuns({"tiny-a", "tiny-b"}, &error), qPrintable(error));
    ComparePlot* plot = view.plot();
    view.setSmoothing(0.5);
    QCOMPARE(plot->smoothing(), 0.5);
    for (int run = 0; run < 2; ++run) {
      const auto& written = run == 0 ? a_ : b_;
      QCPGraph* raw = plot->rawGraph(0, run);  // loss, rank 0
      QVERIFY(raw);
      QCOMPARE(raw->data()->size(), 10);
      std::vector<double> rank0;
      for (const auto& step : written.loss) rank0.push_back(step[0]);
      QCOMPARE((raw->data()->begin() + 9)->value, rank0[9]);
      const auto smoothed = debiased_ema(rank0, 0.5);
      QCPGraph* smooth = plot->smoothedGraph(0, run);
      QVERIFY(smooth);
      for (int i = 0; i < 10; ++i) QCOMPARE((smooth->data()->begin() + i)->value, smoothed[i]);
    }
    // Peak memory: the rank with the highest peak (rank 1 wrote 2e8 bytes), in MiB below 1 GiB.
    QCOMPARE(plot->rawGraph(7, 0)->data()->begin()->value, 2e8 / (1024.0 * 1024.0));
    // Every run's peak is that constant: the axis spans ±5 % of it, not the smoothed copy's rounding.
    const QCPRange peak = plot->panel(7)->axis(QCPAxis::atLeft)->range();
    QVERIFY2(peak.lower < 0.96 * 2e8 / (1024.0 * 1024.0) && peak.upper > 1.04 * 2e8 / (1024.0 * 1024.0),
             qPrintable(QString("%1 to %2").arg(peak.lower, 0, 'g', 12).arg(peak.upper, 0, 'g', 12)));
    QVERIFY(!plot->rawGraph(6, 0));  // bubble: not reported
    // The store's downsample: 4 buckets give at most 4 points, the last one the last step's.
    plot->setBuckets(4);
    QVERIFY(plot->rawGraph(0, 0)->data()->size() <= 4);
    QCOMPARE((plot->rawGraph(0, 0)->data()->end() - 1)->key, 10.0);
    plot->setBuckets(1000);
    view.setXAxis(XAxis::tokens);
    QCOMPARE((plot->rawGraph(0, 1)->data()->end() - 1)->key, 10.0 * 2048);
    view.setXAxis(XAxis::wall_time_s);
    QVERIFY(std::abs((plot->rawGraph(0, 1)->data()->end() - 1)->key - 9 * 2048.0 / 15000) < 1e-5);  // Unix seconds: ~1e-7 apart
    view.setSmoothing(0);
    QVERIFY(!plot->smoothedGraph(0, 0));
  }

  void exportsWriteFiles() {
    store::History history(path_);
    CompareView view(&history);
    QString error;
    QVERIFY(!view.exportSummaryCsv(dir_.filePath("none.csv"), &error));
    QVERIFY(view.setRuns({"tiny-a", "tiny-b"}, &error));
    const QString csv = dir_.filePath("summary.csv"), png = dir_.filePath("plots.png"), pdf = dir_.filePath("plots.pdf");
    QVERIFY2(view.exportSummaryCsv(csv, &error), qPrintable(error));
    QFile file(csv);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(file.readAll()), view.comparison()->summaryCsv());
    QVERIFY2(view.exportPlots(png, &error), qPrintable(error));
    const QImage image(png);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() >= 1200);
    QVERIFY2(view.exportPlots(pdf, &error), qPrintable(error));
    QFile pdf_file(pdf);
    QVERIFY(pdf_file.open(QIODevice::ReadOnly));
    QVERIFY(pdf_file.read(5) == "%PDF-");
    QVERIFY(!view.exportPlots(dir_.filePath("plots.gif"), &error));
    QVERIFY(error.contains(".png or .pdf"));
  }
  // A long run name neither widens the window (three runs made it 1159 px at least, and a 1024 px
  // window was refused) nor pushes the summary's figures off the table: the title ends in "…", the
  // baseline picker keeps its width, the name's column takes at most a quarter, cut in its middle.
  void aLongRunNameKeepsTheViewNarrow() {
    const std::string path = dir_.filePath("long-names.sqlite").toStdString();
    const std::string long_name = "c-tp2pp1dp4-lr1e-3-with-a-rather-long-run-name-to-test-elision-" + std::string(40, 'x');
    writeFourStepRuns(path, {{"short-a", {{"loss", 2.5}}}, {"short-b", {{"loss", 2.4}}}, {long_name.c_str(), {{"loss", 2.3}}}});
    store::History history(path);
    CompareView view(&history);
    QString error;
    QVERIFY2(view.setRuns({"short-a", "short-b", QString::fromStdString(long_name)}, &error), qPrintable(error));
    QVERIFY2(view.minimumSizeHint().width() <= 800, qPrintable(QString::number(view.minimumSizeHint().width())));
    view.resize(1000, 700);
    view.show();
    QCoreApplication::processEvents();
    view.fitTables();
    QVERIFY2(view.shownTitle().endsWith(QStringLiteral("…")), qPrintable(view.shownTitle()));
    QTableView* summary = view.summaryView();
    // A quarter of the table as it was when measured (a scroll bar may have come or gone since).
    QVERIFY2(summary->columnWidth(0) <= 0.3 * summary->viewport()->width() &&
                 summary->columnWidth(0) < summary->fontMetrics().horizontalAdvance(QString::fromStdString(long_name)),
             qPrintable(QString("%1 of %2").arg(summary->columnWidth(0)).arg(summary->viewport()->width())));
    QVERIFY(summary->model()->index(2, 0).data(Qt::ToolTipRole).toString().startsWith(QString::fromStdString(long_name)));
    // At 800 px the four columns of panels share the width: a long title ("Pipeline bubble (rank 0:
    // stage 0) (%)") breaks into lines instead of widening its column and squeezing the others.
    view.resize(800, 600);
    QCoreApplication::processEvents();
    view.plot()->replot();
    int narrowest = 1 << 30, widest = 0;
    for (QCPAxisRect* rect : view.plot()->axisRects()) {
      narrowest = std::min(narrowest, rect->outerRect().width());
      widest = std::max(widest, rect->outerRect().width());
    }
    QVERIFY2(narrowest >= 0.8 * widest, qPrintable(QString("panels %1 to %2 px wide").arg(narrowest).arg(widest)));
  }

  // Every panel's value axis has two ticks or more: two asked of a short axis gave the loss from 5.6
  // to 2.3 one, "4", at 800 × 600 (helper-10).
  void everyPanelHasTwoTicksOrMore() {
    const std::string path = dir_.filePath("ticks.sqlite").toStdString();
    writeFourStepRuns(path, {{"ticks-a", {{"loss", 5.6}, {"grad_norm", 3.6}}}, {"ticks-b", {{"loss", 2.3}, {"grad_norm", 0.4}}}});
    store::History history(path);
    CompareView view(&history);
    QString error;
    QVERIFY2(view.setRuns({"ticks-a", "ticks-b"}, &error), qPrintable(error));
    for (const QSize size : {QSize(800, 600), QSize(800, 540), QSize(800, 500), QSize(1024, 700)}) {
      view.resize(size);
      view.show();
      QCoreApplication::processEvents();
      view.plot()->replot();
      // Only an axis under four label lines tall may keep one: two ticks there would crowd their labels.
      for (QCPAxisRect* rect : view.plot()->axisRects()) {
        QCPAxis* axis = rect->axis(QCPAxis::atLeft);
        QVERIFY2(axis->tickVector().size() >= 2 || rect->height() < 4 * QFontMetrics(axis->tickLabelFont()).height(),
                 qPrintable(QString("%1 tick(s) in %2 px").arg(axis->tickVector().size()).arg(rect->height())));
      }
    }
  }

  // The summary's values line up in their column, the baseline's too (right-aligned whole it sat
  // under the others' deltas); every run's row is shown in an 800 × 600 view (one and a half of three
  // were); a long baseline name is cut in its middle and keeps its "(baseline)".
  void summaryValuesLineUpAndEveryRunIsShown() {
    const std::string path = dir_.filePath("aligned.sqlite").toStdString();
    const std::string long_name = "tiny-3d-tp2-pp1-dp4-lr1e-3-" + std::string(30, 'x') + "-baseline-of-the-sweep";
    writeFourStepRuns(path, {{long_name.c_str(), {{"loss", 2.6744}}}, {"run-b", {{"loss", 2.2943}}}, {"run-c", {{"loss", 2.3}}}});
    store::History history(path);
    CompareView view(&history);
    QString error;
    QVERIFY2(view.setRuns({QString::fromStdString(long_name), "run-b", "run-c"}, &error), qPrintable(error));
    view.resize(800, 600);
    view.show();
    QCoreApplication::processEvents();
    view.fitTables();
    QCoreApplication::processEvents();
    QTableView* summary = view.summaryView();
    const int rows = summary->model()->rowCount();
    QCOMPARE(rows, 3);
    const int lastRowBottom = summary->visualRect(summary->model()->index(rows - 1, 0)).bottom();
    QVERIFY2(lastRowBottom < summary->viewport()->height(), qPrintable(QString("row 3 ends at %1 of %2 px").arg(lastRowBottom).arg(summary->viewport()->height())));
    QVERIFY(!summary->verticalScrollBar()->isVisible());  // as tall as its rows: no scroll bar for three (it had one at +2 px)
    // In the final loss column, each row's value: its right edge is where its ink ends before the gap
    // to the delta, found as the last inked column before the first run of blank columns wider than a
    // space (the baseline has no delta).
    const QImage image = summary->viewport()->grab().toImage();
    const QColor base = summary->palette().color(QPalette::Base);
    const int column = 2;  // Run, Last step, Final loss
    QCOMPARE(summary->model()->headerData(column, Qt::Horizontal).toString(), QStringLiteral("Final loss"));
    const int gap = summary->fontMetrics().horizontalAdvance(QLatin1Char(' '));
    std::vector<int> valueEnds;
    for (int row = 0; row < rows; ++row) {
      const QRect cell = summary->visualRect(summary->model()->index(row, column)).adjusted(2, 2, -2, -2);
      const auto inked = [&](int x) {
        for (int y = cell.top(); y <= cell.bottom(); ++y)
          if (const QColor c = image.pixelColor(x, y); std::abs(c.lightness() - base.lightness()) > 60) return true;
        return false;
      };
      int end = -1, blank = 0;
      for (int x = cell.left(); x <= cell.right(); ++x) {
        if (inked(x)) {
          if (end >= 0 && blank > gap) break;
          end = x;
          blank = 0;
        } else {
          ++blank;
        }
      }
      QVERIFY2(end >= 0, qPrintable(QString("row %1: no value drawn").arg(row)));
      valueEnds.push_back(end);
    }
    for (int row = 1; row < rows; ++row)
      QVERIFY2(std::abs(valueEnds[row] - valueEnds[0]) <= 1,
               qPrintable(QString("row %1's value ends at %2 px, the baseline's at %3").arg(row).arg(valueEnds[row]).arg(valueEnds[0])));
    // The name as the first column draws it: cut in its middle, the mark whole.
    const QString name = summary->model()->index(0, 0).data(CompareSummaryModel::RunNameRole).toString();
    QCOMPARE(name, QString::fromStdString(long_name));
    const QString mark = summary->model()->index(0, 0).data().toString().mid(name.size());
    QCOMPARE(mark, QStringLiteral("  (baseline)"));
    const QFontMetrics fm = summary->fontMetrics();
    const QString cut = CompareView::fittedRunName(name, mark, fm, 200);
    QVERIFY2(cut.contains(QStringLiteral("…")) && cut.endsWith(mark) && cut.startsWith(QStringLiteral("tiny-3d")) &&
                 cut.contains(QStringLiteral("sweep")) && fm.horizontalAdvance(cut) <= 200,
             qPrintable(cut));
    QCOMPARE(CompareView::fittedRunName(QStringLiteral("run-b"), mark, fm, 200), QStringLiteral("run-b  (baseline)"));
  }

  // Runs compared while the Compare tab has never been shown (the history window's Compare button
  // does that): the tables are fitted when it is shown, not collapsed (sizes given to the hidden
  // splitter, 0 for the tables, kept them at 0 for good, helper-9).
  void comparedWhileHiddenIsFittedWhenShown() {
    const std::string path = dir_.filePath("hidden.sqlite").toStdString();
    writeFourStepRuns(path, {{"hidden-a", {{"loss", 2.5}}}, {"hidden-b", {{"loss", 2.4}}}, {"hidden-c", {{"loss", 2.3}}}});
    QString error;
    auto window = HistoryWindow::open(QString::fromStdString(path), &error);
    QVERIFY2(window, qPrintable(error));
    QVERIFY2(window->compare({"hidden-a", "hidden-b", "hidden-c"}, &error), qPrintable(error));
    window->resize(1024, 700);
    window->show();
    QTableView* summary = window->compareView()->summaryView();
    QTRY_VERIFY_WITH_TIMEOUT(summary->height() > 0, 2000);
    QCoreApplication::processEvents();
    const int lastRowBottom = summary->visualRect(summary->model()->index(2, 0)).bottom();
    QVERIFY2(lastRowBottom < summary->viewport()->height(),
             qPrintable(QString("row 3 ends at %1 of %2 px").arg(lastRowBottom).arg(summary->viewport()->height())));
    QVERIFY(!summary->verticalScrollBar()->isVisible());  // as tall as its rows
  }

  // Ctrl+W closes the history window (only the mouse could).
  void ctrlWClosesTheHistoryWindow() {
    const std::string path = dir_.filePath("close.sqlite").toStdString();
    writeFourStepRuns(path, {{"close-a", {{"loss", 2.5}}}});
    QString error;
    auto window = HistoryWindow::open(QString::fromStdString(path), &error);
    QVERIFY2(window, qPrintable(error));
    window->show();
    QApplication::setActiveWindow(window.get());
    QVERIFY(QTest::qWaitForWindowActive(window.get()));
    QTest::keyClick(QApplication::focusWidget() ? QApplication::focusWidget() : window.get(), Qt::Key_W, Qt::ControlModifier);
    QTRY_VERIFY(!window->isVisible());
  }

  // A run whose rank reported "inf" tokens/s once: that point is a gap; the panel's axis still spans
  // the finite values of both runs (it was left empty for both).
  void anInfinitePointDoesNotEmptyThePanel() {
    test::WrittenRun odd;
    {
      store::Writer writer(path_);
      odd = test::writeRun(writer, "tiny-inf", test::tinySpec("tiny-inf", 2, 2, 0.003), {}, store::RunStatus::done, 5.0, 18000);
      writer.append(writer.open_run(odd.id), store::MetricPoint{"tokens_per_s", 0, 5, 1.7e9 + 1, std::numeric_limits<double>::infinity()});
      writer.close();
    }
    store::History history(path_);
    CompareView view(&history);
    QString error;
    QVERIFY2(view.setRuns({"tiny-a", "tiny-inf"}, &error), qPrintable(error));
    const QCPRange tokens = view.plot()->panel(3)->axis(QCPAxis::atLeft)->range();
    double highest = 0;
    for (const auto& step : a_.tokens_per_s) highest = std::max(highest, step[0]);
    QVERIFY2(std::isfinite(tokens.lower) && std::isfinite(tokens.upper) && tokens.upper >= highest && tokens.lower < highest,
             qPrintable(QString("%1 to %2").arg(tokens.lower).arg(tokens.upper)));
    QVERIFY(view.plot()->rawGraph(3, 0)->data()->size() > 0);
  }
};

QTEST_MAIN(TestCompare)
#include "test_compare.moc"
