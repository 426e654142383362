// The run dashboard: curves of one run (loss raw and smoothed, grad norm, learning rate, tokens/s,
// model TFLOP/s per rank, MFU, bubble per stage, peak memory per rank against the planner's
// prediction, ranks with the same curve drawn once) over step, tokens or wall time; the measured
// pipeline timeline of a step next to the predicted one (the designer's TimelineView); a rank/node
// status grid; the log with a rank filter and search; Stop. Live and replay are one code path: it
// reads the history incrementally (RunFeed) on a timer while the run goes, appends to the graphs and
// coalesces redraws to at most 30 per second.
#pragma once

#include <map>
#include <memory>
#include <optional>

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QCheckBox>
#include <QTableWidget>
#include <QTabWidget>
#include <QTimer>
#include <QWidget>

#include <qcustomplot.h>

#include "elided_label.hpp"
#include "identical_series.hpp"
#include "plan_session.hpp"
#include "run_feed.hpp"
#include "smoothing.hpp"
#include "streaming_graph.hpp"
#include "timeline_model.hpp"

namespace tessera::ui {

class PlotTitle;

class RunController;
class TimelineView;

class DashboardWidget : public QWidget {
  Q_OBJECT
 public:
  explicit DashboardWidget(QWidget* parent = nullptr);
  ~DashboardWidget() override;

  /// Shows run `run` (id, unique id prefix or name) of history `db_path`: everything stored so far,
  /// then what arrives while it runs. False with the reason in *error.
  bool openRun(const QString& db_path, const QString& run, QString* error = nullptr);
  /// The controller following this run (enables Stop and shows its start-up progress and failure).
  void setController(RunController* controller);
  RunController* controller() const { return controller_; }
  /// Reads what the history gained since the last poll and updates the views (the timer calls it).
  void poll();
  /// Redraws what is pending now instead of at the next frame.
  void flushReplots() { coalescer_.flush(); }

  enum class Focus { all, timeline };
  /// `timeline`: the measured-versus-predicted timeline fills the widget (for --view timeline).
  void setFocus(Focus focus);

  void setXAxis(XAxis axis);
  XAxis xAxis() const { return x_axis_; }
  /// Smoothing weight of the loss curve in [0, 1).
  void setSmoothing(double weight);
  /// Shows the measured timeline of `step` (nullopt: follow the latest step).
  void showTimelineStep(std::optional<int64_t> step);

  // For tests and the history view.
  const RunFeed* feed() const { return feed_.get(); }
  QString runId() const;
  /// The window's title once a run is open: "review tiny-3d (run 8633cf72) — Tessera".
  QString runTitle() const;
  /// The window title of run `id` named `name`: "NAME (run ID8) — Tessera", the id left out when the
  /// name ends with it already (tessera-cli's default names), "Run ID8 — Tessera" without a name.
  static QString titleOf(const QString& name, const QString& id);
  /// The plot of one metric ("loss", "grad_norm", "lr", "tokens_per_s", "model_tflops", "mfu",
  /// "bubble", "peak_memory_bytes"), or nullptr.
  QCustomPlot* plot(const QString& metric) const;
  /// The graph of (metric, rank) (loss: the raw one), or nullptr.
  QCPGraph* graph(const QString& metric, int64_t rank) const;
  QCPGraph* smoothedLoss() const { return smoothed_loss_; }
  const TimelineModel& measuredTimeline() const { return measured_model_; }
  const TimelineModel& predictedTimeline() const { return predicted_model_; }
  std::optional<int64_t> shownTimelineStep() const { return shown_step_; }
  QString rankStateText(int64_t rank) const;
  QString statusText() const { return status_->text(); }
  bool polling() const { return poll_timer_.isActive(); }
  QString bubbleText() const { return bubble_label_->text(); }
  /// That line as drawn at its width (its brief form where the whole is too wide), for tests.
  QString shownBubbleText() const { return bubble_label_->shownText(); }
  /// The run's name in the header as painted at its present width.
  QString shownTitleText() const { return title_->shownText(); }
  QString failureText() const { return failure_->isVisible() || !failure_->text().isEmpty() ? failure_->text() : QString(); }
  QPlainTextEdit* logView() const { return log_view_; }
  /// The Checkpoints tab's table: step, size, written, path; one row per checkpoint recorded.
  QTableWidget* checkpointTable() const { return checkpoints_; }
  QComboBox* logRankFilter() const { return log_rank_; }
  QLineEdit* logSearch() const { return log_search_; }
  QPushButton* stopButton() const { return stop_; }
  int64_t replots() const { return coalescer_.replots(); }
  /// The MFU plot's title: "MFU of 22.1 GFLOP/s (the runtime's peak)".
  QString mfuTitle() const;
  const std::vector<QCPItemStraightLine*>& predictionLines() const { return prediction_lines_; }
  /// The stages each predicted line is for, on the right axis at its height ("0", "1"; "0, 1" for one line).
  QMap<double, QString> predictionTicks() const;
  /// The legend entry naming the dashed lines "predicted" (nullptr before a plan).
  QCPGraph* predictionEntry() const { return prediction_entry_; }

 signals:
  /// New data was shown (after a poll that brought any).
  void updated();

 protected:
  /// A palette change restyles the plots (applyPlotPalette).
  void changeEvent(QEvent* event) override;

 private:
  /// The predicted peaks' lines and names in the palette's colours.
  void stylePredictions();
  /// The title of a metric's plot.
  PlotTitle* plotTitle(const QString& metric) const;
  struct Curve {
    QCPGraph* graph = nullptr;
    std::shared_ptr<StreamingGraph> stream;  ///< feeds `graph` a bounded decimation
    SeriesKey key;
    bool smoothed = false;
    DebiasedEma ema{0.0};
  };
  void buildUi();
  QCustomPlot* makePlot(const QString& metric, const QString& title, const QString& unit);
  Curve& curveFor(const SeriesKey& key, bool smoothed);
  double xOf(const SeriesData& data, size_t i) const;
  double yOf(const std::string& metric, double value) const;
  void feedCurve(Curve& curve, size_t from);
  void rebuildCurves();
  void rescale(QCustomPlot* plot);
  void groupMemoryCurves();
  void updateMfuTitle();
  void updateStatus();
  void updateRanks();
  void updateCheckpoints();
  void appendLogs(size_t from);
  void rebuildLog();
  bool logLineShown(const store::LogLine& line) const;
  void updateTimeline();
  /// The plot's legend in a row under its axes (shown once a curve or line needs naming).
  static void showLegendUnderAxes(QCustomPlot* plot);
  void addPredictionLines();

  std::unique_ptr<RunFeed> feed_;
  PlanPtr plan_;  ///< the planner's prediction for the run's spec (null when it does not plan)
  QPointer<RunController> controller_;
  XAxis x_axis_ = XAxis::step;
  double smoothing_ = 0.6;
  double memory_scale_ = 1.0 / (1024.0 * 1024.0);  ///< bytes -> the memory plot's unit
  double flops_scale_ = 1.0;  ///< TFLOP/s -> the model FLOP/s plot's unit (1000: GFLOP/s)
  std::optional<int64_t> chosen_step_, shown_step_;
  bool ended_ = false;

  QTimer poll_timer_;
  ReplotCoalescer coalescer_;
  std::map<QString, QCustomPlot*> plots_;
  std::vector<Curve> curves_;
  IdenticalSeries memory_groups_;  ///< ranks with the same peak-memory curve, drawn once
  QCPGraph* smoothed_loss_ = nullptr;
  std::vector<QCPItemStraightLine*> prediction_lines_;  ///< one per distinct predicted stage total
  QCPGraph* prediction_entry_ = nullptr;  ///< the lines' legend entry (a graph with no data)
  std::vector<double> predicted_memory_;  ///< per stage, in the plot's unit

  ElidedLabel* title_ = nullptr;
  QLabel* status_ = nullptr;
  ElidedLabel* progress_ = nullptr;
  QLabel* failure_ = nullptr;
  QComboBox* x_axis_box_ = nullptr;
  QSlider* smoothing_slider_ = nullptr;
  QLabel* smoothing_label_ = nullptr;
  QPushButton* stop_ = nullptr;
  QWidget* plots_panel_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QWidget* timeline_panel_ = nullptr;
  TimelineModel measured_model_, predicted_model_;
  TimelineView* timeline_view_ = nullptr;
  QSpinBox* step_box_ = nullptr;
  QCheckBox* follow_latest_ = nullptr;
  ElidedLabel* bubble_label_ = nullptr;
  QTableWidget* ranks_ = nullptr;
  QTableWidget* checkpoints_ = nullptr;
  QComboBox* log_rank_ = nullptr;
  QLineEdit* log_search_ = nullptr;
  QPlainTextEdit* log_view_ = nullptr;
};

}  // namespace tessera::ui
