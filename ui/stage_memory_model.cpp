// The memory table model over a plan's MemoryEstimate.
#include "stage_memory_model.hpp"

#include "format.hpp"

namespace tessera::ui {

void StageMemoryModel::setPlan(PlanPtr plan) {
  beginResetModel();
  plan_ = std::move(plan);
  endResetModel();
}

int64_t StageMemoryModel::bytes(int stage, Column column) const {
  const auto& st = plan_->memory.stages[stage];
  switch (column) {
    case Weights: return st.weights_bytes;
    case Gradients: return st.gradients_bytes;
    case Optimizer: return st.optimizer_bytes;
    case Activations: return st.activations_bytes;
    case Buffers: return st.buffers_bytes;
    case Total: return st.total_bytes();
    case Capacity: return plan_->memory.capacity_bytes;
    default: return 0;
  }
}

int StageMemoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !plan_ ? 0 : static_cast<int>(plan_->memory.stages.size());
}

int StageMemoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant StageMemoryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !plan_) return {};
  const auto column = static_cast<Column>(index.column());
  if (column == Stage) return role == Qt::DisplayRole ? QVariant(QString::number(index.row())) : QVariant();
  if (role == BytesRole) return qlonglong{bytes(index.row(), column)};
  if (role == Qt::DisplayRole) return formatBytes(bytes(index.row(), column), 2);
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant StageMemoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return QString::number(section);
  return section >= 0 && section < ColumnCount ? columnName(static_cast<Column>(section)) : QVariant();
}

QString StageMemoryModel::columnName(Column column) {
  static const char* names[] = {"Stage", "Weights", "Gradients", "Optimizer", "Activations", "Buffers", "Total", "Capacity"};
  return tr(names[column]);
}

}  // namespace tessera::ui
