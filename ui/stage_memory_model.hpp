// Table model of the per-GPU memory of each pipeline stage: one row per stage, one column per
// part (weights, gradients, optimizer state, activations, buffers), the total and the capacity.
#pragma once

#include <QAbstractTableModel>

#include "plan_session.hpp"

namespace tessera::ui {

class StageMemoryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Stage, Weights, Gradients, Optimizer, Activations, Buffers, Total, Capacity, ColumnCount };
  static constexpr int BytesRole = Qt::UserRole + 1;  ///< qlonglong bytes of a memory cell

  explicit StageMemoryModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setPlan(PlanPtr plan);
  const planner::MemoryEstimate* memory() const { return plan_ ? &plan_->memory : nullptr; }
  const planner::Plan* plan() const { return plan_.get(); }
  /// Bytes of one part (Weights..Buffers, Total) of one stage.
  int64_t bytes(int stage, Column column) const;
  /// "Weights", "Gradients", ...
  static QString columnName(Column column);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  PlanPtr plan_;
};

}  // namespace tessera::ui
