// Opening a table's row by a double-click or by Enter, never by a single click. QAbstractItemView's
// `activated` is a single click where the style says so (KDE Plasma's default): a click to select a
// run, or a Ctrl+click to add one to a comparison, opened it, and a click in Search Layouts applied a
// layout and closed the dialog.
#pragma once

#include <functional>

#include <QModelIndex>

class QAbstractItemView;

namespace tessera::ui {

enum class OpenedBy { enter, double_click };

/// Calls `open` with the row's index on a double-click on it, or with the current index on Enter or
/// Return while the view has the focus (the key is taken: a dialog's default button is not pressed).
void onRowOpened(QAbstractItemView* view, std::function<void(const QModelIndex&, OpenedBy)> open);

}  // namespace tessera::ui
