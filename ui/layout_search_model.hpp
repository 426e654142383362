// The layout search's result as a table: one row per layout that fits, fastest first, with the
// columns of `tessera-cli search`. The spec's own layout is not a row: the dialog states its place.
#pragma once

#include <QAbstractTableModel>

#include "planner/layout_search.hpp"

namespace tessera::ui {

class LayoutSearchModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Place, Layout, Schedule, Zero, MicroBatch, Recompute, StepTime, TokensPerSecond, Mfu, Bubble, PeakMemory, ColumnCount };
  /// The number behind a cell (tokens/s, bytes, …) for sorting and tests; Display is its text.
  static constexpr int ValueRole = Qt::UserRole + 1;

  using QAbstractTableModel::QAbstractTableModel;

  void setResult(planner::SearchResult result);
  const planner::SearchResult& result() const { return result_; }
  /// The layout of a row, or nullptr outside the table.
  const planner::RankedLayout* layoutAt(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  planner::SearchResult result_;
  double longest_step_s_ = 0;  ///< the Step column's times read in its unit (formatSecondsLike)
};

}  // namespace tessera::ui
