// Building the comparison's panels and curves.
#include "compare_plot.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "format.hpp"
#include "streaming_graph.hpp"
#include "theme.hpp"

namespace tessera::ui {

ComparePlot::ComparePlot(QWidget* parent) : FittedPlot(parent) {
  setMinimumSize(480, 280);  // two rows of panels whose ticks FittedPlot thins; the summary under them keeps its rows at 600 px
  setNoAntialiasingOnDrag(true);
  setAutoAddPlottableToLegend(false);
  plotLayout()->clear();  // the default axis rect and its legend; we lay out our own
  run_legend_ = new QCPLegend;
  plotLayout()->addElement(0, 0, run_legend_);
  run_legend_->setLayer(QStringLiteral("legend"));
  fitLegend(run_legend_, 6);  // up to six runs a row, as many as the width takes
  run_legend_->setVisible(true);
  run_legend_->setBorderPen(Qt::NoPen);
  auto* grid = new QCPLayoutGrid;
  plotLayout()->addElement(1, 0, grid);
  plotLayout()->setRowStretchFactor(0, 0.001);
  const auto& metrics = RunComparison::metrics();
  for (size_t m = 0; m < metrics.size(); ++m) {
    auto* cell = new QCPLayoutGrid;
    grid->addElement(static_cast<int>(m / 4), static_cast<int>(m % 4), cell);
    // A quarter of the plot's width, broken into lines where longer (its width set the column's).
    auto* title = new PlotTitle(this, metrics[m].title, QFont(font().family(), font().pointSize(), QFont::Bold), 0.25);
    cell->addElement(0, 0, title);
    auto* rect = new QCPAxisRect(this);
    cell->addElement(1, 0, rect);
    cell->setRowStretchFactor(0, 0.001);
    cell->setRowSpacing(0);
    rect->axis(QCPAxis::atLeft)->setNumberFormat(QStringLiteral("gb"));
    rect->axis(QCPAxis::atBottom)->setNumberFormat(QStringLiteral("gb"));
    panels_.push_back(rect);
    titles_.push_back(title);
  }
  raw_.resize(metrics.size());
  smooth_.resize(metrics.size());
  applyPalette();
  rebuild();
}

void ComparePlot::setComparison(const RunComparison* comparison) {
  comparison_ = comparison;
  reloadCurves();
}

void ComparePlot::setXAxis(XAxis axis) {
  if (axis == axis_) return;
  axis_ = axis;
  reloadCurves();
}

void ComparePlot::setSmoothing(double weight) {
  if (!(weight >= 0.0 && weight < 1.0))
    throw std::invalid_argument("smoothing weight=" + std::to_string(weight) + " must be in [0, 1)");
  smoothing_ = weight;
  rebuild();
}

void ComparePlot::setBuckets(int64_t buckets) {
  if (buckets < 1) throw std::invalid_argument("buckets=" + std::to_string(buckets) + " must be at least 1");
  buckets_ = buckets;
  reloadCurves();
}

QString ComparePlot::axisLabel() const {
  switch (axis_) {
    case XAxis::step: return tr("step");
    case XAxis::tokens: return tr("tokens");
    case XAxis::wall_time_s: return tr("wall time (s)");
  }
  return {};
}

void ComparePlot::reloadCurves() {
  curves_.assign(RunComparison::metrics().size(), {});
  if (comparison_)
    for (size_t m = 0; m < curves_.size(); ++m)
      for (int r = 0; r < comparison_->runCount(); ++r)
        curves_[m].push_back(comparison_->curve(r, RunComparison::metrics()[m], axis_, buckets_));
  rebuild();
}

void ComparePlot::applyPalette() { applyPlotPalette(this, palette()); }

void ComparePlot::changeEvent(QEvent* event) {
  FittedPlot::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    applyPalette();
    rebuild();
  }
}

void ComparePlot::rebuild() {
  run_legend_->clearItems();
  clearGraphs();
  const auto& metrics = RunComparison::metrics();
  const int runs = comparison_ ? comparison_->runCount() : 0;
  for (size_t m = 0; m < metrics.size(); ++m) {
    QCPAxisRect* rect = panels_[m];
    raw_[m].assign(runs, nullptr);
    smooth_[m].assign(runs, nullptr);
    QStringList problems;
    bool any = false;
    // Memory below 1 GiB (small models, CPU runs) reads better in MiB, model FLOP/s below 1 TFLOP/s
    // (CPU ranks) in GFLOP/s, as the dashboard and the summary strip give them.
    double factor = 1.0;
    QString unit_name = metrics[m].unit, name = metrics[m].title;
    double highest = 0;
    if (m < curves_.size())
      for (const auto& curve : curves_[m])
        for (double v : curve.max)
          if (std::isfinite(v)) highest = std::max(highest, std::abs(v));
    if (metrics[m].name == std::string(store::metric_name::peak_memory_bytes) && highest > 0 && highest < 1.0) {
      factor = 1024.0;
      unit_name = QStringLiteral("MiB");
    } else if (metrics[m].name == std::string("model_tflops") && highest > 0 && showsInGflops(highest)) {
      factor = 1000.0;
      name = modelFlopsTitle(true);
    }
    for (int r = 0; r < runs && m < curves_.size() && r < static_cast<int>(curves_[m].size()); ++r) {
      const CompareCurve& curve = curves_[m][r];
      if (!curve.problem.isEmpty()) problems << QStringLiteral("%1: %2").arg(QString::fromStdString(comparison_->run(r).name), curve.problem);
      if (curve.x.empty()) continue;
      any = true;
      const QColor color = colors::category(r, runs);
      std::vector<double> values = curve.last;
      for (double& v : values) v = drawable(v) * factor;
      QVector<double> x(curve.x.begin(), curve.x.end()), y(values.begin(), values.end());
      QCPGraph* raw = addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
      raw->setName(QString::fromStdString(comparison_->run(r).name));
      raw->setData(x, y, /*alreadySorted=*/true);
      QColor faded = color;
      if (smoothing_ > 0) faded.setAlphaF(0.28f);
      raw->setPen(QPen(faded, smoothing_ > 0 ? 1.0 : 1.6));
      raw_[m][r] = raw;
      QCPGraph* shown = raw;
      if (smoothing_ > 0) {
        const auto smoothed = debiased_ema(values, smoothing_);
        QCPGraph* smooth = addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        smooth->setName(raw->name());
        smooth->setData(x, QVector<double>(smoothed.begin(), smoothed.end()), true);
        smooth->setPen(QPen(color, 1.8));
        smooth_[m][r] = smooth;
        shown = smooth;
      }
      if (m == 0) shown->addToLegend(run_legend_);
    }
    rect->axis(QCPAxis::atBottom)->setLabel(axisLabel());
    const QString unit = unit_name.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(unit_name);
    QString title = name + unit;
    if (!any && runs > 0) title += problems.isEmpty() ? tr(" — not reported") : tr(" — %1").arg(problems.join(QStringLiteral("; ")));
    else if (!problems.isEmpty()) title += tr(" — %1").arg(problems.join(QStringLiteral("; ")));
    titles_[m]->setFullText(title);
    if (any) {
      for (QCPAxis* axis : {rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft)}) axis->rescale(true);
      QCPAxis* y = rect->axis(QCPAxis::atLeft);
      const QCPRange range = y->range();
      // A flat series (a constant peak memory, its smoothed copy a few ulps apart) gets ±5 % of its
      // value, not an axis zoomed into rounding noise.
      const bool flat = range.size() <= 1e-9 * std::abs(range.center());
      const double pad = flat ? std::abs(range.center()) * 0.05 + 1e-12 : range.size() * 0.05;
      y->setRange(range.lower - pad, range.upper + pad);
    } else {
      rect->axis(QCPAxis::atBottom)->setRange(0, 1);
      rect->axis(QCPAxis::atLeft)->setRange(0, 1);
    }
  }
  // Legend entries use the pen of the drawn (smoothed) graph; one per run from the loss panel, or
  // from the first panel that has the run.
  for (int r = 0; r < runs; ++r) {
    bool listed = raw_[0][r] != nullptr;
    for (size_t m = 1; m < metrics.size() && !listed; ++m)
      if (QCPGraph* g = smooth_[m][r] ? smooth_[m][r] : raw_[m][r]) {
        g->addToLegend(run_legend_);
        listed = true;
      }
  }
  replot();
}

}  // namespace tessera::ui
