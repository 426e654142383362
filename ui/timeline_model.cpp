// The timeline table model over a plan's simulated events.
#include "timeline_model.hpp"

#include <algorithm>

#include "format.hpp"

namespace tessera::ui {

void TimelineModel::setPlan(PlanPtr plan) {
  beginResetModel();
  plan_ = std::move(plan);
  events_.clear();
  stage_ranges_.clear();
  if (plan_) {
    events_ = plan_->prediction.simulation.events;
    std::stable_sort(events_.begin(), events_.end(), [](const auto& a, const auto& b) {
      return a.stage != b.stage ? a.stage < b.stage : a.start_s < b.start_s;
    });
    stage_ranges_.assign(plan_->schedule.pp, {0, 0});
    size_t i = 0;
    for (int s = 0; s < plan_->schedule.pp; ++s) {
      const size_t first = i;
      while (i < events_.size() && events_[i].stage == s) ++i;
      stage_ranges_[s] = {first, i};
    }
  }
  endResetModel();
}

double TimelineModel::makespan() const { return plan_ ? plan_->prediction.simulation.makespan_s : 0.0; }
double TimelineModel::bubbleFraction() const { return plan_ ? plan_->prediction.simulation.bubble_fraction : 0.0; }

int TimelineModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(events_.size());
}

int TimelineModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TimelineModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const auto& e = events_[index.row()];
  if (role == SecondsRole) {
    if (index.column() == Start) return e.start_s;
    if (index.column() == End) return e.end_s;
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Stage: return e.stage;
    case Op: return QString::fromLatin1(planner::op_kind_name(e.op.kind).data(), static_cast<qsizetype>(planner::op_kind_name(e.op.kind).size()));
    case Microbatch: return e.op.microbatch;
    case Chunk: return e.op.chunk;
    case Start: return formatSeconds(e.start_s);
    case End: return formatSeconds(e.end_s);
    default: return {};
  }
}

QVariant TimelineModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return QString::number(section);
  static const char* names[] = {"Stage", "Op", "Microbatch", "Chunk", "Start", "End"};
  return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

}  // namespace tessera::ui
