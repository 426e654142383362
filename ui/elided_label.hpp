// A one-line label that, narrower than its text, ends it with "…" instead of cutting it off mid-word,
// and then shows the whole text as its tooltip: the summary strip's captions and details on a small
// window (1280 px wide: "interleaved · 48 microba" read as if complete).
#pragma once

#include <QEvent>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QToolTip>

namespace tessera::ui {

class ElidedLabel : public QLabel {
 public:
  using QLabel::QLabel;

  /// The text as painted at the label's present width.
  QString shownText() const { return fontMetrics().elidedText(text(), Qt::ElideRight, contentsRect().width()); }
  bool isElided() const { return shownText() != text(); }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter painter(this);
    painter.setPen(palette().color(isEnabled() ? QPalette::Active : QPalette::Disabled, foregroundRole()));
    painter.drawText(contentsRect(), static_cast<int>(alignment() | Qt::TextSingleLine), shownText());
  }

  bool event(QEvent* e) override {
    if (e->type() == QEvent::ToolTip && toolTip().isEmpty()) {
      if (isElided()) QToolTip::showText(static_cast<QHelpEvent*>(e)->globalPos(), text(), this);
      else QToolTip::hideText();
      return true;
    }
    return QLabel::event(e);
  }
};

}  // namespace tessera::ui
