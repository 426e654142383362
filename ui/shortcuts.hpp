// Key bindings that hold on every platform: the platform's own for a standard action, plus the one
// the user guide names where the platform lacks it (X11 without a desktop theme has no Save As or
// Close keys).
#pragma once

#include <QKeySequence>
#include <QList>

namespace tessera::ui {

/// The platform's keys for `action`, with `named` added where they do not include it.
inline QList<QKeySequence> keysWith(QKeySequence::StandardKey action, const QKeySequence& named) {
  QList<QKeySequence> keys = QKeySequence::keyBindings(action);
  if (!keys.contains(named)) keys << named;
  return keys;
}

}  // namespace tessera::ui
