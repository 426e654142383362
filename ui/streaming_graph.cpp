// Appending to QCustomPlot graphs and coalescing their replots.
#include "streaming_graph.hpp"

namespace tessera::ui {

void appendPoints(QCPGraph* graph, const std::vector<double>& x, const std::vector<double>& y) {
  const qsizetype n = static_cast<qsizetype>(std::min(x.size(), y.size()));
  if (n == 0) return;
  QVector<double> keys(n), values(n);
  std::copy(x.begin(), x.begin() + n, keys.begin());
  std::copy(y.begin(), y.begin() + n, values.begin());
  graph->addData(keys, values, /*alreadySorted=*/true);
}

ReplotCoalescer::ReplotCoalescer(int interval_ms, QObject* parent) : QObject(parent) {
  timer_.setSingleShot(true);
  timer_.setInterval(interval_ms);
  connect(&timer_, &QTimer::timeout, this, &ReplotCoalescer::flush);
}

void ReplotCoalescer::schedule(QCustomPlot* plot) {
  dirty_.insert(plot);
  if (!timer_.isActive()) timer_.start();
}

void ReplotCoalescer::flush() {
  timer_.stop();
  const auto plots = std::move(dirty_);
  dirty_.clear();
  for (QCustomPlot* plot : plots) {
    if (beforeReplot) beforeReplot(plot);
    plot->replot(QCustomPlot::rpQueuedRefresh);
    ++replots_;
  }
}

}  // namespace tessera::ui
