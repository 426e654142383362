// The summary strip above the views: parameters, world size, peak memory against capacity (fits or
// OOM by how much), predicted iteration time, TFLOP/s per GPU, MFU, tokens/s, bubble and the groups
// that cross nodes; greyed, with the spec's first problem beneath, while the plan is the last valid one;
// the speeds greyed ("— does not fit") for a plan over the GPU's memory.
#pragma once

#include <map>

#include <QLabel>
#include <QWidget>

namespace tessera::ui {

class PlanSession;

class SummaryStrip : public QWidget {
  Q_OBJECT
 public:
  enum Metric { Parameters, World, Memory, Iteration, Tflops, Mfu, Tokens, Bubble, CrossNode };

  explicit SummaryStrip(PlanSession* session, QWidget* parent = nullptr);
  /// The value shown for a metric (what the user reads), for tests.
  QString value(Metric metric) const { return values_.at(metric)->text(); }
  QString detail(Metric metric) const { return details_.at(metric)->text(); }
  QString caption(Metric metric) const { return captions_.at(metric)->text(); }
  /// The colour a value is written in (greyed: a speed the plan cannot reach, it does not fit).
  QColor valueColor(Metric metric) const { return values_.at(metric)->palette().color(QPalette::WindowText); }
  /// The line under the values: the spec's first problem, or the run's name and planning time.
  QString status() const { return status_text_; }

 signals:
  /// The user clicked the problem: show this field (dotted path) in the designer.
  void fieldRequested(const QString& field);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void refresh();
  void set(Metric metric, const QString& value, const QString& detail, const QColor& detailColor = {});

  PlanSession* session_;
  std::map<Metric, QLabel*> captions_, values_, details_;
  QLabel* status_;
  QString status_text_;
};

}  // namespace tessera::ui
