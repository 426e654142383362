// Painting and interaction of the rank grid view.
#include "rank_grid_view.hpp"

#include <bit>
#include <iterator>

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "format.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

constexpr int kHeaderHeight = 54;
// Kinds a click highlights, with their display names and the line their members are outlined with,
// so that a DP partner reads apart from a PP one; "dp_cp" and "embedding" are derived groups. In the
// planner's order (RankGrid::group_kinds, the summary strip's), Megatron's: tp, cp, dp, ep, pp.
struct HighlightKind {
  const char* kind;
  const char* name;
  Qt::PenStyle line;
};
constexpr HighlightKind kHighlightKinds[] = {{"tp", "TP", Qt::SolidLine},
                                             {"cp", "CP", Qt::DashDotLine},
                                             {"dp", "DP", Qt::DashLine},
                                             {"ep", "EP", Qt::DashDotDotLine},
                                             {"pp", "PP", Qt::DotLine}};
constexpr int kHighlightKindCount = static_cast<int>(std::size(kHighlightKinds));

int64_t dimensionSize(const planner::RankGrid& grid, RankGridModel::Column column) {
  switch (column) {
    case RankGridModel::Node: return (grid.world + grid.gpus_per_node - 1) / grid.gpus_per_node;
    case RankGridModel::TP: return grid.tp;
    case RankGridModel::CP: return grid.cp;
    case RankGridModel::EP: return grid.ep;
    case RankGridModel::DP: return grid.dp;
    case RankGridModel::PP: return grid.pp;
    default: return 1;
  }
}

// Network groups that should stay inside a node: TP, CP and EP collectives sit on the critical path.
bool warnsWhenCrossing(const std::string& kind) { return kind == "tp" || kind == "cp" || kind == "ep"; }

constexpr int kCrossingGap = 18;  ///< px between the header's layout and the groups that cross nodes

}  // namespace

RankGridView::RankGridView(RankGridModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    const auto* grid = model_->grid();
    if (!grid || selected_ >= grid->world) selected_ = -1;
    if (!grid || hovered_ >= grid->world) hovered_ = -1;
    laid_out_for_ = {};
    updateMembership();
    update();
  });
}

void RankGridView::setColorBy(RankGridModel::Column column) {
  color_by_ = column;
  update();
}

void RankGridView::setStale(bool stale) {
  if (stale_ == stale) return;
  stale_ = stale;
  update();
}

void RankGridView::selectRank(int64_t rank) {
  const auto* grid = model_->grid();
  if (!grid || rank >= grid->world) rank = -1;
  if (rank == selected_) return;
  selected_ = rank;
  updateMembership();
  update();
  emit rankSelected(rank);
}

QString RankGridView::describeRank(int64_t rank) const {
  const auto* grid = model_->grid();
  if (!grid || rank < 0 || rank >= grid->world) return {};
  const auto& r = grid->ranks[rank];
  // A CPU cluster's ranks are no GPUs (as the summary strip says).
  const bool cpu = model_->plan() && model_->plan()->spec.cluster.gpu == "cpu";
  return (cpu ? tr("rank %1 · node %2, local rank %3 · tp %4 cp %5 ep %6 dp %7 pp %8")
              : tr("rank %1 · node %2, GPU %3 · tp %4 cp %5 ep %6 dp %7 pp %8"))
      .arg(r.rank).arg(r.node).arg(r.local).arg(r.tp).arg(r.cp).arg(r.ep).arg(r.dp).arg(r.pp);
}

QRect RankGridView::headerRect() const { return {0, 0, width(), kHeaderHeight}; }

const RankGridLayout& RankGridView::gridLayout() const {
  if (laid_out_for_ != size()) {
    const auto* grid = model_->grid();
    layout_.update(grid ? grid->world : 0, grid ? grid->gpus_per_node : 1,
                   QRectF(12, kHeaderHeight + 6, width() - 24, height() - kHeaderHeight - 18));
    laid_out_for_ = size();
  }
  return layout_;
}

void RankGridView::updateMembership() {
  member_.clear();
  const auto* grid = model_->grid();
  if (!grid || selected_ < 0) return;
  member_.assign(grid->world, 0);
  for (int k = 0; k < kHighlightKindCount; ++k)
    if (const auto* group = grid->group_of(kHighlightKinds[k].kind, selected_))
      for (int64_t r : group->ranks) member_[r] |= uint8_t(1u << k);
}

QString RankGridView::groupsOf(int64_t rank) const {
  QStringList kinds;
  if (rank >= 0 && rank < static_cast<int64_t>(member_.size()) && rank != selected_)
    for (int k = 0; k < kHighlightKindCount; ++k)
      if (member_[rank] & (1u << k)) kinds << QLatin1String(kHighlightKinds[k].name);
  return kinds.join(QLatin1Char(' '));
}

int RankGridView::sampleWidth() const { return 2 * fontMetrics().height(); }

RankGridView::GroupsLine RankGridView::selectedGroupsLine() const {
  const auto* grid = model_->grid();
  if (!grid || selected_ < 0) return {};
  struct Group {
    const char* name;
    Qt::PenStyle line;
    size_t size;
    bool crosses;
  };
  std::vector<Group> groups;
  for (const auto& [kind, name, line] : kHighlightKinds)
    if (const auto* g = grid->group_of(kind, selected_); g && g->ranks.size() >= 2)
      groups.push_back({name, line, g->ranks.size(), g->crosses_node});
  if (groups.empty()) return {describeRank(selected_), {}};
  const auto label = [&](const Group& g, bool crossing) {
    return tr("%1 ×%2%3").arg(QLatin1String(g.name)).arg(g.size).arg(crossing && g.crosses ? tr(" (crosses nodes)") : QString());
  };
  const auto widthOf = [&](const QString& lead, bool crossing) {
    int w = fontMetrics().horizontalAdvance(lead);
    for (const auto& g : groups)
      w += fontMetrics().horizontalAdvance(QLatin1Char(' ')) + 8 + sampleWidth() + 5 + fontMetrics().horizontalAdvance(label(g, crossing));
    return w;
  };
  const int room = headerRect().adjusted(12, 6, -12, 0).width();
  QString lead = describeRank(selected_) + tr("  —  groups:");
  bool crossing = true;
  if (widthOf(lead, crossing) > room) lead = tr("rank %1").arg(selected_) + tr("  —  groups:");
  if (widthOf(lead, crossing) > room) crossing = false;
  GroupsLine shown{lead, {}};
  for (const auto& g : groups) shown.groups.emplace_back(g.line, label(g, crossing));
  return shown;
}

RankGridView::LayoutLine RankGridView::layoutLine() const {
  LayoutLine shown;
  const auto* plan = model_->plan();
  if (!plan) return shown;
  const auto& grid = *model_->grid();
  QFont bold = font();
  bold.setBold(true);
  const QFontMetrics metrics(bold);
  const int room = headerRect().adjusted(12, 6, -12, 0).width();
  const bool cpu = plan->spec.cluster.gpu == "cpu";
  const QString devices = tr("%1 on %2").arg(formatDevices(grid.world, cpu), formatNodes(gridLayout().nodeCount()));
  const std::pair<const char*, int64_t> dims[] = {{"TP", grid.tp}, {"CP", grid.cp}, {"EP", grid.ep}, {"DP", grid.dp}, {"PP", grid.pp}};
  QString every = devices, sized = devices;
  for (const auto& [name, size] : dims) {
    const QString part = tr(" · %1 %2").arg(QLatin1String(name)).arg(size);
    every += part;
    if (size > 1) sized += part;
  }
  for (const auto& [kind, name, line] : kHighlightKinds) {
    if (std::find(plan->cross_node_groups.begin(), plan->cross_node_groups.end(), kind) == plan->cross_node_groups.end())
      continue;
    shown.crossing.emplace_back(shown.crossing.empty() ? tr("crosses nodes: ") : QStringLiteral(", "), false);
    const bool warned = warnsWhenCrossing(kind);
    shown.crossing.emplace_back(warned ? tr("⚠ %1").arg(QLatin1String(name)) : QString::fromLatin1(name), warned);
  }
  if (shown.crossing.empty()) shown.crossing.emplace_back(tr("every group stays inside a node"), false);
  // The whole layout where the groups that cross nodes fit after it, else without the dimensions of
  // size 1; where even that leaves no room, the groups are said by their warnings alone ("⚠ CP, ⚠ EP
  // cross nodes", the line is for them) and the layout is cut with "…" before them.
  const auto width = [this](const std::vector<std::pair<QString, bool>>& parts) {
    int w = kCrossingGap;
    for (const auto& [text, warned] : parts) w += fontMetrics().horizontalAdvance(text);
    return w;
  };
  if (metrics.horizontalAdvance(every) + width(shown.crossing) <= room) {
    shown.layout = every;
    return shown;
  }
  if (metrics.horizontalAdvance(sized) + width(shown.crossing) > room) {
    std::vector<std::pair<QString, bool>> warnings;
    for (const auto& part : shown.crossing)
      if (part.second) {
        if (!warnings.empty()) warnings.emplace_back(QStringLiteral(", "), false);
        warnings.push_back(part);
      }
    if (!warnings.empty()) {
      warnings.emplace_back(warnings.size() == 1 ? tr(" crosses nodes") : tr(" cross nodes"), false);
      shown.crossing = std::move(warnings);
      shown.layout = metrics.elidedText(sized, Qt::ElideRight, std::max(0, room - width(shown.crossing)));
      return shown;
    }
  }
  shown.layout = metrics.elidedText(sized, Qt::ElideRight, room);
  return shown;
}

void RankGridView::paintHeader(QPainter& p, const planner::RankGrid& grid) {
  const QPalette& pal = palette();
  const QRect header = headerRect().adjusted(12, 6, -12, 0);
  QFont bold = font();
  bold.setBold(true);
  const int line = fontMetrics().height() + 4;

  // Line 1: layout, and which groups leave a node.
  const LayoutLine first = layoutLine();
  p.setFont(bold);
  p.setPen(pal.color(QPalette::WindowText));
  p.drawText(header.left(), header.top() + fontMetrics().ascent(), first.layout);
  int x = header.left() + QFontMetrics(bold).horizontalAdvance(first.layout) + kCrossingGap;
  p.setFont(font());
  // Part by part, each in its colour; the first that does not fit is cut with "…" and ends the line.
  for (const auto& [text, warned] : first.crossing) {
    p.setPen(warned ? colors::warning() : pal.color(QPalette::PlaceholderText));
    const int width = fontMetrics().horizontalAdvance(text);
    const bool fits = x + width <= header.right();
    p.drawText(x, header.top() + fontMetrics().ascent(), fits ? text : fontMetrics().elidedText(text, Qt::ElideRight, std::max(0, header.right() - x)));
    if (!fits) break;
    x += width;
  }

  // Line 2: the hovered or selected rank and its groups, else the colour legend.
  const int y2 = header.top() + line + fontMetrics().ascent();
  p.setPen(pal.color(QPalette::WindowText));
  const int64_t focus = hovered_ >= 0 ? hovered_ : selected_;
  if (focus >= 0) {
    if (focus != selected_) {
      p.drawText(header.left(), y2, describeRank(focus));
      return;
    }
    // The selected rank's groups, each after a sample of the line its members are outlined with.
    const GroupsLine shown = selectedGroupsLine();
    p.drawText(header.left(), y2, shown.lead);
    x = header.left() + fontMetrics().horizontalAdvance(shown.lead);
    for (const auto& [line, label] : shown.groups) {
      x += fontMetrics().horizontalAdvance(QLatin1Char(' ')) + (&label == &shown.groups.front().second ? 0 : 8);
      p.setPen(QPen(pal.color(QPalette::WindowText), 2, line, Qt::FlatCap));
      const qreal mid = y2 - fontMetrics().ascent() / 2.0 + 1;
      p.drawLine(QPointF(x, mid), QPointF(x + sampleWidth(), mid));
      x += sampleWidth() + 5;
      p.setPen(pal.color(QPalette::WindowText));
      p.drawText(x, y2, label);
      x += fontMetrics().horizontalAdvance(label);
    }
    return;
  }
  const int64_t n = dimensionSize(grid, color_by_);
  const QString caption = tr("colour: %1").arg(RankGridModel::columnName(color_by_));
  p.drawText(header.left(), y2, caption);
  x = header.left() + fontMetrics().horizontalAdvance(caption) + 10;
  const int sw = fontMetrics().height() - 4;
  const int64_t shown = std::min<int64_t>(n, 16);
  for (int64_t i = 0; i < shown; ++i) {
    const int64_t value = n <= 16 ? i : i * (n - 1) / (shown - 1);
    p.fillRect(QRect(x, y2 - sw + 1, sw, sw), colors::category(value, n));
    x += sw + 3;
    const QString label = QString::number(value);
    p.drawText(x, y2, label);
    x += fontMetrics().horizontalAdvance(label) + 8;
    if (n > 16 && i == shown - 2) {
      p.drawText(x, y2, QStringLiteral("…"));
      x += fontMetrics().horizontalAdvance(QStringLiteral("…")) + 8;
    }
  }
  // The hint, where it fits whole (the controls above the view say it too).
  const QString hint = tr("hover a rank for its coordinates, click to highlight its groups");
  p.setPen(pal.color(QPalette::PlaceholderText));
  if (x + 8 + fontMetrics().horizontalAdvance(hint) <= header.right()) p.drawText(x + 8, y2, hint);
}

void RankGridView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const FocusFrame focus(p, this);
  const QPalette& pal = palette();
  p.fillRect(rect(), pal.color(QPalette::Base));
  const auto* grid = model_->grid();
  if (!grid) {
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No plan yet"));
    return;
  }
  gridLayout();
  if (stale_) p.setOpacity(colors::kStaleShare);
  paintHeader(p, *grid);

  const bool frames = layout_.showFrames();
  if (frames) {
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.85);
    p.setFont(small);
    const QColor frame = pal.color(QPalette::Mid), inside = pal.color(QPalette::AlternateBase);
    const bool rounded = layout_.showNodeLabels();  // plain frames when there are hundreds of them
    p.setPen(QPen(frame, 1));
    p.setBrush(inside);
    for (int64_t n = 0; n < layout_.nodeCount(); ++n) {
      const QRectF r = layout_.nodeRect(n);
      if (rounded) {
        p.drawRoundedRect(r.adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
      } else {
        p.fillRect(r.toRect(), frame);
        p.fillRect(r.toRect().adjusted(1, 1, -1, -1), inside);
      }
      if (rounded) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(r.adjusted(6, 2, -6, 0), Qt::AlignLeft | Qt::AlignTop, tr("node %1").arg(n));
        p.setPen(QPen(frame, 1));
      }
    }
  }

  const int64_t n = dimensionSize(*grid, color_by_);
  const bool selecting = selected_ >= 0 && !member_.empty();
  const QColor base = pal.color(QPalette::Base);
  QFont tileFont = font();
  tileFont.setPixelSize(std::max(9, static_cast<int>(layout_.tileSize() / 3.2)));
  // Rank numbers only where the widest one fits its tile.
  const bool text = layout_.showTileText() &&
                    QFontMetrics(tileFont).horizontalAdvance(QString::number(grid->world - 1)) + 4 <= layout_.tileSize();
  p.setFont(tileFont);
  p.setPen(Qt::NoPen);
  // One colour per coordinate value, and its dimmed version for ranks outside the selection's groups.
  // A stale grid (the spec has a problem) is faded by mixing its colours into the base rather than by
  // painting at 35 % opacity, so that each number's colour is chosen for the tile as it is shown:
  // white numbers on faded pale tiles were unreadable.
  const auto mixed = [&](const QColor& c, float share) { return colors::faded(c, base, share); };
  const float shown = stale_ ? colors::kStaleShare : 1.0f;
  std::vector<QColor> fill(n), dimmed(n);
  for (int64_t v = 0; v < n; ++v) {
    const QColor category = colors::category(v, n);
    fill[v] = mixed(category, shown);
    dimmed[v] = mixed(category, 0.25f * shown);
  }
  p.setOpacity(1.0);
  for (const auto& r : grid->ranks) {
    const int64_t v = RankGridModel::coordinate(r, color_by_);
    const QColor& c = selecting && !member_[r.rank] ? dimmed[v] : fill[v];
    const QRect tile = layout_.tileRect(r.rank).toRect();
    p.fillRect(tile, c);
    if (text) {
      p.setPen(colors::inkOn(c));
      p.drawText(tile, Qt::AlignCenter, QString::number(r.rank));
      p.setPen(Qt::NoPen);
    }
  }

  // Outlines: the selected rank's group members, each group in its own line (a rank in two groups, EP
  // and DP say, gets both, one inside the other where the tile has room), in the numbers' colour for
  // the tile and inside it, the tile's colour on both sides (on its edge a white line met the light
  // frame and vanished); then the selected rank, then the hovered rank.
  p.setOpacity(shown);
  p.setBrush(Qt::NoBrush);
  if (selecting) {
    const double tile = layout_.tileSize();
    const qreal width = tile >= 8 ? 1.5 : 1;
    const qreal first_inset = width / 2 + (tile >= 16 ? 3 : tile >= 8 ? 2 : 0);
    // Nested outlines where the innermost keeps clear of the tile's number (on 30 px tiles the second
    // ran through "17"); else the first kind's alone.
    const QSize number(fontMetrics().horizontalAdvance(QString::number(grid->world - 1)), fontMetrics().ascent());
    const auto nests = [&](int kinds) {
      const qreal inner = tile - 2 * (first_inset + (kinds - 1) * (width + 1.5)) - width;
      return tile >= 16 && (!text || (inner >= number.width() + 4 && inner >= number.height() + 4));
    };
    for (int64_t r = 0; r < grid->world; ++r) {
      if (!member_[r] || r == selected_) continue;
      const QColor ink = colors::inkOn(fill[RankGridModel::coordinate(grid->ranks[r], color_by_)]);
      const bool nest = nests(std::popcount(member_[r]));
      qreal inset = first_inset;
      for (int k = 0; k < kHighlightKindCount; ++k) {
        if (!(member_[r] & (1u << k))) continue;
        p.setPen(QPen(ink, width, kHighlightKinds[k].line, Qt::FlatCap));
        p.drawRect(layout_.tileRect(r).adjusted(inset, inset, -inset, -inset));
        if (!nest) break;
        inset += width + 1.5;
      }
    }
    p.setPen(QPen(pal.color(QPalette::WindowText), 2.5));
    p.drawRect(layout_.tileRect(selected_).adjusted(-1, -1, 1, 1));
  }
  if (hovered_ >= 0) {
    p.setPen(QPen(pal.color(QPalette::Highlight), 2));
    p.drawRect(layout_.tileRect(hovered_).adjusted(-1, -1, 1, 1));
  }
  if (stale_) {
    p.setOpacity(1.0);
    p.setFont(font());
    p.setPen(colors::warning());
    p.drawText(rect().adjusted(0, 0, -12, -6), Qt::AlignRight | Qt::AlignBottom,
               tr("Last valid plan: the spec has a problem (see the designer)"));
  }
}

void RankGridView::mouseMoveEvent(QMouseEvent* event) {
  const int64_t rank = rankAt(event->position());
  if (rank == hovered_) return;
  hovered_ = rank;
  update();
  emit rankHovered(rank);
  if (rank >= 0) {
    QString tip = describeRank(rank);
    if (const QString groups = groupsOf(rank); !groups.isEmpty())
      tip += tr("\nin rank %1's %2 %3").arg(selected_).arg(groups.split(' ').join(tr(" and ")), groups.contains(' ') ? tr("groups") : tr("group"));
    QToolTip::showText(event->globalPosition().toPoint(), tip, this);
  }
  else QToolTip::hideText();
}

void RankGridView::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) selectRank(rankAt(event->position()));
}

void RankGridView::leaveEvent(QEvent*) {
  if (hovered_ < 0) return;
  hovered_ = -1;
  update();
  emit rankHovered(-1);
}

void RankGridView::keyPressEvent(QKeyEvent* event) {
  const auto* grid = model_->grid();
  if (!grid) return QWidget::keyPressEvent(event);
  const bool arrow = event->key() == Qt::Key_Right || event->key() == Qt::Key_Left || event->key() == Qt::Key_Down ||
                     event->key() == Qt::Key_Up;
  if (arrow && selected_ < 0) return selectRank(0);  // the first arrow picks rank 0 (→ skipped it for rank 1)
  switch (event->key()) {
    case Qt::Key_Escape: selectRank(-1); break;
    case Qt::Key_Right: selectRank(std::min(selected_ + 1, grid->world - 1)); break;
    case Qt::Key_Left: selectRank(std::max<int64_t>(selected_ - 1, 0)); break;
    case Qt::Key_Down: selectRank(rankBeside(selected_, +1)); break;
    case Qt::Key_Up: selectRank(rankBeside(selected_, -1)); break;
    default: QWidget::keyPressEvent(event);
  }
}

int64_t RankGridView::rankBeside(int64_t rank, int direction) const {
  // The tile drawn nearest under (or over) this one's column: ↓ went to the next node, which a grid
  // of nodes draws to the right.
  const RankGridLayout& layout = gridLayout();
  const QPointF from = layout.tileRect(rank).center();
  int64_t best = rank;
  double best_dy = 0, best_dx = 0;
  for (int64_t r = 0; r < model_->grid()->world; ++r) {
    const QPointF to = layout.tileRect(r).center();
    const double dy = (to.y() - from.y()) * direction, dx = std::abs(to.x() - from.x());
    if (dy < 0.5) continue;
    if (best == rank || dy < best_dy - 0.5 || (dy < best_dy + 0.5 && dx < best_dx)) {
      best = r;
      best_dy = dy;
      best_dx = dx;
    }
  }
  return best;
}

}  // namespace tessera::ui
