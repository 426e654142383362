// Plot titles broken to the plot's width, and value ticks thinned to the axis height.
#include "plot_fit.hpp"

#include <algorithm>

#include <QRegularExpression>
#include <QStringList>

namespace tessera::ui {

namespace {

// Greedy lines of `words` joined by `glue`, each no wider than `width` where a word allows.
QStringList fillLines(const QStringList& words, const QString& glue, const QFontMetrics& metrics, int width) {
  QStringList lines;
  for (const QString& word : words) {
    if (!lines.isEmpty() && metrics.horizontalAdvance(lines.back() + glue + word) <= width)
      lines.back() += glue + word;
    else
      lines << word;
  }
  return lines;
}

}  // namespace

QString wrapTitle(const QString& text, const QFontMetrics& metrics, int width) {
  if (text.contains(QLatin1Char('\n'))) {  // each line of its own (the memory view's notes, one a line)
    QStringList lines = text.split(QLatin1Char('\n'));
    for (QString& line : lines) line = wrapTitle(line, metrics, width);
    return lines.join(QLatin1Char('\n'));
  }
  if (metrics.horizontalAdvance(text) <= width) return text;
  // The parts between separators, each with the separator that ends it.
  static const QRegularExpression separator(QStringLiteral(" — | · "));
  struct Part {
    QString text, separator;
  };
  std::vector<Part> parts;
  qsizetype from = 0;
  for (auto it = separator.globalMatch(text); it.hasNext();) {
    const auto match = it.next();
    parts.push_back({text.mid(from, match.capturedStart() - from), match.captured()});
    from = match.capturedEnd();
  }
  parts.push_back({text.mid(from), QString()});
  // A line as it ends before `sep`: "—" stays at its end, "·" goes.
  const auto ended = [](const QString& line, const QString& sep) { return sep == QStringLiteral(" — ") ? line + QStringLiteral(" —") : line; };
  QStringList lines;
  QString line, line_sep;  // the line being filled and the separator after it
  for (const Part& part : parts) {
    // Measured as the line would end after this part, its "—" included.
    if (!line.isEmpty() && metrics.horizontalAdvance(ended(line + line_sep + part.text, part.separator)) > width) {
      lines << ended(line, line_sep);
      line.clear();
    }
    if (line.isEmpty()) {
      // A part wider than the width alone is broken between its words, room kept for a " —" after it.
      const int room = width - (part.separator == QStringLiteral(" — ") ? metrics.horizontalAdvance(QStringLiteral(" —")) : 0);
      QStringList words = fillLines(part.text.split(QLatin1Char(' ')), QStringLiteral(" "), metrics, room);
      line = words.takeLast();
      lines << words;
    } else {
      line += line_sep + part.text;
    }
    line_sep = part.separator;
  }
  lines << line;
  return lines.join(QLatin1Char('\n'));
}

PlotTitle::PlotTitle(QCustomPlot* plot, const QString& text, const QFont& font, double width_share)
    : QCPTextElement(plot, text, font), full_(text), width_share_(width_share) {}

void PlotTitle::setFullText(const QString& text) {
  full_ = text;
  setText(text);
}

void PlotTitle::fit() const {
  const int width = static_cast<int>(mParentPlot->viewport().width() * width_share_) - mMargins.left() - mMargins.right() - 12;
  const QString wrapped = wrapTitle(full_, QFontMetrics(mFont), std::max(width, 40));
  if (wrapped != mText) const_cast<PlotTitle*>(this)->mText = wrapped;
}

QSize PlotTitle::minimumOuterSizeHint() const {
  fit();
  return QCPTextElement::minimumOuterSizeHint();
}

QSize PlotTitle::maximumOuterSizeHint() const {
  fit();
  return QCPTextElement::maximumOuterSizeHint();
}

void FittedPlot::fitLegend(QCPLegend* legend, int most_columns) {
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  fitted_legends_.emplace_back(legend, std::max(1, most_columns));
}

bool FittedPlot::fitColumns(QCPLegend* legend, int most_columns) {
  if (!legend->visible() || legend->itemCount() == 0) return false;
  int widest = 1;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (legend->item(i)) widest = std::max(widest, legend->item(i)->minimumOuterSizeHint().width());
  const QMargins margins = legend->margins();
  const int room = legend->outerRect().width() - margins.left() - margins.right(), spacing = legend->columnSpacing();
  const int columns = std::clamp((room + spacing) / (widest + spacing), 1, most_columns);
  if (legend->wrap() == columns) return false;
  legend->setWrap(columns);
  legend->setFillOrder(legend->fillOrder(), true);  // the items already there move to the new rows
  return true;
}

void FittedPlot::updateLayout() {
  QCustomPlot::updateLayout();
  // The legends' rows first: they change the axes' heights, which the tick counts follow.
  bool rows = false;
  for (const auto& [legend, most] : fitted_legends_)
    if (legend && fitColumns(legend, most)) rows = true;
  if (rows) QCustomPlot::updateLayout();
  bool ticks = false;
  for (QCPAxisRect* rect : axisRects()) {
    QCPAxis* axis = rect->axis(QCPAxis::atLeft);
    const int count = fittedTickCount(axis, rect->height());
    ticks = ticks || axis->ticker()->tickCount() != count;
    axis->ticker()->setTickCount(count);
  }
  if (ticks) QCustomPlot::updateLayout();  // the ticks are placed in the layout's preparation
}

int FittedPlot::fittedTickCount(QCPAxis* axis, int height_px) {
  const int base = std::clamp(height_px / 28, 2, 5);
  // A count is what the ticker aims at, not what it places: two asked may be one round value in the
  // range ("4" alone on a loss axis, its scale unreadable). Where fewer than two show, a larger count
  // is taken if its labels stay a line apart.
  const auto& ticker = axis->ticker();
  const int before = ticker->tickCount();
  const double line = QFontMetrics(axis->tickLabelFont()).height(), range = axis->range().size();
  int chosen = base;
  for (int count = base; count <= base + 3 && range > 0 && height_px > 0; ++count) {
    ticker->setTickCount(count);
    QVector<double> placed;
    ticker->generate(axis->range(), QLocale::c(), QLatin1Char('g'), 6, placed, nullptr, nullptr);
    int inside = 0;
    for (double t : placed) inside += axis->range().contains(t);
    const double apart = placed.size() >= 2 ? std::abs(placed[1] - placed[0]) / range * height_px : height_px;
    if (inside >= 2) {
      if (apart >= line) chosen = count;
      break;
    }
  }
  ticker->setTickCount(before);
  return chosen;
}

}  // namespace tessera::ui
