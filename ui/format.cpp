// Number formatting shared by the workbench's views.
#include "format.hpp"

#include <QLocale>
#include <QRegularExpression>
#include <QStringList>

#include <algorithm>
#include <clocale>
#include <cmath>
#include <limits>
#include <utility>

#include "planner/memory.hpp"

namespace tessera::ui {

QString formatGiB(int64_t bytes, int decimals) {
  return QStringLiteral("%1 GiB").arg(static_cast<double>(bytes) / kGiB, 0, 'f', decimals);
}

QString formatBytes(int64_t bytes, int decimals) {
  if (bytes >= planner::kMaxMemoryTermBytes) return QStringLiteral("over 1 EiB");
  if (std::fabs(static_cast<double>(bytes)) >= kGiB) return formatGiB(bytes, decimals);
  return QStringLiteral("%1 MiB").arg(static_cast<double>(bytes) / kMiB, 0, 'f', decimals);
}

QString formatCount(double count) { return formatCountLike(count, count); }

QString formatCountLike(double count, double largest) {
  const double a = std::max(std::fabs(count), std::fabs(largest));
  const auto [unit, suffix] = a >= 1e12 ? std::pair{1e12, "T"} : a >= 1e9 ? std::pair{1e9, "B"} : a >= 1e6 ? std::pair{1e6, "M"}
                            : a >= 1e4 ? std::pair{1e3, "k"} : std::pair{1.0, ""};
  if (unit == 1.0) return QString::number(count, 'f', 0);
  const double v = count / unit;
  if (std::fabs(v) < 0.01 && count != 0) return formatCountLike(count, count);  // "0.00 B" would say nothing
  return QStringLiteral("%1 %2").arg(v, 0, 'f', std::fabs(v) >= 10 ? 1 : 2).arg(QLatin1String(suffix));
}

QString formatSecondsLike(double seconds, double longest_s) {
  const double longest = std::max(std::fabs(seconds), std::fabs(longest_s));
  if (longest >= 600) return formatDuration(seconds);
  const double step = longest >= 100 ? 0.1 : longest >= 1 ? 0.01 : longest >= 0.1 ? 0.001 : 0.0001;
  if (seconds != 0 && std::fabs(seconds) < step / 2) return formatSeconds(seconds);  // "0.0 s" would say nothing
  return formatTick(seconds, step, longest);
}

QString formatSeconds(double seconds) {
  const double a = std::fabs(seconds);
  if (a == 0.0) return QStringLiteral("0 s");
  if (a >= 1.0) return QStringLiteral("%1 s").arg(seconds, 0, 'f', a >= 100 ? 1 : 2);
  if (a >= 1e-3) return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', a >= 0.1 ? 0 : 1);
  return QStringLiteral("%1 µs").arg(seconds * 1e6, 0, 'f', 0);
}

int niceStride(int at_least) {
  for (int decade = 1; decade <= std::numeric_limits<int>::max() / 50; decade *= 10)
    for (const int step : {1, 2, 4, 5})
      if (step * decade >= at_least) return step * decade;
  return std::numeric_limits<int>::max();
}

QString formatTick(double seconds, double step_s, double largest_s) {
  const double largest = std::fabs(largest_s);
  const auto [unit, name] = largest >= 1.0    ? std::pair{1.0, QStringLiteral("s")}
                            : largest >= 1e-3 ? std::pair{1e-3, QStringLiteral("ms")}
                                              : std::pair{1e-6, QStringLiteral("µs")};
  // As many decimals as a step of 0.5 or 0.02 of the unit needs; a step of whole units needs none.
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step_s / unit) - 1e-9)), 0, 9);
  const double value = seconds / unit;
  // A tick at zero reached by adding steps may be -1e-17: "-0.0 s".
  return QStringLiteral("%1 %2").arg(std::fabs(value) < 0.5 * step_s / unit ? 0.0 : value, 0, 'f', decimals).arg(name);
}

QString formatDuration(double seconds) {
  // A CPU cluster's steps of a large model last hours: "28.3 h", not "101964.5 s".
  const double a = std::fabs(seconds);
  if (a >= 7200) return QStringLiteral("%1 h").arg(seconds / 3600, 0, 'f', 1);
  if (a >= 600) return QStringLiteral("%1 min").arg(seconds / 60, 0, 'f', 1);
  return formatSeconds(seconds);
}

QString formatDevices(int64_t count, bool cpu) {
  if (cpu) return count == 1 ? QStringLiteral("1 CPU rank") : QStringLiteral("%1 CPU ranks").arg(count);
  return count == 1 ? QStringLiteral("1 GPU") : QStringLiteral("%1 GPUs").arg(count);
}

QString formatNodes(int64_t count) {
  return count == 1 ? QStringLiteral("1 node") : QStringLiteral("%1 nodes").arg(count);
}

QString formatPercent(double fraction, int decimals) {
  return QStringLiteral("%1 %").arg(fraction * 100.0, 0, 'f', decimals);
}

QString modelFlopsTitle(bool gflops) {
  return gflops ? QObject::tr("Model GFLOP/s per rank") : QObject::tr("Model TFLOP/s per rank");
}

QString formatFlopRate(double tflops) {
  return !showsInGflops(tflops) ? QStringLiteral("%1 TFLOP/s").arg(tflops, 0, 'f', 0)
                       : QStringLiteral("%1 GFLOP/s").arg(tflops * 1e3, 0, 'f', 1);
}

QString formatRanks(const std::vector<int64_t>& ranks) {
  QStringList parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t end = i + 1;
    while (end < ranks.size() && ranks[end] == ranks[end - 1] + 1) ++end;
    if (end - i >= 3) {
      parts << QStringLiteral("%1–%2").arg(ranks[i]).arg(ranks[end - 1]);
    } else {
      for (size_t j = i; j < end; ++j) parts << QString::number(ranks[j]);
    }
    i = end;
  }
  return (ranks.size() == 1 ? QStringLiteral("rank ") : QStringLiteral("ranks ")) + parts.join(QStringLiteral(", "));
}

QString keepUnitsWithNumbers(QString text) {
  // The units format.hpp writes: SI count suffixes, bytes, FLOP rates, percent and durations.
  static const QRegularExpression number_space_unit(
      QStringLiteral(R"((?<=\d) (?=(?:[kMBT]|[KMGTE]iB|B|[GTP]FLOP/s|%|µs|ms|s|min|h)(?![\w/])))"));
  return text.replace(number_space_unit, QStringLiteral("\u00A0"));
}

void useOneNumberConvention() {
  QLocale::setDefault(QLocale(QLocale::English, QLocale::UnitedStates));
  std::setlocale(LC_NUMERIC, "C");
}

bool parseTypedNumber(const QString& text, double* value) {
  QLocale c = QLocale::c();
  c.setNumberOptions(QLocale::RejectGroupSeparator);
  bool ok = false;
  const double parsed = c.toDouble(text.trimmed(), &ok);
  if (!ok || !std::isfinite(parsed)) return false;
  *value = parsed;
  return true;
}

}  // namespace tessera::ui
