// The comparison's curves (QCustomPlot): one panel per metric (loss, grad norm, lr, tokens/s,
// TFLOP/s, MFU, bubble, peak memory), one colour per run, the raw downsampled curve faded under the
// debiased-EMA smoothed one, x by step, tokens or wall time; a legend of the runs on top. One plot
// object, so savePng/savePdf export every panel at once.
#pragma once

#include <vector>

#include <qcustomplot.h>

#include "plot_fit.hpp"

#include "run_comparison.hpp"

namespace tessera::ui {

class ComparePlot : public FittedPlot {
  Q_OBJECT
 public:
  explicit ComparePlot(QWidget* parent = nullptr);

  /// Draws `comparison` (not owned; nullptr clears). Re-reads the curves from the store.
  void setComparison(const RunComparison* comparison);
  void setXAxis(XAxis axis);
  /// Smoothing weight in [0, 1) (0 = raw curves only); throws std::invalid_argument outside.
  void setSmoothing(double weight);
  /// Buckets per curve asked from the store's downsample (default 1000).
  void setBuckets(int64_t buckets);
  XAxis xAxisKind() const { return axis_; }
  double smoothing() const { return smoothing_; }

  /// The panel of metric `index` (RunComparison::metrics() order), for tests.
  QCPAxisRect* panel(int index) const { return panels_.at(index); }
  /// A panel's title (unbroken): the metric, its unit, and what a run did not report.
  QString panelTitle(int index) const { return titles_.at(index)->fullText(); }
  /// Raw (faded) and smoothed graphs of run `run` in panel `metric` (smoothed is nullptr when the
  /// smoothing is 0 or the run lacks the metric).
  QCPGraph* rawGraph(int metric, int run) const { return raw_.at(metric).at(run); }
  QCPGraph* smoothedGraph(int metric, int run) const { return smooth_.at(metric).at(run); }

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void rebuild();
  void reloadCurves();
  void applyPalette();
  QString axisLabel() const;

  const RunComparison* comparison_ = nullptr;
  XAxis axis_ = XAxis::step;
  double smoothing_ = 0.6;
  int64_t buckets_ = 1000;
  std::vector<QCPAxisRect*> panels_;
  std::vector<PlotTitle*> titles_;
  std::vector<std::vector<CompareCurve>> curves_;  ///< [metric][run]
  std::vector<std::vector<QCPGraph*>> raw_, smooth_;
  QCPLegend* run_legend_ = nullptr;
};

}  // namespace tessera::ui
