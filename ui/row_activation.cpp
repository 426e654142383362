// Opening a table's row by a double-click or by Enter (see row_activation.hpp).
#include "row_activation.hpp"

#include <QAbstractItemView>
#include <QKeyEvent>

namespace tessera::ui {

namespace {

class EnterOpens : public QObject {
 public:
  EnterOpens(QAbstractItemView* view, std::function<void(const QModelIndex&, OpenedBy)> open)
      : QObject(view), view_(view), open_(std::move(open)) {}

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched == view_ && event->type() == QEvent::KeyPress) {
      const auto* key = static_cast<QKeyEvent*>(event);
      if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && key->modifiers() == Qt::NoModifier &&
          view_->currentIndex().isValid()) {
        open_(view_->currentIndex(), OpenedBy::enter);
        return true;
      }
    }
    return QObject::eventFilter(watched, event);
  }

 private:
  QAbstractItemView* view_;
  std::function<void(const QModelIndex&, OpenedBy)> open_;
};

}  // namespace

void onRowOpened(QAbstractItemView* view, std::function<void(const QModelIndex&, OpenedBy)> open) {
  auto* filter = new EnterOpens(view, open);
  view->installEventFilter(filter);
  QObject::connect(view, &QAbstractItemView::doubleClicked, filter, [open](const QModelIndex& index) {
    if (index.isValid()) open(index, OpenedBy::double_click);
  });
}

}  // namespace tessera::ui
