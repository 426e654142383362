// The main window as a user drives it: editing a field in the designer re-plans and updates the
// summary; an invalid field shows the planner's message at that field while the views keep the last
// valid plan; undo/redo; Save/Open round trip; export; the memory profile toggle.
#include <QTextDocumentFragment>

#include <csignal>
#include <sys/resource.h>

#include <QtTest/QtTest>

#include "active_window.hpp"

#include <QHeaderView>
#include <QScrollBar>
#include <QSpinBox>

#include "designer_panel.hpp"
#include "history_fixture.hpp"
#include "history_window.hpp"
#include "elided_label.hpp"
#include "main_window.hpp"
#include "memory_view.hpp"
#include "rank_grid_view.hpp"
#include "summary_strip.hpp"
#include "theme.hpp"
#include "timeline_view.hpp"

using namespace tessera;
using namespace tessera::ui;

namespace {
QString example(const char* name) { return QStringLiteral(TESSERA_SOURCE_DIR "/resources/examples/%1").arg(name); }
}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT
 private slots:
  // A summary cell narrower than its text ends in "…" (the whole text its tooltip), not mid-word.
  void aNarrowLabelEndsInAnEllipsis() {
    ElidedLabel label(QStringLiteral("interleaved · 48 microbatches"));
    label.resize(label.sizeHint());
    QVERIFY(!label.isElided());
    QCOMPARE(label.shownText(), label.text());
    label.resize(label.sizeHint().width() / 2, label.sizeHint().height());
    QVERIFY(label.isElided());
    QVERIFY2(label.shownText().endsWith(QChar(0x2026)) && label.shownText().size() < label.text().size(),
             qPrintable(label.shownText()));
  }

  void editingAFieldInTheDesignerReplansAndUpdatesTheSummary() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    window.show();
    const auto* summary = window.summary();
    QCOMPARE(summary->value(SummaryStrip::World), QStringLiteral("64"));
    QCOMPARE(summary->detail(SummaryStrip::World), QStringLiteral("TP8·PP4·DP2"));
    QCOMPARE(summary->value(SummaryStrip::Parameters), QStringLiteral("70.6 B"));
    QCOMPARE(summary->detail(SummaryStrip::Parameters), QStringLiteral("llama3-70b"));  // dense: no active share
    const QString memoryBefore = summary->value(SummaryStrip::Memory);
    const QString iterationBefore = summary->value(SummaryStrip::Iteration);

    // Type 2 into training.micro_batch_size through the field's editor.
    QTreeView* tree = window.designer()->fieldView();
    const QModelIndex mbs = window.specModel()->indexOfField("training.micro_batch_size");
    tree->setCurrentIndex(mbs);
    QVERIFY(!tree->findChild<QSpinBox*>());  // moving onto a field does not open it
    QTest::keyClick(tree, Qt::Key_2);        // typing does, with what was typed
    auto* spin = tree->findChild<QSpinBox*>();
    QVERIFY(spin);
    QCOMPARE(spin->text(), QStringLiteral("2"));
    QTest::keyClick(spin, Qt::Key_Return);  // the delegate commits on the next event loop turn
    QTRY_COMPARE(window.session()->spec().training.micro_batch_size, int64_t{2});
    // Space toggles a switch, even from the field's name.
    tree->setCurrentIndex(window.specModel()->indexOfField("training.flash_attention", SpecFieldModel::FieldColumn));
    QCOMPARE(tree->currentIndex(), window.specModel()->indexOfField("training.flash_attention"));
    QTest::keyClick(tree, Qt::Key_Space);
    QCOMPARE(window.session()->spec().training.flash_attention, false);
    QCOMPARE(window.session()->plan()->spec.training.micro_batch_size, int64_t{2});
    QVERIFY(summary->value(SummaryStrip::Memory) != memoryBefore);
    QVERIFY(summary->value(SummaryStrip::Iteration) != iterationBefore);
    QCOMPARE(summary->detail(SummaryStrip::Bubble), QStringLiteral("1f1b · 32 microbatches"));
    QVERIFY(window.windowTitle().contains("[*]"));
    QVERIFY(window.isWindowModified());
  }

  // A number typed the way a German keyboard writes it is refused with the rule, not misread:
  // "0,001" in training.lr became 1.0 (the editor's C-locale validator took the comma for a
  // thousands separator), and "0,5" was dropped without a word.
  void aDecimalCommaIsRefusedNotMisread() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-8b-8xh100.json"), nullptr));
    window.show();
    const double lr = window.session()->spec().training.lr;
    QTreeView* tree = window.designer()->fieldView();
    for (const char* typed : {"0,001", "0,5", "1,000"}) {
      tree->setCurrentIndex(window.specModel()->indexOfField("training.lr"));
      tree->edit(tree->currentIndex());
      auto* line = tree->findChild<QLineEdit*>();
      QVERIFY(line);
      line->setText(QString::fromLatin1(typed));
      QTest::keyClick(line, Qt::Key_Return);
      QTRY_VERIFY(!tree->findChild<QLineEdit*>() || !tree->findChild<QLineEdit*>()->isVisible());
      QCOMPARE(window.session()->spec().training.lr, lr);
      const QString said = window.statusBar()->currentMessage();
      QVERIFY2(said.startsWith(QStringLiteral("training.lr=\"%1\" is not a number").arg(typed)) && said.contains("point for decimals"),
               qPrintable(said));
    }
    // Written with a point, in either notation, it is taken.
    tree->edit(window.specModel()->indexOfField("training.lr"));
    auto* line = tree->findChild<QLineEdit*>();
    QVERIFY(line);
    line->setText(QStringLiteral("2.5e-4"));
    QTest::keyClick(line, Qt::Key_Return);
    QTRY_COMPARE(window.session()->spec().training.lr, 2.5e-4);
  }

  // `tessera --db FILE`: the window's Run History and launches use that file (it was ignored: the
  // default history opened); without one, $TESSERA_DB.
  void theWindowUsesTheHistoryItWasGiven() {
    QTemporaryDir dir;
    const QString given = dir.filePath("given.sqlite");
    {
      store::Writer writer(given.toStdString());
      test::writeRun(writer, "given-run", test::tinySpec("given-run", 1, 1, 3e-3), {}, store::RunStatus::done, 4.0, 1.0);
    }
    qputenv("TESSERA_DB", dir.filePath("env.sqlite").toUtf8());
    MainWindow byDefault(false);
    QCOMPARE(byDefault.historyPath(), dir.filePath("env.sqlite"));
    MainWindow window(false, given);
    qunsetenv("TESSERA_DB");
    QCOMPARE(window.historyPath(), given);
    QAction* history = nullptr;
    for (QAction* action : window.findChildren<QAction*>())
      if (action->shortcut() == QKeySequence(QStringLiteral("Ctrl+H"))) history = action;
    QVERIFY(history);
    history->trigger();
    auto* shown = window.findChild<HistoryWindow*>();
    QVERIFY(shown);
    const auto views = shown->findChildren<QAbstractItemView*>();
    // The run list of the given history: its one run, by name.
    const auto listsGivenRun = [](QAbstractItemView* view) {
      const QAbstractItemModel* model = view->model();
      if (!model || model->rowCount() != 1) return false;
      for (int column = 0; column < model->columnCount(); ++column)
        if (model->index(0, column).data().toString() == QLatin1String("given-run")) return true;
      return false;
    };
    QVERIFY(std::any_of(views.begin(), views.end(), listsGivenRun));
    // Drawable at the user guide's picture size (--size 1400x584): a baseline picker sized for an
    // icon made it 2 px taller.
    shown->resize(1400, 584);
    QCoreApplication::processEvents();
    QCOMPARE(shown->grab().size(), QSize(1400, 584));
    // The file replaced since (deleted, another written in its place): Ctrl+H opens the new one; the
    // window kept the deleted file, whose message said to open it again, which Ctrl+H could not.
    for (const char* suffix : {"", "-wal", "-shm"}) QFile::remove(given + suffix);
    {
      store::Writer writer(given.toStdString());
      test::writeRun(writer, "new-run", test::tinySpec("new-run", 1, 1, 3e-3), {}, store::RunStatus::done, 4.0, 1.0);
    }
    history->trigger();
    QCoreApplication::processEvents();
    QTRY_VERIFY(window.findChildren<HistoryWindow*>().size() == 1);
    const auto newest = window.findChild<HistoryWindow*>()->findChildren<QAbstractItemView*>();
    QVERIFY(std::any_of(newest.begin(), newest.end(), [](QAbstractItemView* view) {
      return view->model() && view->model()->rowCount() == 1 && view->model()->index(0, 0).data().toString() == QLatin1String("new-run");
    }));
  }

  void summaryShowsSizesBelowAGibInMib() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("tiny-3d.json"), nullptr));
    const auto* summary = window.summary();
    const double peakMiB = window.session()->plan()->memory.peak_bytes / 1048576.0;
    QCOMPARE(summary->value(SummaryStrip::Memory), QStringLiteral("%1 MiB / 24.0 GiB").arg(peakMiB, 0, 'f', 1));
    QCOMPARE(summary->detail(SummaryStrip::Memory), QStringLiteral("fits · 24.0 GiB free"));
    // A CPU cluster's ranks are not called GPUs; one node has no groups across nodes to speak of.
    QCOMPARE(summary->caption(SummaryStrip::World), QStringLiteral("CPU ranks"));
    QCOMPARE(summary->caption(SummaryStrip::Memory), QStringLiteral("Peak memory / rank"));
    QCOMPARE(summary->value(SummaryStrip::CrossNode), QStringLiteral("none"));
    QCOMPARE(summary->detail(SummaryStrip::CrossNode), QStringLiteral("one node"));
    // Model FLOP/s below a TFLOP/s in GFLOP/s (they read "0").
    QCOMPARE(summary->caption(SummaryStrip::Tflops), QStringLiteral("GFLOP/s / rank"));
    QCOMPARE(summary->value(SummaryStrip::Tflops),
             QString::number(window.session()->plan()->prediction.model_tflops_per_gpu * 1000, 'f', 1));
    QVERIFY(summary->value(SummaryStrip::Tflops) != QStringLiteral("0.0"));
    QVERIFY(window.session()->setField("cluster.gpu", "h100-sxm"));
    QCOMPARE(summary->caption(SummaryStrip::World), QStringLiteral("GPUs"));
  }

  void speedsOfAPlanThatDoesNotFitAreGreyed() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    const auto* summary = window.summary();
    const QColor normal = summary->valueColor(SummaryStrip::Mfu);
    QCOMPARE(summary->valueColor(SummaryStrip::Iteration), normal);
    QVERIFY(summary->detail(SummaryStrip::Mfu).startsWith("HFU"));
    QVERIFY(window.session()->setField("training.micro_batch_size", 4));
    QVERIFY(!window.session()->plan()->memory.fits);
    QVERIFY(summary->detail(SummaryStrip::Memory).startsWith("OOM by"));
    for (auto metric : {SummaryStrip::Iteration, SummaryStrip::Tflops, SummaryStrip::Mfu, SummaryStrip::Tokens}) {
      QVERIFY(summary->valueColor(metric) != normal);
      QCOMPARE(summary->detail(metric), QStringLiteral("— does not fit"));
    }
    QCOMPARE(summary->valueColor(SummaryStrip::Parameters), normal);  // not a speed
    QVERIFY(window.session()->setField("training.micro_batch_size", 1));
    QCOMPARE(summary->valueColor(SummaryStrip::Mfu), normal);
    QVERIFY(summary->detail(SummaryStrip::Mfu).startsWith("HFU"));
  }

  // The GPU's derived note gives its peak in the unit that shows it: the CPU preset's 0.2 TFLOP/s read
  // "0 TFLOP/s".
  void gpuNoteGivesThePeakInItsUnit() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("tiny-3d.json"), nullptr));
    const QString cpu = window.specModel()->indexOfField("cluster.gpu", SpecFieldModel::NoteColumn).data().toString();
    QVERIFY2(cpu.endsWith(QString::fromUtf8(" · 200.0\u00A0GFLOP/s")), qPrintable(cpu));  // kept with its unit where it wraps
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    const QString h100 = window.specModel()->indexOfField("cluster.gpu", SpecFieldModel::NoteColumn).data().toString();
    QVERIFY2(h100.endsWith(QString::fromUtf8(" · 989\u00A0TFLOP/s")), qPrintable(h100));
  }

  // The summary's values are never cut: a window too narrow for one line of cells gets two ("48.2 Gi"
  // at 1024 px), or three where the values do not fit on two (the designer beside an 800 px window cut
  // "48.2 GiB / 7…"), a wide one keeps one. Peak and capacity share their unit: "48.2 / 79.6 GiB".
  void summaryValuesAreNeverCut() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    window.show();
    const auto memoryIsWhole = [&] {
      for (const QLabel* label : window.summary()->findChildren<QLabel*>())
        if (label->text() == window.summary()->value(SummaryStrip::Memory))
          QVERIFY2(label->width() >= label->sizeHint().width(),
                   qPrintable(QString("%1: %2 < %3").arg(label->text()).arg(label->width()).arg(label->sizeHint().width())));
    };
    QCOMPARE(window.summary()->value(SummaryStrip::Memory), QStringLiteral("48.2 / 79.6 GiB"));
    for (const auto& [size, lines] : {std::pair{QSize(1024, 700), 2}, std::pair{QSize(1600, 1000), 1}, std::pair{QSize(800, 600), 3}}) {
      window.resize(size);
      QCoreApplication::processEvents();
      QCOMPARE(window.summary()->lines(), lines);
      memoryIsWhole();
    }
    // Values wider than usual (an out-of-memory micro-batch on an H200: three digits each side) at every
    // width between.
    QVERIFY(window.session()->setField("cluster.gpu", "h200"));
    QVERIFY(window.session()->setField("training.micro_batch_size", 16));
    QVERIFY2(window.summary()->value(SummaryStrip::Memory).count(QLatin1Char('.')) == 2, qPrintable(window.summary()->value(SummaryStrip::Memory)));
    for (int width = 1024; width <= 1600; width += 48) {
      window.resize(width, 800);
      QCoreApplication::processEvents();
      memoryIsWhole();
    }
  }

  // One line of cells only where every caption and detail fits whole too: GPT-3's details at 1024 px
  // ("TP8·PP8·D…", "interleaved · 48 microbatc…") were cut on one line that the values alone fitted.
  void summaryDetailsAreWholeOnOneLine() {
    PlanSession session;
    QVERIFY(session.open(example("gpt3-175b-table1.json"), nullptr));
    SummaryStrip strip(&session);
    strip.show();
    const auto elided = [&] {
      QStringList cut;
      for (const ElidedLabel* label : strip.findChildren<ElidedLabel*>())
        if (label->isElided()) cut << label->text();
      return cut;
    };
    for (const auto& [width, lines] : {std::pair{1024, 2}, std::pair{1600, 1}}) {
      strip.resize(width, strip.sizeHint().height());
      QCoreApplication::processEvents();
      QCOMPARE(strip.lines(), lines);
      QVERIFY2(elided().isEmpty(), qPrintable(QString("%1 px: %2").arg(width).arg(elided().join(" | "))));
    }
    // On two lines, a first-line detail does not sit on the caption under it.
    strip.resize(1024, strip.sizeHint().height());
    QCoreApplication::processEvents();
    const auto label = [&](const QString& text) {
      for (const ElidedLabel* l : strip.findChildren<ElidedLabel*>())
        if (l->text() == text) return l;
      return static_cast<const ElidedLabel*>(nullptr);
    };
    const auto* above = label(strip.detail(SummaryStrip::Parameters));
    const auto* below = label(strip.caption(SummaryStrip::Mfu));
    QVERIFY(above && below);
    QVERIFY2(below->geometry().top() - above->geometry().bottom() >= 6,
             qPrintable(QString("%1 px apart").arg(below->geometry().top() - above->geometry().bottom())));
    for (int width = 1024; width <= 1600; width += 16) {
      strip.resize(width, strip.sizeHint().height());
      QCoreApplication::processEvents();
      if (strip.lines() == 1) QVERIFY2(elided().isEmpty(), qPrintable(QString("%1 px: %2").arg(width).arg(elided().join(" | "))));
    }
  }

  void invalidFieldShowsThePlannersMessageThereAndGreysTheViews() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    const PlanPtr valid = window.session()->plan();
    const QImage before = window.rankGridView()->grab().toImage();
    QVERIFY(window.specModel()->setData(window.specModel()->indexOfField("parallel.tp"), qlonglong{3}));
    const QModelIndex note = window.specModel()->indexOfField("parallel.tp", SpecFieldModel::NoteColumn);
    const QString message = note.data(Qt::ToolTipRole).toString();
    QVERIFY2(message.startsWith("parallel.tp=3 must divide model.num_attention_heads=64"), qPrintable(message));
    // Beside the field, its rule without the "parallel.tp=3 " that its name and value already say.
    QCOMPARE(note.data().toString(), message.mid(QStringLiteral("parallel.tp=3 ").size()));
    QVERIFY(window.summary()->status().contains(message));
    // Clicking the problem shows its field in the designer.
    emit window.summary()->fieldRequested(QStringLiteral("parallel.tp"));
    QCOMPARE(window.designer()->fieldView()->currentIndex().data(SpecFieldModel::PathRole).toString(), QStringLiteral("parallel.tp"));
    // Under the field tree every problem in full, each a link to its field (the Derived column cuts them).
    const QStringList listed = window.designer()->problemsShown().split('\n');
    QCOMPARE(listed.size(), int(window.session()->errors().size()));
    QCOMPARE(listed.front(), QStringLiteral("⚠ ") + message);
    QVERIFY(window.designer()->problemsList()->toHtml().contains(QStringLiteral("href=\"parallel.tp\"")));
    emit window.designer()->problemsList()->anchorClicked(QUrl(QStringLiteral("parallel.dp")));
    QCOMPARE(window.designer()->fieldView()->currentIndex().data(SpecFieldModel::PathRole).toString(), QStringLiteral("parallel.dp"));
    // The views keep the last valid plan, greyed.
    QCOMPARE(window.session()->plan(), valid);
    QCOMPARE(window.summary()->value(SummaryStrip::World), QStringLiteral("64"));
    QVERIFY(window.rankGridView()->grab().toImage() != before);
    // Fixing the field clears the message and the grey.
    QVERIFY(window.specModel()->setData(window.specModel()->indexOfField("parallel.tp"), qlonglong{8}));
    QVERIFY(note.data().toString().isEmpty() || !note.data().toString().contains("must divide"));
    QVERIFY(!window.session()->stale());
    QVERIFY(window.designer()->problemsShown().isEmpty());
    // A problem of no field in the tree (the name) is listed however many the fields have: the list
    // stopped after four, and "the fields in red" did not hold it.
    for (const auto& [field, value] : {std::pair{"training.warmup_steps", -1}, std::pair{"training.weight_decay", -1},
                                       std::pair{"training.grad_clip", -1}, std::pair{"training.seed", -1},
                                       std::pair{"parallel.tp", 3}})
      QVERIFY(window.session()->setField(field, value));
    spec::RunSpec named = window.session()->spec();
    named.name = "two\nlines";
    window.session()->replaceSpec(named, QStringLiteral("rename"));
    const QString loose = window.session()->errorFor(QStringLiteral("name"));
    QVERIFY2(!loose.isEmpty(), qPrintable(window.session()->problemsText()));
    QVERIFY2(window.designer()->problemsShown().endsWith(QStringLiteral("⚠ ") + loose), qPrintable(window.designer()->problemsShown()));
    for (int i = 0; i < 6; ++i) window.session()->undoStack()->undo();
    QVERIFY(!window.session()->stale());
    QCOMPARE(window.rankGridView()->grab().toImage(), before);
    // On a narrow window the message ends in "…", and how many more problems there are stays on the
    // line (it was cut off with the message's end). The rule comes before the boilerplate: where the
    // rule would be cut, "— the views show the last valid plan." goes first (the tooltip keeps it).
    QVERIFY(window.specModel()->setData(window.specModel()->indexOfField("parallel.tp"), qlonglong{3}));
    window.resize(1024, 700);
    window.show();
    QCoreApplication::processEvents();
    const auto statusFits = [&] {  // the line as drawn is no wider than the strip
      QVERIFY2(window.summary()->shownStatusWidth() <= window.summary()->width(),
               qPrintable(QString("%1 > %2").arg(window.summary()->shownStatusWidth()).arg(window.summary()->width())));
    };
    const QString shown = window.summary()->shownStatus();
    // At 1024 px the whole rule fits once the boilerplate is left out (it was cut as "…heads=6…").
    const QString plain = QTextDocumentFragment::fromHtml(shown).toPlainText();
    QVERIFY2(plain.startsWith(QStringLiteral("⚠ parallel.tp=3 must divide model.num_attention_heads=64")) &&
                 plain.endsWith(QStringLiteral(" more)")) && !plain.contains(QStringLiteral("…")) &&
                 !plain.contains(QStringLiteral("the views show")),
             qPrintable(plain));
    QVERIFY(window.summary()->status().contains(QStringLiteral(" more) — the views show the last valid plan.")));
    statusFits();
    // Narrower, the rule is cut and "(and N more)" stays.
    window.resize(480, 700);
    QCoreApplication::processEvents();
    const QString narrow = QTextDocumentFragment::fromHtml(window.summary()->shownStatus()).toPlainText();
    QVERIFY2(narrow.contains(QStringLiteral("…")) && narrow.endsWith(QStringLiteral(" more)")), qPrintable(narrow));
    statusFits();
    // A valid plan's line: a long run name ends in "…" and the planning time stays (at 800 px the GPT-3
    // example's name ran off as "…(TP8·PP8·DP24, interle", the time lost with it).
    window.session()->undoStack()->undo();
    QVERIFY(!window.session()->stale());
    QVERIFY(window.openFile(example("gpt3-175b-table1.json"), nullptr));
    window.resize(800, 600);
    QCoreApplication::processEvents();
    const QString planned = QTextDocumentFragment::fromHtml(window.summary()->shownStatus()).toPlainText();
    QVERIFY2(planned.startsWith(QStringLiteral("GPT-3 175B")) && planned.contains(QStringLiteral("… · planned in ")), qPrintable(planned));
    statusFits();
    window.resize(1920, 1000);
    QCoreApplication::processEvents();
    QCOMPARE(QTextDocumentFragment::fromHtml(window.summary()->shownStatus()).toPlainText(), window.summary()->status());
  }

  // Every problem is listed (it stopped at four field problems, however tall the window), in a list
  // as tall as they are up to a third of the designer, scrolled beyond.
  void theProblemsListTakesUpToAThirdOfTheDesigner() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    for (const auto& [field, value] : {std::pair{"training.warmup_steps", -1}, std::pair{"training.weight_decay", -1},
                                       std::pair{"training.grad_clip", -1}, std::pair{"training.seed", -1},
                                       std::pair{"parallel.tp", 3}, std::pair{"parallel.dp", 0}})
      QVERIFY(window.session()->setField(field, value));
    QVERIFY(window.session()->errors().size() > 5);
    QCOMPARE(window.designer()->problemsShown().split('\n').size(), int(window.session()->errors().size()));
    window.show();
    for (const auto& [width, height] : {std::pair{1280, 1000}, std::pair{1280, 600}, std::pair{1024, 700}}) {
      window.resize(width, height);
      QCoreApplication::processEvents();
      const QTextBrowser* list = window.designer()->problemsList();
      const int lines = static_cast<int>(list->document()->size().height());  // laid out at the width it shows
      const QString sizes = QString("%1×%2: list %3 of %4 px, designer %5").arg(width).arg(height).arg(list->height()).arg(lines)
                                .arg(window.designer()->height());
      QVERIFY2(list->isVisible() && list->height() <= std::max(window.designer()->height() / 3, 3 * list->fontMetrics().lineSpacing()),
               qPrintable(sizes));
      QVERIFY2(list->height() >= lines || list->verticalScrollBar()->isVisible(), qPrintable(sizes));
      QVERIFY2(window.designer()->fieldView()->height() > list->height(), qPrintable(sizes));
      // Every line within the width (a label in a scroll area kept the width without its scroll bar).
      QVERIFY2(list->document()->size().width() <= list->viewport()->width(), qPrintable(sizes));
      QCOMPARE(list->horizontalScrollBar()->maximum(), 0);
      if (height == 1000) QVERIFY2(list->height() >= lines && !list->verticalScrollBar()->isVisible(), qPrintable(sizes));  // all of them in sight
    }
    // A palette switch reaches the list: its background the dark window's, its red readable there
    // (the light grey stayed under the dark palette's light red, about 2:1, helper-10).
    const QPalette before = QApplication::palette();
    applyTheme(ThemeChoice::dark);
    QCoreApplication::processEvents();
    auto* list = window.designer()->problemsList();
    const QColor back = list->palette().color(QPalette::Base);
    QCOMPARE(back, window.designer()->palette().color(QPalette::Window));
    QVERIFY2(colors::contrast(colors::warning(), back) >= 4.5, qPrintable(back.name() + " " + colors::warning().name()));
    QVERIFY(list->toHtml().contains(colors::warning().name(), Qt::CaseInsensitive));  // the links' colour too
    QApplication::setPalette(before);
    // Fixed, the list goes.
    for (int i = 0; i < 6; ++i) window.session()->undoStack()->undo();
    QVERIFY(!window.session()->stale());
    QVERIFY(!window.designer()->problemsList()->isVisible());
  }

  // A mixture of experts says what a token passes through beside its total.
  void aMixtureOfExpertsShowsItsActiveParameters() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    QVERIFY(window.session()->setField("model.preset", "mixtral-8x7b"));
    QVERIFY2(!window.session()->stale(), qPrintable(window.session()->problemsText()));
    QCOMPARE(window.summary()->value(SummaryStrip::Parameters), QStringLiteral("46.7 B"));
    QCOMPARE(window.summary()->detail(SummaryStrip::Parameters), QStringLiteral("12.9 B active · mixtral-8x7b"));
  }

  // Arrows through the model preset list (a closed combo box sets a preset at each press) make one
  // undo step, not one per preset passed; browsing back to the first makes none. Other fields' edits
  // stay steps of their own.
  void browsingAChoiceIsOneUndoStep() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    const spec::RunSpec original = window.session()->spec();
    QUndoStack* stack = window.session()->undoStack();
    QComboBox* presets = nullptr;
    for (auto* box : window.designer()->findChildren<QComboBox*>())
      if (box->findData(QStringLiteral("mixtral-8x7b")) >= 0) presets = box;
    QVERIFY(presets);
    window.show();
    presets->setFocus();
    QTest::keyClick(presets, Qt::Key_Down);
    QTest::keyClick(presets, Qt::Key_Down);
    QVERIFY(window.session()->spec().model.preset != original.model.preset);
    QCOMPARE(stack->count(), 1);
    stack->undo();
    QVERIFY(window.session()->spec() == original);
    // Browsed away and back to where it began (the GPU, whose name word "H100" comes back whole):
    // no step at all.
    QComboBox* gpus = nullptr;
    for (auto* box : window.designer()->findChildren<QComboBox*>())
      if (box->findData(QStringLiteral("h200")) >= 0) gpus = box;
    QVERIFY(gpus);
    gpus->setFocus();
    QTest::keyClick(gpus, Qt::Key_Down);
    QVERIFY(window.session()->spec().cluster.gpu != original.cluster.gpu);
    QTest::keyClick(gpus, Qt::Key_Up);
    QVERIFY2(window.session()->spec() == original, qPrintable(QString::fromStdString(window.session()->spec().name)));
    QCOMPARE(stack->count(), 0);
    QVERIFY(window.session()->setField("parallel.tp", 4));
    QVERIFY(window.session()->setField("parallel.pp", 8));
    QCOMPARE(stack->count(), 2);
    // An edit after an undo is a step of its own, though the step now on top set the same field.
    stack->undo();
    QVERIFY(window.session()->setField("parallel.tp", 2));
    QCOMPARE(stack->count(), 2);
    stack->undo();
    QCOMPARE(window.session()->spec().parallel.tp, int64_t{4});
  }

  // A choice in the field tree opens its list at once: arrows browse it, Enter chooses (the first
  // arrow press on the closed box chose the next schedule and closed the editor).
  void aChoiceFieldOpensItsListForArrowsToBrowse() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    QVERIFY(test::shownActive(window));
    QTreeView* tree = window.designer()->fieldView();
    const QModelIndex schedule = window.specModel()->indexOfField("parallel.schedule");
    tree->setCurrentIndex(schedule);
    tree->edit(schedule);
    auto* box = tree->findChild<QComboBox*>();
    QVERIFY(box);
    QTRY_VERIFY(box->view()->isVisible());
    QTest::keyClick(box->view(), Qt::Key_Down);
    QCOMPARE(window.session()->spec().parallel.schedule, spec::Schedule::one_f_one_b);
    const QString highlighted = box->view()->currentIndex().data().toString();
    QVERIFY(highlighted != QStringLiteral("1f1b"));
    QTest::keyClick(box->view(), Qt::Key_Return);
    QTRY_COMPARE(QString::fromStdString(std::string(spec::to_string(window.session()->spec().parallel.schedule))), highlighted);
    // Esc closes the list and the edit at one press, the value unchanged (the closed box stayed open).
    const spec::RunSpec chosen = window.session()->spec();
    QTRY_VERIFY(!tree->findChild<QComboBox*>());  // the chosen one's editor gone
    tree->edit(window.specModel()->indexOfField("parallel.schedule"));
    box = tree->findChild<QComboBox*>();
    QVERIFY(box);
    QTRY_VERIFY(box->view()->isVisible());
    QTest::keyClick(box->view(), Qt::Key_Down);
    QTest::keyClick(box->view(), Qt::Key_Escape);
    QTRY_VERIFY(!tree->findChild<QComboBox*>());
    QVERIFY(window.session()->spec() == chosen);
  }

  // Every menu has its own Alt key (Alt+R opened Run, then Runs), and Save As has its keys where the
  // platform gives none (the guide's Ctrl+Shift+S did nothing).
  void menusHaveTheirOwnKeys() {
    MainWindow window(false);
    QSet<QChar> mnemonics;
    for (const QAction* menu : window.menuBar()->actions()) {
      const QString text = menu->text();
      const qsizetype amp = text.indexOf(QLatin1Char('&'));
      QVERIFY2(amp >= 0 && amp + 1 < text.size(), qPrintable(text));
      const QChar key = text.at(amp + 1).toLower();
      QVERIFY2(!mnemonics.contains(key), qPrintable(QString("%1 shares Alt+%2").arg(text, key)));
      mnemonics.insert(key);
    }
    bool save_as = false;
    for (const QAction* action : window.findChildren<QAction*>())
      if (action->text() == QStringLiteral("Save &As…")) {
        save_as = true;
        QVERIFY(!action->shortcuts().isEmpty());
      }
    QVERIFY(save_as);
  }

  // Under a font 1.5× the default the designer's values and buttons are whole: the Value column was
  // 100 px whatever the font ("llama3-…"), and the panel's fixed least width of 380 px cut "Import
  // Hugging Face config.json…" on both sides.
  void aLargeFontKeepsTheDesignersValuesAndButtonsWhole() {
    const QFont before = QApplication::font();
    QFont large = before;
    large.setPointSizeF(before.pointSizeF() * 1.5);
    QApplication::setFont(large);
    {
      MainWindow window(false);
      QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
      window.resize(1280, 800);
      window.show();
      QCoreApplication::processEvents();
      const QTreeView* tree = window.designer()->fieldView();
      const int room = tree->columnWidth(SpecFieldModel::ValueColumn) - 2 * itemTextMargin(tree);
      for (const char* value : {"mixtral-8x7b", "interleaved", "llama3-70b"})
        QVERIFY2(tree->fontMetrics().horizontalAdvance(value) <= room,
                 qPrintable(QString("%1: %2 px in %3").arg(value).arg(tree->fontMetrics().horizontalAdvance(value)).arg(room)));
      for (const QPushButton* button : window.designer()->findChildren<QPushButton*>())
        QVERIFY2(button->width() >= button->sizeHint().width(),
                 qPrintable(QString("%1: %2 of %3 px").arg(button->text()).arg(button->width()).arg(button->sizeHint().width())));
    }
    QApplication::setFont(before);
  }

  // File ▸ Quit closes the other windows too (a dashboard kept the process running after it).
  void quitClosesEveryWindow() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("tiny-3d.json"), nullptr));
    window.show();
    QWidget dashboard;  // any other top-level window of the workbench
    dashboard.show();
    QAction* quit = nullptr;
    for (QAction* action : window.findChildren<QAction*>())
      if (action->text() == QStringLiteral("&Quit")) quit = action;
    QVERIFY(quit);
    quit->trigger();
    QVERIFY(!window.isVisible());
    QVERIFY(!dashboard.isVisible());
  }

  // Open Recent greys a file deleted since it was opened, and says it is missing (it was offered as
  // if there).
  void openRecentSaysWhichFilesAreMissing() {
    QTemporaryDir dir;
    const QString path = dir.filePath("gone.json");
    QVERIFY(QFile::copy(example("tiny-3d.json"), path));
    MainWindow window(false);
    QVERIFY(window.openFile(path, nullptr));
    QMenu* recent = nullptr;
    for (QMenu* menu : window.findChildren<QMenu*>())
      if (menu->title() == QStringLiteral("Open &Recent")) recent = menu;
    QVERIFY(recent);
    const auto entry = [&] {
      emit recent->aboutToShow();
      return recent->actions().value(0);
    };
    QVERIFY(entry() && entry()->isEnabled() && entry()->text() == QStringLiteral("gone.json"));
    QVERIFY(QFile::remove(path));
    QVERIFY(!entry()->isEnabled());
    QCOMPARE(entry()->text(), QStringLiteral("gone.json (missing)"));
  }

  void undoRedoRestoresTheSpecExactly() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("gpt3-175b-table1.json"), nullptr));
    const spec::RunSpec original = window.session()->spec();
    auto* model = window.specModel();
    QVERIFY(model->setData(model->indexOfField("parallel.schedule"), QStringLiteral("1f1b")));
    QVERIFY(model->setData(model->indexOfField("parallel.vpp"), qlonglong{1}));
    QVERIFY(model->setData(model->indexOfField("training.recompute"), QStringLiteral("selective")));
    QVERIFY(model->setData(model->indexOfField("cluster.gpu"), QStringLiteral("h100-sxm")));
    const spec::RunSpec edited = window.session()->spec();
    QVERIFY(!window.session()->stale());
    QUndoStack* stack = window.session()->undoStack();
    QCOMPARE(stack->count(), 4);
    QCOMPARE(stack->undoText(), QStringLiteral("Set cluster.gpu = h100-sxm"));
    stack->setIndex(0);
    QVERIFY(window.session()->spec() == original);
    QCOMPARE(window.summary()->detail(SummaryStrip::Bubble), QStringLiteral("interleaved · 48 microbatches"));
    stack->setIndex(4);
    QVERIFY(window.session()->spec() == edited);
    QCOMPARE(window.summary()->detail(SummaryStrip::Bubble), QStringLiteral("1f1b · 48 microbatches"));
  }

  // A save that cannot be written whole leaves the file as it was, and says why: the spec was
  // emptied first and then cut short (a disk that filled while writing; here a file size limit).
  void aFailedSaveKeepsTheFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath("run.json");
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    QVERIFY(window.session()->setField("name", std::string(3000, 'x')));
    QString error;
    QVERIFY2(window.session()->save(path, &error), qPrintable(error));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray before = file.readAll();
    file.close();
    QVERIFY(before.size() > 3000);
    QVERIFY(window.session()->setField("parallel.zero_stage", 1));
    // Files may grow to 2 KiB no more (a write past it fails with EFBIG, its signal ignored).
    rlimit limit{};
    QCOMPARE(::getrlimit(RLIMIT_FSIZE, &limit), 0);
    bool saved = true;
    {
      const rlimit was = limit;
      const auto signal_was = ::signal(SIGXFSZ, SIG_IGN);
      const auto restore = qScopeGuard([&] {  // at the block's end whatever happens: the log and the other tests write freely
        ::setrlimit(RLIMIT_FSIZE, &was);
        ::signal(SIGXFSZ, signal_was);
      });
      limit.rlim_cur = 2048;
      if (::setrlimit(RLIMIT_FSIZE, &limit) == 0) saved = window.session()->save(path, &error);
    }
    QVERIFY(!saved);
    QVERIFY2(error.startsWith(QStringLiteral("cannot write %1: ").arg(path)) && error.size() > path.size() + 16, qPrintable(error));
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), before);
    QVERIFY(window.isWindowModified());
  }

  void saveOpenRoundTrip() {
    QTemporaryDir dir;
    const QString path = dir.filePath("run.json");
    spec::RunSpec saved;
    {
      MainWindow window(false);
      QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
      QVERIFY(window.session()->setField("parallel.zero_stage", 1));
      QVERIFY(window.session()->setField("training.global_batch_size", 256));
      QString error;
      QVERIFY2(window.session()->save(path, &error), qPrintable(error));
      QVERIFY(!window.isWindowModified());
      QVERIFY(window.windowTitle().contains("run.json"));
      saved = window.session()->spec();
    }
    MainWindow reopened(false);
    QString error;
    QVERIFY2(reopened.openFile(path, &error), qPrintable(error));
    QVERIFY(reopened.session()->spec() == saved);
    QCOMPARE(reopened.summary()->detail(SummaryStrip::Bubble), QStringLiteral("1f1b · 128 microbatches"));
  }

  void memoryProfileToggleReplans() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("gpt3-175b-table1.json"), nullptr));
    QCOMPARE(window.session()->plan()->memory.profile, planner::MemoryProfile::tessera);
    const QString tessera = window.memoryView()->describeStage(0);
    window.session()->setMemoryProfile(planner::MemoryProfile::megatron);
    QCOMPARE(window.session()->plan()->memory.profile, planner::MemoryProfile::megatron);
    QVERIFY(window.memoryView()->describeStage(0) != tessera);
    QCOMPARE(window.session()->undoStack()->count(), 0);  // a view setting, not an edit of the spec
  }

  void windowStateAndRecentFilesPersist() {
    QTemporaryDir dir;
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir.path());
    {
      MainWindow window(true);
      QVERIFY(window.openFile(example("tiny-3d.json"), nullptr));
      QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
      window.setTheme(ThemeChoice::dark);
      window.showView(MainWindow::View::timeline);
      window.resize(1234, 777);
      window.show();
      QVERIFY(window.close());
    }
    MainWindow restored(true);
    QCOMPARE(restored.currentView(), MainWindow::View::timeline);
    QCOMPARE(restored.theme(), ThemeChoice::dark);
    QCOMPARE(restored.size(), QSize(1234, 777));
    const QStringList recent = QSettings().value("recentFiles").toStringList();
    QCOMPARE(recent.size(), 2);
    QVERIFY(recent.front().endsWith("llama3-70b-64xh100.json"));
    restored.setTheme(ThemeChoice::light);
  }

  void exportsTheCurrentViewAsPngAndPdf() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    window.resize(1400, 900);
    QVERIFY(test::shownActive(window));
    window.showView(MainWindow::View::timeline);
    QTemporaryDir dir;
    QVERIFY(window.exportCurrentView(dir.filePath("timeline.png")));
    QImage png(dir.filePath("timeline.png"));
    QVERIFY(png.width() > 600 && png.height() > 400);
    // The picture has no focus frame, though the timeline has the keyboard.
    auto* timeline = window.findChild<TimelineView*>();
    QVERIFY(timeline);
    timeline->setFocus();
    QTRY_VERIFY(timeline->hasFocus());
    QVERIFY(window.exportCurrentView(dir.filePath("focused.png")));
    QWidget* page = timeline;  // the tab's page, which the export draws
    while (page->parentWidget() && !qobject_cast<QStackedWidget*>(page->parentWidget())) page = page->parentWidget();
    const QPoint edge = timeline->mapTo(page, QPoint(1, timeline->height() / 2));
    QCOMPARE(page->grab().toImage().pixelColor(edge), timeline->palette().color(QPalette::Highlight));  // on screen: framed
    const QImage focused(dir.filePath("focused.png"));
    QVERIFY(focused.valid(edge));
    QVERIFY2(focused.pixelColor(edge) != timeline->palette().color(QPalette::Highlight), qPrintable(QString("at %1,%2").arg(edge.x()).arg(edge.y())));
    QVERIFY(window.exportCurrentView(dir.filePath("timeline.pdf")));
    QFile pdf(dir.filePath("timeline.pdf"));
    QVERIFY(pdf.open(QIODevice::ReadOnly));
    QVERIFY(pdf.read(5) == "%PDF-");
    QVERIFY(pdf.size() > 2000);
  }

  // At 1280×800 the designer's Derived column fits its viewport (a stretched last section kept 100 px
  // and ran under a horizontal scrollbar, cut without a mark), and a note longer than the column
  // breaks onto a second line, its row as tall as its lines (up to 1366 px most notes ended in "…").
  void theDerivedColumnFitsTheDesignerAt1280() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("gpt3-175b-table1.json"), nullptr));
    window.screenshot(MainWindow::View::designer, QSize(1280, 800));
    QTreeView* tree = window.designer()->fieldView();
    QCOMPARE(tree->horizontalScrollBar()->maximum(), 0);
    QCOMPARE(tree->header()->length(), tree->viewport()->width());
    const QModelIndex batch = window.specModel()->indexOfField("training.global_batch_size").siblingAtColumn(SpecFieldModel::NoteColumn);
    const QString note = batch.data().toString();
    QVERIFY2(tree->fontMetrics().horizontalAdvance(note) > tree->columnWidth(SpecFieldModel::NoteColumn), qPrintable(note));
    QCOMPARE(batch.data(Qt::ToolTipRole).toString(), note);  // the whole note, whatever the cell shows
    const int width = tree->columnWidth(SpecFieldModel::NoteColumn) - 2 * itemTextMargin(tree);
    int wrapped = 0;
    for (int section = 0; section < window.specModel()->rowCount(); ++section) {
      const QModelIndex parent = window.specModel()->index(section, 0);
      for (int row = 0; row < window.specModel()->rowCount(parent); ++row) {
        const QModelIndex cell = window.specModel()->index(row, SpecFieldModel::NoteColumn, parent);
        const QString text = cell.data().toString();
        if (text.isEmpty()) continue;
        const int needs = std::min(tree->fontMetrics().boundingRect(QRect(0, 0, width, 1 << 20), Qt::TextWordWrap, text).height(),
                                   2 * tree->fontMetrics().lineSpacing());  // two lines at the most
        wrapped += needs > tree->fontMetrics().height();
        QVERIFY2(tree->visualRect(cell).height() >= needs, qPrintable(QString("%1: %2 px of %3").arg(text).arg(tree->visualRect(cell).height()).arg(needs)));
      }
    }
    QVERIFY(wrapped >= 1);
  }

  void screenshotHasTheRequestedSize() {
    MainWindow window(false);
    QVERIFY(window.openFile(example("llama3-70b-64xh100.json"), nullptr));
    const QImage designer = window.screenshot(MainWindow::View::designer, QSize(1300, 850));
    QCOMPARE(designer.size(), QSize(1300, 850));
    QVERIFY(window.designer()->isVisible());
    const QImage memory = window.screenshot(MainWindow::View::memory, QSize(1300, 850));
    QVERIFY(!window.designer()->isVisible());
    QVERIFY(memory != designer);
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
