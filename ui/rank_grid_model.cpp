// The rank table model over a plan's RankGrid.
#include "rank_grid_model.hpp"

namespace tessera::ui {

void RankGridModel::setPlan(PlanPtr plan, GridPtr grid) {
  beginResetModel();
  plan_ = std::move(plan);
  grid_ = std::move(grid);
  endResetModel();
}

int64_t RankGridModel::coordinate(const planner::RankCoord& r, Column column) {
  switch (column) {
    case Rank: return r.rank;
    case Node: return r.node;
    case Local: return r.local;
    case TP: return r.tp;
    case CP: return r.cp;
    case EP: return r.ep;
    case DP: return r.dp;
    case PP: return r.pp;
    default: return 0;
  }
}

int RankGridModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !grid() ? 0 : static_cast<int>(grid()->ranks.size());
}

int RankGridModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RankGridModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !grid()) return {};
  const auto& r = grid()->ranks[index.row()];
  if (role == Qt::DisplayRole || role == Qt::EditRole) return qlonglong{coordinate(r, static_cast<Column>(index.column()))};
  return {};
}

QVariant RankGridModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return QString::number(section);
  return section >= 0 && section < ColumnCount ? columnName(static_cast<Column>(section)) : QVariant();
}

QString RankGridModel::columnName(Column column) {
  static const char* names[] = {"Rank", "Node", "GPU", "TP", "CP", "EP", "DP", "PP"};
  return tr(names[column]);
}

}  // namespace tessera::ui
