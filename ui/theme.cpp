// Palettes and data colours of the workbench.
#include "theme.hpp"

#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QPainter>
#include <QProxyStyle>
#include <QStyleFactory>
#include <QStyleOption>
#include <qcustomplot.h>

namespace tessera::ui {

namespace {

QPalette lightPalette() {
  QPalette p;
  p.setColor(QPalette::Window, QColor(0xF4, 0xF5, 0xF7));
  p.setColor(QPalette::WindowText, QColor(0x1F, 0x23, 0x28));
  p.setColor(QPalette::Base, Qt::white);
  p.setColor(QPalette::AlternateBase, QColor(0xF0, 0xF2, 0xF5));
  p.setColor(QPalette::Text, QColor(0x1F, 0x23, 0x28));
  p.setColor(QPalette::PlaceholderText, QColor(0x8A, 0x91, 0x99));
  p.setColor(QPalette::Button, QColor(0xEC, 0xEE, 0xF1));
  p.setColor(QPalette::ButtonText, QColor(0x1F, 0x23, 0x28));
  p.setColor(QPalette::Highlight, QColor(0x2F, 0x6F, 0xDE));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::ToolTipBase, QColor(0xFF, 0xFF, 0xF4));
  p.setColor(QPalette::ToolTipText, QColor(0x1F, 0x23, 0x28));
  p.setColor(QPalette::Mid, QColor(0xC8, 0xCC, 0xD2));
  p.setColor(QPalette::Dark, QColor(0xA0, 0xA6, 0xAE));
  p.setColor(QPalette::Light, Qt::white);
  p.setColor(QPalette::Link, QColor(0x2F, 0x6F, 0xDE));
  for (auto role : {QPalette::Text, QPalette::WindowText, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, QColor(0x9A, 0xA0, 0xA8));
  return p;
}

QPalette darkPalette() {
  QPalette p;
  p.setColor(QPalette::Window, QColor(0x23, 0x26, 0x2B));
  p.setColor(QPalette::WindowText, QColor(0xDD, 0xE1, 0xE6));
  p.setColor(QPalette::Base, QColor(0x1A, 0x1C, 0x20));
  p.setColor(QPalette::AlternateBase, QColor(0x26, 0x29, 0x2E));
  p.setColor(QPalette::Text, QColor(0xDD, 0xE1, 0xE6));
  p.setColor(QPalette::PlaceholderText, QColor(0x7A, 0x80, 0x88));
  p.setColor(QPalette::Button, QColor(0x2D, 0x31, 0x37));
  p.setColor(QPalette::ButtonText, QColor(0xDD, 0xE1, 0xE6));
  p.setColor(QPalette::Highlight, QColor(0x3D, 0x7E, 0xEA));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::ToolTipBase, QColor(0x30, 0x34, 0x3A));
  p.setColor(QPalette::ToolTipText, QColor(0xDD, 0xE1, 0xE6));
  p.setColor(QPalette::Mid, QColor(0x45, 0x4A, 0x52));
  p.setColor(QPalette::Dark, QColor(0x16, 0x18, 0x1B));
  p.setColor(QPalette::Light, QColor(0x3A, 0x3F, 0x46));
  p.setColor(QPalette::Link, QColor(0x6E, 0xA4, 0xF5));
  for (auto role : {QPalette::Text, QPalette::WindowText, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, QColor(0x6A, 0x70, 0x78));
  return p;
}

// Fusion, with check boxes and radio buttons outlined so that they show on a dark base: Fusion draws
// their outline as the window colour darkened by 40 %, which on the dark palette (#23262B → #191B1F)
// is the base itself (#1A1C20), so an unchecked box was invisible.
class WorkbenchStyle : public QProxyStyle {
 public:
  WorkbenchStyle() : QProxyStyle(QStyleFactory::create(QStringLiteral("Fusion"))) {}

  void drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                     const QWidget* widget) const override {
    QProxyStyle::drawPrimitive(element, option, painter, widget);
    if ((element != PE_IndicatorCheckBox && element != PE_IndicatorRadioButton) || !isDarkPalette(option->palette)) return;
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing, element == PE_IndicatorRadioButton);
    painter->setBrush(Qt::NoBrush);
    painter->setPen(QPen(option->palette.color(QPalette::Disabled, QPalette::Text), 1));
    const QRectF box = QRectF(option->rect).adjusted(0.5, 0.5, -1.5, -1.5);
    if (element == PE_IndicatorRadioButton) painter->drawEllipse(box);
    else painter->drawRect(box);
    painter->restore();
  }
};

}  // namespace

int itemTextMargin(const QWidget* widget) {
  return (widget ? widget->style() : QApplication::style())->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, widget) + 1;
}

FocusFrame::~FocusFrame() {
  if (hidden_ > 0 || !view_->hasFocus()) return;
  painter_.save();
  painter_.resetTransform();
  painter_.setClipping(false);
  painter_.setBrush(Qt::NoBrush);
  painter_.setPen(QPen(view_->palette().color(QPalette::Highlight), 2));
  painter_.drawRect(QRectF(view_->rect()).adjusted(1, 1, -1, -1));
  painter_.restore();
}

bool isDarkPalette(const QPalette& palette) { return palette.color(QPalette::Window).lightness() < 128; }

std::optional<ThemeChoice> themeFromName(QStringView name) {
  if (name == QLatin1String("system")) return ThemeChoice::system;
  if (name == QLatin1String("light")) return ThemeChoice::light;
  if (name == QLatin1String("dark")) return ThemeChoice::dark;
  return std::nullopt;
}

void applyPlotPalette(QCustomPlot* plot, const QPalette& palette) {
  const QColor text = palette.color(QPalette::WindowText), muted = palette.color(QPalette::PlaceholderText);
  plot->setBackground(palette.color(QPalette::Base));
  for (QCPAxisRect* rect : plot->axisRects())
    for (QCPAxis* axis : rect->axes()) {
      axis->setBasePen(QPen(muted));
      axis->setTickPen(QPen(muted));
      axis->setSubTickPen(QPen(muted));
      axis->setTickLabelColor(text);
      axis->setLabelColor(text);
      axis->grid()->setPen(QPen(palette.color(QPalette::Mid), 0, Qt::DotLine));
    }
  // Titles, and legends (inset in an axis rect or in the plot's layout): their background the base
  // colour, as see-through as it was.
  std::vector<QCPLayoutElement*> elements;
  for (QCPLayoutElement* e : plot->plotLayout()->elements(true)) elements.push_back(e);
  for (QCPAxisRect* rect : plot->axisRects())
    for (QCPLayoutElement* e : rect->insetLayout()->elements(false)) elements.push_back(e);
  for (QCPLayoutElement* e : elements) {
    if (auto* title = qobject_cast<QCPTextElement*>(e)) title->setTextColor(text);
    if (auto* legend = qobject_cast<QCPLegend*>(e)) {
      QColor fill = palette.color(QPalette::Base);
      fill.setAlpha(legend->brush().style() == Qt::NoBrush ? 255 : legend->brush().color().alpha());
      legend->setBrush(fill);
      if (legend->borderPen().style() != Qt::NoPen) legend->setBorderPen(QPen(palette.color(QPalette::Mid)));
      legend->setTextColor(text);
    }
  }
}

void applyTheme(ThemeChoice choice) {
  bool dark = choice == ThemeChoice::dark;
  if (choice == ThemeChoice::system) {
    // The platform theme's palette, before ours replaces it.
    QApplication::setPalette(QPalette());
    dark = isDarkPalette(QApplication::palette());
  }
  QApplication::setStyle(new WorkbenchStyle);
  QApplication::setPalette(dark ? darkPalette() : lightPalette());
}

namespace colors {
QColor forward() { return QColor(0x4E, 0x79, 0xA7); }
QColor backward() { return QColor(0x59, 0xA1, 0x4F); }
QColor backwardInput() { return QColor(0x3E, 0x9C, 0x8F); }
QColor backwardWeight() { return QColor(0xE8, 0x9A, 0x3C); }
QColor weights() { return QColor(0x4E, 0x79, 0xA7); }
QColor gradients() { return QColor(0x76, 0xB7, 0xB2); }
QColor optimizer() { return QColor(0xB0, 0x7A, 0xA1); }
QColor dataParallel() { return QColor(0xED, 0xC9, 0x48); }
QColor activations() { return QColor(0xF2, 0x8E, 0x2B); }
QColor buffers() { return QColor(0x9C, 0x9C, 0x9C); }
// Lighter on a dark palette: #E15759's thin strokes read dim on #1A1C20 (the comparison's differing
// values, the history's failed runs); #FF8A8C is 7.6:1 there.
QColor warning() { return isDarkPalette(QApplication::palette()) ? QColor(0xFF, 0x8A, 0x8C) : QColor(0xE1, 0x57, 0x59); }
QColor ok() { return QColor(0x59, 0xA1, 0x4F); }

QColor faded(const QColor& c, const QColor& base, float share) {
  return QColor::fromRgbF(c.redF() * share + base.redF() * (1 - share), c.greenF() * share + base.greenF() * (1 - share),
                          c.blueF() * share + base.blueF() * (1 - share));
}

namespace {
double relativeLuminance(const QColor& c) {
  const auto linear = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF());
}
}  // namespace

double contrast(const QColor& a, const QColor& b) {
  const double la = relativeLuminance(a), lb = relativeLuminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QColor inkOn(const QColor& fill) {
  const QColor dark(0x1F, 0x23, 0x28), light(Qt::white);
  return contrast(dark, fill) >= contrast(light, fill) ? dark : light;
}

QColor category(int64_t index, int64_t count) {
  static const QColor qualitative[] = {{0x4E, 0x79, 0xA7}, {0xF2, 0x8E, 0x2B}, {0x59, 0xA1, 0x4F}, {0xB0, 0x7A, 0xA1},
                                       {0xED, 0xC9, 0x48}, {0x76, 0xB7, 0xB2}, {0xFF, 0x9D, 0xA7}, {0x9C, 0x75, 0x5F},
                                       {0xE1, 0x57, 0x59}, {0xBA, 0xB0, 0xAC}};
  if (count <= 10) return qualitative[index % 10];
  return QColor::fromHsvF(static_cast<float>(0.83 * static_cast<double>(index) / static_cast<double>(count)), 0.55f, 0.85f);
}
}  // namespace colors

}  // namespace tessera::ui
