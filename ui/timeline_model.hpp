// Table model of a pipeline timeline: one row per op (stage, kind, microbatch, chunk, start, end),
// ordered by stage then start, with each stage's row range for fast painting. The events are the
// plan's simulation, or a measured step of a run drawn against the plan's schedule.
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
  /// A plan's simulated timeline; a caption ("Predicted") leads the view's title.
  void setPlan(PlanPtr plan, const QString& caption = {});
  /// Measured events of one step of a run, drawn with `plan`'s schedule (shape and colours); the
  /// caption ("measured · step 12") leads the view's title, makespan and bubble come from the events.
  void setMeasured(PlanPtr plan, std::vector<planner::TimelineEvent> events, const QString& caption);
  const planner::Plan* plan() const { return plan_.get(); }
  const QString& caption() const { return caption_; }
  bool measured() const { return measured_; }

  const std::vector<planner::TimelineEvent>& events() const { return events_; }
  int stageCount() const { return static_cast<int>(stage_ranges_.size()); }
  /// [first, last) rows of one stage's events, ordered by start time.
  std::pair<size_t, size_t> stageRange(int stage) const { return stage_ranges_[stage]; }
  double makespan() const;
  double bubbleFraction() const;
  /// Where the step ends: a plan's predicted iteration (pipeline, exposed DP communication, optimizer
  /// step), a measured step's makespan.
  double stepEnd() const;
  /// A plan's data-parallel collectives and optimizer step, drawn beside its ops; none when measured.
  bool showsStep() const { return plan_ && !measured_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  void indexStages();

  PlanPtr plan_;
  bool measured_ = false;
  QString caption_;
  double makespan_s_ = 0, bubble_ = 0;
  std::vector<planner::TimelineEvent> events_;
  std::vector<std::pair<size_t, size_t>> stage_ranges_;
};

}  // namespace tessera::ui
