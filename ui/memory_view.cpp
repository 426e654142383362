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
  title_ = new QCPTextElement(this, QString(), QFont(font().family(), font().pointSize() + 1, QFont::Bold));
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

void MemoryView::applyPalette() {
  const QPalette& pal = palette();
  const QColor text = pal.color(QPalette::WindowText), muted = pal.color(QPalette::PlaceholderText);
  setBackground(pal.color(QPalette::Base));
  for (QCPAxis* axis : {xAxis, yAxis}) {
    axis->setBasePen(QPen(muted));
    axis->setTickPen(QPen(muted));
    axis->setSubTickPen(QPen(muted));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(QPen(pal.color(QPalette::Mid), 0, Qt::DotLine));
  }
  title_->setTextColor(text);
  legend->setBrush(pal.color(QPalette::Base));
  legend->setBorderPen(QPen(pal.color(QPalette::Mid)));
  legend->setTextColor(text);
}

void MemoryView::changeEvent(QEvent* event) {
  QCustomPlot::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    applyPalette();
    rebuild();
  }
}

void MemoryView::rebuild() {
  clearItems();
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
    title_->setText(tr("No plan yet"));
    replotWhenShown();
    return;
  }

  const QColor text = palette().color(QPalette::WindowText);
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int s = 0; s < stages; ++s) ticker->addTick(s, tr("stage %1").arg(s));
  xAxis->setTicker(ticker);
  xAxis->setRange(-0.6, stages - 0.4);
  yAxis->setRange(0, topBytes / bytes_per_unit_);

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

  // Totals above the bars; stages over capacity say by how much.
  for (int s = 0; s < stages; ++s) {
    const int64_t total = model_->bytes(s, StageMemoryModel::Total);
    const bool over = total > memory->capacity_bytes;
    auto* label = new QCPItemText(this);
    label->position->setCoords(s, total / bytes_per_unit_);
    label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    label->setPadding(QMargins(0, 0, 0, 3));
    label->setColor(over ? colors::warning() : text);
    QFont f = font();
    f.setBold(over);
    label->setFont(f);
    label->setText(over ? tr("%1\nOOM +%2").arg(formatBytes(total), formatBytes(total - memory->capacity_bytes))
                        : formatBytes(total));
    if (over) {
      auto* frame = new QCPItemRect(this);
      frame->topLeft->setCoords(s - 0.33, total / bytes_per_unit_);
      frame->bottomRight->setCoords(s + 0.33, 0);
      frame->setPen(QPen(colors::warning(), 2.5));
    }
  }
  const QString fits = memory->fits ? tr("fits, %1 free on the fullest stage").arg(formatBytes(memory->capacity_bytes - memory->peak_bytes))
                                    : tr("OUT OF MEMORY by %1").arg(formatBytes(memory->peak_bytes - memory->capacity_bytes));
  title_->setText(tr("%1 memory by pipeline stage — %2 profile · peak %3 of %4 · %5%6")
                      .arg(cpu ? tr("Per-rank") : tr("Per-GPU"))
                      .arg(QString::fromLatin1(planner::memory_profile_name(memory->profile).data()))
                      .arg(formatBytes(memory->peak_bytes), formatBytes(memory->capacity_bytes), fits,
                           stale_ ? tr(" · last valid plan") : QString()));
  title_->setTextColor(stale_ ? palette().color(QPalette::PlaceholderText) : (memory->fits ? text : colors::warning()));
  replotWhenShown();
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
