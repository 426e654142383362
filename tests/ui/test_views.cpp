// The workbench's views: the rank grid maps a hovered tile to its rank (up to 4,096 ranks), the
// timeline maps time to pixels and back within a pixel, and each view grabs to a non-blank image
// that changes when the layout changes; the sortable tables' header keeps the sort indicator's room
// for the sorted column.
#include <clocale>
#include <cstdlib>
#include <set>

#include <QCheckBox>
#include <QRadioButton>
#include <QStandardItemModel>
#include <QStyleOptionButton>
#include <QtTest/QtTest>

#include "format.hpp"
#include "memory_view.hpp"
#include "plan_session.hpp"
#include "plot_fit.hpp"
#include "rank_grid_layout.hpp"
#include "rank_grid_view.hpp"
#include "sort_header.hpp"
#include "theme.hpp"
#include "time_axis.hpp"
#include "timeline_view.hpp"
#include "timeline_fixture.hpp"

using namespace tessera;
using namespace tessera::ui;
using tessera::test::TimelineOf;

namespace {

QString example(const char* name) { return QStringLiteral(TESSERA_SOURCE_DIR "/resources/examples/%1").arg(name); }

// Distinct colours in an image, a cheap measure of "something was drawn".
int distinctColours(const QImage& image) {
  std::set<QRgb> seen;
  const QImage img = image.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < img.height(); y += 3)
    for (int x = 0; x < img.width(); x += 3) seen.insert(img.pixel(x, y));
  return static_cast<int>(seen.size());
}

void sendMouse(QWidget* widget, QEvent::Type type, QPointF pos) {
  QMouseEvent event(type, pos, widget->mapToGlobal(pos), type == QEvent::MouseMove ? Qt::NoButton : Qt::LeftButton,
                    type == QEvent::MouseMove ? Qt::NoButton : Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(widget, &event);
}

// A plan opened into a rank grid view (plan() is null where the example did not open).
struct GridOf {
  PlanSession session;
  RankGridModel model;
  RankGridView view{&model};
  explicit GridOf(const char* name) {
    if (session.open(example(name), nullptr)) model.setPlan(session.plan(), session.grid());
  }
  const planner::Plan* plan() const { return session.plan().get(); }
};

}  // namespace

class TestViews : public QObject {
  Q_OBJECT
 private slots:
  void layoutMapsEveryTileToItsRank_data() {
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("perNode");
    QTest::addColumn<QSize>("size");
    QTest::newRow("64 on 8 nodes") << 64 << 8 << QSize(1200, 800);
    QTest::newRow("1024 on 128 nodes") << 1024 << 8 << QSize(1600, 1000);
    QTest::newRow("4096 on 512 nodes") << 4096 << 8 << QSize(1600, 1000);
    QTest::newRow("12 on 3 nodes of 4") << 12 << 4 << QSize(400, 300);
  }
  void layoutMapsEveryTileToItsRank() {
    QFETCH(int, world);
    QFETCH(int, perNode);
    QFETCH(QSize, size);
    RankGridLayout layout;
    const QRectF area(10, 50, size.width() - 20, size.height() - 60);
    layout.update(world, perNode, area);
    QVERIFY(layout.tileSize() >= 2);
    for (int64_t r = 0; r < world; ++r) {
      const QRectF tile = layout.tileRect(r);
      QVERIFY2(area.contains(tile), qPrintable(QString("rank %1 outside the area").arg(r)));
      QCOMPARE(layout.rankAt(tile.center()), r);
      QCOMPARE(layout.rankAt(tile.topLeft()), r);
    }
    QCOMPARE(layout.rankAt(QPointF(area.left() - 5, area.top() - 5)), int64_t{-1});
    if (layout.showFrames()) {  // the frame's padding left of the first tile is no rank
      const QRectF first = layout.tileRect(0);
      QCOMPARE(layout.rankAt(first.topLeft() - QPointF(1, 0)), int64_t{-1});
    }
  }

  void levelOfDetailFollowsTileSize() {
    RankGridLayout small, large;
    large.update(64, 8, QRectF(0, 0, 1200, 800));
    small.update(4096, 8, QRectF(0, 0, 1600, 1000));
    QVERIFY(large.showNodeLabels());
    QVERIFY(large.showTileText());
    QVERIFY(!small.showNodeLabels());
    QVERIFY(!small.showTileText());
  }

  // A stale grid's rank numbers stay readable in either palette: each tile's number differs from the
  // tile as much as on a fresh grid. At 35 % opacity over the tiles, white numbers on pale tiles had
  // almost vanished (a lightness step of about 50 of 255).
  void aStaleGridKeepsItsNumbersReadable() {
    PlanSession session;
    QVERIFY(session.open(example("tiny-3d.json"), nullptr));
    RankGridModel model;
    model.setPlan(session.plan(), session.grid());
    for (const QColor base : {QColor(Qt::white), QColor(0x1A, 0x1C, 0x20)}) {
      RankGridView view(&model);
      QPalette palette = view.palette();
      palette.setColor(QPalette::Base, base);
      view.setPalette(palette);
      view.resize(900, 500);
      view.setStale(true);
      const QImage image = view.grab().toImage();
      QVERIFY(view.gridLayout().showTileText());
      for (int64_t rank = 0; rank < session.grid()->world; ++rank) {
        const QRect tile = view.gridLayout().tileRect(rank).toRect().adjusted(2, 2, -2, -2);
        const int background = image.pixelColor(tile.topLeft()).lightness();
        int widest = 0;  // the number's pixels against the tile's corner
        for (int y = tile.top(); y <= tile.bottom(); ++y)
          for (int x = tile.left(); x <= tile.right(); ++x)
            widest = std::max(widest, std::abs(image.pixelColor(x, y).lightness() - background));
        QVERIFY2(widest >= 110, qPrintable(QString("rank %1 on base %2: the number differs by %3 of 255 in lightness")
                                               .arg(rank).arg(base.name()).arg(widest)));
      }
    }
  }

  // In the dark theme an unchecked check box and radio button show: their outline stands out from the
  // base they are drawn on (Fusion's outline was the base's colour, and they were invisible). The
  // light theme's stays as Fusion draws it.
  void darkThemeShowsUncheckedBoxes() {
    const QPalette before = QApplication::palette();
    for (const ThemeChoice choice : {ThemeChoice::dark, ThemeChoice::light}) {
      applyTheme(choice);
      QCheckBox check(QStringLiteral("Sequence parallel"));
      QRadioButton radio(QStringLiteral("1F1B"));
      for (QAbstractButton* button : {static_cast<QAbstractButton*>(&check), static_cast<QAbstractButton*>(&radio)}) {
        button->resize(button->sizeHint());
        const QImage image = button->grab().toImage();
        QStyleOptionButton option;
        option.initFrom(button);
        const QRect indicator = button->style()->subElementRect(
            button == &check ? QStyle::SE_CheckBoxIndicator : QStyle::SE_RadioButtonIndicator, &option, button);
        const int base = QApplication::palette().color(QPalette::Base).lightness();
        int widest = 0;
        for (int y = indicator.top(); y <= indicator.bottom(); ++y)
          for (int x = indicator.left(); x <= indicator.right(); ++x)
            if (image.rect().contains(x, y)) widest = std::max(widest, std::abs(image.pixelColor(x, y).lightness() - base));
        QVERIFY2(widest >= 50, qPrintable(QString("%1 in the %2 theme: its outline differs from the base by %3 of 255")
                                              .arg(button->text(), choice == ThemeChoice::dark ? "dark" : "light")
                                              .arg(widest)));
      }
    }
    QApplication::setPalette(before);
  }

  void hoverAndClickOnTheGridView() {
    GridOf grid("llama3-70b-64xh100.json");
    QVERIFY(grid.plan());
    auto& view = grid.view;
    view.resize(1200, 800);
    const QPointF centre = view.gridLayout().tileRect(45).center();
    QSignalSpy hovered(&view, &RankGridView::rankHovered);
    sendMouse(&view, QEvent::MouseMove, centre);
    QCOMPARE(view.hoveredRank(), int64_t{45});
    QCOMPARE(hovered.count(), 1);
    QVERIFY(view.describeRank(45).contains("tp 5 cp 0 ep 0 dp 1 pp 2"));
    sendMouse(&view, QEvent::MouseButtonPress, centre);
    QCOMPARE(view.selectedRank(), int64_t{45});
    sendMouse(&view, QEvent::MouseButtonPress, QPointF(2, 2));
    QCOMPARE(view.selectedRank(), int64_t{-1});
  }

  // A click outlines the rank's groups each in its own line: TP solid, DP dashed, PP dotted (all of
  // them one highlight colour before, so a DP partner looked like a PP one).
  void eachGroupOfTheSelectedRankHasItsOwnLine() {
    GridOf grid("llama3-70b-64xh100.json");  // TP8·PP4·DP2
    QVERIFY(grid.plan());
    auto& view = grid.view;
    view.resize(1200, 800);
    view.selectRank(45);  // tp 5, dp 1, pp 2: TP 40..47, DP {37, 45}, PP {13, 29, 45, 61}
    QCOMPARE(view.groupsOf(44), QStringLiteral("TP"));
    QCOMPARE(view.groupsOf(37), QStringLiteral("DP"));
    QCOMPARE(view.groupsOf(13), QStringLiteral("PP"));
    QCOMPARE(view.groupsOf(45), QString());
    QCOMPARE(view.groupsOf(0), QString());
    const QImage image = view.grab().toImage();
    // The share of a tile's top edge the outline covers, the line against the tile's own colour (inside
    // the tile: on its edge a white line met the light frame and vanished): whole for a solid line,
    // less dashed, least dotted.
    const auto inked = [&](int64_t rank) {
      const QRect tile = view.gridLayout().tileRect(rank).toRect();
      const QColor fill = image.pixelColor(tile.center().x(), tile.top() + tile.height() / 4);
      int covered = 0, columns = 0;
      for (int x = tile.left() + 6; x <= tile.right() - 6; ++x, ++columns)
        for (int y = tile.top() + 1; y <= tile.top() + 6; ++y)
          if (std::abs(image.pixelColor(x, y).lightness() - fill.lightness()) >= 60) {
            ++covered;
            break;
          }
      return double(covered) / columns;
    };
    const double dashed = inked(37), dotted = inked(13), none = inked(0);
    for (int64_t tp = 40; tp < 48; ++tp) {  // light tiles and dark ones
      if (tp == 45) continue;
      QVERIFY2(inked(tp) > 0.95, qPrintable(QString("TP member %1: %2 of its top edge").arg(tp).arg(inked(tp))));
      // The tile's own colour outside the line too, at its edge.
      const QRect tile = view.gridLayout().tileRect(tp).toRect();
      QCOMPARE(image.pixelColor(tile.center().x(), tile.top()), image.pixelColor(tile.center().x(), tile.top() + tile.height() / 4));
    }
    const QString shares = QString("DP %1, PP %2, none %3").arg(dashed).arg(dotted).arg(none);
    QVERIFY2(dashed > 0.5 && dashed < 0.85 && dotted > 0.2 && dotted < 0.5 && none < 0.05, qPrintable(shares));
  }

  // The header's first line: only the kinds that should stay inside a node are warned of (DP and PP
  // across nodes were red beside EP), and a narrow view drops the dimensions of size 1 before it cuts
  // ("TP 8 · CP 1 · EP 1 · D…" lost DP and PP beside the designer at 800 px).
  void theLayoutLineWarnsOnlyOfWhatShouldStayInANode() {
    GridOf grid("llama3-70b-64xh100.json");  // TP8·PP4·DP2, DP and PP cross nodes
    QVERIFY(grid.plan());
    auto& view = grid.view;
    view.resize(1400, 600);
    auto shown = view.layoutLine();
    QCOMPARE(shown.layout, QStringLiteral("64 GPUs on 8 nodes · TP 8 · CP 1 · EP 1 · DP 2 · PP 4"));
    using Parts = std::vector<std::pair<QString, bool>>;
    QCOMPARE(shown.crossing, (Parts{{"crosses nodes: ", false}, {"DP", false}, {", ", false}, {"PP", false}}));
    QVERIFY(grid.session.setField("model.preset", "mixtral-8x7b"));
    QVERIFY(grid.session.setField("parallel.ep", 2));
    QVERIFY2(!grid.session.stale(), qPrintable(grid.session.problemsText()));
    grid.model.setPlan(grid.session.plan(), grid.session.grid());
    shown = view.layoutLine();
    QCOMPARE(shown.layout, QStringLiteral("64 GPUs on 8 nodes · TP 8 · CP 1 · EP 2 · DP 2 · PP 4"));
    QCOMPARE(shown.crossing,
             (Parts{{"crosses nodes: ", false}, {"DP", false}, {", ", false}, {"⚠ EP", true}, {", ", false}, {"PP", false}}));
    QFont bold = view.font();
    bold.setBold(true);
    const QString sized = QStringLiteral("64 GPUs on 8 nodes · TP 8 · EP 2 · DP 2 · PP 4");
    const auto widthOf = [&](const std::vector<std::pair<QString, bool>>& parts) {
      int w = 18;  // the gap before them
      for (const auto& [text, warned] : parts) w += view.fontMetrics().horizontalAdvance(text);
      return w;
    };
    const int crossing = widthOf(shown.crossing), margins = 24;
    view.resize(QFontMetrics(bold).horizontalAdvance(sized) + crossing + margins, 600);
    shown = view.layoutLine();
    QCOMPARE(shown.layout, sized);
    QCOMPARE(shown.crossing.size(), size_t{6});
    // Narrower, the warning stays and the rest goes: "⚠ EP crosses nodes" after the layout cut with
    // "…" (it cut "⚠ EP" off, helper-10).
    view.resize(QFontMetrics(bold).horizontalAdvance(sized) + margins, 600);
    shown = view.layoutLine();
    QCOMPARE(shown.crossing, (Parts{{"⚠ EP", true}, {" crosses nodes", false}}));
    QVERIFY2(shown.layout.endsWith(QStringLiteral("…")), qPrintable(shown.layout));
    QVERIFY(QFontMetrics(bold).horizontalAdvance(shown.layout) + widthOf(shown.crossing) <= view.width() - margins);
  }

  // The header's line for the selected rank shortens with the width: the rank said whole, then
  // "rank 45", then the groups without "(crosses nodes)"; every form fits the header.
  void theSelectedRanksLineFitsTheHeader() {
    GridOf grid("llama3-70b-64xh100.json");  // TP8·PP4·DP2, DP and PP cross nodes
    QVERIFY(grid.plan());
    auto& view = grid.view;
    view.selectRank(45);
    const auto widthOf = [&](const RankGridView::GroupsLine& shown) {
      int w = view.fontMetrics().horizontalAdvance(shown.lead);
      for (const auto& [line, label] : shown.groups) w += view.fontMetrics().horizontalAdvance(label);
      return w;
    };
    view.resize(1400, 600);
    auto shown = view.selectedGroupsLine();
    QCOMPARE(shown.lead, view.describeRank(45) + QStringLiteral("  —  groups:"));
    QCOMPARE(shown.groups.size(), size_t{3});
    QCOMPARE(shown.groups[0], std::make_pair(Qt::SolidLine, QStringLiteral("TP ×8")));
    QCOMPARE(shown.groups[1], std::make_pair(Qt::DashLine, QStringLiteral("DP ×2 (crosses nodes)")));
    QCOMPARE(shown.groups[2], std::make_pair(Qt::DotLine, QStringLiteral("PP ×4 (crosses nodes)")));
    QVERIFY(widthOf(shown) < 1400 - 24);
    view.resize(600, 600);
    shown = view.selectedGroupsLine();
    QCOMPARE(shown.lead, QStringLiteral("rank 45  —  groups:"));
    QCOMPARE(shown.groups[1].second, QStringLiteral("DP ×2 (crosses nodes)"));
    QVERIFY(widthOf(shown) < 600 - 24);
    view.resize(400, 600);
    shown = view.selectedGroupsLine();
    QCOMPARE(shown.lead, QStringLiteral("rank 45  —  groups:"));
    QCOMPARE(shown.groups[1].second, QStringLiteral("DP ×2"));
    QVERIFY(widthOf(shown) < 400 - 24);
    view.selectRank(-1);
    QVERIFY(view.selectedGroupsLine().lead.isEmpty());
  }

  // A CPU cluster's rank is a local rank, not a GPU (tiny-3d runs on CPU ranks).
  void aCpuRankIsNoGpu() {
    GridOf grid("tiny-3d.json");
    QVERIFY(grid.plan());
    auto& view = grid.view;
    QVERIFY2(view.describeRank(1).startsWith(QStringLiteral("rank 1 · node 0, local rank 1 · ")), qPrintable(view.describeRank(1)));
    GridOf gpus("llama3-8b-8xh100.json");
    QVERIFY(gpus.plan());
    QVERIFY2(gpus.view.describeRank(1).startsWith(QStringLiteral("rank 1 · node 0, GPU 1 · ")), qPrintable(gpus.view.describeRank(1)));
  }

  void timeAxisRoundTripsWithinAPixel() {
    TimeAxis axis;
    axis.fit(0.0, 9.37, 80, 1400);
    QCOMPARE(axis.toPixel(0.0), 80.0);
    QVERIFY(std::abs(axis.toPixel(9.37) - 1480.0) < 1e-6);
    for (double x = 80; x <= 1480; x += 7.3) QVERIFY(std::abs(axis.toPixel(axis.toTime(x)) - x) < 1.0);
    for (double t = 0; t <= 9.37; t += 0.0137) {
      const double x = std::round(axis.toPixel(t));  // a painted pixel
      QVERIFY(std::abs(axis.toPixel(axis.toTime(x)) - axis.toPixel(t)) <= 1.0);
    }
    const double anchor = axis.toTime(600);
    axis.zoomAt(600, 8.0);
    QVERIFY(std::abs(axis.toTime(600) - anchor) < 1e-12);
    QVERIFY(std::abs(axis.secondsPerPixel() - 9.37 / 1400 / 8) < 1e-15);
    const double before = axis.toTime(700);
    axis.pan(100);
    QVERIFY(std::abs(axis.toTime(800) - before) < 1e-12);
    const double step = axis.tickStep(90);
    QVERIFY(step / axis.secondsPerPixel() >= 90);
    QVERIFY(step / axis.secondsPerPixel() < 90 * 5);
  }

  void timelineFindsTheEventUnderTheMouse() {
    TimelineOf timeline("llama3-70b-64xh100.json");
    QVERIFY(timeline.plan());
    auto& [session, primary, comparison, view] = timeline;
    // Find the pixel of a mid-pipeline event of stage 2, then ask the view what is there.
    const auto [first, last] = primary.stageRange(2);
    const auto& target = primary.events()[(first + last) / 2];
    const double mid = (target.start_s + target.end_s) / 2;
    const int x = static_cast<int>(std::round(view.axis().toPixel(mid)));
    int y = -1;
    for (int probe = 0; probe < view.height() && y < 0; ++probe) {
      const auto* e = view.eventAt(QPoint(x, probe));
      if (e && e->stage == 2) y = probe;
    }
    QVERIFY(y >= 0);
    const auto* found = view.eventAt(QPoint(x, y));
    QCOMPARE(found->op, target.op);
    QVERIFY(std::abs(view.axis().toTime(x) - mid) <= view.axis().secondsPerPixel());
  }

  void timelineDrawsThePlansDataParallelStep() {
    // GPT-3 175B, ZeRO-0: each stage's gradient all-reduces on a strip under its row, the optimizer
    // step after them; the fit takes in the whole predicted step, not only the pipeline.
    PlanSession session;
    QVERIFY(session.open(example("gpt3-175b-table1.json"), nullptr));
    const auto& pr = session.plan()->prediction;
    TimelineModel primary, comparison;
    primary.setPlan(session.plan());
    QVERIFY(primary.showsStep());
    QCOMPARE(primary.stepEnd(), pr.iteration_time_s);
    QVERIFY(primary.stepEnd() > primary.makespan());
    TimelineView view(&primary, &comparison);
    view.resize(1400, 600);
    view.fitToView();
    QVERIFY(view.axis().toPixel(pr.iteration_time_s) <= view.width());
    // Stage 0's last reduction ends after the pipeline: hover it on its strip.
    const planner::DpEvent* last = nullptr;
    for (const auto& d : pr.dp_events)
      if (d.stage == 0 && (!last || d.end_s > last->end_s)) last = &d;
    QVERIFY(last && last->end_s > pr.pipeline_s);
    const int x = static_cast<int>(std::round(view.axis().toPixel((pr.pipeline_s + last->end_s) / 2)));
    QString found;
    int y = 0;
    for (; y < view.height() && found.isEmpty(); ++y) found = view.stepTextAt(QPoint(x, y));
    QVERIFY2(found.startsWith(QStringLiteral("gradient all-reduce · chunk 0 · stage 0")), qPrintable(found));
    QVERIFY(view.eventAt(QPoint(x, y - 1)) == nullptr);  // no op there: the pipeline has ended
    const int optimizer_x = static_cast<int>(std::round(view.axis().toPixel(pr.iteration_time_s - pr.optimizer_s / 2)));
    QVERIFY2(view.stepTextAt(QPoint(optimizer_x, y - 1)).startsWith(QStringLiteral("optimizer step")),
             qPrintable(view.stepTextAt(QPoint(optimizer_x, y - 1))));
    // A measured step draws its own events only.
    primary.setMeasured(session.plan(), session.plan()->prediction.simulation.events, QStringLiteral("measured"));
    QVERIFY(!primary.showsStep());
    QCOMPARE(primary.stepEnd(), primary.makespan());
    QVERIFY(view.stepTextAt(QPoint(x, y - 1)).isEmpty());
  }

  // Llama-3-70B fitted: its optimizer step is narrower than a pixel and starts in the plot's last
  // one, which the painter stopped one pixel short of; it was in the legend but not drawn.
  void timelineDrawsAnOptimizerStepInTheLastPixel() {
    TimelineOf timeline("llama3-70b-64xh100.json");
    QVERIFY(timeline.plan());
    auto& [session, primary, comparison, view] = timeline;
    const auto& pr = timeline.plan()->prediction;
    QVERIFY2(pr.optimizer_s > 0 && pr.optimizer_s < view.axis().secondsPerPixel(), "the optimizer step is under a pixel");
    const double from_px = view.axis().toPixel(pr.iteration_time_s - pr.optimizer_s);
    const double end_px = view.axis().toPixel(pr.iteration_time_s);
    QVERIFY2(std::floor(from_px) == std::floor(end_px - 1e-9), "the optimizer step starts in the plot's last pixel");
    const QImage image = view.grab().toImage();
    int optimizer_pixels = 0;
    // Those columns alone: the legend's swatch has the colour too.
    for (int y = 0; y < image.height(); ++y)
      for (int x = static_cast<int>(from_px) - 1; x <= static_cast<int>(end_px); ++x)
        optimizer_pixels += image.pixelColor(x, y) == colors::optimizer();
    QVERIFY2(optimizer_pixels > 0, "no pixel of the optimizer's colour");
  }

  // A stale timeline keeps its microbatch numbers readable: its blocks are faded by mixing, and the
  // numbers' colour is chosen for the faded block (at 35 % opacity white numbers vanished with them).
  void aStaleTimelineKeepsItsNumbersReadable() {
    PlanSession session;
    QVERIFY(session.open(example("tiny-3d.json"), nullptr));
    TimelineModel primary, comparison;
    primary.setPlan(session.plan());
    for (const QColor base : {QColor(Qt::white), QColor(0x1A, 0x1C, 0x20)}) {
      TimelineView view(&primary, &comparison);
      QPalette palette = view.palette();
      palette.setColor(QPalette::Base, base);
      view.setPalette(palette);
      view.resize(1400, 600);
      view.fitToView();
      view.setStale(true);
      const QImage image = view.grab().toImage();
      const auto [first, last] = primary.stageRange(0);
      int checked = 0;
      for (size_t i = first; i < last; ++i) {
        const auto& e = primary.events()[i];
        const int x0 = static_cast<int>(std::ceil(view.axis().toPixel(e.start_s))) + 1;
        const int x1 = static_cast<int>(view.axis().toPixel(e.end_s)) - 2;
        const QColor fill = colors::faded(e.op.kind == planner::OpKind::forward ? colors::forward() : colors::backward(), base, colors::kStaleShare);
        const auto near = [&](const QColor& c) {
          return std::abs(c.red() - fill.red()) <= 2 && std::abs(c.green() - fill.green()) <= 2 && std::abs(c.blue() - fill.blue()) <= 2;
        };
        int top = -1, bottom = -1;  // the block's rows at its left edge, in stage 0's row (the first)
        for (int y = 0; y < image.height() && (top < 0 || bottom == y - 1); ++y)
          if (near(image.pixelColor(x0, y))) {
            if (top < 0) top = y;
            bottom = y;
          }
        QVERIFY2(top >= 0, qPrintable(QString("no block of the faded colour for event %1").arg(i)));
        int widest = 0;  // the number's pixels against the block
        for (int y = top; y <= bottom; ++y)
          for (int x = x0; x <= x1; ++x) widest = std::max(widest, std::abs(image.pixelColor(x, y).lightness() - fill.lightness()));
        QVERIFY2(widest >= 110, qPrintable(QString("event %1 on base %2: the number differs by %3 of 255").arg(i).arg(base.name()).arg(widest)));
        ++checked;
      }
      QVERIFY(checked >= 4);
    }
  }

  // Back-to-back operations stay apart: a pixel of the row's background between them (the next block's
  // fill covered the hairline drawn at the previous block's right edge, so F and B ran together).
  void timelineKeepsBackToBackBlocksApart() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    TimelineModel primary, comparison;
    primary.setPlan(session.plan());
    TimelineView view(&primary, &comparison);
    view.resize(1400, 600);
    const int last = session.plan()->schedule.pp - 1;
    const auto [first, end] = primary.stageRange(last);
    const auto& events = primary.events();
    int pairs = 0;
    for (size_t i = first; i + 1 < end && pairs < 3; ++i) {
      const auto &a = events[i], &b = events[i + 1];
      if (a.end_s != b.start_s) continue;  // back to back
      view.showRange(a.start_s - (b.end_s - a.start_s) / 2, b.end_s + (b.end_s - a.start_s) / 2);
      const QImage image = view.grab().toImage();
      const double x0 = view.axis().toPixel(a.start_s), x1 = view.axis().toPixel(a.end_s), x2 = view.axis().toPixel(b.end_s);
      QVERIFY2(x1 - x0 > 20 && x2 - x1 > 20, "both blocks wide");
      const int mid_a = static_cast<int>((x0 + x1) / 2);
      int y = -1;  // the last stage's row is the lowest holding blocks
      for (int row = image.height() - 1; row >= 0 && y < 0; --row)
        if (const QColor c = image.pixelColor(mid_a, row); c == colors::forward() || c == colors::backward()) y = row;
      QVERIFY2(y >= 0, "no block of the last stage under the first event");
      const QColor fill_a = image.pixelColor(mid_a, y), fill_b = image.pixelColor(static_cast<int>((x1 + x2) / 2), y);
      QVERIFY(fill_a != fill_b);  // F then B
      int gap = 0;
      for (int x = mid_a; x <= static_cast<int>((x1 + x2) / 2); ++x) {
        const QColor c = image.pixelColor(x, y);
        gap += c != fill_a && c != fill_b;
      }
      QVERIFY2(gap >= 1 && gap <= 2, qPrintable(QString("pair %1: %2 pixels between the blocks").arg(i).arg(gap)));
      ++pairs;
    }
    QCOMPARE(pairs, 3);
  }

  // Stage rows shorter than their names (32 stages) name every stride-th stage, each name apart from
  // the next; they named none below 10 px and ran them together above.
  void timelineNamesStagesOnShortRows() {
    PlanSession session;
    QVERIFY(session.open(example("gpt3-175b-table1.json"), nullptr));
    QVERIFY(session.setField("parallel.schedule", "1f1b"));
    QVERIFY(session.setField("parallel.vpp", 1));
    QVERIFY(session.setField("parallel.pp", 32));
    QVERIFY(session.setField("parallel.dp", 6));
    QVERIFY(!session.stale());
    TimelineModel primary, comparison;
    primary.setPlan(session.plan());
    TimelineView view(&primary, &comparison);
    const int name_height = view.fontMetrics().height();
    for (const int height : {400, 700}) {
      view.resize(1000, height);
      const QImage image = view.grab().toImage();
      const QColor base = view.palette().color(QPalette::Base);
      // Runs of pixel rows with ink in the names' column, below the band's title.
      std::vector<std::pair<int, int>> runs;
      const QRect title = view.titleBounds();
      for (int y = title.bottom() + 1; y < image.height(); ++y) {
        bool ink = false;
        for (int x = 8; x < view.axis().toPixel(0) - 4 && !ink; ++x) ink = std::abs(image.pixelColor(x, y).lightness() - base.lightness()) > 40;
        if (!ink) continue;
        if (!runs.empty() && runs.back().second == y - 1) runs.back().second = y;
        else runs.emplace_back(y, y);
      }
      const QString where = QStringLiteral("%1 px tall: %2 names").arg(height).arg(runs.size());
      QVERIFY2(runs.size() >= 4 && runs.size() <= 32, qPrintable(where));
      for (const auto& [top, bottom] : runs)
        QVERIFY2(bottom - top < name_height, qPrintable(where + QStringLiteral(", one of rows %1–%2").arg(top).arg(bottom)));
    }
  }

  // Where ops are under two pixels wide, a row shows each kind's share of the time: interleaved 1F1B
  // on 16 stages × 5 chunks at 1600 px drew stage 0 as forwards only for most of the step (the first
  // block in each pixel won it), though a third of its busy time there is forwards.
  void aDenseTimelineShowsEachKindsShare() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    QVERIFY(session.setField("parallel.tp", 4));
    QVERIFY(session.setField("parallel.pp", 16));
    QVERIFY(session.setField("parallel.dp", 1));
    QVERIFY(session.setField("parallel.schedule", "interleaved"));
    QVERIFY(session.setField("parallel.vpp", 5));
    QVERIFY(!session.stale());
    TimelineModel primary, comparison;
    primary.setPlan(session.plan());
    TimelineView view(&primary, &comparison);
    view.resize(1600, 1000);
    const QImage image = view.grab().toImage();
    const auto& events = primary.events();
    for (const int stage : {0, 8}) {
      const auto [first, end] = primary.stageRange(stage);
      // The row's pixel rows: where the view finds this stage's events.
      const double t_mid = (events[first].start_s + events[end - 1].end_s) / 2;
      int top = -1, bottom = -1;
      for (int y = 0; y < view.height(); ++y)
        if (const auto* e = view.eventAt(QPoint(static_cast<int>(view.axis().toPixel(t_mid)), y)); e && e->stage == stage) {
          if (top < 0) top = y;
          bottom = y;
        }
      QVERIFY2(top >= 0, "no row of the stage at the step's middle");
      // Forward's share of the busy time in the middle half of the stage's ops, from the plan and from
      // the picture (blue pixels against green ones).
      const double from_s = events[first].start_s + (events[end - 1].end_s - events[first].start_s) / 4;
      const double to_s = from_s + (events[end - 1].end_s - events[first].start_s) / 2;
      double forward_s = 0, busy_s = 0;
      for (size_t i = first; i < end; ++i) {
        const double overlap = std::min(events[i].end_s, to_s) - std::max(events[i].start_s, from_s);
        if (overlap <= 0) continue;
        busy_s += overlap;
        if (events[i].op.kind == planner::OpKind::forward) forward_s += overlap;
      }
      int blue = 0, green = 0;
      for (int x = static_cast<int>(view.axis().toPixel(from_s)); x < view.axis().toPixel(to_s); ++x)
        for (int y = top; y <= bottom; ++y) {
          const int hue = image.pixelColor(x, y).hslHue(), saturation = image.pixelColor(x, y).hslSaturation();
          if (saturation < 60) continue;  // the row's grey
          blue += hue >= 190 && hue <= 240;
          green += hue >= 90 && hue <= 150;
        }
      const double drawn = double(blue) / (blue + green), planned = forward_s / busy_s;
      QVERIFY2(std::abs(drawn - planned) < 0.08,
               qPrintable(QString("stage %1: forwards are %2 of the busy time, %3 of the drawn pixels").arg(stage).arg(planned).arg(drawn)));
    }
  }

  // A block is numbered where its own number fits: Llama-3-70B's forwards at 800 px over 4 s are
  // 17.7 px wide and were left blank (the rule asked for two digits' width and 4 px), while the last
  // stage's 18 px ones were numbered.
  void timelineNumbersEveryBlockItsNumberFits() {
    TimelineOf timeline("llama3-70b-64xh100.json");
    QVERIFY(timeline.plan());
    auto& [session, primary, comparison, view] = timeline;
    view.resize(800, 600);
    view.showRange(0, 4);
    const QImage image = view.grab().toImage();
    const auto [first, end] = primary.stageRange(0);
    int numbered = 0, blocks = 0;
    for (size_t i = first; i < end && blocks < 4; ++i) {
      const auto& e = primary.events()[i];
      if (e.op.kind != planner::OpKind::forward) continue;
      const int x0 = static_cast<int>(std::ceil(view.axis().toPixel(e.start_s))), x1 = static_cast<int>(view.axis().toPixel(e.end_s));
      QVERIFY2(x1 - x0 >= 12 && x1 - x0 < 20, qPrintable(QString("a forward %1 px wide").arg(x1 - x0)));
      ++blocks;
      // The block's pixels on stage 0's row (the highest row holding a forward at its left edge),
      // and among them any that are not the block's colour: its number.
      int top = -1;
      for (int y = 0; y < image.height() && top < 0; ++y)
        if (image.pixelColor(x0 + 1, y) == colors::forward()) top = y;
      QVERIFY(top >= 0);
      int bottom = top;
      while (bottom + 1 < image.height() && image.pixelColor(x0 + 1, bottom + 1) == colors::forward()) ++bottom;
      int ink = 0;
      for (int x = x0 + 2; x < x1 - 2; ++x)
        for (int y = top; y <= bottom; ++y) ink += image.pixelColor(x, y) != colors::forward();
      numbered += ink >= 6;
    }
    QCOMPARE(blocks, 4);
    QCOMPARE(numbered, 4);
  }

  void timelineKeepsTheUsersZoomAcrossReplans() {
    TimelineOf timeline("llama3-70b-64xh100.json");
    QVERIFY(timeline.plan());
    auto& [session, primary, comparison, view] = timeline;
    const double fitted = view.axis().secondsPerPixel();
    QWheelEvent wheel(QPointF(700, 200), view.mapToGlobal(QPointF(700, 200)), QPoint(), QPoint(0, 360), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QCoreApplication::sendEvent(&view, &wheel);
    const double zoomed = view.axis().secondsPerPixel();
    QVERIFY(std::abs(zoomed - fitted / std::pow(1.25, 3)) < 1e-12);
    QVERIFY(session.setField("training.recompute", "full"));  // what-if: a slower iteration
    primary.setPlan(session.plan());
    QCOMPARE(view.axis().secondsPerPixel(), zoomed);
    view.fitToView();
    QVERIFY(view.axis().secondsPerPixel() > fitted);  // the fit follows the longer makespan
    QVERIFY(session.setField("training.recompute", "selective"));
    primary.setPlan(session.plan());
    QVERIFY(std::abs(view.axis().secondsPerPixel() - fitted) < 1e-12);
  }

  void timelineLegendNeverCoversTheTitle() {
    // GPT-3 175B (interleaved) compared with ZB-H1 adds the W / B-input entries: at 1600 px the legend no
    // longer fits beside the title, nor on a narrower window, and moves onto lines of its own, above
    // the first stage's row.
    PlanSession session, other;
    QVERIFY(session.open(example("gpt3-175b-table1.json"), nullptr));
    QVERIFY(other.open(example("gpt3-175b-table1.json"), nullptr));
    QVERIFY(other.setField("parallel.schedule", "zb-h1"));
    QVERIFY(other.setField("parallel.vpp", 1));  // ZB-H1 has no virtual stages: the spec would not plan
    QVERIFY2(!other.stale(), qPrintable(other.problemsText()));
    TimelineModel primary, comparison;
    primary.setPlan(session.plan());
    TimelineView view(&primary, &comparison);
    view.resize(1600, 900);
    const QRect besideLegend = view.legendBounds();
    QVERIFY(!besideLegend.isEmpty());
    QVERIFY(!besideLegend.intersects(view.titleBounds()));
    QCOMPARE(besideLegend.top(), view.titleBounds().top());  // alone, it fits beside the title
    QVERIFY(view.legendNames().contains("B backward") && !view.legendNames().contains("W weight gradient"));
    // The legend names the kinds drawn: ZB-H1 alone has no whole backward (it listed "B backward").
    TimelineModel zb_alone, none;
    zb_alone.setPlan(other.plan());
    const QStringList zb = TimelineView(&zb_alone, &none).legendNames();
    QVERIFY2(zb.contains("B input gradient") && zb.contains("W weight gradient") && !zb.contains("B backward"), qPrintable(zb.join(", ")));
    comparison.setPlan(other.plan());
    QVERIFY(view.legendNames().contains("B backward") && view.legendNames().contains("W weight gradient"));
    for (int width : {1600, 1400, 900, 500, 300}) {
      view.resize(width, 900);
      const QRect legend = view.legendBounds(), title = view.titleBounds();
      QVERIFY2(!legend.intersects(title), qPrintable(QString("width %1").arg(width)));
      QVERIFY2(view.rect().contains(legend), qPrintable(QString("width %1").arg(width)));
      // Nothing of the first band's rows is under the legend.
      const auto* firstRowEvent = view.eventAt(QPoint(legend.center().x(), legend.bottom()));
      QVERIFY(firstRowEvent == nullptr);
    }
    // The title whole at 1600 px, cut with "…" on a narrow view (it ran off the right edge).
    view.resize(1600, 900);
    const QString wholeTitle = view.shownTitle();
    QVERIFY2(!view.shownTitle().endsWith(QStringLiteral("…")), qPrintable(view.shownTitle()));
    QVERIFY(view.shownTitle().contains(QStringLiteral(" × 2 chunks")) && view.shownTitle().contains(QStringLiteral(" · peak memory ")));
    // Briefer before it is cut: at 800 px GPT-3's title kept its peak memory ("… · peak m…" before).
    view.resize(800, 900);
    QVERIFY2(view.shownTitle().startsWith(QStringLiteral("Interleaved 1F1B · 8 stages ×2 · 48 microbatches")) &&
                 view.shownTitle().endsWith(QStringLiteral(" · peak 61.1 GiB")),
             qPrintable(view.shownTitle()));
    view.resize(500, 900);
    QVERIFY2(view.shownTitle().endsWith(QStringLiteral("…")), qPrintable(view.shownTitle()));
    QFont bold = view.font();
    bold.setBold(true);
    QVERIFY(QFontMetrics(bold).horizontalAdvance(view.shownTitle()) <= 500 - 16);
    // Narrower than the brief form, whole parts are left out: no figure is cut ("· peak 6…" at 740 px,
    // helper-10).
    for (int width = 500; width <= 800; width += 20) {
      view.resize(width, 900);
      const QString shown = view.shownTitle();
      QVERIFY2(shown.endsWith(QStringLiteral(" · …")) || !shown.endsWith(QStringLiteral("…")), qPrintable(shown));
      QVERIFY2(QFontMetrics(bold).horizontalAdvance(shown) <= width - 16, qPrintable(shown));
      for (const QString& part : shown.split(QStringLiteral(" · ")))
        QVERIFY2(part == QStringLiteral("…") || wholeTitle.contains(part) || part.endsWith(QStringLiteral(" ×2")) ||
                     part == QStringLiteral("peak 61.1 GiB"),
                 qPrintable(part));
    }
    QVERIFY(view.legendBounds().top() > view.titleBounds().bottom());  // under the title
    view.resize(300, 900);
    QVERIFY(view.legendBounds().height() > besideLegend.height());  // wrapped onto two lines or more
  }

  void memoryViewScalesToASmallPeak() {
    // tiny-3d on CPU: a peak of a few MiB against 24 GiB of host memory. The axis fits the peak in
    // MiB (the bars are visible) and every size reads in MiB, never "0.0 GiB".
    PlanSession session;
    QVERIFY(session.open(example("tiny-3d.json"), nullptr));
    StageMemoryModel memory;
    memory.setPlan(session.plan());
    MemoryView view(&memory);
    const int64_t peak = session.plan()->memory.peak_bytes;
    QVERIFY(peak < int64_t{1} << 30);
    QCOMPARE(view.valueAxisLabel(), QStringLiteral("MiB per rank"));  // CPU ranks, not GPUs
    QVERIFY2(view.title().startsWith("Per-rank memory by pipeline stage"), qPrintable(view.title()));
    QVERIFY(view.valueAxisTopBytes() >= static_cast<double>(peak));
    QVERIFY(view.valueAxisTopBytes() < 2.0 * static_cast<double>(peak));
    QVERIFY2(!view.title().contains("0.0 GiB"), qPrintable(view.title()));
    QVERIFY2(view.title().contains(QStringLiteral("peak %1 MiB").arg(peak / 1048576.0, 0, 'f', 1)), qPrintable(view.title()));
    QVERIFY(view.describeStage(0).contains(" MiB of 24.00 GiB"));
    QVERIFY2(view.describeStage(0).contains(QString::fromUtf8("\n  2 layers, 0–1\n")), qPrintable(view.describeStage(0)));
    QVERIFY2(view.capacityText().endsWith(QStringLiteral(", far above this scale")), qPrintable(view.capacityText()));
    QCOMPARE(memory.data(memory.index(0, StageMemoryModel::Total)).toString().right(3), QStringLiteral("MiB"));
    // A plan near its capacity keeps GiB and the capacity line on the scale.
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    memory.setPlan(session.plan());
    QCOMPARE(view.valueAxisLabel(), QStringLiteral("GiB per GPU"));
    QVERIFY2(view.title().startsWith("Per-GPU memory by pipeline stage"), qPrintable(view.title()));
    QVERIFY(view.valueAxisTopBytes() > static_cast<double>(session.plan()->memory.capacity_bytes));
    // Each bar names its stage's layers: uneven stages hold different counts.
    QVERIFY(session.open(example("llama3-405b-8192xh100.json"), nullptr));
    memory.setPlan(session.plan());
    QVERIFY2(view.describeStage(0).contains(QString::fromUtf8("\n  7 layers, 0–6\n")), qPrintable(view.describeStage(0)));
    QVERIFY2(view.describeStage(1).contains(QString::fromUtf8("\n  8 layers, 7–14\n")), qPrintable(view.describeStage(1)));
  }

  // The legend, which names the capacity too, has a row of its own above the bars: inside the plot it
  // covered the tallest bar's total on a small window, and the capacity's caption on its line sat on
  // the totals of the bars near it (GPT-3 without recompute: "capacity 80.0 GiB" over "79.9 GiB").
  void memoryViewKeepsItsLegendOffTheBars() {
    PlanSession session;
    QVERIFY(session.open(example("gpt3-175b-table1.json"), nullptr));
    QVERIFY(session.setField("training.recompute", "none"));
    StageMemoryModel memory;
    memory.setPlan(session.plan());
    MemoryView view(&memory);
    QCOMPARE(view.capacityText(), QStringLiteral("capacity 80.0 GiB of NVIDIA A100 80GB SXM"));
    view.show();
    for (const QSize size : {QSize(700, 500), QSize(1280, 640)}) {
      view.resize(size);
      QCoreApplication::processEvents();
      view.replot();
      QVERIFY(!view.legend->outerRect().intersects(view.axisRect()->rect()));
      QCOMPARE(view.legend->itemCount(), 6);
      // Every entry whole (on one row at 700 px the names were cut: "Weigh", "Gradier"), two rows there.
      QVERIFY2(view.legend->outerRect().width() >= view.legend->minimumOuterSizeHint().width(),
               qPrintable(QString("%1 px: legend %2 of %3").arg(size.width()).arg(view.legend->outerRect().width())
                              .arg(view.legend->minimumOuterSizeHint().width())));
      QVERIFY(size.width() < 1000 ? view.legend->rowCount() > 1 : view.legend->rowCount() == 1);
      // Every total, two lines over the capacity, inside the plot (the tallest's first line was cut).
      for (int i = 0; i < view.itemCount(); ++i)
        if (const auto* total = qobject_cast<QCPItemText*>(view.item(i)))
          QVERIFY2(total->topLeft->pixelPosition().y() >= view.axisRect()->top(),
                   qPrintable(QString("%1 px: '%2' above the plot").arg(size.width()).arg(total->text())));
    }
    QCOMPARE(view.itemCount(), 1 + session.plan()->memory.stages.size() +
                                    std::count_if(session.plan()->memory.stages.begin(), session.plan()->memory.stages.end(),
                                                  [&](const auto& s) { return s.total_bytes() > session.plan()->memory.capacity_bytes; }));
  }

  // The title, the stage names and the totals fit the view. A 32-stage plan at 1000 px ran its
  // "stage N" names and totals into one another; GPT-3 without recompute at 700 px cut its title on
  // both sides and set "OOM +38.7 GiB" over its neighbour's.
  void memoryViewFitsItsLabelsToTheBars() {
    PlanSession session;
    QVERIFY(session.open(example("gpt3-175b-table1.json"), nullptr));
    StageMemoryModel memory;
    MemoryView view(&memory);
    view.show();
    const auto shownTotals = [&] {
      std::vector<QCPItemText*> shown;
      for (int i = 0; i < view.itemCount(); ++i)
        if (auto* total = qobject_cast<QCPItemText*>(view.item(i)); total && total->visible()) shown.push_back(total);
      return shown;
    };
    const auto check = [&](QSize size, const char* what) {
      view.resize(size);
      QCoreApplication::processEvents();
      view.replot();  // once: what one replot after a resize or a new plan draws
      const QString where = QStringLiteral("%1 at %2 px: ").arg(what).arg(size.width());
      const QFont titleFont = qobject_cast<QCPTextElement*>(view.plotLayout()->element(0, 0))->font();
      for (const QString& line : view.shownTitle().split('\n'))
        QVERIFY2(QFontMetrics(titleFont).horizontalAdvance(line) <= size.width() - 12, qPrintable(where + "title line '" + line + "'"));
      QCOMPARE(view.shownTitle().simplified().remove(QStringLiteral(" ·")), view.title().simplified().remove(QStringLiteral(" ·")));
      const auto totals = shownTotals();
      QVERIFY2(!totals.empty(), qPrintable(where + "no total"));
      for (size_t a = 0; a < totals.size(); ++a) {
        const QRectF box(totals[a]->topLeft->pixelPosition(), totals[a]->bottomRight->pixelPosition());
        QVERIFY2(box.top() >= view.axisRect()->top() && box.left() >= 0 && box.right() <= size.width(),
                 qPrintable(where + "'" + totals[a]->text() + "' outside the plot"));
        for (size_t b = 0; b < a; ++b) {
          const QRectF other(totals[b]->topLeft->pixelPosition(), totals[b]->bottomRight->pixelPosition());
          QVERIFY2(!box.intersects(other), qPrintable(where + "'" + totals[a]->text() + "' over '" + totals[b]->text() + "'"));
        }
      }
      // The stage names: each within its share of the axis, and the ticks drawn the ticker's (the
      // layout placed the last layout's ticks: after a new plan, the old stages).
      const auto ticker = view.xAxis->ticker().dynamicCast<QCPAxisTickerText>();
      QVERIFY(ticker);
      const auto ticks = ticker->ticks();
      QCOMPARE(view.xAxis->tickVector(), QVector<double>(ticks.keyBegin(), ticks.keyEnd()));
      QVERIFY2(ticks.size() >= 2, qPrintable(where + "fewer than two stage ticks"));
      const double pitch = view.xAxis->coordToPixel(1) - view.xAxis->coordToPixel(0);
      const double spacing = pitch * (std::next(ticks.begin()).key() - ticks.begin().key());
      for (auto it = ticks.begin(); it != ticks.end(); ++it)
        QVERIFY2(QFontMetrics(view.xAxis->tickLabelFont()).horizontalAdvance(it.value()) < spacing,
                 qPrintable(where + "'" + it.value() + "' wider than its tick spacing"));
    };
    memory.setPlan(session.plan());
    check(QSize(1280, 640), "GPT-3");
    QCOMPARE(view.xAxis->label(), QString());  // 8 stages: each named "stage N"
    QCOMPARE(shownTotals().size(), size_t{8});

    QVERIFY(session.setField("training.recompute", "none"));
    memory.setPlan(session.plan());
    check(QSize(700, 500), "GPT-3 without recompute");
    QVERIFY(view.shownTitle().contains('\n'));
    QCOMPARE(shownTotals().size(), size_t{8});
    QVERIFY(shownTotals().front()->text().contains("+38.7 GiB"));  // over the capacity by how much
    check(QSize(700, 300), "GPT-3 without recompute");  // a short plot under a two-line title

    QVERIFY(session.setField("training.recompute", "full"));
    QVERIFY(session.setField("parallel.schedule", "1f1b"));
    QVERIFY(session.setField("parallel.vpp", 1));
    QVERIFY(session.setField("parallel.pp", 32));
    QVERIFY(session.setField("parallel.dp", 6));
    QVERIFY(!session.stale());
    view.resize(1000, 600);
    QCoreApplication::processEvents();
    view.replot();
    memory.setPlan(session.plan());  // one replot, at the size it had: the new plan's ticks drawn
    const auto drawsItsTicker = [&] {
      const auto ticks = view.xAxis->ticker().dynamicCast<QCPAxisTickerText>()->ticks();
      return view.xAxis->tickVector() == QVector<double>(ticks.keyBegin(), ticks.keyEnd());
    };
    QVERIFY(drawsItsTicker());
    view.resize(500, 600);  // a stride of 4 where it was 2, the axis label the same: one replot
    QVERIFY(drawsItsTicker());
    check(QSize(1000, 600), "PP32");
    QCOMPARE(view.xAxis->label(), QStringLiteral("pipeline stage"));
    const auto totals = shownTotals();
    QVERIFY(totals.size() < 32);
    // The tallest bar keeps its total.
    const auto& stages = session.plan()->memory.stages;
    const auto tallest = std::max_element(stages.begin(), stages.end(), [](const auto& a, const auto& b) { return a.total_bytes() < b.total_bytes(); });
    QVERIFY(std::any_of(totals.begin(), totals.end(), [&](const QCPItemText* t) {
      return std::lround(t->position->coords().x()) == tallest - stages.begin();
    }));
  }

  // What the memory profile leaves out is said under the legend, and the row goes when nothing is.
  void memoryViewSaysWhatItsProfileLeavesOut() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-8b-8xh100.json"), nullptr));
    StageMemoryModel memory;
    MemoryView view(&memory);
    view.resize(1000, 600);
    memory.setPlan(session.plan());
    QCOMPARE(view.notes(), QString());
    const int plotHeight = (view.replot(), view.axisRect()->height());
    session.setMemoryProfile(planner::MemoryProfile::megatron);
    QVERIFY(session.setField("training.recompute", "none"));
    memory.setPlan(session.plan());
    QVERIFY2(view.notes().startsWith(QStringLiteral("note: without recompute the megatron profile adds")), qPrintable(view.notes()));
    view.replot();
    QVERIFY(view.axisRect()->height() < plotHeight);  // the note has a row of its own
    session.setMemoryProfile(planner::MemoryProfile::tessera);
    memory.setPlan(session.plan());
    QCOMPARE(view.notes(), QString());
    view.replot();
    QCOMPARE(view.axisRect()->height(), plotHeight);
  }

  // The sort indicator's room goes to the sorted column alone (Qt 6 gave it to every column: "ZeRO"
  // over one-digit values took 53 px), and a column sorted by later grows to its label and indicator.
  void sortHeaderKeepsTheIndicatorsRoomForTheSortedColumn() {
    QStandardItemModel model(3, 3);
    model.setHorizontalHeaderLabels({"Layout", "ZeRO", "MBS"});
    for (int r = 0; r < 3; ++r) {
      model.setItem(r, 0, new QStandardItem(QStringLiteral("TP2·PP8·DP1·CP4·SP")));
      model.setItem(r, 1, new QStandardItem(QString::number(r)));
      model.setItem(r, 2, new QStandardItem(QString::number(r + 1)));
    }
    QTableView table;
    table.setModel(&model);
    SortHeader::install(&table);
    table.setSortingEnabled(true);
    table.sortByColumn(0, Qt::AscendingOrder);
    table.resize(600, 300);
    table.show();
    table.resizeColumnsToContents();
    // Qt's own header over the same model, sorted by the column asked of it: what it would need.
    QTableView plain;
    plain.setModel(&model);
    plain.setSortingEnabled(true);
    auto qtNeeds = [&](int column) {
      plain.horizontalHeader()->setSortIndicator(column, Qt::AscendingOrder);
      return plain.horizontalHeader()->sectionSizeHint(column);
    };
    const int indicator = table.horizontalHeader()->height();  // at least the indicator's square
    QVERIFY2(table.columnWidth(0) >= qtNeeds(0), qPrintable(QString("%1 < %2").arg(table.columnWidth(0)).arg(qtNeeds(0))));
    for (const int column : {1, 2})
      QVERIFY2(table.columnWidth(column) <= qtNeeds(column) - indicator,
               qPrintable(QString("column %1: %2 px, Qt's %3").arg(column).arg(table.columnWidth(column)).arg(qtNeeds(column))));
    // Sorted by "ZeRO" (a click on its middle), the column grows so the indicator does not cover it.
    QTest::mouseClick(table.horizontalHeader()->viewport(), Qt::LeftButton, {},
                      QPoint(table.horizontalHeader()->sectionViewportPosition(1) + table.columnWidth(1) / 2, table.horizontalHeader()->height() / 2));
    QCOMPARE(table.horizontalHeader()->sortIndicatorSection(), 1);
    QVERIFY2(table.columnWidth(1) >= qtNeeds(1), qPrintable(QString("%1 < %2").arg(table.columnWidth(1)).arg(qtNeeds(1))));
  }

  // Numbers read one way whatever the system's locale: under de_DE the plots' ticks read "0,003"
  // beside "18.7 %", the layout search said "place 237 of 1.002", and the C library's strtod (which
  // Qt had set to the environment's LC_NUMERIC) would stop at a point.
  void oneNumberConventionWhateverTheLocale() {
    struct KeepsTheDefault {  // whether the checks pass or not, the other tests get the locale back
      QLocale before;
      ~KeepsTheDefault() { QLocale::setDefault(before); }
    } keep;
    QLocale::setDefault(QLocale(QLocale::German, QLocale::Germany));
    QCOMPARE(QLocale().decimalPoint(), QStringLiteral(","));
    useOneNumberConvention();
    QCOMPARE(QLocale().toString(qlonglong{4824}), QStringLiteral("4,824"));
    FittedPlot plot;
    QCOMPARE(plot.locale().decimalPoint(), QStringLiteral("."));
    QCOMPARE(plot.locale().toString(0.003, 'g', 6), QStringLiteral("0.003"));
    QCOMPARE(QString::fromLatin1(std::setlocale(LC_NUMERIC, nullptr)), QStringLiteral("C"));
    QCOMPARE(std::strtod("1.5", nullptr), 1.5);
  }

  // The rank grid and the timeline show that they have the keyboard (arrows, Esc, +/−, F): a frame
  // in the highlight colour at their edge while focused, none otherwise.
  void focusedViewsShowAFrame() {
    GridOf grid("tiny-3d.json");
    TimelineOf timeline("tiny-3d.json");
    QVERIFY(grid.plan() && timeline.plan());
    for (QWidget* view : {static_cast<QWidget*>(&grid.view), static_cast<QWidget*>(&timeline.view)}) {
      view->resize(900, 500);
      view->show();
      QApplication::setActiveWindow(view);
      QVERIFY(QTest::qWaitForWindowActive(view));
      const QPoint edge(1, view->height() / 2);
      view->setFocus();
      QTRY_VERIFY(view->hasFocus());
      QCOMPARE(view->grab().toImage().pixelColor(edge), view->palette().color(QPalette::Highlight));
      view->clearFocus();
      QCOMPARE(view->grab().toImage().pixelColor(edge), view->palette().color(QPalette::Base));
      view->hide();
    }
  }

  // Arrows from no selection pick rank 0 (→ skipped it for rank 1); ↓ and ↑ go to the tile drawn
  // below or above in the same column (↓ went to the next node, drawn to the right of this one).
  void arrowsMoveAsTheGridIsDrawn() {
    GridOf grid("llama3-70b-64xh100.json");
    QVERIFY(grid.plan());
    grid.view.resize(1400, 800);
    QCOMPARE(grid.view.selectedRank(), int64_t{-1});
    QTest::keyClick(&grid.view, Qt::Key_Right);
    QCOMPARE(grid.view.selectedRank(), int64_t{0});
    QTest::keyClick(&grid.view, Qt::Key_Right);
    QCOMPARE(grid.view.selectedRank(), int64_t{1});
    const RankGridLayout& layout = grid.view.gridLayout();
    const QPointF one = layout.tileRect(1).center();
    QTest::keyClick(&grid.view, Qt::Key_Down);
    const QPointF below = layout.tileRect(grid.view.selectedRank()).center();
    QVERIFY2(below.y() > one.y() && std::abs(below.x() - one.x()) < 1,
             qPrintable(QString("rank %1 at (%2, %3) from rank 1 at (%4, %5)").arg(grid.view.selectedRank()).arg(below.x()).arg(below.y()).arg(one.x()).arg(one.y())));
    // Nothing drawn in between: no tile of that column lies between the two.
    for (int64_t r = 0; r < 64; ++r) {
      const QPointF c = layout.tileRect(r).center();
      QVERIFY(!(std::abs(c.x() - one.x()) < 1 && c.y() > one.y() + 0.5 && c.y() < below.y() - 0.5));
    }
    QTest::keyClick(&grid.view, Qt::Key_Up);
    QCOMPARE(grid.view.selectedRank(), int64_t{1});
    QTest::keyClick(&grid.view, Qt::Key_Up);  // the top row: it stays
    QCOMPARE(grid.view.selectedRank(), int64_t{1});
    QTest::keyClick(&grid.view, Qt::Key_Escape);
    QCOMPARE(grid.view.selectedRank(), int64_t{-1});
  }

  void viewsGrabNonBlankAndChangeWithTheLayout() {
    PlanSession session;
    QVERIFY(session.open(example("llama3-70b-64xh100.json"), nullptr));
    RankGridModel grid;
    StageMemoryModel memory;
    TimelineModel timeline, comparison;
    RankGridView gridView(&grid);
    MemoryView memoryView(&memory);
    TimelineView timelineView(&timeline, &comparison);
    const std::vector<QWidget*> views = {&gridView, &memoryView, &timelineView};
    auto setPlans = [&] {
      grid.setPlan(session.plan(), session.grid());
      memory.setPlan(session.plan());
      timeline.setPlan(session.plan());
    };
    setPlans();
    std::vector<QImage> before;
    for (QWidget* v : views) {
      v->resize(1000, 640);
      before.push_back(v->grab().toImage());
      QVERIFY2(distinctColours(before.back()) >= 8, v->metaObject()->className());
    }
    // TP8·PP4·DP2 -> TP4·PP8·DP2.
    QVERIFY(session.setField("parallel.tp", 4));
    QVERIFY(session.setField("parallel.pp", 8));
    QVERIFY(!session.stale());
    setPlans();
    for (size_t i = 0; i < views.size(); ++i) {
      const QImage after = views[i]->grab().toImage();
      QVERIFY2(distinctColours(after) >= 8, views[i]->metaObject()->className());
      QVERIFY2(after != before[i], views[i]->metaObject()->className());
    }
  }
};

QTEST_MAIN(TestViews)
#include "test_views.moc"
