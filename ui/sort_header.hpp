// A table header that keeps room for the sort indicator in the sorted column only. Qt 6's QHeaderView
// adds the indicator's width to every section's size from contents, so a column of one-digit values
// headed "ZeRO" took 53 px, and at 800 px the layout search's peak memory and the history's tags went
// behind a horizontal scroll bar. A column that becomes the sorted one grows to its label and the
// indicator where it was narrower.
#pragma once

#include <QHeaderView>

class QTableView;

namespace tessera::ui {

class SortHeader : public QHeaderView {
  Q_OBJECT
 public:
  explicit SortHeader(QWidget* parent = nullptr);

  /// A SortHeader put in place of `table`'s horizontal header (its settings carried over).
  static SortHeader* install(QTableView* table);

  /// True while the header widens the newly sorted column for its indicator: not the user's resize.
  bool growingForIndicator() const { return growing_; }

 protected:
  QSize sectionSizeFromContents(int logical_index) const override;

 private:
  bool growing_ = false;
};

}  // namespace tessera::ui
