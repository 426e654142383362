// Streaming plots: a curve whose graph holds a bounded min/max decimation of its points (buckets of
// 1, 2, 4, … points, at most `max_buckets` of them plus the raw points of the open bucket, so a spike
// survives and a 1,000,000-point curve draws as fast as a 10,000-point one), fed by appending; and a
// coalescer that turns any number of "data changed" notes into at most one replot per frame (a
// single-shot timer, as PlotJuggler does).
#pragma once

#include <set>
#include <vector>

#include <QObject>
#include <QTimer>

#include <qcustomplot.h>

namespace tessera::ui {

/// Appends (x, y) points to a graph; they must not go below its last x.
void appendPoints(QCPGraph* graph, const std::vector<double>& x, const std::vector<double>& y);
/// `y` as a plot draws it: an infinite value (a rank's "inf") as a gap, as NaN is, since it would
/// stretch the axis over everything else.
double drawable(double y);

/// Min/max decimation of a growing series, Qt-free: complete buckets of width() points each give their
/// lowest and highest point (in x order); when there would be more than max_buckets, neighbours merge
/// and the width doubles. The result depends only on the points, not on how they were chunked.
class MinMaxDecimator {
 public:
  explicit MinMaxDecimator(size_t max_buckets = 4096) : max_buckets_(max_buckets) {}
  void add(double x, double y);
  /// The points of the complete buckets, in x order.
  const std::vector<double>& xs() const { return xs_; }
  const std::vector<double>& ys() const { return ys_; }
  /// The raw points of the open bucket (fewer than width()).
  const std::vector<std::pair<double, double>>& open() const { return open_; }
  int64_t width() const { return width_; }
  int64_t points() const { return points_; }
  size_t max_buckets() const { return max_buckets_; }
  /// True once after the buckets merged (xs()/ys() were rebuilt, not appended to).
  bool takeRebuilt();

 private:
  struct Bucket {
    double x_lo, y_lo, x_hi, y_hi;  ///< the lowest and the highest point
  };
  void output(const Bucket& b);

  size_t max_buckets_;
  int64_t width_ = 1, points_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<double, double>> open_;
  std::vector<double> xs_, ys_;
  bool rebuilt_ = false;
};

/// A QCPGraph showing a MinMaxDecimator of the points appended to it.
class StreamingGraph {
 public:
  StreamingGraph(QCPGraph* graph, size_t max_buckets = 4096) : graph_(graph), decimator_(max_buckets) {}
  QCPGraph* graph() const { return graph_; }
  /// Appends points (x not below the last one).
  void append(const std::vector<double>& x, const std::vector<double>& y);
  void clear();
  const MinMaxDecimator& decimator() const { return decimator_; }

 private:
  QCPGraph* graph_;
  MinMaxDecimator decimator_;
  size_t shown_ = 0;  ///< complete-bucket points already in the graph
};

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
