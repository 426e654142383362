// Table model of a run comparison's summary: one row per run (name, then each summary field as
// "value  Δ against the baseline"), the baseline row marked. Values and deltas are RunComparison's.
#pragma once

#include <QAbstractTableModel>

#include "run_comparison.hpp"

namespace tessera::ui {

class CompareSummaryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  static constexpr int ValueRole = Qt::UserRole + 1;  ///< double (invalid QVariant when absent)
  static constexpr int DeltaRole = Qt::UserRole + 2;  ///< double against the baseline (invalid when absent)
  /// The display's two parts, drawn in two aligned sub-columns: "2.2943" and "−0.3800 (−14.2 %)"
  /// (empty for the baseline and where a value is absent).
  static constexpr int ValueTextRole = Qt::UserRole + 3;
  static constexpr int DeltaTextRole = Qt::UserRole + 4;
  /// The first column's run name without its "  (baseline)" mark, which a view cutting the name keeps.
  static constexpr int RunNameRole = Qt::UserRole + 5;

  explicit CompareSummaryModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  /// Shows `comparison` (not owned; nullptr clears). Call again after its baseline changes.
  void setComparison(const RunComparison* comparison);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  const RunComparison* comparison_ = nullptr;
};

}  // namespace tessera::ui
