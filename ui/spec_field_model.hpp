// Tree model of the run spec for the designer: sections (Model, Parallelism, Training, Cluster) with
// their fields; columns field, value, note (a derived value, or the planner's message when invalid or
// named by another field's message).
// Edits go through PlanSession::setField, so each is one undoable step.
#pragma once

#include <QAbstractItemModel>
#include <QStringList>

#include <nlohmann/json.hpp>

namespace tessera::ui {

class PlanSession;

class SpecFieldModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column { FieldColumn, ValueColumn, NoteColumn, ColumnCount };
  enum Role {
    PathRole = Qt::UserRole + 1,  ///< "parallel.tp"
    KindRole,                     ///< FieldKind
    ChoicesRole,                  ///< QStringList for Choice fields
    ErrorRole,                    ///< the planner's message for this field, "" when valid
    RelatedErrorRole,             ///< other fields' messages that name this one (PlanSession::relatedErrorFor)
  };
  enum FieldKind { Integer, Number, Text, Boolean, Choice };

  explicit SpecFieldModel(PlanSession* session, QObject* parent = nullptr);

  /// Index of the value cell of a dotted field, invalid when unknown.
  QModelIndex indexOfField(const QString& path, int column = ValueColumn) const;
  /// A field's own rule without the "PATH " or "PATH=VALUE " it starts with (VALUE a word or a quoted
  /// string), which the field's row says: what the note column shows; the rule as it is otherwise.
  static QString withoutFieldPrefix(const QString& rule, const QString& path);
  /// Message of the last rejected edit (a value set_field refused).
  QString lastRejection() const { return rejection_; }

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void editRejected(const QString& message);

 private:
  void refresh();
  QString path(const QModelIndex& index) const;
  const nlohmann::ordered_json& value(const QModelIndex& index) const;
  FieldKind kind(const QString& path, const nlohmann::ordered_json& value) const;
  QStringList choices(const QString& path) const;
  QString note(const QString& path) const;

  PlanSession* session_;
  nlohmann::ordered_json document_;  ///< to_json of the session's spec
  QString rejection_;
};

}  // namespace tessera::ui
