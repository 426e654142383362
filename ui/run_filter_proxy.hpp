// Filters the run list by free text (name, id, layout, model, tags, notes; every word must match),
// by status and by tag, and sorts numeric columns by value (RunListModel::SortRole).
#pragma once

#include <QSortFilterProxyModel>

namespace tessera::ui {

class RunFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit RunFilterProxy(QObject* parent = nullptr);

  /// Words separated by spaces, each found (any case) in the run's name, id, layout, model, tags or notes.
  void setText(const QString& text);
  /// "done", "running", ...; "" = any status.
  void setStatus(const QString& status);
  /// A tag the run must have; "" = any.
  void setTag(const QString& tag);
  QString text() const { return text_; }
  QString status() const { return status_; }
  QString tag() const { return tag_; }

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  QString text_, status_, tag_;
  QStringList words_;
};

}  // namespace tessera::ui
