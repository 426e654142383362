// Table model of the run history: one row per stored run (name, status, start, duration, layout,
// model, final loss, mean MFU, tags, notes), newest first, read from backend/store's History. Tags and
// notes are edited in place and written through History; an edit the store refuses keeps the typed
// value in its cell (marked, with the error) so nothing is lost. refresh() re-reads the store and
// updates rows in place, so selections survive.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <QAbstractTableModel>
#include <QStringList>

#include "store/history.hpp"

namespace tessera::ui {

class RunListModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Status, Started, Duration, Layout, Model, FinalLoss, MeanMfu, Tags, Notes, ColumnCount };
  static constexpr int RunIdRole = Qt::UserRole + 1;     ///< QString: the run's full id
  static constexpr int SortRole = Qt::UserRole + 2;      ///< numbers for numeric columns, text otherwise
  static constexpr int TagsRole = Qt::UserRole + 3;      ///< QStringList of the run's tags
  static constexpr int StatusRole = Qt::UserRole + 4;    ///< QString: "done", "running", ...
  static constexpr int SearchRole = Qt::UserRole + 5;    ///< lower-case text the filter searches
  static constexpr int UnsavedRole = Qt::UserRole + 6;   ///< QString: why an edit in this cell was not saved
  static constexpr int NotesRole = Qt::UserRole + 7;     ///< QString: the run's notes as the history held them at the last read

  /// Reads from `history` (not owned; it must outlive the model).
  explicit RunListModel(store::History* history, QObject* parent = nullptr);

  /// Re-reads the runs: removed runs leave, new ones arrive, changed ones update in place. Returns
  /// false (with errorOccurred) when the store cannot be read; the rows stay as they were.
  bool refresh();
  /// Deletes a run and its data from the store, then its row. False with errorOccurred on failure.
  bool deleteRun(const QString& run_id, bool even_if_active = false);

  QString runId(int row) const;
  int rowOfRun(const QString& run_id) const;
  /// Every tag of every run, sorted (for the tag filter).
  QStringList allTags() const;
  /// The message of the last failed edit, refresh or delete ("" after a success).
  QString lastError() const { return last_error_; }
  /// Saves `typed` as the notes of the run at `row` unless the history's notes are no longer `loaded`
  /// (what the editor showed): another process changed them while the user typed, and saving would
  /// overwrite that unseen. Then nothing is saved, the cell keeps `typed` in red with the notes now
  /// held named, and an edit from there (loading them) saves over them.
  bool saveNotesOver(int row, const QString& loaded, const QString& typed);
  /// Whether the history's file is no longer the one opened (deleted, or another file of that name).
  bool openedFileIsGone() const;
  /// "a, b,, a " as tags: a, b (trimmed, without empty ones and repeats).
  static QStringList splitTags(const QString& text);
  /// The tags an edit leaves: `current` (what the history holds now) less those the user removed
  /// from `loaded` (what the editor showed) and with those typed that it did not have. A tag another
  /// process added while the user typed was removed by the edit.
  static QString mergedTags(const QString& loaded, const QString& typed, const QString& current);

  /// "TP8·PP4·DP2" (with ·CP, ·EP, ·VPP when above 1) from a stored spec; "?" when it has no layout.
  static QString layoutText(const nlohmann::ordered_json& stored_spec);
  /// The model preset, else "custom" with layers and hidden size.
  static QString modelText(const nlohmann::ordered_json& stored_spec);
  /// "45 s", "2m 05s", "1h 02m 03s".
  static QString durationText(int64_t ms);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  /// Tags: comma-separated list (the difference is added/removed); notes: the new text.
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

 signals:
  /// A store operation failed; the message names the run and what went wrong.
  void errorOccurred(const QString& message);

 private:
  struct Row {
    store::RunRecord run;
    store::RunSummary summary;
    QString layout, model;
    std::map<int, std::pair<QString, QString>> unsaved;  ///< column -> (typed value, error)
  };
  Row makeRow(store::RunRecord run) const;
  bool saveTags(Row& row, const QString& text);
  bool saveNotes(Row& row, const QString& text);
  void fail(const QString& message);
  std::optional<int64_t> durationMs(const store::RunRecord& run) const;
  /// Fails (and true) where the history's file is no longer the one opened: deleted, or replaced by
  /// another file of that name. SQLite went on reading and writing the deleted file, so edits looked
  /// saved and were lost.
  bool historyFileGone();

  store::History* history_;
  std::pair<dev_t, ino_t> file_id_{};  ///< the history file's device and inode when opened
  std::vector<Row> rows_;
  QString last_error_;
};

}  // namespace tessera::ui
