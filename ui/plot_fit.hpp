// Fitting QCustomPlot plots to their size: a title that breaks into lines to fit the plot's width
// (at its " — " and " · " separators first, then between words), and value axes whose ticks are
// thinned to the axis's height. The memory view, the comparison and the dashboard's plots use them
// (a long title was cut at both ends on a narrow window; a 100 px plot crammed eight ticks).
#pragma once

#include <QFontMetrics>
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

/// A plot whose axis rects' value axes (left) have at most one tick per 28 px of height, up to five.
/// The tick count is set once the layout gives the heights, and the layout is made again where it
/// changed, so that the ticks drawn are the count's (a count set after the layout came a replot late).
class FittedPlot : public QCustomPlot {
  Q_OBJECT
 public:
  using QCustomPlot::QCustomPlot;

 protected:
  void updateLayout() override;
};

}  // namespace tessera::ui
