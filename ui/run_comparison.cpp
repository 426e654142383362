// Reading a comparison of runs from the store: summaries, deltas, config rows, curves, CSV.
#include "run_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "format.hpp"
#include "store/csv.hpp"
#include "store/errors.hpp"

namespace tessera::ui {

RunComparison::RunComparison(store::History* history, const std::vector<std::string>& references) : history_(history) {
  if (references.size() < 2)
    throw std::invalid_argument("compare needs at least two runs, got " + std::to_string(references.size()));
  std::set<std::string> seen;
  for (const auto& reference : references) {
    const std::string id = history_->resolve(reference);
    if (!seen.insert(id).second) throw std::invalid_argument("run '" + reference + "' is named twice");
    runs_.push_back(history_->run(id));
    summaries_.push_back(history_->summary(id));
    series_.push_back(history_->series(id));
    try {
      tokens_per_step_.push_back(history_->tokens_per_step(id));
    } catch (const store::StoreError&) {
      tokens_per_step_.push_back(std::nullopt);  // a spec that does not parse has no tokens axis
    }
  }
}

const std::vector<CompareMetric>& RunComparison::metrics() {
  static const std::vector<CompareMetric> list = {
      {store::metric_name::loss, QObject::tr("Loss"), 1.0, QString()},
      {store::metric_name::grad_norm, QObject::tr("Grad norm"), 1.0, QString()},
      {store::metric_name::lr, QObject::tr("Learning rate"), 1.0, QString()},
      {store::metric_name::tokens_per_s, QObject::tr("Tokens/s"), 1.0, QString()},
      {"model_tflops", modelFlopsTitle(false), 1.0, QString()},
      {store::metric_name::mfu, QObject::tr("MFU"), 100.0, QStringLiteral("%")},
      // Rank 0's, as every curve but peak memory: stage 0, whose bubble differs from the other stages'.
      {store::metric_name::bubble, QObject::tr("Pipeline bubble (rank 0: stage 0)"), 100.0, QStringLiteral("%")},
      {store::metric_name::peak_memory_bytes, QObject::tr("Peak memory (highest rank)"), 1.0 / kGiB, QStringLiteral("GiB")},
  };
  return list;
}

const std::vector<SummaryField>& RunComparison::summaryFields() {
  static const std::vector<SummaryField> list = {SummaryField::last_step,         SummaryField::final_loss,
                                                 SummaryField::min_loss,          SummaryField::mean_mfu,
                                                 SummaryField::mean_tokens_per_s, SummaryField::step_time_s,
                                                 SummaryField::mean_bubble,       SummaryField::peak_memory_bytes};
  return list;
}

QString RunComparison::fieldTitle(SummaryField field) {
  switch (field) {
    case SummaryField::last_step: return QObject::tr("Last step");
    case SummaryField::final_loss: return QObject::tr("Final loss");
    case SummaryField::min_loss: return QObject::tr("Min loss");
    case SummaryField::mean_mfu: return QObject::tr("Mean MFU");
    case SummaryField::mean_tokens_per_s: return QObject::tr("Mean tokens/s");
    case SummaryField::step_time_s: return QObject::tr("Step time");
    case SummaryField::mean_bubble: return QObject::tr("Mean bubble (all ranks)");
    case SummaryField::peak_memory_bytes: return QObject::tr("Peak memory");
  }
  return {};
}

QString RunComparison::fieldKey(SummaryField field) {
  switch (field) {
    case SummaryField::last_step: return QStringLiteral("last_step");
    case SummaryField::final_loss: return QStringLiteral("final_loss");
    case SummaryField::min_loss: return QStringLiteral("min_loss");
    case SummaryField::mean_mfu: return QStringLiteral("mean_mfu");
    case SummaryField::mean_tokens_per_s: return QStringLiteral("mean_tokens_per_s");
    case SummaryField::step_time_s: return QStringLiteral("step_time_s");
    case SummaryField::mean_bubble: return QStringLiteral("mean_bubble");
    case SummaryField::peak_memory_bytes: return QStringLiteral("peak_memory_bytes");
  }
  return {};
}

void RunComparison::setBaseline(int index) {
  if (index < 0 || index >= runCount())
    throw std::out_of_range("baseline " + std::to_string(index) + " is not one of the " + std::to_string(runCount()) + " runs");
  baseline_ = index;
}

std::optional<double> RunComparison::value(int run, SummaryField field) const {
  const store::RunSummary& s = summaries_.at(run);
  auto fromInt = [](const std::optional<int64_t>& v) { return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt; };
  switch (field) {
    case SummaryField::last_step: return fromInt(s.last_step);
    case SummaryField::final_loss: return s.final_loss;
    case SummaryField::min_loss: return s.min_loss;
    case SummaryField::mean_mfu: return s.mean_mfu;
    case SummaryField::mean_tokens_per_s: return s.mean_tokens_per_s;
    case SummaryField::step_time_s:
      // The runs' own step times (the tokens of a step over the mean tokens/s read ~7 % fast: the
      // mean of a rate is not the rate of the mean) when every run compared recorded them; else every
      // run's from its tokens/s, so that the runs are compared by one measure.
      if (std::all_of(summaries_.begin(), summaries_.end(), [](const store::RunSummary& r) { return r.mean_step_time_s.has_value(); }))
        return s.mean_step_time_s;
      if (!s.mean_tokens_per_s || !tokens_per_step_[run] || *s.mean_tokens_per_s <= 0) return std::nullopt;
      return static_cast<double>(*tokens_per_step_[run]) / *s.mean_tokens_per_s;
    case SummaryField::mean_bubble: return s.mean_bubble;
    case SummaryField::peak_memory_bytes: return fromInt(s.peak_memory_bytes);
  }
  return std::nullopt;
}

std::optional<double> RunComparison::delta(int run, SummaryField field) const {
  const auto a = value(run, field), b = value(baseline_, field);
  if (!a || !b) return std::nullopt;
  return *a - *b;
}

std::optional<double> RunComparison::relativeDelta(int run, SummaryField field) const {
  const auto d = delta(run, field), b = value(baseline_, field);
  if (!d || !b || *b == 0.0) return std::nullopt;
  return *d / std::fabs(*b);
}

QString RunComparison::formatValue(SummaryField field, double value) {
  if (std::isnan(value)) return QStringLiteral("nan");
  switch (field) {
    case SummaryField::last_step: return QString::number(static_cast<qlonglong>(std::llround(value)));
    case SummaryField::final_loss:
    case SummaryField::min_loss: return QString::number(value, 'f', 4);
    case SummaryField::mean_mfu:
    case SummaryField::mean_bubble: return formatPercent(value, 2);
    case SummaryField::mean_tokens_per_s: return formatCount(value);
    case SummaryField::step_time_s: return formatDuration(value);
    case SummaryField::peak_memory_bytes:
      if (std::fabs(value) < kGiB) return QStringLiteral("%1 MiB").arg(value / (1024.0 * 1024.0), 0, 'f', 1);
      return formatGiB(static_cast<int64_t>(value), 2);
  }
  return {};
}

QString RunComparison::formatInColumn(SummaryField field, double value) const {
  if (field != SummaryField::mean_tokens_per_s && field != SummaryField::step_time_s) return formatValue(field, value);
  double largest = 0;
  for (int run = 0; run < runCount(); ++run)
    if (const auto v = this->value(run, field); v && std::isfinite(*v)) largest = std::max(largest, std::fabs(*v));
  return field == SummaryField::mean_tokens_per_s ? formatCountLike(value, largest) : formatSecondsLike(value, largest);
}

bool RunComparison::samePeak(int a, int b) const { return store::same_mfu_peak(summaries_.at(a), summaries_.at(b)); }

QString RunComparison::formatDelta(int run, SummaryField field) const {
  if (run == baseline_) return QObject::tr("baseline");
  const auto d = delta(run, field);
  if (!d) return QStringLiteral("–");
  if (std::isnan(*d)) return QStringLiteral("nan");
  const bool points = field == SummaryField::mean_mfu || field == SummaryField::mean_bubble;
  auto magnitude = [&](double v) { return points ? QStringLiteral("%1 pt").arg(v * 100, 0, 'f', 2) : formatInColumn(field, v); };
  // A difference below the precision shown is none: "±0.0000", not "−0.0000 (−0.0 %)".
  const QString shown = magnitude(std::fabs(*d));
  const bool none = shown == magnitude(0.0);
  QString text = (none ? QStringLiteral("±") : *d > 0 ? QStringLiteral("+") : QStringLiteral("−")) + shown;
  if (field == SummaryField::mean_mfu && !samePeak(run, baseline_)) text += QObject::tr(" (another peak)");
  if (const auto r = relativeDelta(run, field); r && std::isfinite(*r) && !points && !none)
    text += QStringLiteral(" (%1%2 %)").arg(*r > 0 ? QStringLiteral("+") : (*r < 0 ? QStringLiteral("−") : QString())).arg(std::fabs(*r) * 100, 0, 'f', 1);
  return text;
}

std::vector<store::ConfigDiffRow> RunComparison::configRows(bool only_differences) const {
  std::vector<std::string> ids;
  for (const auto& run : runs_) ids.push_back(run.id);
  return only_differences ? history_->config_diff(ids) : history_->config_fields(ids);
}

QString RunComparison::summaryCsv() const {
  std::ostringstream out;
  std::vector<std::string> header = {"run_id", "name", "status", "baseline"};
  for (SummaryField field : summaryFields()) {
    header.push_back(fieldKey(field).toStdString());
    header.push_back(fieldKey(field).toStdString() + "_delta");
  }
  store::write_csv_row(out, header);
  auto number = [](const std::optional<double>& v) { return v ? store::format_number(*v) : std::string(); };
  for (int i = 0; i < runCount(); ++i) {
    std::vector<std::string> row = {runs_[i].id, runs_[i].name, std::string(store::to_string(runs_[i].status)),
                                    i == baseline_ ? "yes" : "no"};
    for (SummaryField field : summaryFields()) {
      row.push_back(number(value(i, field)));
      row.push_back(number(delta(i, field)));
    }
    store::write_csv_row(out, row);
  }
  return QString::fromStdString(out.str());
}

CompareCurve RunComparison::curve(int run, const CompareMetric& metric, XAxis axis, int64_t buckets) const {
  CompareCurve curve;
  std::vector<int64_t> ranks;
  for (const auto& s : series_.at(run))
    if (s.metric == metric.name && s.points > 0) ranks.push_back(s.rank);
  if (ranks.empty()) return curve;
  if (axis == XAxis::tokens && !tokens_per_step_[run]) {
    curve.problem = QObject::tr("no tokens axis: the run's spec does not parse");
    return curve;
  }
  const store::XAxis store_axis =
      axis == XAxis::step ? store::XAxis::step : (axis == XAxis::tokens ? store::XAxis::tokens : store::XAxis::wall_time);
  const std::string& id = runs_[run].id;
  std::vector<store::Bucket> chosen;
  if (metric.name == std::string(store::metric_name::peak_memory_bytes)) {
    double highest = -std::numeric_limits<double>::infinity();
    for (int64_t rank : ranks) {
      auto b = history_->downsample(id, metric.name, rank, buckets, store_axis);
      double peak = -std::numeric_limits<double>::infinity();
      for (const auto& bucket : b)
        if (!std::isnan(bucket.max)) peak = std::max(peak, bucket.max);
      if (curve.rank < 0 || peak > highest) {
        highest = peak;
        curve.rank = rank;
        chosen = std::move(b);
      }
    }
  } else {
    curve.rank = ranks.front();  // series() lists ranks in order
    chosen = history_->downsample(id, metric.name, curve.rank, buckets, store_axis);
  }
  const double origin = axis == XAxis::wall_time_s && !chosen.empty() ? chosen.front().x_start : 0.0;
  for (const auto& b : chosen) {
    curve.x.push_back(b.last_x - origin);
    curve.last.push_back(b.last * metric.scale);
    curve.min.push_back(b.min * metric.scale);
    curve.max.push_back(b.max * metric.scale);
  }
  return curve;
}

}  // namespace tessera::ui
