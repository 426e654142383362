// The workbench's Qt models: QAbstractItemModelTester on each, edits through the spec model
// re-plan, an invalid field carries the planner's message, undo/redo restores the spec exactly.
#include <QAbstractItemModelTester>
#include <QTextLayout>

#include <chrono>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>
#include <QtTest/QtTest>

#include "format.hpp"
#include "plan_session.hpp"
#include "plot_fit.hpp"
#include "rank_grid_model.hpp"
#include "spec_field_model.hpp"
#include "stage_memory_model.hpp"
#include "theme.hpp"
#include "timeline_model.hpp"

using namespace tessera;
using namespace tessera::ui;

namespace {
QString example(const char* name) { return QStringLiteral(TESSERA_SOURCE_DIR "/resources/examples/%1").arg(name); }
}  // namespace

class TestModels : public QObject {
  Q_OBJECT
 private slots:
  void bytesPickTheirUnit() {
    QCOMPARE(tessera::ui::formatBytes(int64_t{5} * 1024 * 1024 + 512 * 1024), QStringLiteral("5.5 MiB"));
    QCOMPARE(tessera::ui::formatBytes(int64_t{3} * 1024 * 1024 * 1024), QStringLiteral("3.0 GiB"));
    QCOMPARE(tessera::ui::formatBytes(0), QStringLiteral("0.0 MiB"));
    QCOMPARE(tessera::ui::formatBytes(int64_t{3} * 1024 * 1024, 2), QStringLiteral("3.00 MiB"));
    // The planner's cap on a memory term (a micro-batch of 65536 at 2^24 tokens read 1073741824.00 GiB).
    QCOMPARE(tessera::ui::formatBytes(int64_t{1} << 60), QStringLiteral("over 1 EiB"));
    QCOMPARE(tessera::ui::formatBytes((int64_t{1} << 60) - (int64_t{1} << 40)), QStringLiteral("1073740800.0 GiB"));
    QCOMPARE(tessera::ui::formatDevices(1, false), QStringLiteral("1 GPU"));
    QCOMPARE(tessera::ui::formatDevices(8, false), QStringLiteral("8 GPUs"));
    QCOMPARE(tessera::ui::formatDevices(8, true), QStringLiteral("8 CPU ranks"));
    QCOMPARE(tessera::ui::formatNodes(1), QStringLiteral("1 node"));
    QCOMPARE(tessera::ui::formatNodes(4), QStringLiteral("4 nodes"));
    // Three figures from 10 up, as tessera-cli plan prints a parameter count.
    QCOMPARE(tessera::ui::formatCount(70553706496.0), QStringLiteral("70.6 B"));
    QCOMPARE(tessera::ui::formatCount(8030261248.0), QStringLiteral("8.03 B"));
    QCOMPARE(tessera::ui::formatCount(175e9), QStringLiteral("175.0 B"));
    QCOMPARE(tessera::ui::formatSeconds(28.93), QStringLiteral("28.93 s"));
    QCOMPARE(tessera::ui::formatSeconds(0.0123), QStringLiteral("12.3 ms"));
    QCOMPARE(tessera::ui::formatDuration(900), QStringLiteral("15.0 min"));
    QCOMPARE(tessera::ui::formatDuration(101964.5), QStringLiteral("28.3 h"));
    QCOMPARE(tessera::ui::formatDuration(28.93), QStringLiteral("28.93 s"));
    QCOMPARE(tessera::ui::formatSeconds(101964.5), QStringLiteral("101964.5 s"));  // seconds at any length
    // A ruler's ticks share one unit, the largest tick's, with the decimals of their step.
    QCOMPARE(tessera::ui::formatTick(0.0, 0.5, 1.5), QStringLiteral("0.0 s"));
    QCOMPARE(tessera::ui::formatTick(0.5, 0.5, 1.5), QStringLiteral("0.5 s"));
    QCOMPARE(tessera::ui::formatTick(1.0, 0.5, 1.5), QStringLiteral("1.0 s"));
    QCOMPARE(tessera::ui::formatTick(4.0, 2.0, 20.4), QStringLiteral("4 s"));
    QCOMPARE(tessera::ui::formatTick(0.2, 0.1, 0.8), QStringLiteral("200 ms"));
    QCOMPARE(tessera::ui::formatTick(20.301, 0.001, 20.4), QStringLiteral("20.301 s"));
    QCOMPARE(tessera::ui::formatTick(0.0005, 0.0005, 0.004), QStringLiteral("0.5 ms"));
    QCOMPARE(tessera::ui::formatTick(4e-5, 2e-5, 1e-4), QStringLiteral("40 µs"));
    QCOMPARE(tessera::ui::formatTick(-1e-17, 0.2, 2.0), QStringLiteral("0.0 s"));
    QCOMPARE(tessera::ui::formatTick(600.0, 100.0, 700.0), QStringLiteral("600 s"));
    // A column's numbers in its largest's unit and decimals.
    QCOMPARE(tessera::ui::formatCountLike(7161, 16100), QStringLiteral("7.16 k"));
    QCOMPARE(tessera::ui::formatCountLike(7161, 9000), QStringLiteral("7161"));
    QCOMPARE(tessera::ui::formatCountLike(5e8, 1e9), QStringLiteral("0.50 B"));
    QCOMPARE(tessera::ui::formatCountLike(2.5e6, 1e9), QStringLiteral("2.50 M"));  // "0.00 B" would say nothing
    QCOMPARE(tessera::ui::formatSecondsLike(98.25, 100.1), QStringLiteral("98.3 s"));
    QCOMPARE(tessera::ui::formatSecondsLike(0.98, 1.02), QStringLiteral("0.98 s"));
    QCOMPARE(tessera::ui::formatSecondsLike(0.0123, 0.0456), QStringLiteral("12.3 ms"));
    QCOMPARE(tessera::ui::formatSecondsLike(0.004, 250), QStringLiteral("4.0 ms"));  // "0.0 s" would say nothing
    // Label strides: 1, 2, 4 or 5 times a power of ten, the least one at or above what is asked.
    QCOMPARE(tessera::ui::niceStride(0), 1);
    QCOMPARE(tessera::ui::niceStride(1), 1);
    QCOMPARE(tessera::ui::niceStride(3), 4);
    QCOMPARE(tessera::ui::niceStride(5), 5);
    QCOMPARE(tessera::ui::niceStride(6), 10);
    QCOMPARE(tessera::ui::niceStride(41), 50);
    QCOMPARE(tessera::ui::niceStride(2001), 4000);
    QCOMPARE(tessera::ui::niceStride(std::numeric_limits<int>::max()), std::numeric_limits<int>::max());
  }
  // The warning red is lighter under a dark application palette: its text (the comparison's
  // differing values) was dim on the dark base (helper-7).
  void warningTextIsReadableOnADarkPalette() {
    const QPalette before = QApplication::palette();
    const QColor darkBase(0x1A, 0x1C, 0x20);
    QApplication::setPalette(QPalette(QColor(0x2A, 0x2D, 0x33), darkBase));
    const QColor onDark = tessera::ui::colors::warning();
    QApplication::setPalette(QPalette(QColor(0xEF, 0xF0, 0xF1), Qt::white));
    const QColor onLight = tessera::ui::colors::warning();
    QApplication::setPalette(before);
    QVERIFY2(tessera::ui::colors::contrast(onDark, darkBase) >= 7.0, qPrintable(onDark.name()));
    QCOMPARE(onLight, QColor(0xE1, 0x57, 0x59));
    QVERIFY(onDark.red() > onDark.green() * 1.5);  // still red
  }
  void numbersTakeTheInkOfMoreContrast() {
    // Numbers on a tile or block: the ink of more contrast, at least 4:1 on every qualitative colour and
    // op colour (4.5:1, WCAG AA, on all but the brown, whose best is white's 4.1); white on the orange
    // was 2.4:1 (helper-5).
    QVERIFY(std::abs(tessera::ui::colors::contrast(Qt::white, Qt::black) - 21.0) < 1e-9);
    QCOMPARE(tessera::ui::colors::inkOn(QColor(0xF2, 0x8E, 0x2B)), QColor(0x1F, 0x23, 0x28));
    QCOMPARE(tessera::ui::colors::inkOn(QColor(0x1A, 0x1C, 0x20)), QColor(Qt::white));
    for (int i = 0; i < 10; ++i) {
      const QColor tile = tessera::ui::colors::category(i, 10);
      QVERIFY2(tessera::ui::colors::contrast(tessera::ui::colors::inkOn(tile), tile) >= 4.0, qPrintable(tile.name()));
    }
    for (const QColor& block : {tessera::ui::colors::forward(), tessera::ui::colors::backward(), tessera::ui::colors::backwardInput(),
                                tessera::ui::colors::backwardWeight()})
      QVERIFY2(tessera::ui::colors::contrast(tessera::ui::colors::inkOn(block), block) >= 4.0, qPrintable(block.name()));
  }
  // Titles break at their separators to the width, a " —" ending a line counted in it, and each line
  // of a text of several on its own (the memory view's notes were measured as one line).
  void titlesWrapToTheirWidth() {
    const QFontMetrics fm(QApplication::font());
    const QString title = QStringLiteral("Per-GPU memory by pipeline stage — tessera profile · peak 118.7 GiB of 80.0 GiB · OUT OF MEMORY by 38.7 GiB");
    QCOMPARE(tessera::ui::wrapTitle(title, fm, fm.horizontalAdvance(title)), title);
    for (int width = 120; width <= fm.horizontalAdvance(title); width += 7) {
      const QString wrapped = tessera::ui::wrapTitle(title, fm, width);
      for (const QString& line : wrapped.split('\n'))
        QVERIFY2(fm.horizontalAdvance(line) <= width || !line.contains(' '),
                 qPrintable(QString("%1 px: '%2'").arg(width).arg(line)));
      QVERIFY(!wrapped.contains(QStringLiteral("\n·")) && !wrapped.contains(QStringLiteral("· \n")));
      // Nothing lost but the " ·" a break replaces.
      QCOMPARE(QString(wrapped).replace('\n', ' ').remove(QStringLiteral(" ·")).simplified(), QString(title).remove(QStringLiteral(" ·")));
    }
    const QString two = QStringLiteral("note: the first one\nnote: a second, longer one");
    QCOMPARE(tessera::ui::wrapTitle(two, fm, fm.horizontalAdvance(QStringLiteral("note: a second, longer one"))), two);
  }

  // A fitted legend puts on a row as many items as its width takes whole, at most the count asked:
  // the dashboard's "ranks 0–2 · rank 3 · ranks 4–7" ran into each other at a fixed four in 180 px.
  void legendRowsFitTheirWidth() {
    tessera::ui::FittedPlot plot;
    plot.legend->setVisible(true);
    plot.axisRect()->insetLayout()->take(plot.legend);
    plot.plotLayout()->addElement(1, 0, plot.legend);
    plot.plotLayout()->setRowStretchFactor(1, 0.001);
    plot.fitLegend(plot.legend, 4);
    for (const char* name : {"ranks 0–2", "rank 3", "ranks 4–7", "rank 8"}) plot.addGraph()->setName(QString::fromUtf8(name));
    plot.show();
    const auto itemsApart = [&](int width) {
      plot.resize(width, 200);
      QCoreApplication::processEvents();  // the resize event sets the plot's viewport
      plot.replot();
      QList<QCPAbstractLegendItem*> items;  // the grid's cells, some empty in its last row
      for (int i = 0; i < plot.legend->itemCount(); ++i)
        if (plot.legend->item(i)) items << plot.legend->item(i);
      QCOMPARE(items.size(), 4);
      for (int i = 0; i < items.size(); ++i) {
        const QRect item = items[i]->outerRect();
        QVERIFY2(item.width() >= items[i]->minimumOuterSizeHint().width(), qPrintable(QString("%1 px: item %2 cut").arg(width).arg(i)));
        QVERIFY2(item.right() <= width, qPrintable(QString("%1 px: item %2 ends at %3").arg(width).arg(i).arg(item.right())));
        for (int j = 0; j < i; ++j)
          QVERIFY2(!item.intersects(items[j]->outerRect()), qPrintable(QString("%1 px: items %2 and %3 overlap").arg(width).arg(j).arg(i)));
      }
    };
    for (const int width : {180, 260, 400, 800}) itemsApart(width);
    QCOMPARE(plot.legend->wrap(), 4);  // never more than asked
    itemsApart(180);
    QVERIFY2(plot.legend->wrap() < 4, qPrintable(QString::number(plot.legend->wrap())));
  }
  // A derived note wraps (two lines in the designer) with each number kept with its unit: the line
  // break fell between "4.72" and "M tokens/step", and the first line read as a whole value.
  void notesKeepEachNumberWithItsUnit() {
    QCOMPARE(keepUnitsWithNumbers("3 microbatches · 4.72 M tokens/step · 79.6 GiB · 989 TFLOP/s · 18.3 % · 20 s · 8 stages"),
             QString::fromUtf8("3 microbatches · 4.72\u00A0M tokens/step · 79.6\u00A0GiB · 989\u00A0TFLOP/s · 18.3\u00A0% · 20\u00A0s · "
                               "8 stages"));
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    SpecFieldModel model(&session);
    const QRegularExpression unit_first(QStringLiteral(R"(^\s*(?:[kMBT]|[KMGTE]iB|B|[GTP]FLOP/s|%|µs|ms|s|min|h)(?![\w/]))"));
    QFont font;
    for (const char* field : {"training.global_batch_size", "cluster.gpu", "model.preset"}) {
      const QString note = model.indexOfField(field, SpecFieldModel::NoteColumn).data().toString();
      QVERIFY2(note.contains(QRegularExpression(R"(\d\x{00A0}\S)")), qPrintable(note));
      // Wrapped as the view's style wraps an item's text, at every width its number and unit fit in.
      for (int width = 90; width <= 400; ++width) {
        QTextLayout layout(note, font);
        QTextOption option;
        option.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
        layout.setTextOption(option);
        layout.beginLayout();
        for (QTextLine line = layout.createLine(); line.isValid(); line = layout.createLine()) line.setLineWidth(width);
        layout.endLayout();
        for (int i = 1; i < layout.lineCount(); ++i) {
          const int start = layout.lineAt(i).textStart();
          const QString before = note.left(start).trimmed();
          QVERIFY2(before.isEmpty() || !before.back().isDigit() || !unit_first.match(note.mid(start)).hasMatch(),
                   qPrintable(QString("%1 at %2 px: \"%3\" | \"%4\"").arg(field).arg(width).arg(before, note.mid(start))));
        }
      }
    }
  }

  // Uneven pipeline stages in the designer: the layers of each stage beside num_layers, the rule of a
  // split that does not divide at its field, the split offered where PP does not divide the layers,
  // and what an even share comes to beside the end stages' fields.
  void unevenStagesInTheDesigner() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-405b-8192xh100.json"), nullptr));
    SpecFieldModel model(&session);
    const auto note = [&](const char* field) { return model.indexOfField(field, SpecFieldModel::NoteColumn).data().toString(); };
    QCOMPARE(note("model.num_layers"), QString::fromUtf8("7, 8 × 14, 7 by stage"));
    QCOMPARE(note("parallel.first_stage_layers"), QString());
    // A new PP sets the end stages again in the same step, as the layout search would; undo restores them.
    QVERIFY(session.setField("parallel.pp", 8));
    QVERIFY(!session.stale());
    QCOMPARE(session.spec().stage_layers_text(), std::string("15, 16 × 6, 15"));
    QVERIFY2(session.undoStack()->undoText().contains("(end stages of 15 and 15 layers)"), qPrintable(session.undoStack()->undoText()));
    QVERIFY(session.setField("parallel.pp", 2));
    QCOMPARE(session.spec().stage_layers_text(), std::string("63 × 2"));
    QVERIFY(!session.spec().sets_end_stages());
    session.undoStack()->undo();
    session.undoStack()->undo();
    QCOMPARE(session.spec().stage_layers_text(), std::string("7, 8 × 14, 7"));
    // Also where the old split would still divide the layers (7, 56, 56, 7 on PP 4), and on one stage.
    QVERIFY(session.setField("parallel.pp", 4));
    QCOMPARE(session.spec().stage_layers_text(), std::string("31, 32 × 2, 31"));
    QVERIFY(session.setField("parallel.pp", 1));
    QVERIFY(!session.stale());
    QVERIFY(!session.spec().sets_end_stages());
    session.undoStack()->undo();
    session.undoStack()->undo();
    // The timeline's schedule comparison: interleaving's two virtual stages split as the search would.
    const auto interleaved = session.planWithSchedule(spec::Schedule::interleaved);
    QVERIFY2(interleaved.plan, qPrintable(interleaved.error));
    QCOMPARE(interleaved.plan->spec.stage_layers_text(), std::string("8 × 15, 6"));
    QVERIFY(session.setField("parallel.first_stage_layers", 0));
    QVERIFY2(session.errorFor("parallel.last_stage_layers")
                 .contains("the 119 layers that parallel.last_stage_layers=7 leaves of model.num_layers=126 must split evenly "
                           "over the other 15 stages"),
             qPrintable(session.errorFor("parallel.last_stage_layers")));
    QCOMPARE(session.relatedErrorFor("model.num_layers"), session.errorFor("parallel.last_stage_layers"));  // named by the rule
    QVERIFY(session.setField("parallel.last_stage_layers", 0));
    QVERIFY2(session.errorFor("parallel.pp").contains(QString::fromUtf8("(7 and 7 split them as 7, 8 × 14, 7)")),
             qPrintable(session.errorFor("parallel.pp")));
    QVERIFY(session.setField("parallel.pp", 2));
    QVERIFY(!session.stale());
    QCOMPARE(note("model.num_layers"), QString("63 per stage"));
    QCOMPARE(note("parallel.first_stage_layers"), QString::fromUtf8("→ 63, an even share"));
    session.undoStack()->undo();
    session.undoStack()->undo();
    session.undoStack()->undo();
    QVERIFY(!session.stale());
    QCOMPARE(session.spec().stage_layers_text(), std::string("7, 8 × 14, 7"));
  }

  // A rule that names a second field marks that one too, more lightly, with the rule beside it: vpp=2
  // under 1f1b is fixed at vpp or at schedule, and schedule was left unmarked.
  void aRuleMarksTheOtherFieldItNames() {
    PlanSession session;
    SpecFieldModel model(&session);
    QVERIFY(session.setField("parallel.vpp", 2));
    const QString rule = session.errorFor("parallel.vpp");
    QVERIFY2(rule.contains("parallel.schedule=interleaved"), qPrintable(rule));
    QCOMPARE(session.relatedErrorFor("parallel.schedule"), rule);
    QCOMPARE(session.relatedErrorFor("parallel.vpp"), QString());  // its own rule, not a related one
    QCOMPARE(session.relatedErrorFor("parallel.pp"), QString());
    QCOMPARE(session.relatedErrorFor("parallel.sched"), QString());  // a path as a whole
    const QModelIndex schedule = model.indexOfField("parallel.schedule", SpecFieldModel::NoteColumn);
    QCOMPARE(schedule.data().toString(), rule);
    QCOMPARE(schedule.data(Qt::ToolTipRole).toString(), rule);
    QCOMPARE(schedule.data(SpecFieldModel::RelatedErrorRole).toString(), rule);
    QCOMPARE(schedule.data(SpecFieldModel::ErrorRole).toString(), QString());
    QCOMPARE(schedule.siblingAtColumn(SpecFieldModel::FieldColumn).data(Qt::ForegroundRole).value<QBrush>().color(), colors::warning());
    const auto tint = [&](const char* field) {
      return model.indexOfField(field).data(Qt::BackgroundRole).value<QBrush>().color().alpha();
    };
    QVERIFY2(tint("parallel.schedule") > 0 && tint("parallel.schedule") < tint("parallel.vpp"),
             qPrintable(QString("%1 vs %2").arg(tint("parallel.schedule")).arg(tint("parallel.vpp"))));
    QVERIFY(!model.indexOfField("parallel.pp").data(Qt::BackgroundRole).isValid());
    // Fields of one section joined by "·" are each named: the world-size rule names the layout's counts
    // and the cluster's shape.
    QVERIFY(session.setField("parallel.vpp", 1));
    QVERIFY(session.setField("parallel.dp", 3));
    const QString world = session.errorFor("parallel.dp");
    QVERIFY2(world.contains(QString::fromUtf8("parallel.tp\u00B7pp\u00B7dp\u00B7cp")) &&
                 world.contains(QString::fromUtf8("cluster.nodes\u00B7gpus_per_node")),
             qPrintable(world));
    for (const char* named : {"parallel.tp", "parallel.pp", "parallel.cp", "cluster.nodes", "cluster.gpus_per_node"})
      QVERIFY2(session.relatedErrorFor(named).contains(world), named);
    QCOMPARE(session.relatedErrorFor("parallel.vpp"), QString());
    session.undoStack()->undo();  // dp derived again
    QVERIFY(!session.stale());  // fixed: every mark goes
    QCOMPARE(session.relatedErrorFor("parallel.schedule"), QString());
    QVERIFY(!model.indexOfField("parallel.schedule").data(Qt::BackgroundRole).isValid());
  }

  void specModelPassesTesterAcrossEdits() {
    PlanSession session;
    SpecFieldModel model(&session);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 4);
    QCOMPARE(model.data(model.index(1, 0)).toString(), QStringLiteral("Parallelism"));
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    const QModelIndex tp = model.indexOfField("parallel.tp");
    QCOMPARE(tp.data().toString(), QStringLiteral("8"));
    QCOMPARE(tp.data(SpecFieldModel::KindRole).toInt(), int(SpecFieldModel::Integer));
    QVERIFY(model.setData(tp, qlonglong{4}));
    QCOMPARE(session.spec().parallel.tp, int64_t{4});
    const QModelIndex schedule = model.indexOfField("parallel.schedule");
    QCOMPARE(schedule.data(SpecFieldModel::KindRole).toInt(), int(SpecFieldModel::Choice));
    QVERIFY(schedule.data(SpecFieldModel::ChoicesRole).toStringList().contains("zb-h1"));
    const QModelIndex sp = model.indexOfField("parallel.sequence_parallel");
    QVERIFY(model.flags(sp) & Qt::ItemIsUserCheckable);
    QVERIFY(model.setData(sp, Qt::Unchecked, Qt::CheckStateRole));
    QCOMPARE(session.spec().parallel.sequence_parallel, false);
  }

  void invalidFieldCarriesPlannersMessageAndKeepsLastPlan() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    SpecFieldModel model(&session);
    const PlanPtr before = session.plan();
    QVERIFY(model.setData(model.indexOfField("parallel.tp"), qlonglong{3}));
    QVERIFY(session.stale());
    QCOMPARE(session.plan(), before);  // views keep the last valid plan
    const QString message = model.indexOfField("parallel.tp").data(SpecFieldModel::ErrorRole).toString();
    QVERIFY2(message.contains("parallel.tp=3 must divide"), qPrintable(message));
    QVERIFY2(message.startsWith("parallel.tp=3 "), qPrintable(message));
    QCOMPARE(model.indexOfField("parallel.tp", SpecFieldModel::NoteColumn).data().toString(), message.mid(14));  // "parallel.tp=3 " left out
    QCOMPARE(model.indexOfField("parallel.tp", SpecFieldModel::NoteColumn).data(Qt::ToolTipRole).toString(), message);
    // A quoted value keeps its spaces; a rule that names its field without a value loses the name.
    QCOMPARE(SpecFieldModel::withoutFieldPrefix(QStringLiteral("cluster.gpu=\"my gpu\" is not a known GPU preset"),
                                                QStringLiteral("cluster.gpu")),
             QStringLiteral("is not a known GPU preset"));
    QCOMPARE(SpecFieldModel::withoutFieldPrefix(QStringLiteral("parallel.sequence_parallel needs parallel.tp=3 to divide"),
                                                QStringLiteral("parallel.sequence_parallel")),
             QStringLiteral("needs parallel.tp=3 to divide"));
    QCOMPARE(SpecFieldModel::withoutFieldPrefix(QStringLiteral("cluster.gpu=\"unclosed"), QStringLiteral("cluster.gpu")),
             QStringLiteral("cluster.gpu=\"unclosed"));
    QCOMPARE(SpecFieldModel::withoutFieldPrefix(QStringLiteral("parallel.tpx=3 must"), QStringLiteral("parallel.tp")),
             QStringLiteral("parallel.tpx=3 must"));
    QCOMPARE(SpecFieldModel::withoutFieldPrefix(QStringLiteral("parallel.tp=3"), QStringLiteral("parallel.tp")), QStringLiteral("parallel.tp=3"));
    QVERIFY(model.indexOfField("parallel.pp").data(SpecFieldModel::ErrorRole).toString().isEmpty());
  }

  void newLayoutDerivesAnExplicitDpAgainInOneStep() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    QCOMPARE(session.spec().parallel.dp, int64_t{2});
    // The rank grid is built again for a new layout only.
    const GridPtr grid = session.grid();
    QVERIFY(session.setField("training.recompute", "full"));
    QCOMPARE(session.grid(), grid);
    QCOMPARE(session.plan()->cross_node_groups, grid->cross_node_kinds());
    QVERIFY(session.setField("parallel.tp", 4));
    QVERIFY(session.grid() != grid);
    QVERIFY(!session.stale());
    QCOMPARE(session.spec().parallel.dp, int64_t{0});
    QCOMPARE(session.grid()->dp, int64_t{4});
    QCOMPARE(session.undoStack()->undoText(), QStringLiteral("Set parallel.tp = 4 (dp derived again) (name relabelled)"));
    // The name spelled the old layout; it follows the new one, and comes back with undo.
    const std::string name_before = "Llama-3-70B on 64 H100 (TP8·PP4·DP2)";
    QCOMPARE(session.spec().name, std::string("Llama-3-70B on 64 H100 (TP4·PP4·DP4·SP)"));
    QVERIFY(session.setField("cluster.nodes", 16));
    QCOMPARE(session.spec().name, std::string("Llama-3-70B on 128 H100 (TP4·PP4·DP8·SP)"));
    // A layout that does not divide the cluster leaves the layout in the name alone (no "DP0"); a new
    // GPU is renamed all the same (once the layout is mended it would be compared with a spec that
    // already had it).
    QVERIFY(session.setField("parallel.tp", 3));
    QCOMPARE(session.spec().name, std::string("Llama-3-70B on 128 H100 (TP4·PP4·DP8·SP)"));
    QVERIFY(session.setField("cluster.gpu", "a100-80gb"));
    QCOMPARE(session.spec().name, std::string("Llama-3-70B on 128 A100 (TP4·PP4·DP8·SP)"));
    session.undoStack()->undo();
    session.undoStack()->undo();
    QCOMPARE(session.spec().name, std::string("Llama-3-70B on 128 H100 (TP4·PP4·DP8·SP)"));
    // A new GPU or model preset renames what the name spells of them ("Llama-3-70B" stayed above
    // Mixtral's figures, helper-7).
    QVERIFY(session.setField("cluster.gpu", "a100-80gb"));
    QCOMPARE(session.spec().name, std::string("Llama-3-70B on 128 A100 (TP4·PP4·DP8·SP)"));
    QVERIFY(session.setField("model.preset", "mixtral-8x7b"));
    QCOMPARE(session.spec().name, std::string("mixtral-8x7b on 128 A100 (TP4·PP4·DP8·SP)"));
    QCOMPARE(session.undoStack()->undoText(), QStringLiteral("Set model.preset = mixtral-8x7b (name relabelled)"));
    for (int i = 0; i < 4; ++i) session.undoStack()->undo();
    QCOMPARE(session.spec().name, name_before);
    QCOMPARE(session.grid()->tp, int64_t{8});
    QCOMPARE(session.spec().parallel.tp, int64_t{8});
    QCOMPARE(session.spec().parallel.dp, int64_t{2});
    // An edit that keeps the world consistent leaves an explicit dp alone.
    QVERIFY(session.setField("parallel.zero_stage", 1));
    QCOMPARE(session.spec().parallel.dp, int64_t{2});
  }

  void importsAHuggingFaceConfigIntoTheModelSection() {
    QTemporaryDir dir;
    QFile config(dir.filePath("config.json"));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(R"({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                     "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
                     "max_position_embeddings": 8192, "tie_word_embeddings": false})");
    config.close();
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    const spec::RunSpec before = session.spec();
    QString error;
    QVERIFY2(session.importHuggingFace(config.fileName(), &error), qPrintable(error));
    const auto& m = session.spec().model;
    QCOMPARE(m.num_layers, int64_t{32});
    QCOMPARE(m.num_query_groups, int64_t{8});
    QCOMPARE(m.ffn_hidden_size, int64_t{14336});
    QCOMPARE(m.activation, spec::Activation::swiglu);
    QVERIFY(session.spec().parallel == before.parallel);  // the layout stays
    QVERIFY(!session.stale());
    QCOMPARE(session.plan()->params.total, int64_t{8030261248});  // Llama-3-8B's published count
    session.undoStack()->undo();
    QVERIFY(session.spec() == before);
    // Uneven stages: other layers split again (32 on PP 16: evenly), the same count keeps the split.
    PlanSession uneven;
    QVERIFY(uneven.open(example("llama3-405b-8192xh100.json"), nullptr));
    QVERIFY2(uneven.importHuggingFace(config.fileName(), &error), qPrintable(error));
    QCOMPARE(uneven.spec().stage_layers_text(), std::string("2 × 16"));
    QVERIFY(!uneven.spec().sets_end_stages());
    QVERIFY(!uneven.stale());
    uneven.undoStack()->undo();
    QVERIFY(uneven.setField("parallel.first_stage_layers", 6));
    QVERIFY(uneven.setField("parallel.last_stage_layers", 8));
    QVERIFY(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
    config.write(R"({"model_type": "llama", "num_hidden_layers": 126, "hidden_size": 16384, "num_attention_heads": 128,
                     "num_key_value_heads": 8, "intermediate_size": 53248, "vocab_size": 128256,
                     "max_position_embeddings": 8192, "tie_word_embeddings": false})");
    config.close();
    QVERIFY2(uneven.importHuggingFace(config.fileName(), &error), qPrintable(error));
    QCOMPARE(uneven.spec().stage_layers_text(), std::string("6, 8 × 15"));

    QVERIFY(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
    config.write(R"({"model_type": "llama", "hidden_size": 4096})");
    config.close();
    QVERIFY(!session.importHuggingFace(config.fileName(), &error));
    QVERIFY2(error.contains("num_hidden_layers"), qPrintable(error));
    // A config cut short says where, without nlohmann's "[json.exception.parse_error.101]".
    QVERIFY(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
    config.write(R"({"model_type": "llama", "hidden_size": 40)");
    config.close();
    QVERIFY(!session.importHuggingFace(config.fileName(), &error));
    QVERIFY2(error.contains("is not valid JSON: parse error at line 1, column 42") && !error.contains("json.exception"),
             qPrintable(error));
    QVERIFY(session.spec() == before);
    config.open(QIODevice::WriteOnly | QIODevice::Truncate);
    config.write(R"({"model_type": "llama", "hidden_size": 4096, "hidden_size": 64})");
    config.close();
    QVERIFY(!session.importHuggingFace(config.fileName(), &error));
    QVERIFY2(error.endsWith("gives hidden_size twice (which one is meant?)"), qPrintable(error));
    // Read as tessera-cli import hf reads it: an empty file says what a config is, and an endless one
    // (/dev/zero) is refused at the size limit instead of filling the memory.
    config.open(QIODevice::WriteOnly | QIODevice::Truncate);
    config.close();
    QVERIFY(!session.importHuggingFace(config.fileName(), &error));
    QVERIFY2(error.endsWith("is empty (a config.json is one JSON object, {…})"), qPrintable(error));
    QVERIFY(!session.importHuggingFace(QStringLiteral("/dev/zero"), &error));
    QVERIFY2(error.contains("config file /dev/zero is larger than 16 MiB"), qPrintable(error));
    QVERIFY(session.spec() == before);

    // Mistral 7B v0.1: its 4096-token sliding window is planned as the sequence, and said so (the
    // window lets it see that far; the command line said it, the workbench did not).
    QVERIFY(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
    config.write(R"({"model_type": "mistral", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                     "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
                     "max_position_embeddings": 32768, "sliding_window": 4096})");
    config.close();
    QStringList notes;
    QVERIFY2(session.importHuggingFace(config.fileName(), &error, &notes), qPrintable(error));
    QCOMPARE(session.spec().model.seq_length, int64_t{4096});
    QCOMPARE(notes.size(), qsizetype{1});
    QVERIFY2(notes[0].contains("sliding_window=4096") && notes[0].contains("seq_length set to 4096"), qPrintable(notes[0]));
  }

  // A typed number: a point for decimals, either notation, spaces around it; a decimal comma, a
  // thousands separator, inf and nan are refused with the field and the rule, the spec unchanged.
  void typedNumbersTakeAPointAndRefuseTheRest() {
    PlanSession session;
    SpecFieldModel model(&session);
    const QModelIndex lr = model.indexOfField("training.lr");
    for (const auto& [typed, value] : {std::pair{" 0.002 ", 0.002}, std::pair{"3e-4", 3e-4}, std::pair{"1E-3", 1e-3}}) {
      QVERIFY2(model.setData(lr, QString::fromLatin1(typed)), typed);
      QCOMPARE(session.spec().training.lr, value);
    }
    const spec::RunSpec before = session.spec();
    for (const char* typed : {"0,001", "1,000", "inf", "nan", "", "1e-3x"}) {
      QVERIFY2(!model.setData(lr, QString::fromLatin1(typed)), typed);
      QVERIFY2(model.lastRejection().startsWith(QStringLiteral("training.lr=\"%1\" is not a number").arg(typed)),
               qPrintable(model.lastRejection()));
      QVERIFY(session.spec() == before);
    }
    double parsed = 0;
    QVERIFY(parseTypedNumber(QStringLiteral("-1.5e2"), &parsed));
    QCOMPARE(parsed, -150.0);
  }

  // A named pipe nobody writes to is given up after 3 s, said so (File ▸ Open on one held the workbench
  // in open() for good); one whose writer comes a moment later, and a pipe with a writer, as a shell's
  // <(…) gives, are read whole.
  void aPipeIsReadWithoutHanging() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath("spec.json");
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    PlanSession session;
    QVERIFY(session.open(example("tiny-3d.json"), nullptr));
    const spec::RunSpec before = session.spec();
    QString error;
    QElapsedTimer clock;
    clock.start();
    QVERIFY(!session.open(fifo, &error));
    QVERIFY2(clock.elapsed() < 6000, qPrintable(QString::number(clock.elapsed())));  // the workbench waits 3 s
    QVERIFY2(error.contains("is a pipe that nothing was written to in 3 s"), qPrintable(error));
    QVERIFY(session.spec() == before);
    QFile tiny(example("tiny-3d.json"));
    QVERIFY(tiny.open(QIODevice::ReadOnly));
    const QByteArray tiny_text = tiny.readAll();
    std::thread late([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      QFile out(fifo);  // opened once the reader waits on it
      if (out.open(QIODevice::WriteOnly)) out.write(tiny_text);
    });
    const bool read_late = session.open(fifo, &error);
    late.join();
    QVERIFY2(read_late, qPrintable(error));
    // A writer still connected that writes a little later: waited for (opened without blocking, the
    // pipe is read blocking, not "Resource temporarily unavailable").
    int ends[2];
    QCOMPARE(::pipe(ends), 0);
    QFile spec(example("llama3-8b-8xh100.json"));
    QVERIFY(spec.open(QIODevice::ReadOnly));
    const QByteArray text = spec.readAll();
    std::thread writer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      [[maybe_unused]] const auto written = ::write(ends[1], text.constData(), text.size());  // fits the pipe's buffer
      ::close(ends[1]);
    });
    const bool opened = session.open(QStringLiteral("/proc/self/fd/%1").arg(ends[0]), &error);
    writer.join();
    ::close(ends[0]);
    QVERIFY2(opened, qPrintable(error));
    QCOMPARE(session.spec().model.preset, std::string("llama3-8b"));
  }

  void rejectedValueChangesNothing() {
    PlanSession session;
    SpecFieldModel model(&session);
    const spec::RunSpec before = session.spec();
    QVERIFY(!model.setData(model.indexOfField("model.preset"), QStringLiteral("no-such-model")));
    QVERIFY(model.lastRejection().contains("not a known model preset"));
    QVERIFY(session.spec() == before);
    QCOMPARE(session.undoStack()->count(), 0);
  }

  void undoRedoRestoresSpecExactly() {
    PlanSession session;
    QVERIFY(session.open(example("gpt3-175b-table1.json"), nullptr));
    const spec::RunSpec original = session.spec();
    QVERIFY(session.setField("training.micro_batch_size", 1));
    QVERIFY(session.setField("model.preset", "llama3-70b"));
    QVERIFY(session.setField("parallel.schedule", "zb-h1"));
    const spec::RunSpec edited = session.spec();
    QVERIFY(session.isModified());
    QCOMPARE(session.undoStack()->count(), 3);
    while (session.undoStack()->canUndo()) session.undoStack()->undo();
    QVERIFY(session.spec() == original);
    QVERIFY(!session.isModified());
    while (session.undoStack()->canRedo()) session.undoStack()->redo();
    QVERIFY(session.spec() == edited);
  }

  void saveOpenRoundTrip() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    QVERIFY(session.setField("training.recompute", "full"));
    QTemporaryDir dir;
    const QString path = dir.filePath("edited.json");
    QString error;
    QVERIFY2(session.save(path, &error), qPrintable(error));
    QVERIFY(!session.isModified());
    PlanSession reopened;
    QVERIFY(reopened.open(path, &error));
    QVERIFY(reopened.spec() == session.spec());
    QCOMPARE(reopened.filePath(), QFileInfo(path).absoluteFilePath());
  }

  // A file that breaks rules opens with every problem marked (to be fixed in the designer); one that
  // does not parse is refused with the reason, and the document stays as it was.
  void openMarksBrokenRulesAndRefusesWhatDoesNotParse() {
    QTemporaryDir dir;
    auto write = [&](const QString& name, const QByteArray& text) {
      QFile file(dir.filePath(name));
      file.open(QIODevice::WriteOnly);
      file.write(text);
      return file.fileName();
    };
    PlanSession session;
    QString error;
    QVERIFY2(session.open(write("rules.json", R"({"model": {"preset": "llama3-8b"}, "parallel": {"tp": 3}})"), &error),
             qPrintable(error));
    QVERIFY(session.stale());
    QCOMPARE(session.spec().parallel.tp, int64_t{3});
    QVERIFY2(session.errorFor("parallel.tp").contains("parallel.tp=3 must divide model.num_attention_heads=32"),
             qPrintable(session.errorFor("parallel.tp")));
    QVERIFY(session.problemsText().contains("parallel.tp=3"));
    QVERIFY(!session.isModified());
    const spec::RunSpec opened = session.spec();
    QVERIFY(!session.open(write("type.json", R"({"model": {"preset": "llama3-8b"}, "parallel": {"tp": "three"}})"), &error));
    QVERIFY2(error.contains("parallel.tp"), qPrintable(error));
    QVERIFY(!session.open(write("syntax.json", "{\"model\": "), &error));
    QVERIFY(!session.open(dir.filePath("missing.json"), &error));
    QVERIFY2(error.contains("missing.json"), qPrintable(error));
    QVERIFY(session.spec() == opened);
  }

  void planModelsPassTesterAndMatchThePlan() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    StageMemoryModel memory;
    RankGridModel grid;
    TimelineModel timeline;
    QAbstractItemModelTester t1(&memory, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t2(&grid, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t3(&timeline, QAbstractItemModelTester::FailureReportingMode::QtTest);
    memory.setPlan(session.plan());
    grid.setPlan(session.plan(), session.grid());
    timeline.setPlan(session.plan());
    const auto& plan = *session.plan();

    QCOMPARE(memory.rowCount(), 4);
    QCOMPARE(memory.index(2, StageMemoryModel::Activations).data(StageMemoryModel::BytesRole).toLongLong(),
             qlonglong{plan.memory.stages[2].activations_bytes});
    QCOMPARE(memory.bytes(0, StageMemoryModel::Total), plan.memory.stages[0].total_bytes());

    QCOMPARE(grid.rowCount(), 64);
    // rank 45 = tp 5 + 8 * (dp 1 + 2 * pp 2), on node 5.
    QCOMPARE(grid.index(45, RankGridModel::TP).data().toLongLong(), 5LL);
    QCOMPARE(grid.index(45, RankGridModel::DP).data().toLongLong(), 1LL);
    QCOMPARE(grid.index(45, RankGridModel::PP).data().toLongLong(), 2LL);
    QCOMPARE(grid.index(45, RankGridModel::Node).data().toLongLong(), 5LL);

    QCOMPARE(timeline.rowCount(), static_cast<int>(plan.prediction.simulation.events.size()));
    QCOMPARE(timeline.stageCount(), 4);
    for (int s = 0; s < 4; ++s) {
      const auto [first, last] = timeline.stageRange(s);
      QCOMPARE(int(last - first), 2 * 64);  // F and B of each of the 64 microbatches
      for (size_t i = first + 1; i < last; ++i) QVERIFY(timeline.events()[i - 1].end_s <= timeline.events()[i].start_s + 1e-12);
    }
    QCOMPARE(timeline.makespan(), plan.prediction.simulation.makespan_s);

    // A re-plan resets every model cleanly (the testers check the reset).
    QVERIFY(session.setField("parallel.pp", 8));
    QVERIFY(session.setField("parallel.dp", 1));
    QVERIFY(!session.stale());
    memory.setPlan(session.plan());
    grid.setPlan(session.plan(), session.grid());
    timeline.setPlan(session.plan());
    QCOMPARE(memory.rowCount(), 8);
    QCOMPARE(timeline.stageCount(), 8);
    memory.setPlan(nullptr);
    QCOMPARE(memory.rowCount(), 0);
  }

  void comparisonPlansOtherSchedules() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    const auto gpipe = session.planWithSchedule(spec::Schedule::gpipe);
    QVERIFY2(gpipe.plan, qPrintable(gpipe.error));
    QCOMPARE(gpipe.plan->schedule.schedule, spec::Schedule::gpipe);
    const auto interleaved = session.planWithSchedule(spec::Schedule::interleaved);
    QVERIFY2(interleaved.plan, qPrintable(interleaved.error));
    QCOMPARE(interleaved.plan->schedule.vpp, 2);
    QVERIFY(interleaved.plan->prediction.bubble_fraction < session.plan()->prediction.bubble_fraction);
    QCOMPARE(session.spec().parallel.schedule, spec::Schedule::one_f_one_b);  // the document is untouched
  }
};

QTEST_MAIN(TestModels)
#include "test_models.moc"
