// The Search Layouts dialog: the space to search (filled with planner::default_search_space of the
// spec being edited), the search on a worker thread with progress and Stop, the fastest layouts that
// fit in a table, the spec's own place among them, and Apply, which puts the chosen layout into the
// designer as one undoable step. The model, global batch, precision and cluster stay as they are.
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include <QCheckBox>
#include <QDialog>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSortFilterProxyModel>
#include <QTableView>

#include "layout_search_model.hpp"
#include "plan_session.hpp"

namespace tessera::ui {

class LayoutSearchDialog : public QDialog {
  Q_OBJECT
 public:
  explicit LayoutSearchDialog(PlanSession* session, QWidget* parent = nullptr);
  ~LayoutSearchDialog() override;  ///< stops a running search and waits for it

  /// Starts a search of the space the fields give; false (and the reason under the fields) when a
  /// field does not read or the spec has a problem besides its layout.
  bool startSearch();
  bool isSearching() const { return worker_.joinable() && !finished_; }
  /// Applies the selected layout to the session (one undoable step) and accepts; false when none is.
  bool applySelected();

  /// The result in speed order; the table shows it through a sorting proxy (its rows map to this).
  LayoutSearchModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  /// The field of a choice: "tp", "cp", "pp", "vpp", "ep", "micro_batch_size" or "zero_stage".
  QLineEdit* listField(const QString& name) const { return lists_.at(name); }
  QCheckBox* recomputeBox(spec::Recompute recompute) const { return recompute_.at(recompute); }
  QCheckBox* scheduleBox(spec::Schedule schedule) const { return schedules_.at(schedule); }
  QSpinBox* memoryPercent() const { return memory_percent_; }
  QCheckBox* tesseraTrainOnly() const { return tessera_train_; }
  QString problemText() const { return problem_->text(); }
  QString summaryText() const { return summary_->text(); }
  QString givenText() const { return given_->text(); }
  QString progressText() const { return progress_->text(); }

 signals:
  /// A search ended (finished or stopped); model() holds its result.
  void searchFinished();

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  /// Columns as wide as their contents (content_widths_), and the table's width beyond that shared
  /// among them (the table's right third stayed empty at 1280 px); nothing once the user has dragged
  /// a column.
  void fitColumns();
  /// content_widths_ measured (at a result, and at another sort: the sorted column alone keeps the
  /// indicator's room), then fitColumns().
  void measureColumns();
  QWidget* space_ = nullptr;  ///< the box of the space's fields
  std::vector<int> content_widths_;  ///< each column's contents, measured once per result and sort
  bool fitting_ = false;     ///< the dialog, not the user, is setting column widths
  bool user_sized_ = false;  ///< the user dragged a column since the result was measured
  /// The space the fields give, or the first problem with them in *problem.
  std::optional<planner::SearchSpace> spaceFromFields(QString* problem) const;
  /// What keeps the spec from being searched (a problem besides its layout), or "".
  QString specProblem() const;
  void fillFields(const planner::SearchSpace& space);
  void showResult(planner::SearchResult result);
  void stopSearch();
  /// "1,234 of 4,824 layouts" on the progress bar.
  void showProgress(int64_t planned, int64_t candidates);

  PlanSession* session_;
  std::map<QString, QLineEdit*> lists_;
  std::map<spec::Recompute, QCheckBox*> recompute_;
  std::map<spec::Schedule, QCheckBox*> schedules_;
  QSpinBox* memory_percent_ = nullptr;
  QCheckBox* tessera_train_ = nullptr;
  QLabel* problem_ = nullptr;
  QPushButton* search_ = nullptr;
  QPushButton* stop_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* summary_ = nullptr;
  QTableView* table_ = nullptr;
  QLabel* given_ = nullptr;
  QPushButton* apply_ = nullptr;
  LayoutSearchModel* model_ = nullptr;
  QSortFilterProxyModel* sorted_ = nullptr;  ///< what the table shows
  std::thread worker_;
  std::atomic<bool> cancel_{false};
  bool finished_ = true;
};

}  // namespace tessera::ui
