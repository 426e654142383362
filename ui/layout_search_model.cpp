// The layout search's table: texts as the CLI prints them, numbers under ValueRole.
#include "layout_search_model.hpp"

#include <algorithm>

#include "format.hpp"

namespace tessera::ui {

void LayoutSearchModel::setResult(planner::SearchResult result) {
  beginResetModel();
  result_ = std::move(result);
  longest_step_s_ = 0;
  for (const auto& l : result_.best) longest_step_s_ = std::max(longest_step_s_, l.iteration_time_s);
  endResetModel();
}


const planner::RankedLayout* LayoutSearchModel::layoutAt(int row) const {
  return row >= 0 && row < rowCount() ? &result_.best[static_cast<size_t>(row)] : nullptr;
}

int LayoutSearchModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(result_.best.size());
}

int LayoutSearchModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LayoutSearchModel::data(const QModelIndex& index, int role) const {
  const auto* l = index.isValid() ? layoutAt(index.row()) : nullptr;
  if (!l) return {};
  const auto& s = l->spec;
  const bool cpu = s.cluster.gpu == "cpu";
  if (role == Qt::TextAlignmentRole) {
    const bool text = index.column() == Layout || index.column() == Schedule || index.column() == Recompute;
    return QVariant::fromValue(Qt::AlignVCenter | (text ? Qt::AlignLeft : Qt::AlignRight));
  }
  if (role == Qt::ToolTipRole) {
    return tr("%1, %2 schedule, ZeRO-%3, micro-batch %4, recompute %5\n%6 a step · %7 tokens/s · MFU %8 · bubble %9\n"
              "peak %10 of %11 per %12")
        .arg(QString::fromStdString(s.uneven_stages() ? s.layout_label() + " (layers " + s.stage_layers_text() + ")" : s.layout_label()),
             QString::fromStdString(std::string(spec::to_string(s.parallel.schedule))))
        .arg(s.effective_zero_stage())
        .arg(s.training.micro_batch_size)
        .arg(QString::fromStdString(std::string(spec::to_string(s.training.recompute))), formatDuration(l->iteration_time_s),
             formatCount(l->tokens_per_s), formatPercent(l->mfu), formatPercent(l->bubble_fraction), formatBytes(l->peak_bytes),
             formatBytes(result_.memory_limit_bytes), cpu ? tr("rank") : tr("GPU"));
  }
  if (role != Qt::DisplayRole && role != ValueRole) return {};
  const bool value = role == ValueRole;
  switch (index.column()) {
    case Place: return value ? QVariant(index.row() + 1) : QVariant(QString::number(index.row() + 1));
    case Layout: return QString::fromStdString(s.layout_label());
    case Schedule: return QString::fromStdString(std::string(spec::to_string(s.parallel.schedule)));
    case Zero: return value ? QVariant(qlonglong(s.effective_zero_stage())) : QVariant(QString::number(s.effective_zero_stage()));
    case MicroBatch:
      return value ? QVariant(qlonglong(s.training.micro_batch_size)) : QVariant(QString::number(s.training.micro_batch_size));
    case Recompute: return QString::fromStdString(std::string(spec::to_string(s.training.recompute)));
    case StepTime: return value ? QVariant(l->iteration_time_s) : QVariant(formatSecondsLike(l->iteration_time_s, longest_step_s_));
    case TokensPerSecond: return value ? QVariant(l->tokens_per_s) : QVariant(formatCount(l->tokens_per_s));
    case Mfu: return value ? QVariant(l->mfu) : QVariant(formatPercent(l->mfu));
    case Bubble: return value ? QVariant(l->bubble_fraction) : QVariant(formatPercent(l->bubble_fraction));
    case PeakMemory: return value ? QVariant(qlonglong(l->peak_bytes)) : QVariant(formatBytes(l->peak_bytes));
    default: return {};
  }
}

QVariant LayoutSearchModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  // "MBS", tessera-cli search's "mbs": "Micro-batch" made a column of one-digit values 100 px wide,
  // and at 800 px the bubble and the peak memory went behind the scroll bar.
  if (role == Qt::ToolTipRole && section == MicroBatch) return tr("Micro-batch size (sequences per microbatch)");
  if (role != Qt::DisplayRole) return {};
  static const char* names[] = {"#", "Layout", "Schedule", "ZeRO", "MBS", "Recompute", "Step", "Tokens/s", "MFU", "Bubble", "Peak memory"};
  return tr(names[section]);
}

}  // namespace tessera::ui
