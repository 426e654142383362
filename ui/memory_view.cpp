// Building and styling the memory view's stacked bars.
#include "memory_view.hpp"

#include <algorithm>


#include "format.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

constexpr StageMemoryModel::Column kParts[] = {StageMemoryModel::Weights, StageMemoryModel::Gradients,
                                               StageMemoryModel::Optimizer, StageMemoryModel::Activations,
                                               StageMemoryModel::Buffers};

QColor partColor(int part) {
  switch (part) {
    case 0: return colors::weights();
    case 1: return colors::gradients();
    case 2: return colors::optimizer();
    case 3: return colors::activations();
    default: return colors::buffers();
  }
}

}  // namespace

MemoryView::MemoryView(StageMemoryModel* model, QWidget* parent) : QCustomPlot(parent), model_(model) {
  setMouseTracking(true);
  setNoAntialiasingOnDrag(true);
  setMinimumSize(320, 240);  // the title's width must not set the window's minimum
  plotLayout()->insertRow(0);
  title_ = new PlotTitle(this, QString(), QFont(font().family(), font().pointSize() + 1, QFont::Bold));
  plotLayout()->addElement(0, 0, title_);
  for (int i = 0; i < 5; ++i) {
    bars_[i] = new QCPBars(xAxis, yAxis);
    bars_[i]->setName(StageMemoryModel::columnName(kParts[i]));
    bars_[i]->setWidthType(QCPBars::wtPlotCoords);
    bars_[i]->setWidth(0.6);
    if (i > 0) bars_[i]->moveAbove(bars_[i - 1]);
  }
  // The capacity: a dashed line across the plot, named in the legend (a caption on the line sat on
  // the bars' totals where they are near it).
  capacity_ = addGraph();
  capacity_->setVisible(false);  // only its legend entry: the line is an item spanning the plot
  // The legend on a row of its own under the title, not over the bars: the tallest bar's total sat
  // under it on a small window.
  axisRect()->insetLayout()->take(legend);
  plotLayout()->insertRow(1);
  plotLayout()->addElement(1, 0, legend);
  plotLayout()->setRowStretchFactor(1, 0.001);
  // What the profile leaves out of the plan (planner::memory_profile_notes), in a row of its own
  // under the legend while there is any.
  QFont small = font();
  small.setPointSizeF(font().pointSizeF() * 0.9);
  notes_ = new PlotTitle(this, QString(), small);  // the plot owns it, in its layout or not
  legend->setVisible(true);
  legend->setFillOrder(QCPLegend::foColumnsFirst);
  legend->setMargins(QMargins(7, 3, 7, 3));
  yAxis->setLabel(tr("GiB per GPU"));
  xAxis->grid()->setVisible(false);
  applyPalette();
  connect(model_, &QAbstractItemModel::modelReset, this, &MemoryView::rebuild);
  rebuild();
}

void MemoryView::setStale(bool stale) {
  if (stale_ == stale) return;
  stale_ = stale;
  rebuild();
}

void MemoryView::applyPalette() { applyPlotPalette(this, palette()); }

void MemoryView::changeEvent(QEvent* event) {
  QCustomPlot::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    applyPalette();
    rebuild();
  }
}

void MemoryView::rebuild() {
  clearItems();
  totals_.clear();
  const auto* memory = model_->memory();
  const int stages = model_->rowCount();
  // The axis counts GiB, or MiB when its top is below 1 GiB. When the peak is under a twentieth of
  // the capacity (a tiny model on a CPU's memory) the bars would be invisible against the capacity
  // line: the axis then fits the peak, and the capacity is named above the plot instead of drawn.
  const double capacityBytes = memory ? static_cast<double>(memory->capacity_bytes) : 0.0;
  const double peakBytes = memory ? static_cast<double>(memory->peak_bytes) : 0.0;
  const bool capacityOnScale = peakBytes * 20.0 >= capacityBytes;
  // Room above the tallest bar for its total (two lines when it is over the capacity, 31 px, which
  // 15 % of a small window's plot was not).
  const double topBytes = capacityOnScale ? std::max(capacityBytes, peakBytes) * 1.22 : peakBytes * 1.3;
  const bool inGiB = topBytes >= kGiB;
  bytes_per_unit_ = inGiB ? kGiB : kMiB;
  // A CPU cluster's ranks are no GPUs (as the summary strip says).
  const bool cpu = memory && model_->plan()->spec.cluster.gpu == "cpu";
  yAxis->setLabel((inGiB ? tr("GiB") : tr("MiB")) + (cpu ? tr(" per rank") : tr(" per GPU")));
  QVector<double> keys(stages);
  for (int s = 0; s < stages; ++s) keys[s] = s;
  for (int i = 0; i < 5; ++i) {
    QVector<double> values(stages);
    for (int s = 0; s < stages; ++s) values[s] = model_->bytes(s, kParts[i]) / bytes_per_unit_;
    bars_[i]->setData(keys, values, true);
    QColor fill = partColor(i);
    if (stale_) fill.setAlphaF(0.3f);
    bars_[i]->setBrush(fill);
    bars_[i]->setPen(QPen(palette().color(QPalette::Base), 1));
  }
  if (!memory || stages == 0) {
    title_->setFullText(tr("No plan yet"));
    showNotes(QString());
    replotWhenShown();
    return;
  }

  const QColor text = palette().color(QPalette::WindowText);
  xAxis->setRange(-0.6, stages - 0.4);
  top_units_ = topBytes / bytes_per_unit_;
  yAxis->setRange(0, top_units_);

  // The capacity line, named in the legend; a capacity far above the bars is only named there, in the
  // muted colour (nothing is wrong).
  const auto* gpu = spec::PresetCatalog::builtin().gpu(model_->plan()->spec.cluster.gpu);
  // "capacity 80.0 GiB of an NVIDIA H100 80GB SXM"; the CPU preset's name has brackets of its own.
  const QString device = gpu ? tr(" of %1").arg(QString::fromStdString(gpu->name)) : QString();
  const QPen capacityPen(colors::warning(), 1.5, Qt::DashLine);
  capacity_->setPen(capacityOnScale ? capacityPen : QPen(Qt::NoPen));
  capacity_->setName(capacityOnScale ? tr("capacity %1%2").arg(formatBytes(memory->capacity_bytes), device)
                                     : tr("capacity %1%2, far above this scale").arg(formatBytes(memory->capacity_bytes), device));
  if (auto* entry = legend->itemWithPlottable(capacity_))
    entry->setTextColor(capacityOnScale && !stale_ ? colors::warning() : palette().color(QPalette::PlaceholderText));
  fitLegend();
  if (capacityOnScale) {
    auto* line = new QCPItemStraightLine(this);
    line->point1->setCoords(0, capacityBytes / bytes_per_unit_);
    line->point2->setCoords(1, capacityBytes / bytes_per_unit_);
    line->setPen(capacityPen);
  }

  // Totals above the bars, stages over capacity saying by how much: their text and which are shown
  // follow the bars' width (fitTotals).
  for (int s = 0; s < stages; ++s) {
    const int64_t total = model_->bytes(s, StageMemoryModel::Total);
    const bool over = total > memory->capacity_bytes;
    auto* label = new QCPItemText(this);
    label->position->setCoords(s, total / bytes_per_unit_);
    label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    label->setPadding(QMargins(0, 0, 0, 3));
    label->setColor(over ? colors::warning() : text);
    label->setBrush(palette().color(QPalette::Base));  // the capacity line passes behind a total, not through it
    QFont f = font();
    f.setBold(over);
    label->setFont(f);
    totals_.push_back({label, total, over ? total - memory->capacity_bytes : 0});
    if (over) {
      auto* frame = new QCPItemRect(this);
      frame->topLeft->setCoords(s - 0.33, total / bytes_per_unit_);
      frame->bottomRight->setCoords(s + 0.33, 0);
      frame->setPen(QPen(colors::warning(), 2.5));
    }
  }
  const QString fits = memory->fits ? tr("fits, %1 free on the fullest stage").arg(formatBytes(memory->capacity_bytes - memory->peak_bytes))
                                    : tr("OUT OF MEMORY by %1").arg(formatBytes(memory->peak_bytes - memory->capacity_bytes));
  title_->setFullText(tr("%1 memory by pipeline stage — %2 profile · peak %3 of %4 · %5%6")
                      .arg(cpu ? tr("Per-rank") : tr("Per-GPU"))
                      .arg(QString::fromLatin1(planner::memory_profile_name(memory->profile).data()))
                      .arg(formatBytes(memory->peak_bytes), formatBytes(memory->capacity_bytes), fits,
                           stale_ ? tr(" · last valid plan") : QString()));
  title_->setTextColor(stale_ ? palette().color(QPalette::PlaceholderText) : (memory->fits ? text : colors::warning()));
  QStringList notes;
  for (const auto& note : planner::memory_profile_notes(model_->plan()->spec, memory->profile))
    notes << QStringLiteral("note: ") + QString::fromStdString(note);
  showNotes(notes.join(QLatin1Char('\n')));
  replotWhenShown();
}

void MemoryView::showNotes(const QString& notes) {
  notes_->setFullText(notes);
  notes_->setTextColor(palette().color(QPalette::PlaceholderText));
  const bool shown = plotLayout()->hasElement(2, 0) && plotLayout()->element(2, 0) == notes_;
  if (!notes.isEmpty() && !shown) {
    plotLayout()->insertRow(2);
    plotLayout()->addElement(2, 0, notes_);
    plotLayout()->setRowStretchFactor(2, 0.001);
  } else if (notes.isEmpty() && shown) {
    plotLayout()->take(notes_);
    plotLayout()->simplify();
  }
}

void MemoryView::fitLegend() {
  // The fewest rows in which the six entries fit the view whole (at 700 px one row cut every name:
  // "Weigh", "Gradier"): 6, 3, 2 or 1 a row.
  for (const int per_row : {6, 3, 2, 1}) {
    legend->setWrap(per_row);
    legend->setFillOrder(QCPLegend::foColumnsFirst, true);  // a new wrap applies to entries already in as they go in again
    if (legend->minimumOuterSizeHint().width() <= width()) break;
  }
}

void MemoryView::updateLayout() {
  QCustomPlot::updateLayout();
  // The stage axis fitted to the bars' pitch, then the layout made again: QCustomPlot places ticks in
  // its layout's preparation (a new ticker alone drew the last layout's ticks), and a label for the
  // axis changes the margins (not the plot's width, so the pitch stays).
  xAxis->setLabel(fitStageAxis());
  QCustomPlot::updateLayout();
  // The value axis raised where the tallest shown total would reach above the plot (a two-line
  // title leaves a small window's plot too short for the 22 % of room above the bars).
  for (int pass = 0; pass < 2; ++pass) {
    fitTotals();
    const double upper = valueAxisTopForTotals();
    if (std::abs(upper - yAxis->range().upper) < 1e-9) break;
    yAxis->setRange(0, upper);
    QCustomPlot::updateLayout();
  }
}

double MemoryView::valueAxisTopForTotals() const {
  double upper = top_units_;
  const double plotHeight = axisRect()->height();
  for (const Total& t : totals_) {
    if (!t.label->visible()) continue;
    const double lines = t.label->text().count(QLatin1Char('\n')) + 1;
    const double labelHeight = lines * QFontMetrics(t.label->font()).height() + t.label->padding().bottom() + 2;
    if (labelHeight >= plotHeight) continue;  // no axis makes room for it
    upper = std::max(upper, t.bytes / bytes_per_unit_ * plotHeight / (plotHeight - labelHeight));
  }
  return upper;
}

QString MemoryView::fitStageAxis() {
  const int stages = model_->rowCount();
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  if (stages == 0) {
    xAxis->setTicker(ticker);
    return {};
  }
  // "stage 3" under each bar where every one fits its bar's pitch, else the numbers under an axis
  // named "pipeline stage", every stride-th where they are wider than a bar (32 stages at 1000 px:
  // the names ran into one another).
  const double pitch = std::abs(xAxis->coordToPixel(1) - xAxis->coordToPixel(0));
  const QFontMetrics metrics(xAxis->tickLabelFont());
  const bool named = metrics.horizontalAdvance(tr("stage %1").arg(stages - 1)) + 8 <= pitch;
  const int widest = metrics.horizontalAdvance(QString::number(stages - 1)) + 8;
  const int stride = named ? 1 : niceStride(static_cast<int>(std::ceil(widest / std::max(pitch, 1.0))));
  for (int s = 0; s < stages; s += stride) ticker->addTick(s, named ? tr("stage %1").arg(s) : QString::number(s));
  xAxis->setTicker(ticker);
  return named ? QString() : tr("pipeline stage");
}

void MemoryView::fitTotals() {
  if (totals_.empty()) return;
  // One form for every total, the longest that fits a bar's pitch: "118.7 GiB" over "OOM +38.7 GiB",
  // then "+38.7 GiB", then the numbers alone (the axis names the unit).
  const double pitch = std::abs(xAxis->coordToPixel(1) - xAxis->coordToPixel(0));
  const auto text = [&](const Total& t, int form) {
    const QString total = form < 2 ? formatBytes(t.bytes) : QString::number(t.bytes / bytes_per_unit_, 'f', 1);
    if (t.over_bytes == 0) return total;
    const QString over = form < 2 ? formatBytes(t.over_bytes) : QString::number(t.over_bytes / bytes_per_unit_, 'f', 1);
    return form == 0 ? tr("%1\nOOM +%2").arg(total, over) : tr("%1\n+%2").arg(total, over);
  };
  const auto textWidth = [](const QCPItemText* label, const QString& text) {
    int widest = 0;
    for (const QString& line : text.split(QLatin1Char('\n'))) widest = std::max(widest, QFontMetrics(label->font()).horizontalAdvance(line));
    return widest;
  };
  int form = 0;
  for (; form < 2; ++form) {
    bool fits = true;
    for (const Total& t : totals_) fits = fits && textWidth(t.label, text(t, form)) + 6 <= pitch;
    if (fits) break;
  }
  // Where even the numbers are wider than a bar, the tallest bars keep theirs and a total that would
  // run into one already placed is left out (the bar's tooltip gives it).
  std::vector<size_t> order(totals_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return totals_[a].bytes > totals_[b].bytes; });
  std::vector<std::pair<double, double>> placed;  // pixel spans already taken
  for (const size_t i : order) {
    Total& t = totals_[i];
    t.label->setText(text(t, form));
    // Centred on its bar, moved in where that would reach past the plot's side (onto the axis).
    const double half = textWidth(t.label, t.label->text()) / 2.0 + 3;
    const double centre = std::clamp(xAxis->coordToPixel(static_cast<double>(i)), axisRect()->left() + half,
                                     std::max(axisRect()->left() + half, axisRect()->right() - half));
    t.label->position->setCoords(xAxis->pixelToCoord(centre), t.bytes / bytes_per_unit_);
    const bool clear = std::none_of(placed.begin(), placed.end(), [&](const auto& span) {
      return centre + half > span.first && centre - half < span.second;
    });
    t.label->setVisible(clear);
    if (clear) placed.emplace_back(centre - half, centre + half);
  }
}

void MemoryView::resizeEvent(QResizeEvent* event) {
  fitLegend();
  QCustomPlot::resizeEvent(event);
}

void MemoryView::replotWhenShown() {
  // A hidden plot is drawn when it is shown: what-if edits made on another tab cost nothing here.
  needs_replot_ = !isVisible();
  if (!needs_replot_) replot();
}

void MemoryView::showEvent(QShowEvent* event) {
  QCustomPlot::showEvent(event);
  if (needs_replot_) {
    needs_replot_ = false;
    replot();
  }
}

int MemoryView::stageAt(const QPoint& pos) const {
  if (!axisRect()->rect().contains(pos)) return -1;
  const double key = xAxis->pixelToCoord(pos.x());
  const int stage = static_cast<int>(std::lround(key));
  if (stage < 0 || stage >= model_->rowCount() || std::abs(key - stage) > 0.3) return -1;
  return stage;
}

QString MemoryView::describeStage(int stage) const {
  const auto* memory = model_->memory();
  if (!memory || stage < 0 || stage >= model_->rowCount()) return {};
  QString text = tr("stage %1: %2 of %3").arg(stage).arg(formatBytes(model_->bytes(stage, StageMemoryModel::Total), 2),
                                                       formatBytes(memory->capacity_bytes, 2));
  // Its layers: what sets a stage of an uneven split apart (Llama 3 405B's stage 0 holds 7, stage 1 8).
  if (const auto* plan = model_->plan(); plan && stage < static_cast<int>(plan->stage_params.size())) {
    const auto& layers = plan->stage_params[stage].layers;
    const bool contiguous = !layers.empty() && layers.back() - layers.front() + 1 == static_cast<int64_t>(layers.size());
    if (contiguous && layers.size() > 1)
      text += tr("\n  %1 layers, %2–%3").arg(layers.size()).arg(layers.front()).arg(layers.back());
    else if (contiguous)
      text += tr("\n  1 layer, %1").arg(layers.front());
    else if (!layers.empty())
      text += tr("\n  %1 layers in %2 chunks").arg(layers.size()).arg(plan->spec.parallel.vpp);
  }
  for (int i = 4; i >= 0; --i)
    text += QStringLiteral("\n  %1  %2").arg(bars_[i]->name(), -12).arg(formatBytes(model_->bytes(stage, kParts[i]), 2));
  return text;
}

void MemoryView::mouseMoveEvent(QMouseEvent* event) {
  QCustomPlot::mouseMoveEvent(event);
  const int stage = stageAt(event->pos());
  if (stage < 0) return QToolTip::hideText();
  QToolTip::showText(event->globalPosition().toPoint(), describeStage(stage), this);
}

}  // namespace tessera::ui
