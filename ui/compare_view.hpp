// Comparing two or more stored runs: the curves per metric (ComparePlot), the summary with deltas
// against a chosen baseline (CompareSummaryModel) and the config diff with "only differences"
// (ConfigDiffModel), x axis and smoothing as on the dashboard; exports the summary as CSV and the
// plots as PNG or PDF.
#pragma once

#include <memory>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QSlider>
#include <QSplitter>
#include <QTableView>
#include <QWidget>

#include "compare_plot.hpp"
#include "compare_summary_model.hpp"
#include "config_diff_model.hpp"
#include "elided_label.hpp"
#include "run_comparison.hpp"

namespace tessera::ui {

class CompareView : public QWidget {
  Q_OBJECT
 public:
  /// Reads from `history` (not owned; it must outlive the view).
  explicit CompareView(store::History* history, QWidget* parent = nullptr);
  ~CompareView() override;

  /// Compares these runs (ids, id prefixes or names); false with the reason in *error, keeping what
  /// was shown (fewer than two runs, an unknown or ambiguous reference, a run named twice).
  bool setRuns(const QStringList& references, QString* error);
  const RunComparison* comparison() const { return comparison_.get(); }

  void setBaseline(int run);
  void setXAxis(XAxis axis);
  /// Smoothing weight in [0, 0.99].
  void setSmoothing(double weight);
  void setOnlyDifferences(bool only);

  /// The summary as CSV (RunComparison::summaryCsv); false with *error when it cannot be written.
  bool exportSummaryCsv(const QString& path, QString* error) const;
  /// Every plot panel in one .png or .pdf file (by suffix); false with *error otherwise.
  bool exportPlots(const QString& path, QString* error);
  /// Sizes the table columns to their contents and the summary to its rows (after a resize); a hidden
  /// view (the Compare tab not shown yet) is fitted when it is shown.
  void fitTables();
  /// A run's name cut in its middle to `room` px, `mark` ("  (baseline)") kept whole after it: what the
  /// summary's first column draws.
  static QString fittedRunName(const QString& name, const QString& mark, const QFontMetrics& metrics, int room);
  /// The title as drawn at the view's width ("…" where the runs' names are longer).
  QString shownTitle() const { return title_->shownText(); }

  ComparePlot* plot() const { return plot_; }
  QTableView* summaryView() const { return summary_view_; }
  CompareSummaryModel* summaryModel() { return &summary_model_; }
  ConfigDiffModel* diffModel() { return &diff_model_; }

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  /// The tables' columns to their contents, a run's name at most a quarter of its table.
  void fitColumns();
  void exportCsvInteractively();
  void exportPlotsInteractively();
  void updateSmoothingLabel();

  store::History* history_;
  std::unique_ptr<RunComparison> comparison_;
  CompareSummaryModel summary_model_;
  ConfigDiffModel diff_model_;
  QComboBox* baseline_ = nullptr;
  QComboBox* x_axis_ = nullptr;
  QSlider* smoothing_ = nullptr;
  QLabel* smoothing_label_ = nullptr;
  QCheckBox* only_differences_ = nullptr;
  ElidedLabel* title_ = nullptr;
  QSplitter* splitter_ = nullptr;
  ComparePlot* plot_ = nullptr;
  QTableView* summary_view_ = nullptr;
  QTableView* diff_view_ = nullptr;
  bool fit_pending_ = false;  ///< new runs came while the view was hidden: fitted when shown
};

}  // namespace tessera::ui
