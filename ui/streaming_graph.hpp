// Streaming plots: a QCPGraph fed by appending (QCustomPlot keeps its data sorted, so points after
// the last key go to the end without a sort or a copy) and drawn with QCustomPlot's adaptive sampling,
// and a coalescer that turns any number of "data changed" notes into at most one replot per frame
// (a single-shot timer, as PlotJuggler does).
#pragma once

#include <set>
#include <vector>

#include <QObject>
#include <QTimer>

#include <qcustomplot.h>

namespace tessera::ui {

/// Appends (x, y) points to a graph; they must not go below its last x.
void appendPoints(QCPGraph* graph, const std::vector<double>& x, const std::vector<double>& y);

class ReplotCoalescer : public QObject {
  Q_OBJECT
 public:
  /// At most one replot of each plot every `interval_ms` (33 ms: 30 per second).
  explicit ReplotCoalescer(int interval_ms = 33, QObject* parent = nullptr);
  /// Notes that `plot` needs a replot; it happens on the next timer tick.
  void schedule(QCustomPlot* plot);
  /// Replots everything scheduled now (a screenshot, a test).
  void flush();
  /// Called before each plot is redrawn (rescale axes that follow the data).
  std::function<void(QCustomPlot*)> beforeReplot;
  int64_t replots() const { return replots_; }

 private:
  QTimer timer_;
  std::set<QCustomPlot*> dirty_;
  int64_t replots_ = 0;
};

}  // namespace tessera::ui
