// Fitting QCustomPlot plots to their size: a title that breaks into lines to fit the plot's width
// (at its " — " and " · " separators first, then between words; the memory view, the comparison and
// the dashboard), and FittedPlot's value axes whose ticks are thinned to the axis's height and
// legends in rows of as many items as the width takes (the comparison and the dashboard; the memory
// view lays out its six entries in even rows of its own). A long title was cut at both ends on a
// narrow window; a 100 px plot crammed eight ticks.
#pragma once

#include <utility>
#include <vector>

#include <QFontMetrics>
#include <QPointer>
#include <QString>

#include <qcustomplot.h>

namespace tessera::ui {

/// `text` in lines no wider than `width` px, each of its own lines on its own: broken at " — " (kept
/// at the line's end) and " · " (dropped) where it can, a part still too wide broken between words; a
/// word wider than `width` keeps a line of its own.
QString wrapTitle(const QString& text, const QFontMetrics& metrics, int width);

/// A title as wide as its plot, or as a share of it (a panel of a grid of panels: 1/4 in four columns).
class PlotTitle : public QCPTextElement {
  Q_OBJECT
 public:
  PlotTitle(QCustomPlot* plot, const QString& text, const QFont& font, double width_share = 1.0);
  /// The title unbroken; text() is it as drawn, broken to the plot's width at the last layout.
  void setFullText(const QString& text);
  QString fullText() const { return full_; }

 protected:
  QSize minimumOuterSizeHint() const override;
  QSize maximumOuterSizeHint() const override;

 private:
  /// Breaks full_ for the plot's current width into the drawn text.
  void fit() const;
  QString full_;
  double width_share_;
};

/// A plot whose axis rects' value axes (left) have about one tick per 28 px of height, two to five
/// (more where fewer than two would show),
/// and whose legends in rows (fitLegend) put as many items on a row as its width takes whole. Both
/// are set once the layout gives the sizes, and the layout is made again where they changed, so that
/// what is drawn is the count's (a count set after the layout came a replot late).
class FittedPlot : public QCustomPlot {
  Q_OBJECT
 public:
  using QCustomPlot::QCustomPlot;
  /// Lays `legend` (an element of the plot's layout, filled columns first) out in rows of as many
  /// items as fit its width, at most `most_columns`: "ranks 0–2 · rank 3 · ranks 4–7" ran into each
  /// other in a 180 px plot at a fixed four.
  void fitLegend(QCPLegend* legend, int most_columns);

 protected:
  void updateLayout() override;

 private:
  /// Sets `legend`'s items per row for its width; true where that changed.
  static bool fitColumns(QCPLegend* legend, int most_columns);
  /// The tick count for a value axis `height_px` tall: one per 28 px, 2 to 5, or more where that
  /// places fewer than two ticks in its range and more keeps the labels a line apart.
  static int fittedTickCount(QCPAxis* axis, int height_px);
  std::vector<std::pair<QPointer<QCPLegend>, int>> fitted_legends_;
};

}  // namespace tessera::ui
