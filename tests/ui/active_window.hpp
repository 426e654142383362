// Shows a widget as the active window and waits until it is (keyboard tests need the focus).
#pragma once

#include <QApplication>
#include <QTest>
#include <QWidget>

namespace tessera::test {

inline bool shownActive(QWidget& window) {
  window.show();
  QApplication::setActiveWindow(&window);
  return QTest::qWaitForWindowActive(&window);
}

}  // namespace tessera::test
