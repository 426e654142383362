// Number formatting shared by the workbench's views: bytes in GiB or MiB, counts with SI suffixes,
// durations, counts of devices and nodes in the singular or plural, lists of ranks.
#pragma once

#include <cstdint>
#include <vector>

#include <QString>

namespace tessera::ui {

inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * kMiB;

/// "61.2 GiB".
QString formatGiB(int64_t bytes, int decimals = 1);
/// GiB from 1 GiB up, MiB below (tiny CPU models would read "0.0 GiB").
QString formatBytes(int64_t bytes, int decimals = 1);
/// "70.6 B", "8.03 B", "1.05 M", "12.3 k", "512": three figures from 10 up, as tessera-cli prints them.
QString formatCount(double count);
/// "9.87 s", "312 ms", "45 µs", "101964.5 s": seconds at any length (the timeline's
/// titles and events; its ruler uses formatTick).
QString formatSeconds(double seconds);
/// A ruler's tick at `seconds`, ticks `step_s` apart, the ruler reaching `largest_s`: every tick in
/// one unit, the largest's ("0.0 s", "0.5 s", "1.0 s"; "0 ms", "200 ms"; "20.301 s"), with the decimals
/// the step needs. formatSeconds mixed them ("0 s", "500 ms", "1.00 s").
QString formatTick(double seconds, double step_s, double largest_s);
/// The smallest of 1, 2, 4, 5, 10, 20, 40, 50, 100, … (1, 2, 4 or 5 times a power of ten) that is at
/// least `at_least`: the stride of labels too dense to show each one.
int niceStride(int at_least);
/// `seconds` in the unit and decimals formatSeconds gives `longest_s`, formatDuration's from ten
/// minutes: a column of durations that reads alike ("98.3 s" above "100.1 s", not "98.25 s"); in
/// formatSeconds' own where that unit would read 0.
QString formatSecondsLike(double seconds, double longest_s);
/// `count` in the unit formatCount gives `largest` ("7.16 k" beside "16.1 k", not "7161"); in its own
/// where that unit would read 0.00.
QString formatCountLike(double count, double largest);
/// formatSeconds below 10 minutes, then "15.0 min", from 2 h "28.3 h": a step time or a wait.
QString formatDuration(double seconds);
/// "8 GPUs", "1 GPU"; "8 CPU ranks" when the cluster's device preset is "cpu".
QString formatDevices(int64_t count, bool cpu);
/// "1 node", "4 nodes".
QString formatNodes(int64_t count);
/// "989 TFLOP/s", "42.1 GFLOP/s" (below 1 TFLOP/s: CPU ranks).
QString formatFlopRate(double tflops);
/// Whether a FLOP rate of this many TFLOP/s reads in GFLOP/s (below 1 TFLOP/s: CPU ranks), as
/// formatFlopRate, the summary strip, the dashboard and the comparison give it.
inline bool showsInGflops(double tflops) { return tflops < 1.0; }
/// "Model TFLOP/s per rank", or "Model GFLOP/s per rank" where the rate shows in GFLOP/s.
QString modelFlopsTitle(bool gflops);
/// "41.6 %".
QString formatPercent(double fraction, int decimals = 1);
/// "rank 3", "ranks 0, 1", "ranks 0–3, 8" (ascending ranks; three or more in a row as a range).
QString formatRanks(const std::vector<int64_t>& ranks);
/// One convention for numbers in the workbench whatever the system's locale, that of tessera-cli and
/// of the files it writes: a point for decimals and commas between thousands ("4,824 layouts",
/// "0.001"). Call once after the QApplication is made and before any widget: QLocale's default
/// becomes en-US (under de_DE the plots' ticks read "0,003" beside "18.7 %", and the layout search
/// "place 237 of 1.002"), and the C library's LC_NUMERIC "C" again (Qt set it from the environment,
/// where strtod stops at a point).
void useOneNumberConvention();
/// A number typed into a field, in that convention: "0.001", "3e-4", " 2.5 ". Group separators
/// ("1,000") and a decimal comma ("0,001") are refused, as are inf and nan.
bool parseTypedNumber(const QString& text, double* value);
/// `text` with a no-break space between each number and the unit after it ("4.72 M", "79.6 GiB",
/// "989 TFLOP/s", "18.3 %"), for text that wraps: a line ending in "4.72" read as a whole value.
QString keepUnitsWithNumbers(QString text);

}  // namespace tessera::ui
