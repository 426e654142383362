// A QCustomPlot title that breaks into lines to fit the plot's width: at its " — " and " · "
// separators first, then between words. The memory view and the dashboard's plots use it (a long
// title was cut at both ends on a narrow window); one title a plot, as wide as the plot.
#pragma once

#include <QFontMetrics>
#include <QString>

#include <qcustomplot.h>

namespace tessera::ui {

/// `text` in lines no wider than `width` px: broken at " — " (kept at the line's end) and " · "
/// (dropped) where it can, a part still too wide broken between words; a word wider than `width`
/// keeps a line of its own.
QString wrapTitle(const QString& text, const QFontMetrics& metrics, int width);

class PlotTitle : public QCPTextElement {
  Q_OBJECT
 public:
  PlotTitle(QCustomPlot* plot, const QString& text, const QFont& font);
  /// The title on one line; text() is it as drawn, broken to the plot's width at the last layout.
  void setFullText(const QString& text);
  QString fullText() const { return full_; }

 protected:
  QSize minimumOuterSizeHint() const override;
  QSize maximumOuterSizeHint() const override;

 private:
  /// Breaks full_ for the plot's current width into the drawn text.
  void fit() const;
  QString full_;
};

}  // namespace tessera::ui
