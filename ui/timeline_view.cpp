// Painting and interaction of the pipeline timeline.
#include "timeline_view.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include "format.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

constexpr int kRulerHeight = 22;
constexpr int kBandHeader = 26;
constexpr int kBandGap = 10;
constexpr int kMaxRowHeight = 96;  ///< taller rows would be bars, not a timeline

// planner::OpKind's values, 0 to 3: forward, backward, backward_input, backward_weight.
constexpr int kOpKinds = 4;

QColor opColor(const planner::PipelineOp& op, int vpp) {
  QColor c;
  switch (op.kind) {
    case planner::OpKind::forward: c = colors::forward(); break;
    case planner::OpKind::backward: c = colors::backward(); break;
    case planner::OpKind::backward_input: c = colors::backwardInput(); break;
    case planner::OpKind::backward_weight: c = colors::backwardWeight(); break;
  }
  // Chunks of an interleaved schedule: the first darkest, later chunks lighter.
  if (vpp > 1 && op.chunk > 0) c = c.lighter(100 + 45 * op.chunk / (vpp - 1));
  return c;
}

QString scheduleName(spec::Schedule s) {
  switch (s) {
    case spec::Schedule::gpipe: return QStringLiteral("GPipe");
    case spec::Schedule::one_f_one_b: return QStringLiteral("1F1B");
    case spec::Schedule::interleaved: return QStringLiteral("Interleaved 1F1B");
    case spec::Schedule::zb_h1: return QStringLiteral("ZB-H1");
  }
  return {};
}

}  // namespace

TimelineView::TimelineView(TimelineModel* primary, TimelineModel* comparison, QWidget* parent)
    : QWidget(parent), primary_(primary), comparison_(comparison) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  for (TimelineModel* m : {primary_, comparison_})
    connect(m, &QAbstractItemModel::modelReset, this, [this] {
      // A what-if edit keeps the user's zoom; until they zoom, the whole iteration stays in view.
      if (!zoomed_) fitToView();
      update();
    });
}

void TimelineView::setStale(bool stale) {
  if (stale_ == stale) return;
  stale_ = stale;
  update();
}

int TimelineView::stripHeight(const Band& band) const {
  return band.model->showsStep() && band.row_height >= 8 ? std::clamp(band.row_height / 4, 2, 12) : 0;
}

int TimelineView::labelWidth() const { return fontMetrics().horizontalAdvance(QStringLiteral("stage 000")) + 16; }

void TimelineView::fitToView() {
  zoomed_ = false;
  const double end = std::max(primary_->stepEnd(), comparison_->stepEnd());
  const double left = labelWidth();
  axis_.fit(0.0, end > 0 ? end : 1.0, left, std::max(1, width() - labelWidth() - 14));
}

void TimelineView::showRange(double begin_s, double end_s) {
  axis_.fit(begin_s, end_s, labelWidth(), std::max(1, width() - labelWidth() - 14));
  zoomed_ = true;
  update();
}

void TimelineView::resizeEvent(QResizeEvent*) {
  if (!zoomed_) fitToView();
}

std::vector<TimelineView::Band> TimelineView::bands() const {
  std::vector<const TimelineModel*> models;
  for (const TimelineModel* m : {primary_, comparison_})
    if (m->plan()) models.push_back(m);
  std::vector<Band> out;
  if (models.empty()) return out;
  int total_rows = 0;
  for (const auto* m : models) total_rows += m->stageCount();
  const int legend_lines_height = legend().below_title_height;
  const int available = height() - kRulerHeight - static_cast<int>(models.size()) * (kBandHeader + kBandGap) - legend_lines_height - 4;
  const int row = std::clamp(available / std::max(1, total_rows), 3, kMaxRowHeight);
  int top = kRulerHeight;
  for (const auto* m : models) {
    const int header = kBandHeader + (out.empty() ? legend_lines_height : 0);
    out.push_back({m, top, header, row, m->stageCount()});
    top += header + row * m->stageCount() + kBandGap;
  }
  return out;
}

QRect TimelineView::titleBounds() const {
  const auto* first = primary_->plan() ? primary_ : comparison_->plan() ? comparison_ : nullptr;
  if (!first) return {};
  QFont bold = font();
  bold.setBold(true);
  const QFontMetrics fm(bold);
  const int width = std::min(fm.horizontalAdvance(fittedTitle(*first)), this->width() - 16);  // as drawn: its brief form where the whole is too wide
  return {8, kRulerHeight + (kBandHeader - fm.height()) / 2, width, fm.height()};
}

QStringList TimelineView::legendNames() const {
  QStringList names;
  for (const auto& item : legend().items) names << item.name;
  return names;
}

TimelineView::Legend TimelineView::legend() const {
  Legend out;
  const auto* first = primary_->plan() ? primary_ : comparison_->plan() ? comparison_ : nullptr;
  if (!first) return out;
  // The kinds the timelines shown use: ZB-H1 splits each backward into B input and W weight
  // gradients, the other schedules run whole backwards (it listed "B backward" for ZB-H1 alone).
  int vpp = 1;
  bool whole = false, split = false;
  for (const TimelineModel* m : {primary_, comparison_}) {
    if (!m->plan()) continue;
    vpp = std::max(vpp, m->plan()->schedule.vpp);
    (m->plan()->schedule.schedule == spec::Schedule::zb_h1 ? split : whole) = true;
  }
  std::vector<LegendItem> items = {{tr("F forward"), colors::forward(), {}, {}}};
  if (split) {
    items.push_back({tr("B input gradient"), colors::backwardInput(), {}, {}});
    items.push_back({tr("W weight gradient"), colors::backwardWeight(), {}, {}});
  }
  if (whole) items.push_back({tr("B backward"), colors::backward(), {}, {}});
  if (vpp > 1) items.push_back({tr("lighter: later chunk"), colors::forward().lighter(145), {}, {}});
  const auto has_dp = [](const TimelineModel* m) { return m->showsStep() && !m->plan()->prediction.dp_events.empty(); };
  if (has_dp(primary_) || has_dp(comparison_)) items.push_back({tr("DP collective"), colors::dataParallel(), {}, {}});
  if (primary_->showsStep() || comparison_->showsStep()) items.push_back({tr("optimizer"), colors::optimizer(), {}, {}});
  items.push_back({tr("numbers: microbatch"), QColor(), {}, {}});

  // Right-aligned at the right of the first title line when it fits beside the title; otherwise on
  // lines of their own under it, wrapped to the widget's width.
  const QFontMetrics fm = fontMetrics();
  const int sw = fm.height() - 5, gap = 16, right = width() - 14;
  auto itemWidth = [&](const LegendItem& e) { return fm.horizontalAdvance(e.name) + (e.color.isValid() ? sw + 5 : 0); };
  int total = 0;
  for (const auto& e : items) total += itemWidth(e) + gap;
  total -= gap;
  const int beside_from = titleBounds().right() + 24;
  const bool beside = right - total >= beside_from;
  const int line_height = fm.height() + 4;
  // Lines of items, filled left to right, each line then right-aligned.
  std::vector<std::vector<LegendItem*>> lines(1);
  int line_width = 0;
  const int max_width = right - 8;
  for (auto& e : items) {
    const int w = itemWidth(e);
    if (!beside && !lines.back().empty() && line_width + gap + w > max_width) {
      lines.emplace_back();
      line_width = 0;
    }
    line_width += (lines.back().empty() ? 0 : gap) + w;
    lines.back().push_back(&e);
  }
  const int first_baseline = kRulerHeight + (kBandHeader + fm.ascent()) / 2 - 1;
  for (size_t l = 0; l < lines.size(); ++l) {
    const int y = beside ? first_baseline : kRulerHeight + kBandHeader + static_cast<int>(l) * line_height + fm.ascent();
    int x = right;
    for (auto e = lines[l].rbegin(); e != lines[l].rend(); ++e) {
      x -= fm.horizontalAdvance((*e)->name);
      (*e)->baseline = QPoint(x, y);
      if ((*e)->color.isValid()) {
        x -= sw + 5;
        (*e)->swatch = QRect(x, y - sw + 1, sw, sw);
      }
      out.bounds |= QRect(x, y - fm.ascent(), (*e)->baseline.x() + fm.horizontalAdvance((*e)->name) - x, fm.height());
      x -= gap;
    }
  }
  out.below_title_height = beside ? 0 : static_cast<int>(lines.size()) * line_height + 2;
  out.items = std::move(items);
  return out;
}

QString TimelineView::fittedTitle(const TimelineModel& model) const {
  // Briefer, then cut with "…", where the view is narrower (hovering the title shows it whole): at
  // 800 px GPT-3's title lost its peak memory.
  QFont bold = font();
  bold.setBold(true);
  const QFontMetrics metrics(bold);
  const int room = width() - 16;
  const QString whole = title(model);
  if (metrics.horizontalAdvance(whole) <= room) return whole;
  // The brief form, its last parts left out whole where it is too wide ("· peak 6…" cut a number).
  QStringList parts = title(model, true).split(QStringLiteral(" · "));
  const QString more = QStringLiteral(" · …");
  if (metrics.horizontalAdvance(parts.join(QStringLiteral(" · "))) <= room) return parts.join(QStringLiteral(" · "));
  while (parts.size() > 1 && metrics.horizontalAdvance(parts.join(QStringLiteral(" · ")) + more) > room) parts.removeLast();
  return metrics.elidedText(parts.join(QStringLiteral(" · ")) + more, Qt::ElideRight, room);
}

QString TimelineView::shownTitle() const {
  const auto* first = primary_->plan() ? primary_ : comparison_->plan() ? comparison_ : nullptr;
  return first ? fittedTitle(*first) : QString();
}

QString TimelineView::title(const TimelineModel& model, bool brief) const {
  const auto& plan = *model.plan();
  QString text = model.caption().isEmpty() ? QString() : model.caption() + QStringLiteral(" · ");
  const auto plural = [](int64_t n, const QString& one, const QString& many) { return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many); };
  text += tr("%1 · %2").arg(scheduleName(plan.schedule.schedule), plural(plan.schedule.pp, tr("stage"), tr("stages")));
  if (plan.schedule.vpp > 1) text += brief ? tr(" ×%1").arg(plan.schedule.vpp) : tr(" × %1 chunks").arg(plan.schedule.vpp);
  text += tr(" · %1 · pipeline %2 · bubble %3")
              .arg(plural(plan.schedule.microbatches, tr("microbatch"), tr("microbatches")), formatSeconds(model.makespan()),
                   formatPercent(model.bubbleFraction()));
  if (model.showsStep()) text += tr(" · step %1").arg(formatSeconds(model.stepEnd()));
  if (model.measured()) return text;  // measured memory is on the dashboard's memory plot
  text += (brief ? tr(" · peak %1") : tr(" · peak memory %1")).arg(formatBytes(plan.memory.peak_bytes));
  if (!plan.memory.fits) text += tr(" (OOM)");
  return text;
}

QPen TimelineView::tickPen(const QPainter& p, const QColor& color) {
  const double dpr = p.device()->devicePixelRatioF();  // the screen's, or a PDF's 1
  return QPen(color, std::max(1.0, std::round(dpr)) / dpr);  // whole device pixels: 1 at 1.25×, 2 at 2×
}

double TimelineView::tickX(const QPainter& p, double x) {
  // The line's centre where its device pixels are whole (at 1.25× and 1.5× a 1 px line at a logical
  // half pixel covered one device pixel or two by turn).
  const double dpr = p.device()->devicePixelRatioF(), width = std::max(1.0, std::round(dpr));
  return (std::round(x * dpr) + width / 2) / dpr;
}

std::vector<double> TimelineView::paintRuler(QPainter& p, const QRect& plot) {
  const QPalette& pal = palette();
  const double step = axis_.tickStep(90);
  const double first = std::ceil(axis_.toTime(plot.left()) / step) * step;
  const double largest = std::max(std::fabs(axis_.toTime(plot.left())), std::fabs(axis_.toTime(plot.right())));
  std::vector<double> ticks_px;
  double label_end = -1e9;  // a label that would run into the one before is left out (a long "30000.0000001 s")
  for (double t = first; axis_.toPixel(t) <= plot.right(); t += step) {
    const double x = tickX(p, axis_.toPixel(t));
    ticks_px.push_back(x);
    p.setPen(tickPen(p, pal.color(QPalette::Mid)));
    p.drawLine(QPointF(x, kRulerHeight - 5), QPointF(x, kRulerHeight));
    const QString label = formatTick(t, step, largest);
    const int label_width = fontMetrics().horizontalAdvance(label);
    if (x + 3 + label_width > width()) break;
    if (x + 3 < label_end + 12) continue;
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(QPointF(x + 3, kRulerHeight - 8), label);
    label_end = x + 3 + label_width;
  }
  return ticks_px;
}

void TimelineView::paintBand(QPainter& p, const Band& band, const QRect& plot, const std::vector<double>& ticks_px) {
  const QPalette& pal = palette();
  const auto& model = *band.model;
  // A stale band is faded by mixing its colours into the base, drawn at full opacity, so that each
  // number's colour is chosen for its block as shown (at 35 % opacity white numbers vanished on the
  // faded blocks, as the rank grid's did).
  const qreal opacity = p.opacity();
  p.setOpacity(1.0);
  const QColor base = pal.color(QPalette::Base);
  const auto shown = [&](const QColor& c) { return stale_ ? colors::faded(c, base, colors::kStaleShare) : c; };
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  // A plan over the GPU's memory ("(OOM)" in its title) in the warning colour, as the summary strip
  // and the memory view give it.
  p.setPen(shown(!model.measured() && !model.plan()->memory.fits ? colors::warning() : pal.color(QPalette::WindowText)));
  p.drawText(QRect(8, band.top, width() - 16, kBandHeader), Qt::AlignLeft | Qt::AlignVCenter, fittedTitle(model));
  p.setFont(font());

  const int vpp = model.plan()->schedule.vpp;
  // The plot's right edge is where fitToView puts the step's end: plot.left() + plot.width(), one
  // pixel past QRect::right(). A block starting in that last pixel (the optimizer step) was skipped.
  const double plot_end = plot.left() + plot.width();
  const double left_t = axis_.toTime(plot.left()), right_t = axis_.toTime(plot_end);
  QFont label = font();
  label.setPixelSize(std::clamp(band.row_height - 10, 8, 12));
  const QFontMetrics fm(label);
  // Each stage named where its row is as tall as the name; on shorter rows (32 stages) every
  // stride-th, centred on its row (they were all left out).
  const int name_height = fontMetrics().height();
  const int name_every = niceStride(static_cast<int>(std::ceil(double(name_height) / std::max(band.row_height, 1))));
  for (int s = 0; s < band.rows; ++s) {
    const QRect row(plot.left(), band.rowsTop() + s * band.row_height, plot.width(), band.row_height);
    p.fillRect(row.adjusted(0, 1, 0, -1), shown(pal.color(QPalette::AlternateBase)));
    // The ruler's ticks across the row, under its blocks: they mark the times in its idle spans, and
    // no longer cross the band's title and the legend.
    p.setPen(tickPen(p, shown(pal.color(QPalette::Mid))));
    for (const double x : ticks_px) p.drawLine(QPointF(x, row.top() + 1), QPointF(x, row.bottom()));
    p.setPen(shown(pal.color(QPalette::PlaceholderText)));
    if (s % name_every == 0) {
      p.setFont(font());
      const int name_top = row.top() + (row.height() - name_height) / 2;
      p.drawText(QRect(8, name_top, plot.left() - 12, name_height), Qt::AlignRight | Qt::AlignVCenter, tr("stage %1").arg(s));
    }
    p.setFont(label);

    const auto [first, last] = model.stageRange(s);
    const auto& events = model.events();
    // Events of a stage are ordered and disjoint: the first visible one ends after the left edge.
    auto it = std::lower_bound(events.begin() + first, events.begin() + last, left_t,
                               [](const planner::TimelineEvent& e, double t) { return e.end_s < t; });
    const int inset = band.row_height >= 12 ? 2 : 1;
    const int strip = stripHeight(band);
    // Blocks under 2 px wide add their share of each pixel column's time to that column, by kind;
    // each such column is then drawn as a stack of the kinds' shares, the idle share left to the row.
    // One block a pixel (the first one there) showed interleaved 1F1B's stage 0 as forwards only for
    // 17 s of a whole step, though it alternated forwards and backwards.
    std::vector<std::array<float, kOpKinds>> dense;
    for (; it != events.begin() + last && it->start_s <= right_t; ++it) {
      const double x0 = axis_.toPixel(it->start_s), x1 = axis_.toPixel(it->end_s);
      if (x1 - x0 < 2.0) {
        if (dense.empty()) dense.assign(plot.width() + 1, {});
        const double from = std::max(x0, double(plot.left())), to = std::min(x1, plot_end);
        for (int x = static_cast<int>(std::floor(from)); x < to; ++x)
          if (const int column = x - plot.left(); column >= 0 && column < static_cast<int>(dense.size()))
            dense[column][static_cast<int>(it->op.kind)] += static_cast<float>(std::min(to, x + 1.0) - std::max(from, double(x)));
        continue;
      }
      const QRectF block(std::max(x0, double(plot.left())), row.top() + inset,
                         std::max(1.0, std::min(x1, plot_end) - std::max(x0, double(plot.left()))),
                         row.height() - 2 * inset - strip);
      const QColor c = shown(opColor(it->op, vpp));
      // A block wide enough leaves its last pixel to the row, which separates it from a block that
      // starts where it ends (a line drawn at its right edge was the next block's first pixel).
      p.fillRect(block.width() >= 4 ? block.adjusted(0, 0, -1, 0) : block, c);
      // Numbered where its own number fits with a pixel each side (a width for two digits left 1–9
      // out of 17.7 px blocks, while the last stage's 18 px ones were numbered).
      const QString number = QString::number(it->op.microbatch + 1);
      if (block.width() >= fm.horizontalAdvance(number) + 3 && band.row_height >= 14) {
        p.setPen(colors::inkOn(c));
        p.drawText(block, Qt::AlignCenter, number);
      }
    }
    // Each busy column averaged with its busy neighbours: ops about a pixel long alternate with the
    // pixel grid, and one column's shares beside the next made a moiré of the kinds.
    const auto busy = [&](size_t column) {
      return column < dense.size() && std::any_of(dense[column].begin(), dense[column].end(), [](float f) { return f > 0; });
    };
    const double block_height = row.height() - 2 * inset - strip;
    for (size_t column = 0; column < dense.size(); ++column) {
      if (!busy(column)) continue;
      std::array<double, kOpKinds> share{};
      int averaged = 0;
      for (const size_t near : {column - 1, column, column + 1})  // column - 1 wraps past 0: not busy
        if (busy(near)) {
          ++averaged;
          for (int kind = 0; kind < kOpKinds; ++kind) share[kind] += dense[near][kind];
        }
      double y = row.top() + inset;
      for (int kind = 0; kind < kOpKinds; ++kind) {
        if (share[kind] <= 0) continue;
        const double height = std::min(share[kind] / averaged, 1.0) * block_height;
        p.fillRect(QRectF(plot.left() + double(column), y, 1.0, height), shown(opColor({static_cast<planner::OpKind>(kind)}, 1)));
        y += height;
      }
    }
    p.setFont(font());
    if (!model.showsStep()) continue;
    // The stage's data-parallel collectives on a strip under its ops (their own stream), then the
    // optimizer step once the last of them is done, across the row.
    auto span = [&](double from_s, double to_s, int top, int height) {
      const double x0 = std::max(axis_.toPixel(from_s), double(plot.left()));
      const double x1 = std::min(axis_.toPixel(to_s), plot_end);
      return QRectF(x0, top, std::max(1.0, x1 - x0), height);
    };
    const auto& pr = model.plan()->prediction;
    if (strip > 0)
      for (const auto& d : pr.dp_events)
        if (d.stage == s && d.end_s >= left_t && d.start_s <= right_t) {
          // Back-to-back collectives stay a pixel apart once wide enough, as the ops do.
          const QRectF block = span(d.start_s, d.end_s, row.bottom() - inset - strip + 1, strip);
          p.fillRect(block.width() >= 4 ? block.adjusted(0, 0, -1, 0) : block, shown(colors::dataParallel()));
        }
    const double optimizer_from = pr.pipeline_s + pr.dp_exposed_s;
    if (pr.optimizer_s > 0 && optimizer_from <= right_t && pr.iteration_time_s >= left_t)
      p.fillRect(span(optimizer_from, pr.iteration_time_s, row.top() + inset, row.height() - 2 * inset), shown(colors::optimizer()));
  }
  p.setOpacity(opacity);
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const FocusFrame focus(p, this);
  const QPalette& pal = palette();
  p.fillRect(rect(), pal.color(QPalette::Base));
  const auto all = bands();
  if (all.empty()) {
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No plan yet"));
    return;
  }
  if (stale_) p.setOpacity(colors::kStaleShare);
  const QRect plot(labelWidth(), 0, width() - labelWidth() - 14, height());
  const std::vector<double> ticks_px = paintRuler(p, plot);
  p.save();
  p.setClipRect(QRect(0, kRulerHeight, width(), height() - kRulerHeight));
  for (const auto& band : all) {
    if (&band != &all.front()) {
      p.setPen(pal.color(QPalette::Mid));
      p.drawLine(0, band.top - kBandGap / 2, width(), band.top - kBandGap / 2);
    }
    paintBand(p, band, plot, ticks_px);
  }
  p.restore();

  // Legend, beside the first title or on lines of its own under it (see legend()).
  for (const auto& e : legend().items) {
    p.setPen(e.color.isValid() ? pal.color(QPalette::WindowText) : pal.color(QPalette::PlaceholderText));
    p.drawText(e.baseline, e.name);
    if (e.color.isValid()) p.fillRect(e.swatch, e.color);
  }
  p.setOpacity(1.0);
  if (stale_) {
    p.setPen(colors::warning());
    p.drawText(rect().adjusted(12, 0, -12, -8), Qt::AlignRight | Qt::AlignBottom,
               tr("Last valid plan: the spec has a problem (see the designer)"));
  }
}

const planner::TimelineEvent* TimelineView::eventAt(const QPoint& pos) const {
  for (const auto& band : bands()) {
    if (pos.y() < band.rowsTop() || pos.y() >= band.rowsTop() + band.rows * band.row_height) continue;
    const int stage = (pos.y() - band.rowsTop()) / band.row_height;
    const double t = axis_.toTime(pos.x());
    const auto [first, last] = band.model->stageRange(stage);
    const auto& events = band.model->events();
    auto it = std::lower_bound(events.begin() + first, events.begin() + last, t,
                               [](const planner::TimelineEvent& e, double time) { return e.end_s < time; });
    if (it != events.begin() + last && it->start_s <= t) return &*it;
    return nullptr;
  }
  return nullptr;
}

QString TimelineView::stepTextAt(const QPoint& pos) const {
  for (const auto& band : bands()) {
    if (!band.model->showsStep() || pos.y() < band.rowsTop() || pos.y() >= band.rowsTop() + band.rows * band.row_height)
      continue;
    const int stage = (pos.y() - band.rowsTop()) / band.row_height;
    const double t = axis_.toTime(pos.x()), slack = 2 * axis_.secondsPerPixel();  // 2 px either side
    const auto& pr = band.model->plan()->prediction;
    auto times = [](double from_s, double to_s) {
      return tr("%1 → %2 (%3)").arg(formatSeconds(from_s), formatSeconds(to_s), formatSeconds(to_s - from_s));
    };
    const double optimizer_from = pr.pipeline_s + pr.dp_exposed_s;
    // A block narrower than a few pixels is found within 2 px either side; a wider one where drawn.
    const bool thin = pr.optimizer_s < 4 * axis_.secondsPerPixel();
    if (pr.optimizer_s > 0 && t >= optimizer_from - (thin ? slack : 0) && t <= pr.iteration_time_s + (thin ? slack : 0)) {
      QString text = tr("optimizer step · every stage\n%1").arg(times(optimizer_from, pr.iteration_time_s));
      if (pr.dp_exposed_s > 0)
        text += tr("\nafter %1 of data-parallel communication the compute did not hide").arg(formatSeconds(pr.dp_exposed_s));
      if (pr.dp_gather_wait_s > 0)
        text += tr(" (%1 of it waiting for the parameter gather before a first forward)").arg(formatSeconds(pr.dp_gather_wait_s));
      if (pr.embedding_all_reduce_s > 0)
        text += tr(" (%1 of it the tied embedding's all-reduce between the first and last stage)")
                    .arg(formatSeconds(pr.embedding_all_reduce_s));
      return text;
    }
    const int strip = stripHeight(band);
    const int row_bottom = band.rowsTop() + (stage + 1) * band.row_height;
    if (strip == 0 || pos.y() < row_bottom - strip - 2) return {};
    for (const auto& d : pr.dp_events) {
      if (d.stage != stage || t < d.start_s - slack || t > d.end_s + slack) continue;
      QString text = QString::fromLatin1(planner::dp_event_name(d.kind).data());
      if (d.microbatch >= 0) text += tr(" · microbatch %1").arg(d.microbatch + 1);
      else if (band.model->plan()->schedule.vpp > 1) text += tr(" · chunk %1").arg(d.chunk);
      if (d.kind == planner::DpEvent::Kind::embedding_all_reduce)
        return text + tr(" · stage %1 · with stage %2\n%3")
                          .arg(stage)
                          .arg(stage == 0 ? band.model->plan()->schedule.pp - 1 : 0)
                          .arg(times(d.start_s, d.end_s));
      return text + tr(" · stage %1 · data parallel\n%2").arg(stage).arg(times(d.start_s, d.end_s));
    }
    return {};
  }
  return {};
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  axis_.zoomAt(event->position().x(), std::pow(1.25, steps));
  zoomed_ = true;
  update();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  dragging_ = true;
  drag_from_ = event->position();
  setCursor(Qt::ClosedHandCursor);
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  if (dragging_) {
    axis_.pan(event->position().x() - drag_from_.x());
    drag_from_ = event->position();
    zoomed_ = true;
    update();
    return;
  }
  for (const auto& band : bands())  // a title cut on a narrow view, whole
    if (event->position().y() >= band.top && event->position().y() < band.top + kBandHeader)
      return QToolTip::showText(event->globalPosition().toPoint(), title(*band.model), this);
  if (const QString step = stepTextAt(event->position().toPoint()); !step.isEmpty())
    return QToolTip::showText(event->globalPosition().toPoint(), step, this);
  const auto* e = eventAt(event->position().toPoint());
  if (!e) return QToolTip::hideText();
  QString text = tr("%1 · microbatch %2").arg(QLatin1String(planner::op_kind_name(e->op.kind).data())).arg(e->op.microbatch + 1);
  if (primary_->plan() && primary_->plan()->schedule.vpp > 1) text += tr(" · chunk %1").arg(e->op.chunk);
  text += tr(" · stage %1\n%2 → %3 (%4)")
              .arg(e->stage)
              .arg(formatSeconds(e->start_s), formatSeconds(e->end_s), formatSeconds(e->end_s - e->start_s));
  QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

void TimelineView::mouseReleaseEvent(QMouseEvent*) {
  dragging_ = false;
  unsetCursor();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent*) {
  fitToView();
  update();
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  const double centre = labelWidth() + (width() - labelWidth()) / 2.0;
  switch (event->key()) {
    case Qt::Key_F: fitToView(); break;
    case Qt::Key_Plus:
    case Qt::Key_Equal: axis_.zoomAt(centre, 1.5); break;
    case Qt::Key_Minus: axis_.zoomAt(centre, 1 / 1.5); break;
    case Qt::Key_Left: axis_.pan(width() / 8.0); break;
    case Qt::Key_Right: axis_.pan(-width() / 8.0); break;
    default: return QWidget::keyPressEvent(event);
  }
  zoomed_ = event->key() != Qt::Key_F;
  update();
}

}  // namespace tessera::ui
