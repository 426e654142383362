// Laying out the run list, its filters and actions.
#include "history_view.hpp"

#include <algorithm>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QTextDocument>
#include <QStyledItemDelegate>
#include <QVBoxLayout>

#include "row_activation.hpp"
#include "sort_header.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

/// Tags in a line, as the default delegate edits them, but an editor the user has typed into keeps
/// its text: the list's refresh (every 3 s, a running run's row changed in place) reloaded the open
/// editor from the history and wiped what was being typed.
class TagsDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    auto* line = qobject_cast<QLineEdit*>(editor);
    if (line && line->isModified()) return;
    QStyledItemDelegate::setEditorData(editor, index);
    // What the history held (not a refused edit's text the cell shows in red): a tag removed in that
    // edit and typed without again is removed now.
    if (line) line->setProperty(kLoaded, index.data(RunListModel::TagsRole).toStringList().join(QStringLiteral(", ")));
  }
  /// Saves what the user added and removed, over the tags the history holds now: a tag another
  /// process added while the user typed is kept.
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
    const auto* line = qobject_cast<QLineEdit*>(editor);
    if (!line || !line->property(kLoaded).isValid()) return QStyledItemDelegate::setModelData(editor, model, index);
    const QString held = index.data(RunListModel::TagsRole).toStringList().join(QStringLiteral(", "));
    model->setData(index, RunListModel::mergedTags(line->property(kLoaded).toString(), line->text(), held));
  }

 private:
  static constexpr const char* kLoaded = "tessera_loaded_tags";
};

/// Notes keep their line breaks: edited in a multi-line box (Enter adds a line; leaving the box or
/// Tab saves, Esc cancels). Typed text is kept through a refresh, as the tags' is, and is not saved
/// over notes another process wrote meanwhile (RunListModel::saveNotesOver).
class NotesDelegate : public QStyledItemDelegate {
 public:
  NotesDelegate(QTableView* table, RunListModel* model, QSortFilterProxyModel* proxy)
      : QStyledItemDelegate(table), model_(model), proxy_(proxy) {}
  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const override {
    auto* editor = new QPlainTextEdit(parent);
    editor->setTabChangesFocus(true);
    return editor;
  }
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    auto* notes = static_cast<QPlainTextEdit*>(editor);
    if (notes->document()->isModified()) return;
    notes->setPlainText(index.data(Qt::EditRole).toString());
    notes->document()->setModified(false);
    notes->setProperty(kLoaded, index.data(RunListModel::NotesRole));  // what the history held
  }
  void setModelData(QWidget* editor, QAbstractItemModel*, const QModelIndex& index) const override {
    const auto* notes = static_cast<QPlainTextEdit*>(editor);
    model_->saveNotesOver(proxy_->mapToSource(index).row(), notes->property(kLoaded).toString(), notes->toPlainText());
  }
  void updateEditorGeometry(QWidget* editor, const QStyleOptionViewItem& option, const QModelIndex&) const override {
    QRect rect = option.rect;
    rect.setHeight(std::max(rect.height() * 4, 96));
    rect.setWidth(std::max(rect.width(), 320));
    editor->setGeometry(rect);
  }

 private:
  static constexpr const char* kLoaded = "tessera_loaded_notes";
  RunListModel* model_;
  QSortFilterProxyModel* proxy_;
};

}  // namespace

HistoryView::HistoryView(store::History* history, QWidget* parent) : QWidget(parent), model_(history) {
  proxy_.setSourceModel(&model_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);

  auto* bar = new QHBoxLayout;
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Filter by name, id, layout, model, tag or notes"));
  search_->setClearButtonEnabled(true);
  bar->addWidget(search_, 1);
  bar->addWidget(new QLabel(tr("Status:"), this));
  status_ = new QComboBox(this);
  status_->addItem(tr("any"), QString());
  for (const char* s : {"planned", "starting", "running", "done", "failed", "stopped", "lost"}) status_->addItem(QString::fromLatin1(s), QString::fromLatin1(s));
  bar->addWidget(status_);
  bar->addWidget(new QLabel(tr("Tag:"), this));
  tag_ = new QComboBox(this);
  tag_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  bar->addWidget(tag_);
  auto* refresh = new QPushButton(tr("Refresh"), this);
  refresh->setShortcut(QKeySequence::Refresh);
  bar->addWidget(refresh);
  bar->addSpacing(12);
  open_ = new QPushButton(tr("&Open"), this);
  open_->setToolTip(tr("Show the run's dashboard, replayed from the history"));
  compare_ = new QPushButton(tr("Co&mpare"), this);
  compare_->setToolTip(tr("Compare the selected runs (two or more)"));
  delete_ = new QPushButton(tr("&Delete…"), this);
  bar->addWidget(open_);
  bar->addWidget(compare_);
  bar->addWidget(delete_);
  layout->addLayout(bar);

  table_ = new QTableView(this);
  table_->setModel(&proxy_);
  SortHeader::install(table_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(RunListModel::Started, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed | QAbstractItemView::SelectedClicked);
  table_->verticalHeader()->hide();
  table_->setTabKeyNavigation(false);  // Tab leaves the table for the buttons (it walked the cells for ever)
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);
  table_->setItemDelegateForColumn(RunListModel::Notes, new NotesDelegate(table_, &model_, &proxy_));
  table_->setItemDelegateForColumn(RunListModel::Tags, new TagsDelegate(table_));
  layout->addWidget(table_, 1);

  error_ = new QLabel(this);
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QPalette pal = error_->palette();
  pal.setColor(QPalette::WindowText, colors::warning());
  error_->setPalette(pal);
  error_->hide();
  layout->addWidget(error_);

  connect(search_, &QLineEdit::textChanged, &proxy_, &RunFilterProxy::setText);
  connect(status_, &QComboBox::currentIndexChanged, this, [this] { proxy_.setStatus(status_->currentData().toString()); });
  connect(tag_, &QComboBox::currentIndexChanged, this, [this] { proxy_.setTag(tag_->currentData().toString()); });
  connect(refresh, &QPushButton::clicked, this, &HistoryView::refresh);
  connect(&model_, &RunListModel::errorOccurred, this, &HistoryView::showError);
  connect(&model_, &QAbstractItemModel::dataChanged, this, [this] {
    if (model_.lastError().isEmpty()) error_->hide();
  });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &HistoryView::updateButtons);
  // Tags arrive after the first sizing (an edit, a refresh): the column grows to show them.
  connect(&model_, &QAbstractItemModel::dataChanged, this, &HistoryView::fitTagsColumn);
  connect(&model_, &QAbstractItemModel::rowsInserted, this, &HistoryView::fitTagsColumn);
  connect(&model_, &QAbstractItemModel::modelReset, this, &HistoryView::fitTagsColumn);
  connect(open_, &QPushButton::clicked, this, [this] {
    const QStringList ids = selectedRunIds();
    if (ids.size() == 1) emit openRunRequested(ids.front());
  });
  connect(compare_, &QPushButton::clicked, this, [this] {
    const QStringList ids = selectedRunIds();
    if (ids.size() >= 2) emit compareRequested(ids);
  });
  connect(delete_, &QPushButton::clicked, this, &HistoryView::deleteSelected);
  // A double-click on a run opens it, and so does Enter (Enter did nothing); a double-click on tags or
  // notes edits them, as F2 does.
  onRowOpened(table_, [this](const QModelIndex& index, OpenedBy how) {
    if (how == OpenedBy::double_click && (index.flags() & Qt::ItemIsEditable)) return;
    emit openRunRequested(index.data(RunListModel::RunIdRole).toString());
  });
  connect(&poll_, &QTimer::timeout, this, &HistoryView::refresh);
  confirm_ = [this](const QString& question) {
    QMessageBox box(QMessageBox::Warning, tr("Delete runs"), question, QMessageBox::Cancel, this);
    QAbstractButton* remove = box.addButton(tr("Delete"), QMessageBox::DestructiveRole);
    box.setDefaultButton(QMessageBox::Cancel);
    box.exec();
    return box.clickedButton() == remove;
  };
  setPollInterval(3000);
  updateTagChoices();
  updateButtons();
  fitColumns();
}

void HistoryView::fitColumns() {
  // Notes, the last column, is left to stretch over what the others leave (given its contents' width
  // once the table was shown, as a screenshot does, it ended there and left the table's right empty).
  for (int column = 0; column < RunListModel::Notes; ++column) table_->resizeColumnToContents(column);
  const int widest = fontMetrics().averageCharWidth() * 48;
  for (const int column : {RunListModel::Name, RunListModel::Layout, RunListModel::Model, RunListModel::Tags})
    table_->setColumnWidth(column, std::min(table_->columnWidth(column), widest));
}

void HistoryView::setPollInterval(int interval_ms) {
  poll_.stop();
  if (interval_ms > 0) poll_.start(interval_ms);
}

void HistoryView::refresh() {
  // Rows change in place; an open editor is reloaded, unless the user has typed into it (the
  // delegates keep that text).
  if (model_.refresh()) error_->hide();
  updateTagChoices();
  updateButtons();
}

void HistoryView::fitTagsColumn() {
  // Wide enough for the longest tag list, within reason (about 48 characters); never narrower than
  // the user made it.
  const int before = table_->columnWidth(RunListModel::Tags);
  table_->resizeColumnToContents(RunListModel::Tags);
  const int wanted = std::min(table_->columnWidth(RunListModel::Tags), fontMetrics().averageCharWidth() * 48);
  table_->setColumnWidth(RunListModel::Tags, std::max(before, wanted));
}

void HistoryView::showError(const QString& message) {
  error_->setText(message);
  error_->show();
}

QStringList HistoryView::selectedRunIds() const {
  QList<QModelIndex> rows = table_->selectionModel()->selectedRows();
  std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  QStringList ids;
  for (const QModelIndex& index : rows) ids << index.data(RunListModel::RunIdRole).toString();
  return ids;
}

void HistoryView::selectRuns(const QStringList& run_ids) {
  QItemSelection selection;
  for (const QString& id : run_ids) {
    const int source_row = model_.rowOfRun(id);
    if (source_row < 0) continue;
    const QModelIndex index = proxy_.mapFromSource(model_.index(source_row, 0));
    if (index.isValid()) selection.select(index, index.siblingAtColumn(RunListModel::ColumnCount - 1));
  }
  table_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

bool HistoryView::deleteSelected() {
  const QStringList ids = selectedRunIds();
  if (ids.isEmpty()) return false;
  QStringList names;
  int active = 0;  // still marked starting or running
  for (const QString& id : ids) {
    const QModelIndex index = model_.index(model_.rowOfRun(id), RunListModel::Name);
    names << index.data().toString();
    const QString status = index.data(RunListModel::StatusRole).toString();
    active += status == QLatin1String("starting") || status == QLatin1String("running");
  }
  QString question = ids.size() == 1
                         ? tr("Delete run \"%1\" and everything recorded for it (metrics, timeline, logs)? This cannot be undone.").arg(names.front())
                         : tr("Delete these %1 runs and everything recorded for them? This cannot be undone.\n\n%2").arg(ids.size()).arg(names.join(QLatin1Char('\n')));
  // The user is told before deleting a run still marked running (the store refuses it otherwise):
  // a follower (a workbench's dashboard, `launch --follow`) stops its ranks when the run it records
  // is deleted; a run nobody follows any more (its workbench went away) runs on.
  if (active > 0)
    question += tr("\n\n%n of them still marked running: where a workbench or `tessera-cli launch --follow` follows it, "
                   "its ranks are asked to stop at their next record; a run nobody follows goes on running.",
                   "", active);
  if (!confirm_ || !confirm_(question)) return false;
  bool all = true;
  for (const QString& id : ids) all = model_.deleteRun(id, /*even_if_active=*/true) && all;
  if (all) error_->hide();
  updateTagChoices();
  updateButtons();
  return all;
}

void HistoryView::updateButtons() {
  const int n = static_cast<int>(table_->selectionModel()->selectedRows().size());
  open_->setEnabled(n == 1);
  compare_->setEnabled(n >= 2);
  delete_->setEnabled(n >= 1);
}

void HistoryView::updateTagChoices() {
  const QString current = tag_->currentData().toString();
  const QStringList tags = model_.allTags();
  QStringList shown;
  for (int i = 1; i < tag_->count(); ++i) shown << tag_->itemData(i).toString();
  if (shown == tags && tag_->count() > 0) return;
  QSignalBlocker block(tag_);
  tag_->clear();
  tag_->addItem(tr("any"), QString());
  for (const QString& tag : tags) tag_->addItem(tag, tag);
  const int index = tag_->findData(current);
  tag_->setCurrentIndex(index >= 0 ? index : 0);
  if (index < 0 && !current.isEmpty()) proxy_.setTag(QString());
}

}  // namespace tessera::ui
