// The run-history window: the run list (HistoryView) and the comparison (CompareView) as two tabs
// over one History file. Compare in the list fills the compare tab; Open is forwarded as
// openRunRequested for the dashboard.
#pragma once

#include <memory>

#include <QTabWidget>
#include <QWidget>

#include "store/history.hpp"

namespace tessera::ui {

class CompareView;
class HistoryView;

class HistoryWindow : public QWidget {
  Q_OBJECT
 public:
  /// Opens the history file at `path` (it must exist); nullptr with the reason in *error.
  static std::unique_ptr<HistoryWindow> open(const QString& path, QString* error, QWidget* parent = nullptr);

  store::History* history() const { return history_.get(); }
  HistoryView* historyView() const { return history_view_; }
  CompareView* compareView() const { return compare_view_; }
  /// Compares the runs and brings the compare tab to the front; false with *error.
  bool compare(const QStringList& references, QString* error);
  void showHistory();
  /// The window as shown at `size`, with the tab in front (for --screenshot and the docs).
  QImage screenshot(const QSize& size);

 signals:
  /// The user asked to open this run (its dashboard, replayed from the store).
  void openRunRequested(const QString& run_id);

 private:
  HistoryWindow(std::unique_ptr<store::History> history, QWidget* parent);

  std::unique_ptr<store::History> history_;
  QTabWidget* tabs_ = nullptr;
  HistoryView* history_view_ = nullptr;
  CompareView* compare_view_ = nullptr;
};

}  // namespace tessera::ui
