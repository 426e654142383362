// Table model of the compared runs' specs: one row per spec field (dotted path), one column per run;
// only the fields that differ (History::config_diff) or all of them with the differing rows marked.
#pragma once

#include <vector>

#include <QAbstractTableModel>

#include "run_comparison.hpp"

namespace tessera::ui {

class ConfigDiffModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  static constexpr int DiffersRole = Qt::UserRole + 1;  ///< bool: the runs disagree on this field

  explicit ConfigDiffModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  /// Shows `comparison` (not owned; nullptr clears).
  void setComparison(const RunComparison* comparison);
  void setOnlyDifferences(bool only);
  bool onlyDifferences() const { return only_differences_; }

  /// "-" when the run lacks the field; strings without quotes; other JSON as written.
  static QString cellText(const std::optional<nlohmann::ordered_json>& value);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  void reload();
  const RunComparison* comparison_ = nullptr;
  bool only_differences_ = true;
  std::vector<store::ConfigDiffRow> rows_;
  std::vector<bool> differs_;
};

}  // namespace tessera::ui
