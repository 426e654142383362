// The run history as a table: filter by text, status and tag; tags and notes edited in place
// (RunListModel writes them through History, errors shown beneath); delete with a confirmation;
// refreshed from the store every few seconds and on demand. Compare and Open emit signals that the
// window wires to the compare view and the dashboard.
#pragma once

#include <functional>

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QTimer>
#include <QWidget>

#include "run_filter_proxy.hpp"
#include "run_list_model.hpp"

namespace tessera::ui {

class HistoryView : public QWidget {
  Q_OBJECT
 public:
  /// Reads from `history` (not owned; it must outlive the view).
  explicit HistoryView(store::History* history, QWidget* parent = nullptr);

  RunListModel* model() { return &model_; }
  RunFilterProxy* proxy() { return &proxy_; }
  QTableView* table() const { return table_; }
  /// The error line under the table ("" when the last operation succeeded).
  QString errorText() const { return error_->isVisible() ? error_->text() : QString(); }

  /// Full ids of the selected runs, in table order.
  QStringList selectedRunIds() const;
  void selectRuns(const QStringList& run_ids);
  /// Columns as wide as their contents, the free-text ones (name, layout, model, tags, notes) at most
  /// about 48 characters: a long run name ends in "…" (whole in its tooltip) instead of pushing every
  /// other column out of sight.
  void fitColumns();
  /// How often the store is re-read (0: never, only on refresh()).
  void setPollInterval(int interval_ms);
  /// Asks before deleting; the default is a QMessageBox. Tests replace it.
  void setConfirmation(std::function<bool(const QString& question)> confirm) { confirm_ = std::move(confirm); }

 public slots:
  void refresh();
  /// Deletes the selected runs after confirmation; false when cancelled or a delete failed.
  bool deleteSelected();

 signals:
  /// Open this finished run's dashboard, replayed from the store.
  void openRunRequested(const QString& run_id);
  /// Compare these runs (two or more).
  void compareRequested(const QStringList& run_ids);

 private:
  void showError(const QString& message);
  void updateButtons();
  void updateTagChoices();
  void fitTagsColumn();

  RunListModel model_;
  RunFilterProxy proxy_;
  QLineEdit* search_ = nullptr;
  QComboBox* status_ = nullptr;
  QComboBox* tag_ = nullptr;
  QTableView* table_ = nullptr;
  QLabel* error_ = nullptr;
  QPushButton* open_ = nullptr;
  QPushButton* compare_ = nullptr;
  QPushButton* delete_ = nullptr;
  QTimer poll_;
  std::function<bool(const QString&)> confirm_;
};

}  // namespace tessera::ui
