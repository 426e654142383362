// The comparison's config table.
#include "config_diff_model.hpp"

#include <algorithm>

#include <QBrush>
#include <QFont>

#include "theme.hpp"

namespace tessera::ui {

void ConfigDiffModel::setComparison(const RunComparison* comparison) {
  comparison_ = comparison;
  reload();
}

void ConfigDiffModel::setOnlyDifferences(bool only) {
  if (only == only_differences_) return;
  only_differences_ = only;
  reload();
}

void ConfigDiffModel::reload() {
  beginResetModel();
  rows_ = comparison_ ? comparison_->configRows(only_differences_) : std::vector<store::ConfigDiffRow>{};
  differs_.clear();
  for (const auto& row : rows_)
    differs_.push_back(std::any_of(row.values.begin(), row.values.end(), [&](const auto& v) { return v != row.values.front(); }));
  endResetModel();
}

QString ConfigDiffModel::cellText(const std::optional<nlohmann::ordered_json>& value) {
  if (!value) return QStringLiteral("-");
  return QString::fromStdString(value->is_string() ? value->get<std::string>() : value->dump());
}

int ConfigDiffModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

int ConfigDiffModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || !comparison_ ? 0 : 1 + comparison_->runCount();
}

QVariant ConfigDiffModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const auto& row = rows_[index.row()];
  const bool differs = differs_[index.row()];
  switch (role) {
    case DiffersRole: return differs;
    case Qt::DisplayRole:
      return index.column() == 0 ? QString::fromStdString(row.path) : cellText(row.values[index.column() - 1]);
    case Qt::FontRole:
      if (differs && !only_differences_) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::ForegroundRole:
      if (index.column() > 0 && differs && comparison_ && row.values[index.column() - 1] != row.values[comparison_->baseline()])
        return colors::warning();
      return {};
    default: return {};
  }
}

QVariant ConfigDiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || !comparison_)
    return QAbstractTableModel::headerData(section, orientation, role);
  if (section == 0) return tr("Spec field");
  if (section > comparison_->runCount()) return {};
  return QString::fromStdString(comparison_->run(section - 1).name);
}

}  // namespace tessera::ui
