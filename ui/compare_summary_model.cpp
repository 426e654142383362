// The comparison's summary table.
#include "compare_summary_model.hpp"

#include <QFont>

#include <cmath>

#include "format.hpp"
#include "theme.hpp"

namespace tessera::ui {

void CompareSummaryModel::setComparison(const RunComparison* comparison) {
  beginResetModel();
  comparison_ = comparison;
  endResetModel();
}

int CompareSummaryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !comparison_ ? 0 : comparison_->runCount();
}

int CompareSummaryModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : 1 + static_cast<int>(RunComparison::summaryFields().size());
}

QVariant CompareSummaryModel::data(const QModelIndex& index, int role) const {
  if (!comparison_ || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const int run = index.row();
  const bool baseline = run == comparison_->baseline();
  if (index.column() == 0) {
    if (role == Qt::DisplayRole)
      return QString::fromStdString(comparison_->run(run).name) + (baseline ? tr("  (baseline)") : QString());
    if (role == RunNameRole) return QString::fromStdString(comparison_->run(run).name);
    if (role == Qt::DecorationRole) return colors::category(run, comparison_->runCount());
    if (role == Qt::ToolTipRole)  // the name whole where its column cuts it, and the run's id
      return tr("%1\nrun %2").arg(QString::fromStdString(comparison_->run(run).name), QString::fromStdString(comparison_->run(run).id));
    if (role == Qt::FontRole && baseline) {
      QFont f;
      f.setBold(true);
      return f;
    }
    return {};
  }
  const SummaryField field = RunComparison::summaryFields()[index.column() - 1];
  const auto value = comparison_->value(run, field);
  switch (role) {
    case ValueRole: return value ? QVariant(*value) : QVariant();
    case DeltaRole: {
      const auto d = comparison_->delta(run, field);
      return d ? QVariant(*d) : QVariant();
    }
    case ValueTextRole: return value ? comparison_->formatInColumn(field, *value) : QStringLiteral("–");
    case DeltaTextRole: return value && !baseline ? comparison_->formatDelta(run, field) : QString();
    case Qt::DisplayRole: {
      if (!value) return QStringLiteral("–");
      const QString text = comparison_->formatInColumn(field, *value);
      return baseline ? text : text + QStringLiteral("   ") + comparison_->formatDelta(run, field);
    }
    case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ToolTipRole: {
      const auto& peak = comparison_->summary(run).mfu_peak_tflops;
      if (field != SummaryField::mean_mfu || !peak || !std::isfinite(*peak)) return {};
      return tr("a share of %1 (the runtime's peak)").arg(formatFlopRate(*peak));
    }
    default: return {};
  }
}

QVariant CompareSummaryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  if (section == 0) return tr("Run");
  if (section < 1 || section > static_cast<int>(RunComparison::summaryFields().size())) return {};
  return RunComparison::fieldTitle(RunComparison::summaryFields()[section - 1]);
}

}  // namespace tessera::ui
