// The summary strip's cells, filled from the session's plan.
#include "summary_strip.hpp"

#include <algorithm>
#include <vector>

#include <QEvent>
#include <QFontMetrics>
#include <QGridLayout>
#include <QVBoxLayout>

#include "elided_label.hpp"
#include "format.hpp"
#include "plan_session.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

// "48.2 / 79.6 GiB": the unit once where both share it (the strip's widest value), else
// "512.0 MiB / 24.0 GiB".
QString peakOfCapacity(int64_t peak_bytes, int64_t capacity_bytes) {
  const QString peak = formatBytes(peak_bytes), capacity = formatBytes(capacity_bytes);
  const qsizetype unit = peak.lastIndexOf(QLatin1Char(' '));
  if (unit > 0 && peak.front().isDigit() && capacity.endsWith(peak.mid(unit))) return peak.left(unit) + QStringLiteral(" / ") + capacity;
  return peak + QStringLiteral(" / ") + capacity;
}

}  // namespace

SummaryStrip::SummaryStrip(PlanSession* session, QWidget* parent) : QWidget(parent), session_(session) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(12, 8, 12, 6);
  outer->setSpacing(4);
  auto* grid = new QGridLayout;
  grid->setHorizontalSpacing(18);
  grid->setVerticalSpacing(0);
  const std::pair<Metric, QString> cells[] = {
      {Parameters, tr("Parameters")}, {World, tr("GPUs")},        {Memory, tr("Peak memory / GPU")},
      {Iteration, tr("Iteration")},   {Tflops, tr("TFLOP/s / GPU")}, {Mfu, tr("MFU")},
      {Tokens, tr("Tokens / s")},     {Bubble, tr("Bubble")},     {CrossNode, tr("Cross-node groups")}};
  QFont captionFont = font();
  captionFont.setPointSizeF(font().pointSizeF() * 0.85);
  QFont valueFont = font();
  valueFont.setPointSizeF(font().pointSizeF() * 1.3);
  valueFont.setBold(true);
  grid_ = grid;
  for (const auto& [metric, title] : cells) {
    auto* caption = new ElidedLabel(title, this);
    captions_[metric] = caption;
    caption->setMinimumWidth(1);
    caption->setFont(captionFont);
    caption->setForegroundRole(QPalette::PlaceholderText);
    auto* value = new QLabel(this);
    value->setFont(valueFont);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* detail = new ElidedLabel(this);
    detail->setMinimumWidth(1);  // details may end in "…" on a narrow window (whole in the tooltip); values never do
    detail->setFont(captionFont);
    detail->setForegroundRole(QPalette::PlaceholderText);
    values_[metric] = value;
    details_[metric] = detail;
  }
  // A wide value of each cell, in order: the width one line of cells needs counts these rather than the
  // values shown, so that an edit of a value seldom moves the views below by switching between one line
  // and two (values wider still count as they are; captions and details count as they are).
  const QFontMetrics valueMetrics(valueFont);
  const char* wide[] = {"888.8 B", "8888", "888.8 / 888.8 GiB", "88.8 min", "8888", "88.8 %", "888.8 k", "88.8 %", "DP, PP"};
  for (const auto& [metric, title] : cells) wide_value_width_[metric] = valueMetrics.horizontalAdvance(QString::fromLatin1(wide[metric]));
  arrange(1);
  outer->addLayout(grid);
  // One line that never appears or disappears (the views below must not jump): the spec's problem,
  // or the run and how long planning took.
  status_ = new QLabel(this);
  status_->setMinimumWidth(1);
  status_->setTextFormat(Qt::RichText);
  connect(status_, &QLabel::linkActivated, this, &SummaryStrip::fieldRequested);
  outer->addWidget(status_);
  connect(session_, &PlanSession::changed, this, &SummaryStrip::refresh);
  refresh();
}

void SummaryStrip::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) refresh();  // the cells' colours derive from the palette
}

void SummaryStrip::set(Metric metric, const QString& value, const QString& detail, const QColor& detailColor) {
  values_[metric]->setText(value);
  details_[metric]->setText(detail);
  QPalette pal = details_[metric]->palette();
  pal.setColor(QPalette::PlaceholderText, detailColor.isValid() ? detailColor : palette().color(QPalette::PlaceholderText));
  details_[metric]->setPalette(pal);
}

void SummaryStrip::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  sized_ = true;
  fitLines();
  if (!problem_message_.isEmpty()) showProblem();
  else showPlanned();
}

void SummaryStrip::fitLines() {
  if (!sized_) return;  // not laid out yet: its width says nothing
  // One line when every cell fits whole: its value (or the wide estimate of it), its caption and its
  // detail. On two or three lines only the values count: a detail may end in "…" there ("TP8·PP8·D…"
  // at 1024 px), whole in its tooltip.
  int cells_width = 0;
  for (const auto& [metric, value] : values_)
    cells_width += std::max({valueWidth(metric), captions_.at(metric)->sizeHint().width(), details_.at(metric)->sizeHint().width()});
  const QMargins margins = layout()->contentsMargins();
  const int chrome = margins.left() + margins.right() + static_cast<int>(values_.size() - 1) * grid_->horizontalSpacing();
  if (width() >= chrome + cells_width) {
    arrange(1);
    return;
  }
  // Then two lines where the values fit on them, else three (the designer beside an 800 px window
  // cut "48.2 GiB / 7…" on two).
  arrange(width() >= valuesWidth(2) ? 2 : 3);
}

int SummaryStrip::valueWidth(Metric metric) const {
  return std::max(wide_value_width_.at(metric), values_.at(metric)->sizeHint().width());
}

int SummaryStrip::valuesWidth(int lines) const {
  const int cells = static_cast<int>(values_.size()), per_line = (cells + lines - 1) / lines;
  std::vector<int> columns(static_cast<size_t>(per_line), 0);
  int i = 0;
  for (const auto& [metric, value] : values_) {
    int& column = columns[static_cast<size_t>(i++ % per_line)];
    column = std::max(column, valueWidth(metric));
  }
  const QMargins margins = layout()->contentsMargins();
  int need = margins.left() + margins.right() + (per_line - 1) * grid_->horizontalSpacing();
  for (const int column : columns) need += column;
  return need;
}

void SummaryStrip::arrange(int lines) {
  if (lines == lines_) return;
  lines_ = lines;
  const int cells = static_cast<int>(values_.size());
  const int per_line = (cells + lines - 1) / lines;
  for (int column = 0; column <= cells; ++column) grid_->setColumnStretch(column, 0);
  int i = 0;
  // Lines of cells have an empty row between them: a first-line detail sat right on the caption under
  // it ("llama3-70b" on "MFU").
  for (int line = 0; line < 2; ++line) grid_->setRowMinimumHeight(4 * line + 3, line + 1 < lines ? 8 : 0);
  for (const auto& [metric, value] : values_) {  // the map's order is the Metric enum's: the strip's
    const int row = 4 * (i / per_line), column = i % per_line;
    ++i;
    for (QLabel* label : {captions_[metric], value, details_[metric]}) grid_->removeWidget(label);
    grid_->addWidget(captions_[metric], row, column);
    grid_->addWidget(value, row + 1, column);
    grid_->addWidget(details_[metric], row + 2, column);
  }
  grid_->setColumnStretch(per_line, 1);
}

void SummaryStrip::showProblem() {
  const QFontMetrics metrics(status_->font());
  const int width = statusRoom(metrics);
  // The rule comes first: where it would be cut, the boilerplate goes (the tooltip keeps all of it).
  QString rest = problem_rest_ + problemTail();
  if (metrics.horizontalAdvance(tr("⚠ ") + problem_message_ + rest) > width) rest = problem_rest_;
  const int room = width - metrics.horizontalAdvance(tr("⚠ ") + rest);
  const QString shown = metrics.elidedText(problem_message_, Qt::ElideRight, std::max(room, 4 * metrics.averageCharWidth()));
  // The message links to its field in the designer.
  status_->setText(QStringLiteral("⚠ <a href=\"%1\" style=\"color:%2\">%3</a>%4")
                       .arg(problem_field_.toHtmlEscaped(), colors::warning().name(), shown.toHtmlEscaped(), rest.toHtmlEscaped()));
}

int SummaryStrip::statusRoom(const QFontMetrics& metrics) const {
  return contentsRect().width() - layout()->contentsMargins().left() - layout()->contentsMargins().right() -
         metrics.horizontalAdvance(QLatin1Char(' '));
}

void SummaryStrip::showPlanned() {
  const QFontMetrics metrics(status_->font());
  const int width = statusRoom(metrics);
  // The name ends in "…" where the line is too narrow, and the planning time stays (the tooltip has both).
  const QString name = metrics.elidedText(planned_name_, Qt::ElideRight, std::max(width - metrics.horizontalAdvance(planned_tail_), 4 * metrics.averageCharWidth()));
  status_->setText((name + planned_tail_).toHtmlEscaped());
}

QString SummaryStrip::problemTail() const { return tr(" — the views show the last valid plan."); }

void SummaryStrip::refresh() {
  const PlanPtr plan = session_->plan();
  const bool stale = session_->stale();
  for (auto& [metric, label] : values_) label->setEnabled(!stale);
  for (auto& [metric, label] : details_) label->setEnabled(!stale);
  QPalette pal = palette();
  if (stale) {
    const auto& first = session_->errors().front();
    const int more = static_cast<int>(session_->errors().size()) - 1;
    const QString message = QString::fromStdString(first.message);
    const QString rest = more > 0 ? tr(" (and %1 more)").arg(more) : QString();
    status_text_ = tr("⚠ ") + message + rest + problemTail();
    problem_field_ = QString::fromStdString(first.field);
    problem_message_ = message;
    problem_rest_ = rest;
    showProblem();
    pal.setColor(QPalette::WindowText, colors::warning());
  } else {
    problem_message_.clear();
    planned_name_ = QString::fromStdString(session_->spec().name.empty() ? "Untitled" : session_->spec().name);
    planned_tail_ = tr(" · planned in %1").arg(formatDuration(session_->lastPlanSeconds()));
    status_text_ = planned_name_ + planned_tail_;
    showPlanned();
    pal.setColor(QPalette::WindowText, palette().color(QPalette::PlaceholderText));
  }
  status_->setPalette(pal);
  status_->setToolTip(status_text_);
  if (!plan) return;
  const auto& s = plan->spec;
  const auto& pr = plan->prediction;
  const auto& mem = plan->memory;

  // A mixture of experts says what a token passes through ("12.9 B active · mixtral-8x7b").
  const QString preset = QString::fromStdString(s.model.preset);
  set(Parameters, formatCount(static_cast<double>(plan->params.total)),
      plan->params.active_per_token == plan->params.total
          ? preset
          : tr("%1 active%2").arg(formatCount(static_cast<double>(plan->params.active_per_token)),
                                  preset.isEmpty() ? QString() : QStringLiteral(" · ") + preset));
  QString layout = tr("TP%1·PP%2·DP%3").arg(s.parallel.tp).arg(s.parallel.pp).arg(s.data_parallel());
  if (s.parallel.cp > 1) layout += tr("·CP%1").arg(s.parallel.cp);
  if (s.parallel.ep > 1) layout += tr("·EP%1").arg(s.parallel.ep);
  // A CPU cluster's ranks are no GPUs.
  const bool cpu = s.cluster.gpu == "cpu";
  captions_[World]->setText(cpu ? tr("CPU ranks") : tr("GPUs"));
  captions_[Memory]->setText(cpu ? tr("Peak memory / rank") : tr("Peak memory / GPU"));
  // Below 1 TFLOP/s (CPU ranks) in GFLOP/s: "0" TFLOP/s said nothing.
  const bool giga = showsInGflops(pr.model_tflops_per_gpu);
  const double flops_unit = giga ? 1000.0 : 1.0;
  captions_[Tflops]->setText((giga ? tr("GFLOP/s") : tr("TFLOP/s")) + (cpu ? tr(" / rank") : tr(" / GPU")));
  set(World, QString::number(s.world_size()), layout);
  set(Memory, peakOfCapacity(mem.peak_bytes, mem.capacity_bytes),
      mem.fits ? tr("fits · %1 free").arg(formatBytes(mem.capacity_bytes - mem.peak_bytes))
               : tr("OOM by %1").arg(formatBytes(mem.peak_bytes - mem.capacity_bytes)),
      stale ? QColor() : mem.fits ? colors::ok() : colors::warning());  // a stale plan's verdict is greyed too
  set(Iteration, formatDuration(pr.iteration_time_s), tr("pipeline %1").arg(formatDuration(pr.pipeline_s)));
  set(Tflops, QString::number(pr.model_tflops_per_gpu * flops_unit, 'f', giga ? 1 : 0),
      tr("hardware %1").arg(pr.hardware_tflops_per_gpu * flops_unit, 0, 'f', giga ? 1 : 0));
  set(Mfu, formatPercent(pr.mfu), tr("HFU %1").arg(formatPercent(pr.hfu)));
  set(Tokens, formatCount(pr.tokens_per_s), tr("%1 tokens / step").arg(formatCount(static_cast<double>(plan->flops.tokens_per_iteration))));
  // A plan that does not fit cannot reach its speed: those cells greyed, saying why.
  const QString why = tr("Not achievable: peak memory exceeds the device's by %1").arg(formatBytes(mem.peak_bytes - mem.capacity_bytes));
  for (Metric speed : {Iteration, Tflops, Mfu, Tokens}) {
    QPalette valuePal = values_[speed]->palette();
    valuePal.setColor(QPalette::WindowText, palette().color(mem.fits ? QPalette::WindowText : QPalette::PlaceholderText));
    values_[speed]->setPalette(valuePal);
    values_[speed]->setToolTip(mem.fits ? QString() : why);
    if (!mem.fits) set(speed, values_[speed]->text(), tr("— does not fit"), colors::warning());
  }
  if (mem.fits)
    values_[Iteration]->setToolTip(tr("pipeline %1 + exposed data-parallel communication %2 + optimizer step %3")
                                       .arg(formatDuration(pr.pipeline_s), formatDuration(pr.dp_exposed_s), formatDuration(pr.optimizer_s)));
  set(Bubble, formatPercent(pr.bubble_fraction),
      tr("%1 · %2 microbatches").arg(QString::fromLatin1(spec::to_string(s.parallel.schedule).data())).arg(plan->schedule.microbatches));
  QStringList crossing, warn;
  for (const auto& kind : plan->cross_node_groups) {
    if (planner::is_derived_group_kind(kind)) continue;
    crossing << QString::fromStdString(kind).toUpper();
    if (kind == "tp" || kind == "cp" || kind == "ep") warn << QString::fromStdString(kind).toUpper();
  }
  const QString inside = s.cluster.nodes == 1 ? tr("one node") : crossing.isEmpty() ? tr("every group inside a node") : tr("TP/CP/EP inside nodes");
  set(CrossNode, crossing.isEmpty() ? tr("none") : crossing.join(", "),
      warn.isEmpty() ? inside : tr("⚠ %1 over the network").arg(warn.join(", ")),
      warn.isEmpty() ? QColor() : colors::warning());
  fitLines();  // new values may be wider than the strip's one line
}

}  // namespace tessera::ui
