// A one-line label that, narrower than its text, ends it with "…" instead of cutting it off mid-word,
// and then shows the whole text as its tooltip: the summary strip's captions and details on a small
// window (1280 px wide: "interleaved · 48 microba" read as if complete). A text may come with a brief
// form, shown (and cut where even it is wider) when the whole does not fit.
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

  /// `whole`, and `brief` to show instead where the label is narrower than `whole`.
  void setText(const QString& whole, const QString& brief) {
    brief_ = brief;
    brief_of_ = whole;
    QLabel::setText(whole);
  }
  using QLabel::setText;

  /// The text as painted at the label's present width.
  QString shownText() const {
    const int room = contentsRect().width();
    const bool brief = text() == brief_of_ && !brief_.isEmpty() && fontMetrics().horizontalAdvance(text()) > room;
    return fontMetrics().elidedText(brief ? brief_ : text(), Qt::ElideRight, room);
  }
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

 private:
  QString brief_, brief_of_;  ///< the brief form, and the whole text it is of (a later plain setText has none)
};

}  // namespace tessera::ui
