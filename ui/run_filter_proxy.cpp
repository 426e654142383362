// The run list's filter by text, status and tag.
#include "run_filter_proxy.hpp"

#include "run_list_model.hpp"

namespace tessera::ui {

RunFilterProxy::RunFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(RunListModel::SortRole);
  setDynamicSortFilter(true);
}

void RunFilterProxy::setText(const QString& text) {
  text_ = text;
  words_ = text.toLower().split(QLatin1Char(' '), Qt::SkipEmptyParts);
  invalidateRowsFilter();
}

void RunFilterProxy::setStatus(const QString& status) {
  status_ = status;
  invalidateRowsFilter();
}

void RunFilterProxy::setTag(const QString& tag) {
  tag_ = tag;
  invalidateRowsFilter();
}

bool RunFilterProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  const QModelIndex index = sourceModel()->index(source_row, 0, source_parent);
  if (!status_.isEmpty() && index.data(RunListModel::StatusRole).toString() != status_) return false;
  if (!tag_.isEmpty() && !index.data(RunListModel::TagsRole).toStringList().contains(tag_)) return false;
  if (words_.isEmpty()) return true;
  const QString haystack = index.data(RunListModel::SearchRole).toString();
  for (const QString& word : words_)
    if (!haystack.contains(word)) return false;
  return true;
}

}  // namespace tessera::ui
