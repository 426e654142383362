// Reading the run history into rows, refreshing in place, and writing tag and note edits back.
#include "run_list_model.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <QColor>
#include <QDateTime>
#include <QFont>

#include "store/errors.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

bool isFinished(store::RunStatus status) {
  using S = store::RunStatus;
  return status == S::done || status == S::failed || status == S::stopped || status == S::lost;
}

QString qs(const std::string& text) { return QString::fromStdString(text); }

/// An integer field of a JSON section, or `fallback` when absent or not an integer.
int64_t intField(const nlohmann::ordered_json& spec, const char* section, const char* field, int64_t fallback) {
  const auto s = spec.find(section);
  if (s == spec.end() || !s->is_object()) return fallback;
  const auto f = s->find(field);
  return f != s->end() && f->is_number_integer() ? f->get<int64_t>() : fallback;
}

/// `text` on one line: control characters (a newline, an escape sequence's ESC) as spaces, as
/// tessera-cli prints them; the raw text stays in the tooltip and the editor.
QString oneLine(QString text) {
  for (QChar& c : text)
    if (c.category() == QChar::Other_Control) c = QLatin1Char(' ');
  return text;
}

QStringList tagList(const store::RunRecord& run) {
  QStringList tags;
  for (const auto& tag : run.tags) tags << qs(tag);
  return tags;
}

}  // namespace

QStringList RunListModel::splitTags(const QString& text) {
  QStringList tags;
  for (const QString& part : text.split(QLatin1Char(','))) {
    const QString tag = part.trimmed();
    if (!tag.isEmpty() && !tags.contains(tag)) tags << tag;
  }
  return tags;
}

QString RunListModel::mergedTags(const QString& loaded, const QString& typed, const QString& current) {
  const QStringList was = splitTags(loaded), wanted = splitTags(typed);
  QStringList tags;
  for (const QString& tag : splitTags(current))
    if (wanted.contains(tag) || !was.contains(tag)) tags << tag;  // kept, or added meanwhile by another
  for (const QString& tag : wanted)
    if (!tags.contains(tag) && !was.contains(tag)) tags << tag;  // added here
  return tags.join(QStringLiteral(", "));
}

RunListModel::RunListModel(store::History* history, QObject* parent) : QAbstractTableModel(parent), history_(history) {
  struct stat st {};
  if (::stat(history_->path().c_str(), &st) == 0) file_id_ = {st.st_dev, st.st_ino};
  refresh();
}

bool RunListModel::openedFileIsGone() const {
  struct stat st {};
  return ::stat(history_->path().c_str(), &st) != 0 || std::pair{st.st_dev, st.st_ino} != file_id_;
}

bool RunListModel::historyFileGone() {
  if (!openedFileIsGone()) return false;
  fail(tr("the run history %1 was deleted or replaced since it was opened: nothing more is read from it or saved to it "
          "(Runs ▸ Run History opens the file now there)")
           .arg(qs(history_->path())));
  return true;
}

QString RunListModel::layoutText(const nlohmann::ordered_json& stored_spec) {
  const auto effective = store::effective_spec(stored_spec);
  if (!effective.contains("parallel")) return QStringLiteral("?");
  const int64_t tp = intField(effective, "parallel", "tp", 1), pp = intField(effective, "parallel", "pp", 1);
  const int64_t cp = intField(effective, "parallel", "cp", 1), ep = intField(effective, "parallel", "ep", 1);
  const int64_t vpp = intField(effective, "parallel", "vpp", 1);
  int64_t dp = intField(effective, "parallel", "dp", 0);
  if (dp <= 0) {
    // Derived from the cluster as the spec library does: world / (tp·pp·cp).
    const int64_t world = intField(effective, "cluster", "nodes", 0) * intField(effective, "cluster", "gpus_per_node", 0);
    dp = tp * pp * cp > 0 ? world / (tp * pp * cp) : 0;
  }
  QString text = QStringLiteral("TP%1·PP%2·DP%3").arg(tp).arg(pp).arg(dp);
  if (cp > 1) text += QStringLiteral("·CP%1").arg(cp);
  if (ep > 1) text += QStringLiteral("·EP%1").arg(ep);
  if (vpp > 1) text += QStringLiteral("·VPP%1").arg(vpp);
  return text;
}

QString RunListModel::modelText(const nlohmann::ordered_json& stored_spec) {
  const auto effective = store::effective_spec(stored_spec);
  const auto model = effective.find("model");
  if (model == effective.end() || !model->is_object()) return QStringLiteral("?");
  const auto preset = model->find("preset");
  if (preset != model->end() && preset->is_string() && !preset->get<std::string>().empty()) return qs(preset->get<std::string>());
  return QStringLiteral("custom %1L·%2H")
      .arg(intField(effective, "model", "num_layers", 0))
      .arg(intField(effective, "model", "hidden_size", 0));
}

QString RunListModel::durationText(int64_t ms) {
  const int64_t s = std::max<int64_t>(ms, 0) / 1000;
  if (s >= 3600) return QStringLiteral("%1h %2m %3s").arg(s / 3600).arg(s / 60 % 60, 2, 10, QLatin1Char('0')).arg(s % 60, 2, 10, QLatin1Char('0'));
  if (s >= 60) return QStringLiteral("%1m %2s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1 s").arg(s);
}

std::optional<int64_t> RunListModel::durationMs(const store::RunRecord& run) const {
  if (!run.started_ms) return std::nullopt;
  if (run.ended_ms) return *run.ended_ms - *run.started_ms;
  if (isFinished(run.status)) return std::nullopt;
  return QDateTime::currentMSecsSinceEpoch() - *run.started_ms;
}

RunListModel::Row RunListModel::makeRow(store::RunRecord run) const {
  Row row;
  row.summary = history_->summary(run.id);
  row.layout = layoutText(run.spec);
  row.model = modelText(run.spec);
  row.run = std::move(run);
  return row;
}

void RunListModel::fail(const QString& message) {
  last_error_ = message;
  emit errorOccurred(message);
}

bool RunListModel::refresh() {
  if (historyFileGone()) return false;
  std::vector<store::RunRecord> runs;
  try {
    runs = history_->runs();
  } catch (const std::exception& e) {
    fail(tr("cannot read the run history %1: %2").arg(qs(history_->path()), QString::fromUtf8(e.what())));
    return false;
  }
  std::set<std::string> fresh;
  for (const auto& run : runs) fresh.insert(run.id);
  for (int i = static_cast<int>(rows_.size()) - 1; i >= 0; --i) {
    if (fresh.count(rows_[i].run.id)) continue;
    beginRemoveRows({}, i, i);
    rows_.erase(rows_.begin() + i);
    endRemoveRows();
  }
  std::set<std::string> present;
  for (const auto& row : rows_) present.insert(row.run.id);
  try {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (i < rows_.size() && rows_[i].run.id == runs[i].id) {
        Row& row = rows_[i];
        const bool changed = !(row.run == runs[i]);
        if (!changed && isFinished(row.run.status)) continue;
        // A finished run's summary does not change; a running one's grows.
        if (changed || !isFinished(runs[i].status)) row.summary = history_->summary(runs[i].id);
        if (changed) {
          row.layout = layoutText(runs[i].spec);
          row.model = modelText(runs[i].spec);
          row.run = runs[i];
        }
        emit dataChanged(index(static_cast<int>(i), 0), index(static_cast<int>(i), ColumnCount - 1));
      } else if (!present.count(runs[i].id)) {
        beginInsertRows({}, static_cast<int>(i), static_cast<int>(i));
        rows_.insert(rows_.begin() + static_cast<std::ptrdiff_t>(i), makeRow(runs[i]));
        endInsertRows();
      } else {
        // The order changed (a run's creation time was edited by an import): rebuild.
        beginResetModel();
        std::map<std::string, std::map<int, std::pair<QString, QString>>> unsaved;
        for (auto& row : rows_) unsaved[row.run.id] = std::move(row.unsaved);
        rows_.clear();
        for (const auto& run : runs) {
          rows_.push_back(makeRow(run));
          rows_.back().unsaved = std::move(unsaved[run.id]);
        }
        endResetModel();
        break;
      }
    }
  } catch (const std::exception& e) {
    fail(tr("cannot read the run history %1: %2").arg(qs(history_->path()), QString::fromUtf8(e.what())));
    return false;
  }
  last_error_.clear();
  return true;
}

bool RunListModel::deleteRun(const QString& run_id, bool even_if_active) {
  if (historyFileGone()) return false;
  const int row = rowOfRun(run_id);
  try {
    history_->delete_run(run_id.toStdString(), even_if_active);
  } catch (const std::exception& e) {
    fail(tr("cannot delete run %1: %2").arg(row >= 0 ? qs(rows_[row].run.name) : run_id, QString::fromUtf8(e.what())));
    return false;
  }
  if (row >= 0) {
    beginRemoveRows({}, row, row);
    rows_.erase(rows_.begin() + row);
    endRemoveRows();
  }
  last_error_.clear();
  return true;
}

QString RunListModel::runId(int row) const {
  return row >= 0 && row < rowCount() ? qs(rows_[row].run.id) : QString();
}

int RunListModel::rowOfRun(const QString& run_id) const {
  const std::string id = run_id.toStdString();
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].run.id == id) return static_cast<int>(i);
  return -1;
}

QStringList RunListModel::allTags() const {
  std::set<QString> tags;
  for (const auto& row : rows_)
    for (const auto& tag : row.run.tags) tags.insert(qs(tag));
  return QStringList(tags.begin(), tags.end());
}

int RunListModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int RunListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& row = rows_[index.row()];
  const store::RunRecord& run = row.run;
  const auto unsaved = row.unsaved.find(index.column());
  const std::optional<int64_t> started = run.started_ms ? run.started_ms : std::optional<int64_t>(run.created_ms);
  switch (role) {
    case RunIdRole: return qs(run.id);
    case TagsRole: return tagList(run);
    case StatusRole: return qs(std::string(store::to_string(run.status)));
    case UnsavedRole: return unsaved != row.unsaved.end() ? unsaved->second.second : QString();
    case NotesRole: return qs(run.notes);
    case SearchRole:
      return QStringList{qs(run.name), qs(run.id), row.layout, row.model, tagList(run).join(QLatin1Char(' ')), qs(run.notes)}
          .join(QLatin1Char('\n'))
          .toLower();
    case Qt::ToolTipRole:
      if (unsaved != row.unsaved.end()) return tr("Not saved: %1").arg(unsaved->second.second);
      if (index.column() == Status && !run.exit_reason.empty()) return qs(run.exit_reason);
      if (index.column() == Name) return qs(run.name) + QLatin1Char('\n') + qs(run.id);
      if (index.column() == Notes && !run.notes.empty()) return qs(run.notes);
      return {};
    case Qt::ForegroundRole:
      if (unsaved != row.unsaved.end()) return colors::warning();
      if (index.column() == Status && (run.status == store::RunStatus::failed || run.status == store::RunStatus::lost))
        return colors::warning();
      return {};
    case Qt::TextAlignmentRole:
      if (index.column() == FinalLoss || index.column() == MeanMfu || index.column() == Duration)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    default: break;
  }
  if (role == SortRole) {
    switch (index.column()) {
      case Started: return static_cast<qlonglong>(*started);
      case Duration: return static_cast<qlonglong>(durationMs(run).value_or(-1));
      case FinalLoss: return row.summary.final_loss ? *row.summary.final_loss : std::numeric_limits<double>::infinity();
      case MeanMfu: return row.summary.mean_mfu ? *row.summary.mean_mfu : -1.0;
      default: return data(index, Qt::DisplayRole).toString().toLower();
    }
  }
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  if (unsaved != row.unsaved.end()) return unsaved->second.first;
  switch (index.column()) {
    case Name: return role == Qt::EditRole ? qs(run.name) : oneLine(qs(run.name));
    case Status: return qs(std::string(store::to_string(run.status)));
    case Started: return QDateTime::fromMSecsSinceEpoch(*started, Qt::UTC).toString(QStringLiteral("yyyy-MM-dd HH:mm"));
    case Duration: {
      const auto ms = durationMs(run);
      return ms ? durationText(*ms) : QStringLiteral("–");
    }
    case Layout: return row.layout;
    case Model: return row.model;
    case FinalLoss:
      if (!row.summary.final_loss) return QStringLiteral("–");
      return std::isnan(*row.summary.final_loss) ? QStringLiteral("nan") : QString::number(*row.summary.final_loss, 'f', 4);
    case MeanMfu:
      if (!row.summary.mean_mfu || std::isnan(*row.summary.mean_mfu)) return QStringLiteral("–");
      return QStringLiteral("%1 %").arg(*row.summary.mean_mfu * 100, 0, 'f', 1);
    case Tags: return oneLine(tagList(run).join(QStringLiteral(", ")));
    case Notes: return role == Qt::EditRole ? qs(run.notes) : qs(run.notes).section(QLatin1Char('\n'), 0, 0);
    default: return {};
  }
}

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == MeanMfu)
    return tr("Model FLOPs against the runtime's peak of each run (on CPU a GEMM it timed at start-up, not the "
              "cluster preset's peak the designer predicts with); the run's dashboard names it");
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case Name: return tr("Name");
    case Status: return tr("Status");
    case Started: return tr("Started (UTC)");
    case Duration: return tr("Duration");
    case Layout: return tr("Layout");
    case Model: return tr("Model");
    case FinalLoss: return tr("Final loss");
    case MeanMfu: return tr("Mean MFU");
    case Tags: return tr("Tags");
    case Notes: return tr("Notes");
    default: return {};
  }
}

Qt::ItemFlags RunListModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.isValid() && (index.column() == Tags || index.column() == Notes)) f |= Qt::ItemIsEditable;
  return f;
}

bool RunListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return false;
  if (index.column() != Tags && index.column() != Notes) return false;
  Row& row = rows_[index.row()];
  bool saved = false;
  if (historyFileGone()) saved = false;
  else if (index.column() == Tags) saved = saveTags(row, value.toString());
  else saved = saveNotes(row, value.toString());
  if (saved) row.unsaved.erase(index.column());
  else row.unsaved[index.column()] = {value.toString(), last_error_};
  emit dataChanged(index.siblingAtColumn(0), index.siblingAtColumn(ColumnCount - 1));
  return saved;
}

bool RunListModel::saveNotesOver(int row_index, const QString& loaded, const QString& typed) {
  if (row_index < 0 || row_index >= static_cast<int>(rows_.size())) return false;
  Row& row = rows_[static_cast<size_t>(row_index)];
  const QModelIndex cell = index(row_index, Notes);
  if (historyFileGone()) return setData(cell, typed);  // refused there, the typed text kept
  QString held;
  try {
    row.run = history_->run(row.run.id);
    held = qs(row.run.notes);
  } catch (const std::exception&) {
    return setData(cell, typed);  // refused there with the store's reason
  }
  if (held == loaded || held == typed) return setData(cell, typed);
  fail(tr("the notes of run %1 were changed elsewhere while you typed (now: \"%2\"); yours are kept in red: edit them again to "
          "save them over those")
           .arg(qs(row.run.name), held.left(80)));
  row.unsaved[Notes] = {typed, last_error_};
  emit dataChanged(cell.siblingAtColumn(0), cell.siblingAtColumn(ColumnCount - 1));
  return false;
}

bool RunListModel::saveTags(Row& row, const QString& text) {
  const QStringList wanted = splitTags(text), had = tagList(row.run);
  try {
    for (const QString& tag : had)
      if (!wanted.contains(tag)) history_->remove_tag(row.run.id, tag.toStdString());
    for (const QString& tag : wanted)
      if (!had.contains(tag)) history_->add_tag(row.run.id, tag.toStdString());
    row.run = history_->run(row.run.id);
  } catch (const std::exception& e) {
    fail(tr("cannot save the tags of run %1: %2").arg(qs(row.run.name), QString::fromUtf8(e.what())));
    try {
      row.run.tags = history_->run(row.run.id).tags;  // what the store holds now (a partial edit)
    } catch (const std::exception&) {
    }
    return false;
  }
  last_error_.clear();
  return true;
}

bool RunListModel::saveNotes(Row& row, const QString& text) {
  try {
    history_->set_notes(row.run.id, text.toStdString());
    row.run = history_->run(row.run.id);
  } catch (const std::exception& e) {
    fail(tr("cannot save the notes of run %1: %2").arg(qs(row.run.name), QString::fromUtf8(e.what())));
    return false;
  }
  last_error_.clear();
  return true;
}

}  // namespace tessera::ui
