// Appending to QCustomPlot graphs and coalescing their replots.
#include "streaming_graph.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::ui {

double drawable(double y) { return std::isfinite(y) ? y : std::numeric_limits<double>::quiet_NaN(); }

void appendPoints(QCPGraph* graph, const std::vector<double>& x, const std::vector<double>& y) {
  const qsizetype n = static_cast<qsizetype>(std::min(x.size(), y.size()));
  if (n == 0) return;
  QVector<double> keys(n), values(n);
  std::copy(x.begin(), x.begin() + n, keys.begin());
  std::transform(y.begin(), y.begin() + n, values.begin(), drawable);
  graph->addData(keys, values, /*alreadySorted=*/true);
}

void MinMaxDecimator::output(const Bucket& b) {
  const bool same_y = b.y_lo == b.y_hi || (std::isnan(b.y_lo) && std::isnan(b.y_hi));  // a gap is one point too
  if (b.x_lo == b.x_hi && same_y) {
    xs_.push_back(b.x_lo);
    ys_.push_back(b.y_lo);
  } else if (b.x_lo <= b.x_hi) {
    xs_.insert(xs_.end(), {b.x_lo, b.x_hi});
    ys_.insert(ys_.end(), {b.y_lo, b.y_hi});
  } else {
    xs_.insert(xs_.end(), {b.x_hi, b.x_lo});
    ys_.insert(ys_.end(), {b.y_hi, b.y_lo});
  }
}

void MinMaxDecimator::add(double x, double y) {
  ++points_;
  open_.emplace_back(x, y);
  if (static_cast<int64_t>(open_.size()) < width_) return;
  Bucket b{open_.front().first, open_.front().second, open_.front().first, open_.front().second};
  for (const auto& [px, py] : open_) {
    // NaN never becomes a bucket's extreme (it is not drawn anyway).
    if (py < b.y_lo || std::isnan(b.y_lo)) b.x_lo = px, b.y_lo = py;
    if (py > b.y_hi || std::isnan(b.y_hi)) b.x_hi = px, b.y_hi = py;
  }
  open_.clear();
  buckets_.push_back(b);
  if (buckets_.size() <= max_buckets_) {
    output(b);
    return;
  }
  // Too many buckets: merge neighbours, doubling the width; an odd last one stays open as raw points
  // cannot be recovered, so it is kept as a bucket of its own width and merged next time.
  std::vector<Bucket> merged;
  merged.reserve(buckets_.size() / 2 + 1);
  for (size_t i = 0; i + 1 < buckets_.size(); i += 2) {
    const Bucket& a = buckets_[i];
    const Bucket& c = buckets_[i + 1];
    // A bucket of NaN only (gaps) gives way to its neighbour's extremes, as NaN does within a bucket.
    const bool low_from_c = c.y_lo < a.y_lo || std::isnan(a.y_lo);
    const bool high_from_c = c.y_hi > a.y_hi || std::isnan(a.y_hi);
    merged.push_back({low_from_c ? c.x_lo : a.x_lo, low_from_c ? c.y_lo : a.y_lo, high_from_c ? c.x_hi : a.x_hi,
                      high_from_c ? c.y_hi : a.y_hi});
  }
  if (buckets_.size() % 2 == 1) merged.push_back(buckets_.back());
  buckets_ = std::move(merged);
  width_ *= 2;
  xs_.clear();
  ys_.clear();
  for (const auto& bucket : buckets_) output(bucket);
  rebuilt_ = true;
}

bool MinMaxDecimator::takeRebuilt() {
  const bool was = rebuilt_;
  rebuilt_ = false;
  return was;
}

void StreamingGraph::append(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n == 0) return;
  for (size_t i = 0; i < n; ++i) decimator_.add(x[i], drawable(y[i]));
  auto data = graph_->data();
  if (decimator_.takeRebuilt() || shown_ == 0) {
    data->clear();
    shown_ = 0;
  } else {
    data->removeAfter(decimator_.xs()[shown_ - 1]);  // the open bucket's raw points shown last time
  }
  const auto& xs = decimator_.xs();
  const auto& ys = decimator_.ys();
  QVector<QCPGraphData> points;
  points.reserve(static_cast<qsizetype>(xs.size() - shown_ + decimator_.open().size()));
  for (size_t i = shown_; i < xs.size(); ++i) points.append(QCPGraphData(xs[i], ys[i]));
  for (const auto& [px, py] : decimator_.open()) points.append(QCPGraphData(px, py));
  shown_ = xs.size();
  data->add(points, /*alreadySorted=*/true);
}

void StreamingGraph::clear() {
  decimator_ = MinMaxDecimator(decimator_.max_buckets());
  graph_->data()->clear();
  shown_ = 0;
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
