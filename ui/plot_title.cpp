// Line breaking of plot titles to the plot's width.
#include "plot_title.hpp"

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
  // A line's last separator: "—" stays at its end, "·" goes.
  const auto ended = [](const QString& line, const QString& sep) { return sep == QStringLiteral(" — ") ? line + QStringLiteral(" —") : line; };
  QStringList lines;
  QString line, line_sep;  // the line being filled and the separator after it
  for (const Part& part : parts) {
    if (!line.isEmpty() && metrics.horizontalAdvance(line + line_sep + part.text) > width) {
      lines << ended(line, line_sep);
      line.clear();
    }
    if (line.isEmpty()) {
      // A part wider than the width alone is broken between its words.
      QStringList words = fillLines(part.text.split(QLatin1Char(' ')), QStringLiteral(" "), metrics, width);
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

PlotTitle::PlotTitle(QCustomPlot* plot, const QString& text, const QFont& font)
    : QCPTextElement(plot, text, font), full_(text) {}

void PlotTitle::setFullText(const QString& text) {
  full_ = text;
  setText(text);
}

void PlotTitle::fit() const {
  const int width = mParentPlot->viewport().width() - mMargins.left() - mMargins.right() - 12;
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

}  // namespace tessera::ui
