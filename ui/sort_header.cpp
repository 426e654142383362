// The table header that keeps the sort indicator's room for the sorted column (see sort_header.hpp).
#include "sort_header.hpp"

#include <QStyle>
#include <QTableView>

namespace tessera::ui {

SortHeader::SortHeader(QWidget* parent) : QHeaderView(Qt::Horizontal, parent) {
  connect(this, &QHeaderView::sortIndicatorChanged, this, [this](int logical_index, Qt::SortOrder) {
    if (logical_index < 0 || logical_index >= count()) return;
    const int needed = sectionSizeFromContents(logical_index).width();
    if (sectionSize(logical_index) >= needed) return;
    growing_ = true;
    resizeSection(logical_index, needed);
    growing_ = false;
  });
}

SortHeader* SortHeader::install(QTableView* table) {
  const QHeaderView* before = table->horizontalHeader();
  auto* header = new SortHeader(table);
  header->setStretchLastSection(before->stretchLastSection());
  header->setSectionsClickable(before->sectionsClickable());
  header->setHighlightSections(before->highlightSections());
  header->setDefaultAlignment(before->defaultAlignment());
  table->setHorizontalHeader(header);  // the table deletes the header it had
  return header;
}

QSize SortHeader::sectionSizeFromContents(int logical_index) const {
  QSize size = QHeaderView::sectionSizeFromContents(logical_index);
  // QHeaderView added size.height() + PM_HeaderMargin for the indicator to every section.
  if (isSortIndicatorShown() && logical_index != sortIndicatorSection() && orientation() == Qt::Horizontal)
    size.rwidth() -= size.height() + style()->pixelMetric(QStyle::PM_HeaderMargin, nullptr, this);
  return size;
}

}  // namespace tessera::ui
