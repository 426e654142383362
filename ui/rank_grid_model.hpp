// Table model of the rank grid: one row per rank with its node, local GPU and parallel coordinates.
// The rank grid view paints from grid(); the model is the same data for tables and tests.
#pragma once

#include <QAbstractTableModel>

#include "plan_session.hpp"

namespace tessera::ui {

class RankGridModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Rank, Node, Local, TP, CP, EP, DP, PP, ColumnCount };

  explicit RankGridModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setPlan(PlanPtr plan, GridPtr grid);
  const planner::RankGrid* grid() const { return grid_.get(); }
  const planner::Plan* plan() const { return plan_.get(); }
  /// The coordinate of `column` (Node..PP) of a rank.
  static int64_t coordinate(const planner::RankCoord& rank, Column column);
  /// "Rank", "Node", "GPU", "TP", ...
  static QString columnName(Column column);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  PlanPtr plan_;
  GridPtr grid_;
};

}  // namespace tessera::ui
