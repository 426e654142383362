// The pipeline timeline view: one row per stage, F / B / W blocks labelled with their microbatch,
// chunks in distinct shades, idle time as gaps, the bubble in the header; for a plan, a strip under
// each row with its data-parallel collectives and the optimizer step at the end; wheel zoom, drag pan,
// fit, hover tooltip; an optional second schedule drawn below on the same time axis. Paints from
// TimelineModel; time <-> pixel mapping lives in TimeAxis.
#pragma once

#include <QPen>
#include <QWidget>

#include "time_axis.hpp"
#include "timeline_model.hpp"

namespace tessera::ui {

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  /// `comparison` may be empty (no plan): then only `primary` is drawn.
  TimelineView(TimelineModel* primary, TimelineModel* comparison, QWidget* parent = nullptr);

  void setStale(bool stale);
  /// Shows the whole makespan of both timelines (and follows it across re-plans until the next zoom).
  void fitToView();
  /// Shows [begin_s, end_s] across the plot (until the next fit).
  void showRange(double begin_s, double end_s);
  const TimeAxis& axis() const { return axis_; }
  /// The event under a widget position (primary, then comparison rows), or nullptr.
  const planner::TimelineEvent* eventAt(const QPoint& pos) const;
  /// The tooltip of a plan's data-parallel collective or optimizer step under a position, or "".
  QString stepTextAt(const QPoint& pos) const;

  QSize sizeHint() const override { return {1000, 500}; }
  /// Where the first timeline's title text and the colour legend are drawn (they never overlap).
  QRect titleBounds() const;
  QRect legendBounds() const { return legend().bounds; }
  /// The legend's entries in order ("F forward", "B backward", …).
  QStringList legendNames() const;
  /// The first timeline's title as drawn: whole, or cut with "…" on a narrow view.
  QString shownTitle() const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  struct Band {  ///< the rows of one timeline
    const TimelineModel* model;
    int top, header, row_height, rows;
    int rowsTop() const { return top + header; }
  };
  struct LegendItem {
    QString name;
    QColor color;  ///< invalid: a note without a swatch
    QRect swatch;
    QPoint baseline;  ///< where the name's text starts
  };
  struct Legend {
    std::vector<LegendItem> items;
    QRect bounds;
    int below_title_height = 0;  ///< lines the legend takes under the first title (0: beside it)
  };
  /// The legend's entries laid out beside the first title when they fit there, else wrapped below it.
  Legend legend() const;
  std::vector<Band> bands() const;
  /// A band's title and rows, the ruler's ticks (`ticks_px`) drawn across its rows under the blocks.
  void paintBand(QPainter& painter, const Band& band, const QRect& plot, const std::vector<double>& ticks_px);
  /// The time ruler (labels that would overlap left out); returns its ticks' x positions.
  std::vector<double> paintRuler(QPainter& painter, const QRect& plot);
  /// The pen of the ruler's ticks and their lines across the rows, and the x of such a line drawn at
  /// `x`: whole device pixels wide, on whole device pixels, at any scale factor.
  static QPen tickPen(const QPainter& painter, const QColor& color);
  static double tickX(const QPainter& painter, double x);
  /// "1F1B · 4 stages · 64 microbatches · pipeline 20.36 s · …"; `brief`: "… × 2 chunks" as "×2", "peak memory" as "peak".
  QString title(const TimelineModel& model, bool brief = false) const;
  /// title() where it fits the view's width, else its brief form, its last parts left out (" · …")
  /// where even that is wider.
  QString fittedTitle(const TimelineModel& model) const;
  int labelWidth() const;
  /// Height of a band's data-parallel strip under each row's ops (0: measured, or rows too thin).
  int stripHeight(const Band& band) const;

  TimelineModel* primary_;
  TimelineModel* comparison_;
  TimeAxis axis_;
  bool stale_ = false;
  bool dragging_ = false;
  bool zoomed_ = false;  ///< the user zoomed or panned: keep their range across re-plans
  QPointF drag_from_;
};

}  // namespace tessera::ui
