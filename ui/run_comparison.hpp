// What comparing runs shows, read from backend/store: the runs, their summaries (History::summary)
// with deltas against a chosen baseline, the config diff (History::config_diff / config_fields),
// the curves per metric downsampled by the store (History::downsample), and the summary as CSV.
// Widgets draw it (CompareView); tests check it without a window.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <QObject>
#include <QString>

#include "smoothing.hpp"
#include "store/history.hpp"

namespace tessera::ui {

/// A metric the compare view plots: the store's name, a title, and how values are shown.
struct CompareMetric {
  const char* name;  ///< store metric name
  QString title;
  double scale;  ///< plotted value = stored value × scale (100 for fractions shown in %)
  QString unit;  ///< after scaling ("%", "GiB", "")
};

/// A column of the summary table.
enum class SummaryField { last_step, final_loss, min_loss, mean_mfu, mean_tokens_per_s, step_time_s, mean_bubble, peak_memory_bytes };

/// One run's curve of one metric: the last point of each bucket, with each bucket's min and max.
struct CompareCurve {
  int64_t rank = -1;  ///< the rank whose series is drawn (-1: the run has no such series)
  std::vector<double> x, last, min, max;
  QString problem;  ///< why there is no curve on this axis ("" when drawn or simply absent)
};

class RunComparison {
 public:
  /// Resolves every reference (id, id prefix or name) and reads the runs. Throws
  /// std::invalid_argument for fewer than two runs or a run named twice, store::StoreError for an
  /// unknown or ambiguous reference.
  RunComparison(store::History* history, const std::vector<std::string>& references);

  static const std::vector<CompareMetric>& metrics();
  static const std::vector<SummaryField>& summaryFields();
  static QString fieldTitle(SummaryField field);
  /// The CSV column name ("final_loss", "step_time_s").
  static QString fieldKey(SummaryField field);

  int runCount() const { return static_cast<int>(runs_.size()); }
  const store::RunRecord& run(int index) const { return runs_[index]; }
  const store::RunSummary& summary(int index) const { return summaries_[index]; }

  int baseline() const { return baseline_; }
  /// Throws std::out_of_range for an index that is not a run.
  void setBaseline(int index);

  /// The field's value for a run (nullopt when the run lacks it). The step time is the tokens per
  /// step (History::tokens_per_step) over the mean tokens/s.
  std::optional<double> value(int run, SummaryField field) const;
  /// value(run) − value(baseline); nullopt when either is absent.
  std::optional<double> delta(int run, SummaryField field) const;
  /// delta ÷ |baseline value|; nullopt when absent or the baseline is 0.
  std::optional<double> relativeDelta(int run, SummaryField field) const;
  /// "3.2104", "41.3 %", "52.1 k", "1.23 s", "12.4 GiB".
  static QString formatValue(SummaryField field, double value);
  /// formatValue, tokens/s and step times in the unit of the field's largest value over the runs,
  /// so that a column reads alike ("7.16 k" beside "16.1 k"; "980 ms" above "1.02 s" read as "0.98 s").
  QString formatInColumn(SummaryField field, double value) const;
  /// "+0.0123 (+1.2 %)", for a table cell; an MFU delta against a run whose MFU is a share of another
  /// peak (CPU ranks time their own at start-up) says "(another peak)".
  QString formatDelta(int run, SummaryField field) const;
  /// Whether the MFU of runs a and b are shares of the same peak (within 1 %, or either unknown).
  bool samePeak(int a, int b) const;

  /// Spec fields by dotted path, one value per run; only those that differ, or all of them.
  std::vector<store::ConfigDiffRow> configRows(bool only_differences) const;

  /// The summary with deltas against the baseline, one line per run:
  /// run_id,name,status,baseline,<field>,<field>_delta,… (RFC 4180; "" absent, nan/inf as text).
  QString summaryCsv() const;

  /// The curve of one metric for one run on `axis`, in at most `buckets` buckets. For peak memory
  /// it is the rank with the highest peak; otherwise the lowest rank that reports the metric. On the
  /// wall-time axis x is seconds since the series' first point.
  CompareCurve curve(int run, const CompareMetric& metric, XAxis axis, int64_t buckets) const;

 private:
  store::History* history_;
  std::vector<store::RunRecord> runs_;
  std::vector<store::RunSummary> summaries_;
  std::vector<std::optional<int64_t>> tokens_per_step_;
  std::vector<std::vector<store::SeriesInfo>> series_;
  int baseline_ = 0;
};

}  // namespace tessera::ui
