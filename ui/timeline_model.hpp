// Table model of a simulated pipeline timeline: one row per op (stage, kind, microbatch, chunk,
// start, end), ordered by stage then start, with each stage's row range for fast painting.
#pragma once

#include <utility>
#include <vector>

#include <QAbstractTableModel>

#include "plan_session.hpp"

namespace tessera::ui {

class TimelineModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Stage, Op, Microbatch, Chunk, Start, End, ColumnCount };
  static constexpr int SecondsRole = Qt::UserRole + 1;  ///< double seconds of Start and End

  explicit TimelineModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void setPlan(PlanPtr plan);
  const planner::Plan* plan() const { return plan_.get(); }

  const std::vector<planner::TimelineEvent>& events() const { return events_; }
  int stageCount() const { return static_cast<int>(stage_ranges_.size()); }
  /// [first, last) rows of one stage's events, ordered by start time.
  std::pair<size_t, size_t> stageRange(int stage) const { return stage_ranges_[stage]; }
  double makespan() const;
  double bubbleFraction() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  PlanPtr plan_;
  std::vector<planner::TimelineEvent> events_;
  std::vector<std::pair<size_t, size_t>> stage_ranges_;
};

}  // namespace tessera::ui
