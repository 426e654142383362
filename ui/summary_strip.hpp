// The summary strip above the views: parameters, world size, peak memory against capacity (fits or
// OOM by how much), predicted iteration time, TFLOP/s per GPU, MFU, tokens/s, bubble and the groups
// that cross nodes; greyed, with the spec's first problem beneath, while the plan is the last valid one;
// the speeds greyed ("— does not fit") for a plan over the GPU's memory.
#pragma once

#include <map>

#include <QFontMetrics>
#include <QGridLayout>
#include <QLabel>
#include <QTextDocumentFragment>
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
  /// That line as drawn at the strip's width (rich text: the message may end in "…"), for tests.
  QString shownStatus() const { return status_->text(); }
  /// The lines the cells take, 1 to 3, for tests.
  int lines() const { return lines_; }
  /// The width that line's text takes, for tests.
  int shownStatusWidth() const { return QFontMetrics(status_->font()).horizontalAdvance(QTextDocumentFragment::fromHtml(status_->text()).toPlainText()); }

 signals:
  /// The user clicked the problem: show this field (dotted path) in the designer.
  void fieldRequested(const QString& field);

 protected:
  void changeEvent(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void refresh();
  /// Fits the problem line to the width: the message ends in "…" so that "(and N more)" and what the
  /// views show stay readable (the whole text is the tooltip).
  void showProblem();
  /// Fits the run's line to the width: its name ends in "…" so that " · planned in …" stays.
  void showPlanned();
  /// The width the line under the values may take.
  int statusRoom(const QFontMetrics& metrics) const;
  /// The cells on one line, or on two or three when the strip is narrower than one line needs (values
  /// are never cut: "48.2 Gi" at 1024 px).
  void arrange(int lines);
  /// arrange() for the strip's width: one line when every cell's caption, value (at least its wide
  /// estimate) and detail fit side by side; else two when the values fit on two, else three.
  void fitLines();
  /// A value's width for fitting: what it shows, at least its wide estimate.
  int valueWidth(Metric metric) const;
  /// The width the values need on this many lines (each column as wide as its widest value).
  int valuesWidth(int lines) const;
  void set(Metric metric, const QString& value, const QString& detail, const QColor& detailColor = {});

  PlanSession* session_;
  std::map<Metric, QLabel*> captions_, values_, details_;
  QLabel* status_;
  QString status_text_;
  /// The stale spec's first problem, in parts: its field, its rule, "(and N more)".
  QString problem_field_, problem_message_, problem_rest_;
  /// The valid plan's line in parts: the run's name, " · planned in 105 µs".
  QString planned_name_, planned_tail_;
  QString problemTail() const;  ///< " — the views show the last valid plan."
  QGridLayout* grid_ = nullptr;
  std::map<Metric, int> wide_value_width_;  ///< each cell's wide sample value
  int lines_ = 0;
  bool sized_ = false;  ///< a resize event came: width() is the strip's
};

}  // namespace tessera::ui
