// The memory view (QCustomPlot): one stacked bar per pipeline stage (weights, gradients, optimizer
// state, activations, buffers) against the GPU's capacity line; stages over capacity in the warning
// colour; GiB of every part on hover. Paints from StageMemoryModel.
#pragma once

#include <array>

#include <qcustomplot.h>

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

 protected:
  void mouseMoveEvent(QMouseEvent* event) override;
  void changeEvent(QEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  void rebuild();
  void applyPalette();
  void replotWhenShown();

  StageMemoryModel* model_;
  std::array<QCPBars*, 5> bars_{};
  QCPTextElement* title_ = nullptr;
  bool stale_ = false;
  bool needs_replot_ = false;
};

}  // namespace tessera::ui
