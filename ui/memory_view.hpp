// The memory view (QCustomPlot): one stacked bar per pipeline stage (weights, gradients, optimizer
// state, activations, buffers) against the GPU's capacity line, the legend (the capacity in it) under
// the title; stages over capacity in the warning colour; every part's size on hover. The axis counts
// GiB, or MiB for a peak below 1 GiB. The title, the stage names and the totals fit the view's width:
// wrapped, numbered, shortened or thinned out. Paints from StageMemoryModel.
#pragma once

#include <array>
#include <vector>

#include <qcustomplot.h>

#include "plot_fit.hpp"
#include "stage_memory_model.hpp"

namespace tessera::ui {

class MemoryView : public QCustomPlot {
  Q_OBJECT
 public:
  explicit MemoryView(StageMemoryModel* model, QWidget* parent = nullptr);

  void setStale(bool stale);
  /// The stage whose bar is under a widget position (-1 when none).
  int stageAt(const QPoint& pos) const;
  /// "stage 2: 61.2 GiB of 79.6 GiB — weights 8.2 GiB, ...".
  QString describeStage(int stage) const;
  /// The plot's title on one line, and as drawn: broken into lines where it is wider than the view.
  QString title() const { return title_->fullText(); }
  QString shownTitle() const { return title_->text(); }
  /// What the memory profile leaves out of the plan, one "note: …" a line, under the legend ("" for none).
  QString notes() const { return notes_->fullText(); }
  /// The value axis's label and top, as drawn (for tests).
  QString valueAxisLabel() const { return yAxis->label(); }
  double valueAxisTopBytes() const { return yAxis->range().upper * bytes_per_unit_; }
  /// The capacity's legend entry ("capacity 80.0 GiB of NVIDIA H100 80GB SXM").
  QString capacityText() const { return capacity_->name(); }

 protected:
  void mouseMoveEvent(QMouseEvent* event) override;
  void changeEvent(QEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  /// QCustomPlot's layout, then the stage axis and the totals fitted to it.
  void updateLayout() override;

 private:
  void rebuild();
  void applyPalette();
  void replotWhenShown();
  /// The legend on as few rows as the view's width takes whole.
  void fitLegend();
  /// The notes' row under the legend, there only while there are notes.
  void showNotes(const QString& notes);
  /// The stage axis's ticks for the bars' pitch; returns the axis label they need.
  QString fitStageAxis();
  /// The totals' form and which of them show, for the bars' pitch.
  void fitTotals();
  /// The value axis's top at which every shown total fits inside the plot, at least top_units_.
  double valueAxisTopForTotals() const;

  struct Total {
    QCPItemText* label;  ///< owned by the plot
    int64_t bytes;
    int64_t over_bytes;  ///< above the capacity, 0 when the stage fits
  };

  StageMemoryModel* model_;
  std::array<QCPBars*, 5> bars_{};
  PlotTitle* title_ = nullptr;
  PlotTitle* notes_ = nullptr;  ///< in the layout's row 2 while it has text
  std::vector<Total> totals_;  ///< one per stage, in stage order
  double top_units_ = 1.0;     ///< the value axis's top the plan asks for, in axis units
  QCPGraph* capacity_ = nullptr;  ///< no data: the capacity's legend entry
  double bytes_per_unit_ = 1024.0 * 1024.0 * 1024.0;  // bytes per step of the value axis (GiB or MiB)
  bool stale_ = false;
  bool needs_replot_ = false;
};

}  // namespace tessera::ui
