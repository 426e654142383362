// A style whose item views activate an item on a single click, as KDE Plasma's default does: for the
// tests that a click selects a row and opens nothing.
#pragma once

#include <QProxyStyle>

namespace tessera::test {

class SingleClickStyle : public QProxyStyle {
 public:
  int styleHint(StyleHint hint, const QStyleOption* option, const QWidget* widget, QStyleHintReturn* returned) const override {
    if (hint == SH_ItemView_ActivateItemOnSingleClick) return 1;
    return QProxyStyle::styleHint(hint, option, widget, returned);
  }
};

}  // namespace tessera::test
