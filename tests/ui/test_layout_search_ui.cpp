// The Search Layouts dialog and its table model: QAbstractItemModelTester on the model over a real
// search, the dialog's fields filled from the default space, a search on its worker thread, Apply
// as one undoable step, field errors that name the field, a spec whose layout the cluster does not
// take, tessera-train's space, and closing the dialog while it searches.
#include <QAbstractItemModelTester>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QScrollBar>
#include <QHeaderView>
#include <QtTest/QtTest>

#include "active_window.hpp"

#include <algorithm>
#include <chrono>

#include "layout_search_dialog.hpp"
#include "layout_search_model.hpp"
#include "plan_session.hpp"
#include "single_click_style.hpp"

using namespace tessera;
using namespace tessera::ui;

namespace {
QString example(const char* name) { return QStringLiteral(TESSERA_SOURCE_DIR "/resources/examples/%1").arg(name); }

// Starts a search and waits up to 30 s for its result: true when it came.
bool searched(LayoutSearchDialog& dialog) {
  QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
  return dialog.startSearch() && (finished.count() > 0 || finished.wait(30000));
}
}  // namespace

class TestLayoutSearchUi : public QObject {
  Q_OBJECT
 private slots:
  void modelOverASearch() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-8b-8xh100.json"), nullptr));
    planner::SearchOptions options;
    options.top = 30;
    auto result = planner::search_layouts(session.spec(), planner::default_search_space(session.spec()), options);
    const auto best = result.best;
    LayoutSearchModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setResult(std::move(result));
    QCOMPARE(model.rowCount(), 30);
    QCOMPARE(model.columnCount(), int(LayoutSearchModel::ColumnCount));
    // The micro-batch column is named as tessera-cli search names it, spelled out in its tooltip.
    QCOMPARE(model.headerData(LayoutSearchModel::MicroBatch, Qt::Horizontal).toString(), QStringLiteral("MBS"));
    QVERIFY(model.headerData(LayoutSearchModel::MicroBatch, Qt::Horizontal, Qt::ToolTipRole).toString().startsWith("Micro-batch size"));
    for (int row = 0; row < model.rowCount(); ++row) {
      QCOMPARE(model.data(model.index(row, LayoutSearchModel::Layout)).toString(),
               QString::fromStdString(best[row].spec.layout_label()));
      QCOMPARE(model.data(model.index(row, LayoutSearchModel::TokensPerSecond), LayoutSearchModel::ValueRole).toDouble(),
               best[row].tokens_per_s);
      QCOMPARE(model.data(model.index(row, LayoutSearchModel::PeakMemory), LayoutSearchModel::ValueRole).toLongLong(),
               qlonglong(best[row].peak_bytes));
      QCOMPARE(model.data(model.index(row, LayoutSearchModel::Place)).toString(), QString::number(row + 1));
      QCOMPARE(model.layoutAt(row), &model.result().best[row]);
    }
    QVERIFY(model.data(model.index(0, LayoutSearchModel::Mfu)).toString().endsWith(QStringLiteral("%")));
    QCOMPARE(model.headerData(LayoutSearchModel::TokensPerSecond, Qt::Horizontal).toString(), QStringLiteral("Tokens/s"));
    QCOMPARE(model.layoutAt(30), nullptr);
  }

  // The Step column says every step in one unit with one number of decimals, the longest step's
  // ("98.3 s" above "100.1 s"; it mixed "98.25 s" and "100.1 s"), and sorts by the seconds.
  void stepTimesShareTheirColumnsFormat() {
    const auto column = [](std::vector<double> steps_s) {
      planner::SearchResult result;
      for (const double s : steps_s) result.best.push_back({spec::RunSpec{}, s, 1.0, 0.5, 0.1, 1});
      LayoutSearchModel model;
      model.setResult(std::move(result));
      QStringList texts;
      for (int row = 0; row < model.rowCount(); ++row) {
        texts << model.data(model.index(row, LayoutSearchModel::StepTime)).toString();
        if (model.data(model.index(row, LayoutSearchModel::StepTime), LayoutSearchModel::ValueRole).toDouble() != steps_s[row])
          texts << QStringLiteral("(value)");
      }
      return texts.join(QStringLiteral(", "));
    };
    QCOMPARE(column({98.25, 100.1, 7.5}), QStringLiteral("98.3 s, 100.1 s, 7.5 s"));
    QCOMPARE(column({9.87, 28.93}), QStringLiteral("9.87 s, 28.93 s"));
    QCOMPARE(column({0.312, 0.05}), QStringLiteral("312 ms, 50 ms"));
    QCOMPARE(column({900.0, 98.25}), QStringLiteral("15.0 min, 98.25 s"));  // ten minutes and more: as durations
  }

  void searchesAndAppliesAsOneUndoableStep() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-8b-8xh100.json"), nullptr));
    const auto original = session.spec();
    LayoutSearchDialog dialog(&session);
    QCOMPARE(dialog.listField("tp")->text(), QStringLiteral("1, 2, 4, 8"));
    QCOMPARE(dialog.listField("zero_stage")->text(), QStringLiteral("0, 1, 2, 3"));
    QVERIFY(dialog.recomputeBox(spec::Recompute::selective)->isChecked());
    QVERIFY(!dialog.scheduleBox(spec::Schedule::gpipe)->isChecked());
    QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QVERIFY(!dialog.isSearching());
    const auto& r = dialog.model()->result();
    QVERIFY(r.fitting > 0);
    QCOMPARE(dialog.model()->rowCount(), int(std::min<int64_t>(100, r.fitting)));
    QVERIFY2(dialog.summaryText().contains(QStringLiteral("fit — planned in")), qPrintable(dialog.summaryText()));
    QVERIFY2(dialog.givenText().contains(QStringLiteral("place ")), qPrintable(dialog.givenText()));
    QCOMPARE(dialog.progressText(), QStringLiteral("%1 of %1 layouts").arg(QLocale().toString(qlonglong(r.candidates))));
    QCOMPARE(dialog.table()->selectionModel()->selectedRows().size(), 1);  // the fastest, selected

    dialog.table()->selectRow(2);
    const auto chosen = dialog.model()->layoutAt(2)->spec;
    QVERIFY(dialog.applySelected());
    QCOMPARE(dialog.result(), int(QDialog::Accepted));
    QVERIFY(session.spec().parallel == chosen.parallel);
    QVERIFY(session.spec().training == chosen.training);
    // The name spells the layout ("… (TP2·DP4, ZeRO-1)"): it now spells the chosen one.
    QVERIFY(original.name.find("TP2·DP4, ZeRO-1") != std::string::npos);
    std::string renamed = original.name;
    renamed.replace(renamed.find("TP2·DP4, ZeRO-1"), std::string("TP2·DP4, ZeRO-1").size(),
                    chosen.layout_label() + ", ZeRO-" + std::to_string(chosen.effective_zero_stage()));
    QCOMPARE(session.spec().name, renamed);
    QVERIFY(!session.stale());
    session.undoStack()->undo();
    QVERIFY(session.spec() == original);
  }

  // A click on a column's header sorts by its number; the row applied is the one shown.
  // A search that finds nothing that fits suggests only what it did not try: with full recompute
  // ticked and the limit at 100 %, more GPUs or a smaller batch.
  void nothingFitsSuggestsWhatWasNotTried() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    QVERIFY(session.setField("cluster.nodes", 1));
    LayoutSearchDialog dialog(&session);
    dialog.recomputeBox(spec::Recompute::full)->setChecked(true);
    dialog.memoryPercent()->setValue(dialog.memoryPercent()->maximum());
    QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QCOMPARE(dialog.model()->result().fitting, int64_t{0});
    QVERIFY2(dialog.summaryText().endsWith(QStringLiteral("None fits: more GPUs or a smaller global batch may.")),
             qPrintable(dialog.summaryText()));
    dialog.memoryPercent()->setValue(90);
    finished.clear();
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QVERIFY2(dialog.summaryText().endsWith(QStringLiteral("None fits: more GPUs, a smaller global batch or a higher memory limit may.")),
             qPrintable(dialog.summaryText()));
  }

  // The result's columns share the table's width (its right third stayed empty at 1280 px), and never
  // need a horizontal scroll bar, at the first size and after a resize.
  void resultColumnsFillTheTable() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    LayoutSearchDialog dialog(&session);
    dialog.resize(1280, 800);
    dialog.show();
    QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    for (const int width : {1280, 1600, 1100}) {
      dialog.resize(width, 800);
      QCoreApplication::processEvents();
      const int used = dialog.table()->horizontalHeader()->length(), room = dialog.table()->viewport()->width();
      QVERIFY2(used <= room && used >= room - 4, qPrintable(QString("%1 px: columns %2 of %3").arg(width).arg(used).arg(room)));
      QTRY_VERIFY_WITH_TIMEOUT(!dialog.table()->horizontalScrollBar()->isVisible(), 2000);  // shown or hidden once laid out
    }
    // A column the user widens keeps its width when the dialog is resized (the share undid it), and
    // the next result is fitted again.
    auto* header = dialog.table()->horizontalHeader();
    const int dragged = header->sectionSize(1) + 60, other = header->sectionSize(2);
    header->resizeSection(1, dragged);
    dialog.resize(1400, 800);
    QCoreApplication::processEvents();
    QCOMPARE(header->sectionSize(1), dragged);
    QCOMPARE(header->sectionSize(2), other);
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 30000);
    QCoreApplication::processEvents();
    const int used = header->length(), room = dialog.table()->viewport()->width();
    QVERIFY2(used <= room && used >= room - 4, qPrintable(QString("after the next search: columns %1 of %2").arg(used).arg(room)));
  }

  // At 800 px every result column is in view, peak memory included (it was behind the horizontal
  // scroll bar: each column kept room for a sort indicator that only the sorted one shows), also
  // after a sort by another column.
  void resultColumnsFitAnEightHundredPixelWindow() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    LayoutSearchDialog dialog(&session);
    dialog.resize(800, 600);
    dialog.show();
    QVERIFY(searched(dialog));
    QHeaderView* header = dialog.table()->horizontalHeader();
    auto inView = [&](const char* when) {
      QCoreApplication::processEvents();
      const int used = header->length(), room = dialog.table()->viewport()->width();
      QVERIFY2(used <= room, qPrintable(QString("%1: columns %2 px in %3").arg(when).arg(used).arg(room)));
      QVERIFY2(!dialog.table()->horizontalScrollBar()->isVisible(), when);
    };
    inView("after the search");
    const int zero = 3;
    QCOMPARE(dialog.table()->model()->headerData(zero, Qt::Horizontal).toString(), QStringLiteral("ZeRO"));
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, QPoint(header->sectionViewportPosition(zero) + header->sectionSize(zero) / 2, header->height() / 2));
    QCOMPARE(header->sortIndicatorSection(), zero);
    inView("sorted by ZeRO");
  }

  // The dialog fits an 800 px window (it needed 840: the runtime's box sat in the left column of
  // fields), every field and box drawn whole there.
  void fitsAnEightHundredPixelWindow() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    LayoutSearchDialog dialog(&session);
    QVERIFY2(dialog.minimumSizeHint().width() <= 800, qPrintable(QString("needs %1 px").arg(dialog.minimumSizeHint().width())));
    dialog.resize(800, 600);
    dialog.show();
    QCoreApplication::processEvents();
    QList<QCheckBox*> boxes{dialog.tesseraTrainOnly()};
    for (auto r : {spec::Recompute::none, spec::Recompute::selective, spec::Recompute::full}) boxes << dialog.recomputeBox(r);
    for (auto sc : {spec::Schedule::one_f_one_b, spec::Schedule::interleaved, spec::Schedule::zb_h1, spec::Schedule::gpipe})
      boxes << dialog.scheduleBox(sc);
    for (const QCheckBox* box : boxes) {
      QVERIFY2(box->width() >= box->sizeHint().width(), qPrintable(box->text()));
      QVERIFY2(box->geometry().right() < box->parentWidget()->width(), qPrintable(box->text()));
    }
  }

  void sortedByAColumnAppliesTheRowShown() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-8b-8xh100.json"), nullptr));
    LayoutSearchDialog dialog(&session);
    QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    const auto& best = dialog.model()->result().best;
    const auto least = std::min_element(best.begin(), best.end(),
                                        [](const auto& a, const auto& b) { return a.peak_bytes < b.peak_bytes; });
    QVERIFY(least != best.begin());  // the fastest is not the leanest: the sort changes the first row
    dialog.table()->sortByColumn(LayoutSearchModel::PeakMemory, Qt::AscendingOrder);
    const auto* shown = dialog.table()->model();
    QCOMPARE(shown->index(0, LayoutSearchModel::PeakMemory).data(LayoutSearchModel::ValueRole).toLongLong(),
             qlonglong(least->peak_bytes));
    QCOMPARE(shown->index(0, LayoutSearchModel::Place).data().toString(), QString::number(least - best.begin() + 1));
    dialog.table()->selectRow(0);
    const auto chosen = least->spec;
    QVERIFY(dialog.applySelected());
    QVERIFY(session.spec().parallel == chosen.parallel);
    QVERIFY(session.spec().training == chosen.training);
  }

  void fieldErrorsNameTheField() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-8b-8xh100.json"), nullptr));
    LayoutSearchDialog dialog(&session);
    dialog.listField("tp")->setText(QStringLiteral("1, x"));
    QVERIFY(!dialog.startSearch());
    QCOMPARE(dialog.problemText(), QStringLiteral("TP: “x” is not a whole number from 1 to 65536"));
    dialog.listField("tp")->setText(QStringLiteral("2 4"));
    dialog.listField("zero_stage")->setText(QStringLiteral("4"));
    QVERIFY(!dialog.startSearch());
    QCOMPARE(dialog.problemText(), QStringLiteral("ZeRO: “4” is not a whole number from 0 to 3"));
    dialog.listField("zero_stage")->setText(QString());
    QVERIFY(!dialog.startSearch());
    QCOMPARE(dialog.problemText(), QStringLiteral("ZeRO: give at least one value"));
    dialog.listField("zero_stage")->setText(QStringLiteral("1"));
    for (auto r : {spec::Recompute::none, spec::Recompute::selective, spec::Recompute::full})
      dialog.recomputeBox(r)->setChecked(false);
    QVERIFY(!dialog.startSearch());
    QCOMPARE(dialog.problemText(), QStringLiteral("Recompute: tick at least one"));
    // Fixed: the narrowed space (TP 2 and 4, ZeRO-1, full recompute) is what is searched.
    dialog.recomputeBox(spec::Recompute::full)->setChecked(true);
    QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QVERIFY(dialog.problemText().isEmpty());
    QVERIFY(dialog.model()->rowCount() > 0);
    for (const auto& b : dialog.model()->result().best) {
      QVERIFY(b.spec.parallel.tp == 2 || b.spec.parallel.tp == 4);
      QCOMPARE(b.spec.effective_zero_stage(), int64_t{1});
      QVERIFY(b.spec.training.recompute == spec::Recompute::full);
    }
  }

  // The layout is what a search mends: a cluster it does not suit still searches; a model problem does not.
  void aLayoutTheClusterDoesNotTake() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    QVERIFY(session.setField(QStringLiteral("cluster.nodes"), 2));  // TP8·PP4 on 16 GPUs
    QVERIFY(session.stale());
    {
      LayoutSearchDialog dialog(&session);
      QVERIFY(dialog.problemText().isEmpty());
      QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
      QVERIFY(dialog.startSearch());
      QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
      QVERIFY2(dialog.givenText().startsWith(QStringLiteral("The spec's own layout is not valid here: ")),
               qPrintable(dialog.givenText()));
      QVERIFY(dialog.model()->rowCount() > 0);
      QVERIFY(dialog.applySelected());
      QVERIFY(!session.stale());  // the applied layout plans
      QCOMPARE(session.spec().world_size(), int64_t{16});
    }
    QVERIFY(session.setField(QStringLiteral("model.hidden_size"), 8191));
    LayoutSearchDialog dialog(&session);
    QVERIFY2(dialog.problemText().startsWith(QStringLiteral("The spec has a problem besides its layout (model.hidden_size")),
             qPrintable(dialog.problemText()));
    QVERIFY(!dialog.startSearch());
  }

  void tesseraTrainsSpace() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    LayoutSearchDialog dialog(&session);
    QVERIFY(!dialog.tesseraTrainOnly()->isChecked());
    QCOMPARE(dialog.listField("cp")->text(), QStringLiteral("1, 2, 4, 8"));
    QVERIFY(dialog.scheduleBox(spec::Schedule::zb_h1)->isChecked());
    // The box refills only the fields it governs (CP, EP, ZeRO, ZB-H1): an edit elsewhere stays.
    dialog.listField("tp")->setText(QStringLiteral("4, 8"));
    dialog.recomputeBox(spec::Recompute::full)->setChecked(false);
    dialog.tesseraTrainOnly()->setChecked(true);
    QCOMPARE(dialog.listField("cp")->text(), QStringLiteral("1"));
    QCOMPARE(dialog.listField("zero_stage")->text(), QStringLiteral("0, 1"));
    QVERIFY(!dialog.scheduleBox(spec::Schedule::zb_h1)->isChecked());
    QCOMPARE(dialog.listField("tp")->text(), QStringLiteral("4, 8"));
    QVERIFY(!dialog.recomputeBox(spec::Recompute::full)->isChecked());
    dialog.tesseraTrainOnly()->setChecked(false);
    QCOMPARE(dialog.listField("cp")->text(), QStringLiteral("1, 2, 4, 8"));
    QCOMPARE(dialog.listField("zero_stage")->text(), QStringLiteral("0, 1, 2, 3"));
    QVERIFY(dialog.scheduleBox(spec::Schedule::zb_h1)->isChecked());
    QCOMPARE(dialog.listField("tp")->text(), QStringLiteral("4, 8"));
    dialog.tesseraTrainOnly()->setChecked(true);
    // The box reaches the search: CP typed back in is refused by tessera-train's rule, never listed.
    dialog.listField("cp")->setText(QStringLiteral("1, 2"));
    QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    const auto& r = dialog.model()->result();
    QVERIFY(!r.best.empty());
    for (const auto& b : r.best) QCOMPARE(b.spec.parallel.cp, int64_t{1});
    QVERIFY(std::any_of(r.unsupported_fields.begin(), r.unsupported_fields.end(), [](const auto& f) { return f.first == "parallel.cp"; }));
    QVERIFY2(dialog.summaryText().contains(QStringLiteral("are beyond tessera-train (parallel.cp")), qPrintable(dialog.summaryText()));
    // A CPU cluster, which only tessera-train runs, starts with the box ticked.
    PlanSession cpu;
    QVERIFY(cpu.open(example("tiny-3d.json"), nullptr));
    LayoutSearchDialog tiny(&cpu);
    QVERIFY(tiny.tesseraTrainOnly()->isChecked());
    QCOMPARE(tiny.listField("cp")->text(), QStringLiteral("1"));
    // Its own layout has no sequence parallelism, which the search turns on: it is placed beside the
    // layouts that fit, and the line says so and why (it said only "not in the space searched").
    QSignalSpy tinyFinished(&tiny, &LayoutSearchDialog::searchFinished);
    QVERIFY(tiny.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(tinyFinished.count(), 1, 30000);
    const QString fits = QLocale().toString(qlonglong(tiny.model()->result().fitting));
    QVERIFY2(tiny.givenText().contains(QStringLiteral(" (itself and the %1 that fit; it is not in the space searched: its sequence "
                                                      "parallelism is off, and the search turns it on wherever TP > 1)").arg(fits)),
             qPrintable(tiny.givenText()));
  }

  // Enter on a row applies it (it searched again when Search was the default button).
  // After a search the keyboard still reaches the fields: Tab leaves the table (it walked the cells
  // for ever), and Enter in an edited field searches the new space (it applied the old result's row
  // and closed the dialog, the edit lost).
  void afterASearchEnterInAFieldSearchesAgain() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-8b-8xh100.json"), nullptr));
    const spec::RunSpec before = session.spec();
    LayoutSearchDialog dialog(&session);
    QVERIFY(test::shownActive(dialog));
    QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QCOMPARE(QApplication::focusWidget(), dialog.table());
    QTest::keyClick(dialog.table(), Qt::Key_Tab);
    QVERIFY2(QApplication::focusWidget() != dialog.table(), "Tab stayed in the table");
    QLineEdit* tp = dialog.listField("tp");
    tp->setFocus();
    tp->setText(QStringLiteral("2, 4"));
    QTest::keyClick(tp, Qt::Key_Return);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 30000);
    QVERIFY(dialog.isVisible());
    QVERIFY(session.spec() == before);
    for (int row = 0; row < dialog.model()->rowCount(); ++row) QVERIFY(dialog.model()->layoutAt(row)->spec.parallel.tp != 1);
  }

  // Tab goes down the left column of fields, then down the right one (it went ZeRO, Recompute on the
  // right, Schedules on the left, then back to the right for the memory limit).
  void tabGoesDownEachColumnOfFields() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-8b-8xh100.json"), nullptr));
    LayoutSearchDialog dialog(&session);
    QVERIFY(test::shownActive(dialog));
    const auto next = [](QWidget* from) {
      from->setFocus();
      QTest::keyClick(from, Qt::Key_Tab);
      return QApplication::focusWidget();
    };
    QCOMPARE(next(dialog.listField("tp")), dialog.listField("cp"));
    QCOMPARE(next(dialog.listField("vpp")), static_cast<QWidget*>(dialog.scheduleBox(spec::Schedule::one_f_one_b)));
    QCOMPARE(next(dialog.scheduleBox(spec::Schedule::gpipe)), dialog.listField("ep"));
    QCOMPARE(next(dialog.listField("zero_stage")), static_cast<QWidget*>(dialog.recomputeBox(spec::Recompute::none)));
    QCOMPARE(next(dialog.recomputeBox(spec::Recompute::full)), static_cast<QWidget*>(dialog.memoryPercent()));
  }

  // Under a style that activates items on one click (KDE's default), a click on a row selects it and
  // the dialog stays (it applied the layout and closed).
  void aSingleClickSelectsARowWhateverTheStyle() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-8b-8xh100.json"), nullptr));
    const spec::RunSpec before = session.spec();
    LayoutSearchDialog dialog(&session);
    test::SingleClickStyle style;
    dialog.table()->setStyle(&style);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    QVERIFY(searched(dialog));
    const QPoint row = dialog.table()->visualRect(dialog.table()->model()->index(1, 1)).center();
    QTest::mouseClick(dialog.table()->viewport(), Qt::LeftButton, {}, row);
    QCoreApplication::processEvents();
    QVERIFY(dialog.isVisible());
    QVERIFY(session.spec() == before);
    QCOMPARE(dialog.table()->selectionModel()->selectedRows().front().row(), 1);
  }

  // A result arriving while the user edits a field leaves the focus there (the table took it: the
  // next typed "8" picked row 85 and Enter applied that layout and closed the dialog).
  void aResultLeavesTheFocusInTheFieldBeingEdited() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-8b-8xh100.json"), nullptr));
    LayoutSearchDialog dialog(&session);
    QVERIFY(test::shownActive(dialog));
    QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
    QVERIFY(dialog.startSearch());
    QLineEdit* tp = dialog.listField("tp");
    tp->setFocus();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    QCoreApplication::processEvents();
    QCOMPARE(QApplication::focusWidget(), tp);
    // Started from the Search button and left alone, the table takes the keys.
    QPushButton* search = nullptr;
    for (auto* button : dialog.findChildren<QPushButton*>())
      if (button->text() == QStringLiteral("&Search")) search = button;
    QVERIFY(search);
    search->setFocus();
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 30000);
    QCoreApplication::processEvents();
    QCOMPARE(QApplication::focusWidget(), dialog.table());
  }

  void enterAppliesTheRow() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-8b-8xh100.json"), nullptr));
    LayoutSearchDialog dialog(&session);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
    QVERIFY(dialog.startSearch());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
    dialog.table()->selectRow(1);
    const auto chosen = dialog.model()->layoutAt(1)->spec;
    QTest::keyClick(dialog.table(), Qt::Key_Return);
    QCOMPARE(dialog.result(), int(QDialog::Accepted));
    QCOMPARE(finished.count(), 1);  // not searched again
    QVERIFY(session.spec().parallel == chosen.parallel);
  }

  // While a search runs nothing can be applied or searched again; Stop ends it with what was planned.
  void stopEndsTheSearchWithWhatWasPlanned() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    QVERIFY(session.setField(QStringLiteral("cluster.nodes"), 512));  // ~20 s of planning on two cores
    QVERIFY(session.setField(QStringLiteral("training.global_batch_size"), 1 << 20));
    LayoutSearchDialog dialog(&session);
    dialog.listField("micro_batch_size")->setText(QStringLiteral("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16"));
    QSignalSpy finished(&dialog, &LayoutSearchDialog::searchFinished);
    QVERIFY(dialog.startSearch());
    QVERIFY(dialog.isSearching());
    QVERIFY(!dialog.startSearch());
    QCOMPARE(dialog.model()->rowCount(), 0);
    QVERIFY(!dialog.applySelected());
    QTest::qWait(300);
    const auto buttons = dialog.findChildren<QPushButton*>();
    const auto stop = std::find_if(buttons.begin(), buttons.end(), [](auto* b) { return b->text() == QStringLiteral("S&top"); });
    QVERIFY(stop != buttons.end() && (*stop)->isEnabled());
    (*stop)->click();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 5000);
    const auto& r = dialog.model()->result();
    QVERIFY(r.cancelled);
    QVERIFY(r.planned > 0 && r.planned < r.candidates);
    QVERIFY2(dialog.summaryText().contains(QStringLiteral("Stopped after")), qPrintable(dialog.summaryText()));
  }

  // Closing while a large search runs stops it: the dialog waits for its worker, not for the search.
  void closingStopsTheSearch() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    QVERIFY(session.setField(QStringLiteral("cluster.nodes"), 512));  // ~20 s of planning on two cores
    QVERIFY(session.setField(QStringLiteral("training.global_batch_size"), 1 << 20));
    const auto start = std::chrono::steady_clock::now();
    {
      LayoutSearchDialog dialog(&session);
      dialog.listField("micro_batch_size")->setText(QStringLiteral("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16"));
      QVERIFY(dialog.startSearch());
      QVERIFY(dialog.isSearching());
    }
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    QVERIFY2(elapsed_s < 5, qPrintable(QString::number(elapsed_s)));
    QTest::qWait(200);  // whatever the worker posted to the dialog is dropped with it, not run
  }
};

QTEST_MAIN(TestLayoutSearchUi)
#include "test_layout_search_ui.moc"
