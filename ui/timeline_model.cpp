// The timeline table model over a plan's simulated events.
#include "timeline_model.hpp"

#include <algorithm>

#include "format.hpp"

namespace tessera::ui {

void TimelineModel::setPlan(PlanPtr plan, const QString& caption) {
  beginResetModel();
  plan_ = std::move(plan);
  measured_ = false;
  caption_ = caption;
  events_ = plan_ ? plan_->prediction.simulation.events : std::vector<planner::TimelineEvent>{};
  makespan_s_ = plan_ ? plan_->prediction.simulation.makespan_s : 0.0;
  bubble_ = plan_ ? plan_->prediction.simulation.bubble_fraction : 0.0;
  indexStages();
  endResetModel();
}

void TimelineModel::setMeasured(PlanPtr plan, std::vector<planner::TimelineEvent> events, const QString& caption) {
  beginResetModel();
  plan_ = std::move(plan);
  measured_ = true;
  caption_ = caption;
  events_ = std::move(events);
  // The same definition as the simulator: idle share of the makespan on the busiest stage.
  double begin = events_.empty() ? 0.0 : events_.front().start_s, end = begin;
  std::vector<double> busy_s(plan_ ? static_cast<size_t>(plan_->schedule.pp) : 0, 0.0);
  for (const auto& e : events_) {
    begin = std::min(begin, e.start_s);
    end = std::max(end, e.end_s);
    if (e.stage >= 0 && static_cast<size_t>(e.stage) < busy_s.size()) busy_s[e.stage] += e.end_s - e.start_s;
  }
  makespan_s_ = end;
  const double busiest = busy_s.empty() ? 0.0 : *std::max_element(busy_s.begin(), busy_s.end());
  bubble_ = end - begin > 0 ? std::clamp(1.0 - busiest / (end - begin), 0.0, 1.0) : 0.0;
  indexStages();
  endResetModel();
}

void TimelineModel::indexStages() {
  stage_ranges_.clear();
  if (!plan_) {
    events_.clear();
    return;
  }
  std::stable_sort(events_.begin(), events_.end(), [](const auto& a, const auto& b) {
    return a.stage != b.stage ? a.stage < b.stage : a.start_s < b.start_s;
  });
  stage_ranges_.assign(plan_->schedule.pp, {0, 0});
  size_t i = 0;
  while (i < events_.size() && events_[i].stage < 0) ++i;
  for (int s = 0; s < plan_->schedule.pp; ++s) {
    const size_t first = i;
    while (i < events_.size() && events_[i].stage == s) ++i;
    stage_ranges_[s] = {first, i};
  }
}

double TimelineModel::makespan() const { return makespan_s_; }

double TimelineModel::stepEnd() const { return showsStep() ? plan_->prediction.iteration_time_s : makespan_s_; }
double TimelineModel::bubbleFraction() const { return bubble_; }

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
