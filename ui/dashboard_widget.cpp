// The run dashboard: layout, incremental plotting, timeline, rank grid, log.
#include "dashboard_widget.hpp"

#include <algorithm>
#include <cmath>

#include <QDateTime>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QSplitter>
#include <QVBoxLayout>

#include "elided_label.hpp"
#include "format.hpp"
#include "planner/grid.hpp"
#include "run_controller.hpp"
#include "store/errors.hpp"
#include "plot_fit.hpp"
#include "theme.hpp"
#include "timeline_view.hpp"

namespace tessera::ui {

namespace {

constexpr int kPollIntervalMs = 100;
constexpr size_t kLiveLagPoints = 8;  ///< steps a live rank's memory curve may trail its group's

/// A run that may still get points: the dashboard polls it.
bool isLive(store::RunStatus status) {
  return status == store::RunStatus::planned || status == store::RunStatus::starting || status == store::RunStatus::running;
}

struct PlotInfo {
  const char* metric;
  const char* title;
  const char* unit;
};

const PlotInfo kPlots[] = {
    {"loss", "Loss", "nats/token"},       {"grad_norm", "Grad norm", ""},
    {"lr", "Learning rate", ""},          {"tokens_per_s", "Tokens/s", ""},
    {"model_tflops", "Model TFLOP/s per rank", ""}, {"mfu", "MFU", "%"},
    {"bubble", "Bubble per stage (idle in its own span)", "%"},  {"peak_memory_bytes", "Peak memory per rank", ""},
};

std::optional<planner::OpKind> opKind(const std::string& name) {
  if (name == "F") return planner::OpKind::forward;
  if (name == "B") return planner::OpKind::backward;
  if (name == "Bi") return planner::OpKind::backward_input;
  if (name == "W") return planner::OpKind::backward_weight;
  return std::nullopt;
}

QColor stateColor(RankState state) {
  switch (state) {
    case RankState::starting: return QColor(0x9A, 0xA5, 0xB1);
    case RankState::running: return QColor(0x2F, 0x81, 0xF7);
    case RankState::done: return colors::ok();
    case RankState::failed: return QColor(0xD1, 0x24, 0x2F);
    case RankState::stopped: return colors::warning();
    case RankState::lost: return QColor(0x6E, 0x40, 0xC9);
  }
  return {};
}

}  // namespace

DashboardWidget::DashboardWidget(QWidget* parent) : QWidget(parent), coalescer_(33, this) {
  buildUi();
  poll_timer_.setInterval(kPollIntervalMs);
  connect(&poll_timer_, &QTimer::timeout, this, &DashboardWidget::poll);
  coalescer_.beforeReplot = [this](QCustomPlot* plot) { rescale(plot); };
}

DashboardWidget::~DashboardWidget() = default;

QCustomPlot* DashboardWidget::makePlot(const QString& metric, const QString& title, const QString& unit) {
  auto* plot = new FittedPlot(plots_panel_);  // value ticks thinned to its height
  plot->setMinimumSize(180, 150);  // four in a row fit an 800 px window (at 220 it needed 898)
  plot->setNoAntialiasingOnDrag(true);
  plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot->plotLayout()->insertRow(0);
  auto* heading = new PlotTitle(plot, title, QFont(font().family(), font().pointSize(), QFont::Bold));
  plot->plotLayout()->addElement(0, 0, heading);
  plot->yAxis->setLabel(unit);
  plot->legend->setVisible(false);
  QFont legend_font = font();
  legend_font.setPointSize(std::max(6, font().pointSize() - 2));
  plot->legend->setFont(legend_font);
  plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  // Many ranks: the legend goes in rows of up to four (as many as the plot's width takes), small and
  // see-through, not over the whole plot.
  plot->fitLegend(plot->legend, 4);
  plot->legend->setRowSpacing(0);
  plot->legend->setColumnSpacing(4);
  plot->legend->setIconSize(14, 8);
  plot->legend->setBrush(QColor(255, 255, 255, 190));  // the base colour, see-through (applyPlotPalette)
  plot->legend->setBorderPen(Qt::NoPen);
  applyPlotPalette(plot, palette());
  // The right axis, where one is shown (the predicted peaks' stages), spans the left one.
  connect(plot->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), plot->yAxis2, qOverload<const QCPRange&>(&QCPAxis::setRange));
  // Dragging or zooming keeps the user's range until a double click follows the data again.
  connect(plot, &QCustomPlot::mousePress, plot, [plot] { plot->setProperty("userRange", true); });
  connect(plot, &QCustomPlot::mouseWheel, plot, [plot] { plot->setProperty("userRange", true); });
  connect(plot, &QCustomPlot::mouseDoubleClick, plot, [this, plot] {
    plot->setProperty("userRange", false);
    coalescer_.schedule(plot);
  });
  plots_[metric] = plot;
  return plot;
}

void DashboardWidget::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange) return;
  for (auto& [metric, plot] : plots_) {
    applyPlotPalette(plot, palette());
    coalescer_.schedule(plot);
  }
  stylePredictions();  // items keep the colours they were made with, and the right axis is muted
}

void DashboardWidget::buildUi() {
  auto* root = new QVBoxLayout(this);
  root->setContentsMargins(6, 6, 6, 6);
  root->setSpacing(4);

  auto* header = new QHBoxLayout;
  // The run's name and the progress end in "…" on a narrow window (their width was the window's least).
  title_ = new ElidedLabel(tr("No run"));
  title_->setMinimumWidth(80);
  QFont bold = title_->font();
  bold.setBold(true);
  bold.setPointSize(bold.pointSize() + 1);
  title_->setFont(bold);
  status_ = new QLabel;
  progress_ = new ElidedLabel;
  progress_->setMinimumWidth(1);
  progress_->setStyleSheet(QStringLiteral("color: palette(placeholder-text)"));
  x_axis_box_ = new QComboBox;
  x_axis_box_->addItems({tr("Step"), tr("Tokens"), tr("Wall time (s)")});
  connect(x_axis_box_, &QComboBox::currentIndexChanged, this, [this](int i) { setXAxis(static_cast<XAxis>(i)); });
  smoothing_slider_ = new QSlider(Qt::Horizontal);
  // Up to 140 px from the spare width, down to 70 px where the run's name needs the room (a fixed
  // 140 px cut "tiny-3d TP2·PP…" at 800 px).
  smoothing_slider_->setMinimumWidth(70);
  smoothing_slider_->setMaximumWidth(140);
  smoothing_slider_->setRange(0, 99);
  smoothing_slider_->setValue(static_cast<int>(smoothing_ * 100));
  smoothing_label_ = new QLabel;
  connect(smoothing_slider_, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 100.0); });
  stop_ = new QPushButton(tr("Stop run"));
  stop_->setEnabled(false);
  connect(stop_, &QPushButton::clicked, this, [this] {
    if (controller_) controller_->stop();
    stop_->setEnabled(false);
    progress_->setText(tr("stopping…"));
  });
  header->addWidget(title_);
  header->addWidget(status_);
  header->addWidget(progress_, 1);
  header->addWidget(new QLabel(tr("X axis")));
  header->addWidget(x_axis_box_);
  header->addSpacing(12);
  header->addWidget(new QLabel(tr("Smoothing")));
  header->addWidget(smoothing_slider_, 1);
  header->addWidget(smoothing_label_);
  header->addSpacing(12);
  header->addWidget(stop_);
  root->addLayout(header);

  failure_ = new QLabel;
  failure_->setWordWrap(true);
  failure_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  failure_->setStyleSheet(QStringLiteral("QLabel { background: #FDECEC; color: #82071E; border: 1px solid #D1242F; padding: 6px; }"));
  failure_->hide();
  root->addWidget(failure_);

  auto* splitter = new QSplitter(Qt::Vertical);
  plots_panel_ = new QWidget;
  auto* grid = new QGridLayout(plots_panel_);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(2);
  int i = 0;
  for (const auto& info : kPlots) {
    grid->addWidget(makePlot(QString::fromLatin1(info.metric), tr(info.title), QString::fromUtf8(info.unit)), i / 4, i % 4);
    ++i;
  }
  splitter->addWidget(plots_panel_);

  tabs_ = new QTabWidget;
  timeline_panel_ = new QWidget;
  auto* tl = new QVBoxLayout(timeline_panel_);
  tl->setContentsMargins(0, 4, 0, 0);
  auto* tl_bar = new QHBoxLayout;
  step_box_ = new QSpinBox;
  step_box_->setRange(0, 0);
  step_box_->setPrefix(tr("step "));
  follow_latest_ = new QCheckBox(tr("latest step"));
  follow_latest_->setChecked(true);
  bubble_label_ = new ElidedLabel;  // "…" on a narrow window, not its width as the window's least
  bubble_label_->setMinimumWidth(1);
  connect(step_box_, &QSpinBox::valueChanged, this, [this](int step) {
    if (!follow_latest_->isChecked()) showTimelineStep(step);
  });
  connect(follow_latest_, &QCheckBox::toggled, this, [this](bool latest) {
    showTimelineStep(latest ? std::nullopt : std::optional<int64_t>(step_box_->value()));
  });
  tl_bar->addWidget(new QLabel(tr("Measured timeline of")));
  tl_bar->addWidget(step_box_);
  tl_bar->addWidget(follow_latest_);
  tl_bar->addSpacing(16);
  tl_bar->addWidget(bubble_label_, 1);
  tl->addLayout(tl_bar);
  timeline_view_ = new TimelineView(&measured_model_, &predicted_model_);
  tl->addWidget(timeline_view_, 1);
  tabs_->addTab(timeline_panel_, tr("Pipeline timeline"));

  ranks_ = new QTableWidget;
  ranks_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  ranks_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  tabs_->addTab(ranks_, tr("Ranks"));

  auto* log_panel = new QWidget;
  auto* ll = new QVBoxLayout(log_panel);
  ll->setContentsMargins(0, 4, 0, 0);
  auto* log_bar = new QHBoxLayout;
  log_rank_ = new QComboBox;
  log_rank_->addItem(tr("All ranks"), -1);
  log_search_ = new QLineEdit;
  log_search_->setPlaceholderText(tr("Search the log"));
  log_search_->setClearButtonEnabled(true);
  log_bar->addWidget(log_rank_);
  log_bar->addWidget(log_search_, 1);
  ll->addLayout(log_bar);
  log_view_ = new QPlainTextEdit;
  log_view_->setReadOnly(true);
  log_view_->setMaximumBlockCount(20000);
  log_view_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  ll->addWidget(log_view_, 1);
  connect(log_rank_, &QComboBox::currentIndexChanged, this, &DashboardWidget::rebuildLog);
  connect(log_search_, &QLineEdit::textChanged, this, &DashboardWidget::rebuildLog);
  tabs_->addTab(log_panel, tr("Log"));

  checkpoints_ = new QTableWidget(0, 4);
  checkpoints_->setHorizontalHeaderLabels({tr("Step"), tr("Size"), tr("Written"), tr("Path (on its node)")});
  checkpoints_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  checkpoints_->setSelectionBehavior(QAbstractItemView::SelectRows);
  checkpoints_->verticalHeader()->hide();
  checkpoints_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  checkpoints_->horizontalHeader()->setStretchLastSection(true);
  checkpoints_->setToolTip(tr("Checkpoints the run's rank 0 reported complete; tessera-train --resume continues from the newest"));
  tabs_->addTab(checkpoints_, tr("Checkpoints"));
  splitter->addWidget(tabs_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  root->addWidget(splitter, 1);
  setSmoothing(smoothing_);
}

bool DashboardWidget::openRun(const QString& db_path, const QString& run, QString* error) {
  try {
    feed_ = std::make_unique<RunFeed>(db_path.toStdString(), run.toStdString());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  for (auto& [metric, plot] : plots_) {
    plot->clearGraphs();
    plot->clearItems();
    plot->setProperty("userRange", false);
  }
  curves_.clear();
  memory_groups_ = IdenticalSeries();
  smoothed_loss_ = nullptr;
  prediction_lines_.clear();
  prediction_entry_ = nullptr;
  plots_.at(QStringLiteral("peak_memory_bytes"))->yAxis2->setVisible(false);
  predicted_memory_.clear();
  log_view_->clear();
  while (log_rank_->count() > 1) log_rank_->removeItem(1);
  checkpoints_->setRowCount(0);
  tabs_->setTabText(tabs_->indexOf(checkpoints_), tr("Checkpoints"));
  ended_ = false;
  chosen_step_.reset();
  shown_step_.reset();

  plan_.reset();
  if (feed_->spec()) {
    try {
      planner::PlanOptions options;
      options.record_events = true;
      plan_ = std::make_shared<const planner::Plan>(planner::make_plan(*feed_->spec(), options));
    } catch (const std::exception&) {
      plan_.reset();  // the spec parses but does not plan: no prediction to draw
    }
  }
  predicted_model_.setPlan(plan_, tr("Predicted"));
  measured_model_.setPlan(nullptr);
  if (plan_) {
    memory_scale_ = plan_->memory.peak_bytes > 2 * kGiB ? 1.0 / kGiB : 1.0 / (1024.0 * 1024.0);
    for (const auto& stage : plan_->memory.stages) predicted_memory_.push_back(stage.total_bytes() * memory_scale_);
  }
  plots_.at(QStringLiteral("peak_memory_bytes"))->yAxis->setLabel(memory_scale_ < 1e-8 ? tr("GiB") : tr("MiB"));
  // Below 1 TFLOP/s predicted (CPU ranks; a CPU run whose spec does not plan too) in GFLOP/s, as the
  // summary strip says it: "0.0015 TFLOP/s".
  const bool gflops = plan_ ? showsInGflops(plan_->prediction.model_tflops_per_gpu) : feed_->spec() && feed_->spec()->cluster.gpu == "cpu";
  flops_scale_ = gflops ? 1000.0 : 1.0;
  plotTitle(QStringLiteral("model_tflops"))->setFullText(modelFlopsTitle(gflops));
  addPredictionLines();
  // The axis spans the predicted peaks before any point arrives (a run without points drew none).
  rescale(plots_.at(QStringLiteral("peak_memory_bytes")));
  const int64_t world = feed_->worldSize();
  for (int64_t r = 0; r < world && r < 4096; ++r) log_rank_->addItem(tr("rank %1").arg(r), static_cast<qlonglong>(r));
  title_->setText(QString::fromStdString(feed_->run().name));
  setWindowTitle(runTitle());
  poll();
  return true;
}

void DashboardWidget::setController(RunController* controller) {
  controller_ = controller;
  if (!controller) return;
  stop_->setEnabled(controller->busy());
  connect(controller, &RunController::progress, this, [this](const QString& m) { progress_->setText(m); });
  connect(controller, &RunController::launched, this, [this] {
    stop_->setEnabled(true);
    poll();
  });
  connect(controller, &RunController::finished, this, [this] {
    stop_->setEnabled(false);
    progress_->clear();
    poll();  // the final status and the last records
  });
  connect(controller, &RunController::launchFailed, this, [this, controller](const QString& m) {
    failure_->setText(controller->attaching() ? tr("Could not follow the run: %1").arg(m) : tr("The run did not start: %1").arg(m));
    failure_->show();
  });
}

QString DashboardWidget::runId() const { return feed_ ? QString::fromStdString(feed_->run().id) : QString(); }

QString DashboardWidget::runTitle() const {
  return feed_ ? titleOf(QString::fromStdString(feed_->run().name), runId()) : tr("Run");
}

QString DashboardWidget::titleOf(const QString& name, const QString& run_id) {
  const QString id = run_id.left(8);
  if (name.isEmpty()) return tr("Run %1 — Tessera").arg(id);
  // A default name ("tiny-gpt … ab383daf", tessera-cli launch) ends with the id already.
  return name.endsWith(id) ? tr("%1 — Tessera").arg(name) : tr("%1 (run %2) — Tessera").arg(name, id);
}

void DashboardWidget::setFocus(Focus focus) {
  const bool all = focus == Focus::all;
  plots_panel_->setVisible(all);
  if (!all) tabs_->setCurrentWidget(timeline_panel_);
}

QCustomPlot* DashboardWidget::plot(const QString& metric) const {
  const auto it = plots_.find(metric);
  return it == plots_.end() ? nullptr : it->second;
}

QCPGraph* DashboardWidget::graph(const QString& metric, int64_t rank) const {
  for (const auto& curve : curves_)
    if (!curve.smoothed && curve.key.first == metric.toStdString() && curve.key.second == rank) return curve.graph;
  return nullptr;
}

double DashboardWidget::xOf(const SeriesData& data, size_t i) const {
  switch (x_axis_) {
    case XAxis::step: return static_cast<double>(data.steps[i]);
    case XAxis::tokens:
      return static_cast<double>(data.steps[i]) * static_cast<double>(std::max<int64_t>(1, feed_->tokensPerStep()));
    case XAxis::wall_time_s: return data.wall_time_s[i] - feed_->startWallTimeS();
  }
  return 0;
}

double DashboardWidget::yOf(const std::string& metric, double value) const {
  if (metric == store::metric_name::mfu || metric == store::metric_name::bubble) return value * 100.0;
  if (metric == store::metric_name::peak_memory_bytes) return value * memory_scale_;
  if (metric == "model_tflops") return value * flops_scale_;
  return value;
}

DashboardWidget::Curve& DashboardWidget::curveFor(const SeriesKey& key, bool smoothed) {
  for (auto& curve : curves_)
    if (curve.key == key && curve.smoothed == smoothed) return curve;
  QCustomPlot* plot = plots_.at(QString::fromStdString(key.first));
  Curve curve;
  curve.key = key;
  curve.smoothed = smoothed;
  curve.ema = DebiasedEma(smoothing_);
  curve.graph = plot->addGraph();
  curve.graph->setAdaptiveSampling(true);
  curve.stream = std::make_shared<StreamingGraph>(curve.graph);
  const bool per_stage = key.first == store::metric_name::bubble;
  const bool per_rank = key.first == store::metric_name::peak_memory_bytes;
  QColor color = colors::category(0, 1);
  if (per_stage) {
    const int64_t stages = feed_->spec() ? feed_->spec()->parallel.pp : 1;
    color = colors::category(feed_->stageOf(key.second), stages);
    curve.graph->setName(tr("stage %1").arg(feed_->stageOf(key.second)));
  } else if (per_rank) {
    color = colors::category(key.second, feed_->worldSize());
    curve.graph->setName(tr("rank %1").arg(key.second));
  } else {
    curve.graph->setName(tr("rank %1").arg(key.second));
  }
  if (key.first == store::metric_name::loss && !smoothed) {
    color.setAlpha(70);  // the raw loss, faded under the smoothed one
    curve.graph->setName(tr("raw"));
  }
  if (smoothed) curve.graph->setName(tr("smoothed"));
  curve.graph->setPen(QPen(color, smoothed ? 2.0 : 1.4));
  if (per_stage || per_rank) {
    showLegendUnderAxes(plot);
    curve.graph->addToLegend();
  } else {
    curve.graph->removeFromLegend();
  }
  curves_.push_back(curve);
  if (smoothed) smoothed_loss_ = curves_.back().graph;
  return curves_.back();
}

void DashboardWidget::feedCurve(Curve& curve, size_t from) {
  const SeriesData* data = feed_->find(curve.key.first, curve.key.second);
  if (!data || from >= data->size()) return;
  std::vector<double> x, y;
  x.reserve(data->size() - from);
  y.reserve(data->size() - from);
  for (size_t i = from; i < data->size(); ++i) {
    x.push_back(xOf(*data, i));
    const double value = yOf(curve.key.first, data->values[i]);
    y.push_back(curve.smoothed ? curve.ema.add(value) : value);
  }
  curve.stream->append(x, y);
}

void DashboardWidget::rebuildCurves() {
  if (!feed_) return;
  for (auto& curve : curves_) {
    curve.stream->clear();
    curve.ema = DebiasedEma(smoothing_);
    feedCurve(curve, 0);
  }
  for (auto& [metric, plot] : plots_) coalescer_.schedule(plot);
}

void DashboardWidget::groupMemoryCurves() {
  // Ranks that peak at the same bytes (a stage's data-parallel replicas on a GPU) would draw over each
  // other under a legend of ranks one cannot see: each group is drawn once, named by all its ranks.
  std::map<int64_t, const SeriesData*> series;
  for (const auto& [key, data] : feed_->series())
    if (key.first == store::metric_name::peak_memory_bytes) series[key.second] = &data;
  // While the run goes its ranks report a step or so apart; once it ended, a rank with fewer points
  // (it died or stopped reporting) is drawn on its own.
  memory_groups_.update(series, isLive(feed_->run().status) ? kLiveLagPoints : 0);
  for (auto& curve : curves_) {
    if (curve.key.first != store::metric_name::peak_memory_bytes) continue;
    const int64_t rank = curve.key.second;
    const bool drawn = memory_groups_.representative(rank) == rank;
    curve.graph->setVisible(drawn);
    if (drawn) {
      curve.graph->setName(formatRanks(memory_groups_.members(rank)));
      curve.graph->addToLegend();
    } else {
      curve.graph->removeFromLegend();
    }
  }
}

void DashboardWidget::showLegendUnderAxes(QCustomPlot* plot) {
  if (plot->legend->visible()) return;
  // Under the axes, in a row of the plot's own, never over the curves.
  plot->axisRect()->insetLayout()->take(plot->legend);
  plot->plotLayout()->addElement(2, 0, plot->legend);
  plot->plotLayout()->setRowStretchFactor(2, 0.001);
  plot->legend->setBrush(Qt::NoBrush);
  plot->legend->setVisible(true);
}

void DashboardWidget::addPredictionLines() {
  // The planner's prediction, one dashed line per distinct stage total, in a neutral colour no rank
  // uses; the stages each line is for are named on the right axis, at its height, outside the curves
  // ("predicted: stage 1" at a line's end hid the ranks' lines it was to be read against), and one
  // legend entry says what the dashed lines are.
  QCustomPlot* plot = plots_.at(QStringLiteral("peak_memory_bytes"));
  std::vector<std::pair<double, QStringList>> levels;  // value in the plot's unit, its stages
  for (size_t s = 0; s < predicted_memory_.size(); ++s) {
    const double v = predicted_memory_[s];
    auto same = std::find_if(levels.begin(), levels.end(), [&](const auto& l) { return std::abs(l.first - v) <= 0.005 * std::max(1.0, v); });
    if (same == levels.end()) levels.push_back({v, {QString::number(s)}});
    else same->second << QString::number(s);
  }
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (const auto& [value, stages] : levels) {
    auto* line = new QCPItemStraightLine(plot);
    line->point1->setCoords(0, value);
    line->point2->setCoords(1, value);
    prediction_lines_.push_back(line);
    ticker->addTick(value, stages.join(QStringLiteral(", ")));
  }
  if (levels.empty()) return;
  QCPAxis* right = plot->yAxis2;
  right->setTicker(ticker);
  right->setVisible(true);
  right->setTickLength(0, 0);
  right->setSubTicks(false);
  right->setTickLabelFont(plot->legend->font());
  right->setLabelFont(plot->legend->font());
  right->setLabel(levels.size() == 1 && levels.front().second.size() == 1 ? tr("stage") : tr("stages"));
  right->setLabelPadding(2);
  right->grid()->setVisible(false);
  right->setRange(plot->yAxis->range());
  prediction_entry_ = plot->addGraph();  // no data: the legend's sample and name of the lines
  prediction_entry_->setName(tr("predicted"));
  showLegendUnderAxes(plot);
  prediction_entry_->addToLegend();
  stylePredictions();
}

QMap<double, QString> DashboardWidget::predictionTicks() const {
  const auto ticker = plots_.at(QStringLiteral("peak_memory_bytes"))->yAxis2->ticker().dynamicCast<QCPAxisTickerText>();
  return ticker && plots_.at(QStringLiteral("peak_memory_bytes"))->yAxis2->visible() ? ticker->ticks() : QMap<double, QString>();
}

void DashboardWidget::stylePredictions() {
  const QColor neutral = palette().color(QPalette::PlaceholderText);
  const QPen dashed(neutral, 1.2, Qt::DashLine);
  for (auto* line : prediction_lines_) line->setPen(dashed);
  if (prediction_entry_) prediction_entry_->setPen(dashed);
  QCPAxis* right = plots_.at(QStringLiteral("peak_memory_bytes"))->yAxis2;
  right->setBasePen(Qt::NoPen);
  right->setTickLabelColor(neutral);
  right->setLabelColor(neutral);
}

void DashboardWidget::rescale(QCustomPlot* plot) {
  if (plot->property("userRange").toBool()) return;
  plot->rescaleAxes(true);
  if (plot == plots_.at(QStringLiteral("peak_memory_bytes")) && !predicted_memory_.empty()) {
    QCPRange range = plot->yAxis->range();
    for (double v : predicted_memory_) range.expand(v);
    const bool measured = std::any_of(curves_.begin(), curves_.end(), [](const Curve& c) {
      return c.key.first == store::metric_name::peak_memory_bytes && !c.graph->data()->isEmpty();
    });
    if (!measured) range = QCPRange(0, *std::max_element(predicted_memory_.begin(), predicted_memory_.end()));
    plot->yAxis->setRange(range);
  }
  // A little room above and below, so flat curves are not drawn on the frame: 6 % of the range, and
  // at least 6 px of a short plot (the lowest predicted line lay on the axis's ticks at 800 px).
  const QCPRange y = plot->yAxis->range();
  const double share = std::max(0.06, 6.0 / std::max(40, plot->axisRect()->height()));
  const double pad = y.size() > 0 ? y.size() * share : std::max(1e-9, std::abs(y.center()) * 0.05);
  plot->yAxis->setRange(y.lower - pad, y.upper + pad);
}

void DashboardWidget::poll() {
  if (!feed_) return;
  FeedUpdate update;
  try {
    update = feed_->poll();
  } catch (const store::StoreError& e) {
    if (e.kind() != store::ErrorKind::not_found) {
      progress_->setText(tr("cannot read the history: %1").arg(QString::fromStdString(e.what())));
      return;
    }
    // Deleted from the history: nothing more will come (it read "running", re-polled 10 times a
    // second, with "cannot read the history").
    poll_timer_.stop();
    ended_ = true;
    status_->setText(tr("deleted from the history"));
    status_->setStyleSheet(QStringLiteral("color: %1; padding-left: 8px").arg(palette().color(QPalette::PlaceholderText).name()));
    progress_->setText(tr("what is shown was read before"));
    // A follower stops the ranks at their next record; Stop run stays for ranks that are silent.
    stop_->setEnabled(controller_ && controller_->busy());
    return;
  } catch (const std::exception& e) {
    progress_->setText(tr("cannot read the history: %1").arg(QString::fromStdString(e.what())));
    return;
  }
  bool memory_grew = false;
  for (const auto& [key, before] : update.grown) {
    feedCurve(curveFor(key, false), before);
    if (key.first == store::metric_name::loss && key.second == feed_->firstRankOf(store::metric_name::loss))
      feedCurve(curveFor(key, true), before);
    coalescer_.schedule(plots_.at(QString::fromStdString(key.first)));
    memory_grew |= key.first == store::metric_name::peak_memory_bytes;
  }
  if (memory_grew || update.run_changed) groupMemoryCurves();
  if (update.logs_before < feed_->logs().size()) appendLogs(update.logs_before);
  if (update.timeline_changed) updateTimeline();
  if (update.artifacts_changed) updateCheckpoints();
  updateMfuTitle();
  updateStatus();
  updateRanks();
  const auto status = feed_->run().status;
  const bool live = isLive(status);
  if (live && !poll_timer_.isActive()) poll_timer_.start();
  if (!live) poll_timer_.stop();
  ended_ = !live;
  if (update.any() || update.logs_before < feed_->logs().size()) emit updated();
}

void DashboardWidget::updateCheckpoints() {
  const auto& artifacts = feed_->artifacts();
  checkpoints_->setRowCount(static_cast<int>(artifacts.size()));
  for (int row = 0; row < static_cast<int>(artifacts.size()); ++row) {
    const auto& a = artifacts[static_cast<size_t>(row)];
    const QString kind = a.kind == "checkpoint" ? QString() : QStringLiteral(" (%1)").arg(QString::fromStdString(a.kind));
    const QStringList cells{QString::number(a.step) + kind, formatBytes(a.size_bytes),
                            QDateTime::fromMSecsSinceEpoch(a.created_ms).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")),
                            QString::fromStdString(a.path)};
    for (int column = 0; column < cells.size(); ++column) {
      auto* item = new QTableWidgetItem(cells[column]);
      if (column < 2) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      checkpoints_->setItem(row, column, item);
    }
  }
  tabs_->setTabText(tabs_->indexOf(checkpoints_),
                    artifacts.empty() ? tr("Checkpoints") : tr("Checkpoints (%1)").arg(artifacts.size()));
}

void DashboardWidget::updateMfuTitle() {
  // Measured MFU is a share of the runtime's peak (on CPU a GEMM it timed), not the cluster preset's
  // the designer predicts with: the title says which.
  QString text = tr("MFU");
  if (const auto peak = feed_->mfuPeakTflops())
    text += tr(" of %1 (the runtime's peak)").arg(formatFlopRate(*peak));
  else if (feed_->firstRankOf(store::metric_name::mfu))
    text += tr(" of the runtime's peak (see log)");
  PlotTitle* heading = plotTitle(QStringLiteral("mfu"));
  if (heading->fullText() == text) return;
  heading->setFullText(text);
  coalescer_.schedule(plots_.at(QStringLiteral("mfu")));
}

QString DashboardWidget::mfuTitle() const { return plotTitle(QStringLiteral("mfu"))->fullText(); }

PlotTitle* DashboardWidget::plotTitle(const QString& metric) const {
  return qobject_cast<PlotTitle*>(plots_.at(metric)->plotLayout()->element(0, 0));
}

void DashboardWidget::updateStatus() {
  const auto& run = feed_->run();
  const auto status = QString::fromLatin1(store::to_string(run.status).data(), static_cast<qsizetype>(store::to_string(run.status).size()));
  QString text = status;
  if (feed_->lastStep() > 0) {
    text += tr(" · step %1").arg(feed_->lastStep());
    if (feed_->spec()) text += tr(" of %1").arg(feed_->spec()->training.train_steps);
  }
  status_->setText(text);
  QColor color = run.status == store::RunStatus::failed || run.status == store::RunStatus::lost ? QColor(0xD1, 0x24, 0x2F)
                 : run.status == store::RunStatus::done ? colors::ok()
                                                        : palette().color(QPalette::WindowText);
  status_->setStyleSheet(QStringLiteral("color: %1; padding-left: 8px").arg(color.name()));
  if (run.status == store::RunStatus::failed || run.status == store::RunStatus::lost) {
    QString message = tr("Run %1: %2").arg(status, QString::fromStdString(run.exit_reason));
    // "rank 3 killed by signal 9": name its node and show its last lines.
    std::optional<int64_t> rank;
    if (run.exit_reason.rfind("rank ", 0) == 0) {
      try {
        rank = std::stoll(run.exit_reason.substr(5));
      } catch (const std::exception&) {
      }
    }
    if (rank && feed_->spec()) {
      const auto& p = feed_->spec()->parallel;
      const auto coord = planner::rank_coord(*rank, p.tp, p.cp, p.ep, feed_->spec()->data_parallel(), p.pp,
                                             feed_->spec()->cluster.gpus_per_node);
      const QString host = coord.node < static_cast<int64_t>(run.hosts.size()) ? QString::fromStdString(run.hosts[coord.node]) : QString();
      message += tr("\nnode %1%2, rank %3 (stage %4). Its last lines:")
                     .arg(coord.node)
                     .arg(host.isEmpty() ? QString() : QStringLiteral(" (") + host + QStringLiteral(")"))
                     .arg(*rank)
                     .arg(coord.pp);
      std::vector<QString> last;
      for (auto it = feed_->logs().rbegin(); it != feed_->logs().rend() && last.size() < 8; ++it)
        if (it->rank == *rank) last.push_back(QString::fromStdString(it->line));
      for (auto it = last.rbegin(); it != last.rend(); ++it) message += QStringLiteral("\n  ") + *it;
    }
    failure_->setText(message);
    failure_->show();
  } else if (failure_->text().startsWith(tr("Run "))) {
    failure_->hide();
  }
}

QString DashboardWidget::rankStateText(int64_t rank) const {
  return feed_ ? QString::fromLatin1(to_string(feed_->rankState(rank))) : QString();
}

void DashboardWidget::updateRanks() {
  const int64_t world = std::min<int64_t>(feed_->worldSize(), 4096);
  const int64_t per_node = feed_->spec() ? std::max<int64_t>(1, feed_->spec()->cluster.gpus_per_node) : std::max<int64_t>(1, world);
  const int64_t nodes = (world + per_node - 1) / per_node;
  if (ranks_->rowCount() != nodes || ranks_->columnCount() != per_node) {
    ranks_->setRowCount(static_cast<int>(nodes));
    ranks_->setColumnCount(static_cast<int>(per_node));
    QStringList rows, cols;
    for (int64_t n = 0; n < nodes; ++n) rows << tr("node %1").arg(n);
    for (int64_t l = 0; l < per_node; ++l) cols << tr("GPU %1").arg(l);
    ranks_->setVerticalHeaderLabels(rows);
    ranks_->setHorizontalHeaderLabels(cols);
  }
  for (int64_t rank = 0; rank < world; ++rank) {
    int64_t node = rank / per_node, local = rank % per_node;
    if (feed_->spec()) {
      const auto& p = feed_->spec()->parallel;
      const auto c = planner::rank_coord(rank, p.tp, p.cp, p.ep, feed_->spec()->data_parallel(), p.pp, per_node);
      node = c.node;
      local = c.local;
    }
    const auto state = feed_->rankState(rank);
    auto* item = ranks_->item(static_cast<int>(node), static_cast<int>(local));
    if (!item) {
      item = new QTableWidgetItem;
      item->setTextAlignment(Qt::AlignCenter);
      ranks_->setItem(static_cast<int>(node), static_cast<int>(local), item);
    }
    item->setText(tr("rank %1 · stage %2\n%3").arg(rank).arg(feed_->stageOf(rank)).arg(QString::fromLatin1(to_string(state))));
    item->setBackground(stateColor(state));
    item->setForeground(Qt::white);
    const std::string exit = feed_->rankExit(rank);
    item->setToolTip(exit.empty() ? QString() : QString::fromStdString(exit));
  }
  ranks_->resizeRowsToContents();
}

bool DashboardWidget::logLineShown(const store::LogLine& line) const {
  const qlonglong rank = log_rank_->currentData().toLongLong();
  if (rank >= 0 && line.rank != rank) return false;
  const QString needle = log_search_->text();
  return needle.isEmpty() || QString::fromStdString(line.line).contains(needle, Qt::CaseInsensitive);
}

void DashboardWidget::appendLogs(size_t from) {
  const auto& logs = feed_->logs();
  QStringList lines;
  for (size_t i = from; i < logs.size(); ++i)
    if (logLineShown(logs[i]))
      lines << QStringLiteral("[rank %1%2] %3")
                   .arg(logs[i].rank)
                   .arg(logs[i].stream == "stderr" ? QStringLiteral(" err") : QString())
                   .arg(QString::fromStdString(logs[i].line));
  if (!lines.isEmpty()) log_view_->appendPlainText(lines.join(QLatin1Char('\n')));
}

void DashboardWidget::rebuildLog() {
  log_view_->clear();
  if (feed_) appendLogs(0);
}

void DashboardWidget::showTimelineStep(std::optional<int64_t> step) {
  chosen_step_ = step;
  updateTimeline();
}

void DashboardWidget::updateTimeline() {
  if (!feed_ || !plan_) return;
  const auto last = feed_->lastTimelineStep();
  if (!last) return;
  step_box_->blockSignals(true);
  step_box_->setRange(1, static_cast<int>(*last));
  const int64_t step = chosen_step_ ? std::clamp<int64_t>(*chosen_step_, 1, *last) : *last;
  step_box_->setValue(static_cast<int>(step));
  step_box_->blockSignals(false);
  // One rank per stage: the lowest rank that reported events for it.
  std::map<int64_t, int64_t> rank_of_stage;
  const auto events = feed_->timeline(step);
  for (const auto& e : events) {
    auto [it, inserted] = rank_of_stage.emplace(e.stage, e.rank);
    if (!inserted) it->second = std::min(it->second, e.rank);
  }
  std::vector<planner::TimelineEvent> measured;
  for (const auto& e : events) {
    const auto kind = opKind(e.op);
    if (!kind || rank_of_stage.at(e.stage) != e.rank) continue;
    measured.push_back({static_cast<int32_t>(e.stage),
                        {*kind, static_cast<int32_t>(e.microbatch), static_cast<int32_t>(e.chunk)},
                        e.start_s,
                        e.end_s});
  }
  // Each rank timed its ops from its own step start: onto one clock before drawing and measuring.
  planner::align_stage_clocks(measured, static_cast<int>(plan_->spec.parallel.pp));
  shown_step_ = step;
  measured_model_.setMeasured(plan_, std::move(measured), tr("Measured, step %1").arg(step));
  predicted_model_.setPlan(plan_, tr("Predicted"));
  // Not the per-stage plot's bubble (each stage idle between its own first and last op): the idle
  // share of the busiest stage over the whole step, as the timelines' titles and the planner count it.
  const QString measured_bubble = formatPercent(measured_model_.bubbleFraction()),
                predicted_bubble = formatPercent(predicted_model_.bubbleFraction());
  bubble_label_->setText(tr("bubble of the busiest stage over the step: measured %1 (step %2) · predicted %3")
                             .arg(measured_bubble)
                             .arg(step)
                             .arg(predicted_bubble),
                         tr("bubble: measured %1 · predicted %2").arg(measured_bubble, predicted_bubble));
  timeline_view_->fitToView();
  timeline_view_->update();
}

void DashboardWidget::setXAxis(XAxis axis) {
  if (axis == XAxis::tokens && feed_ && feed_->tokensPerStep() == 0) axis = XAxis::step;
  x_axis_ = axis;
  x_axis_box_->blockSignals(true);
  x_axis_box_->setCurrentIndex(static_cast<int>(axis));
  x_axis_box_->blockSignals(false);
  const QString label = axis == XAxis::step ? tr("step") : axis == XAxis::tokens ? tr("tokens") : tr("wall time (s)");
  for (auto& [metric, plot] : plots_) {
    plot->xAxis->setLabel(label);
    plot->setProperty("userRange", false);
  }
  rebuildCurves();
}

void DashboardWidget::setSmoothing(double weight) {
  smoothing_ = std::clamp(weight, 0.0, 0.99);
  smoothing_label_->setText(QString::number(smoothing_, 'f', 2));
  smoothing_slider_->blockSignals(true);
  smoothing_slider_->setValue(static_cast<int>(std::lround(smoothing_ * 100)));
  smoothing_slider_->blockSignals(false);
  bool any = false;
  for (auto& curve : curves_)
    if (curve.smoothed) {
      curve.stream->clear();
      curve.ema = DebiasedEma(smoothing_);
      feedCurve(curve, 0);
      any = true;
    }
  if (any) coalescer_.schedule(plots_.at(QStringLiteral("loss")));
}

}  // namespace tessera::ui
