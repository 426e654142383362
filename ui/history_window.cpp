// Opening the history file and wiring the list to the comparison.
#include "history_window.hpp"

#include <QAction>
#include <QCoreApplication>
#include <QFileInfo>
#include <QMessageBox>
#include <QVBoxLayout>

#include "compare_view.hpp"
#include "history_view.hpp"
#include "shortcuts.hpp"

namespace tessera::ui {

std::unique_ptr<HistoryWindow> HistoryWindow::open(const QString& path, QString* error, QWidget* parent) {
  if (!QFileInfo::exists(path)) {
    if (error) *error = QObject::tr("no run history at %1 (runs launched with tessera-cli or the workbench create it)").arg(path);
    return nullptr;
  }
  try {
    auto history = std::make_unique<store::History>(path.toStdString());
    return std::unique_ptr<HistoryWindow>(new HistoryWindow(std::move(history), parent));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return nullptr;
  }
}

HistoryWindow::HistoryWindow(std::unique_ptr<store::History> history, QWidget* parent)
    : QWidget(parent, Qt::Window), history_(std::move(history)) {
  setWindowTitle(tr("Run history — %1").arg(QString::fromStdString(history_->path())));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  tabs_ = new QTabWidget(this);
  history_view_ = new HistoryView(history_.get(), tabs_);
  compare_view_ = new CompareView(history_.get(), tabs_);
  tabs_->addTab(history_view_, tr("Runs"));
  tabs_->addTab(compare_view_, tr("Compare"));
  layout->addWidget(tabs_);
  connect(history_view_, &HistoryView::openRunRequested, this, &HistoryWindow::openRunRequested);
  connect(history_view_, &HistoryView::compareRequested, this, [this](const QStringList& ids) {
    QString error;
    if (!compare(ids, &error)) QMessageBox::warning(this, tr("Compare"), error);
  });
  resize(1400, 900);
  // Ctrl+W (and the platform's Close keys) closes the window, as it does a browser's tab: only the
  // mouse could.
  auto* close_window = new QAction(tr("Close"), this);
  close_window->setShortcuts(keysWith(QKeySequence::Close, QKeySequence(tr("Ctrl+W"))));
  connect(close_window, &QAction::triggered, this, &QWidget::close);
  addAction(close_window);
}

bool HistoryWindow::compare(const QStringList& references, QString* error) {
  if (!compare_view_->setRuns(references, error)) return false;
  tabs_->setCurrentWidget(compare_view_);
  return true;
}

QImage HistoryWindow::screenshot(const QSize& size) {
  resize(size);
  show();
  QCoreApplication::processEvents();
  compare_view_->fitTables();
  history_view_->fitColumns();
  QCoreApplication::processEvents();
  return grab().toImage();
}

void HistoryWindow::showHistory() { tabs_->setCurrentWidget(history_view_); }

}  // namespace tessera::ui
