// CSV (RFC 4180) reading and writing for run bundles, and the exact text form of numbers used in
// bundles: shortest round-trip decimal, "nan", "inf", "-inf" (and how a record's JSON spells a metric).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::store {

/// The shortest text that reads back as exactly `value`; "nan", "inf", "-inf" when not finite.
std::string format_number(double value);
/// Reads a number written by format_number (or any decimal); throws StoreError(invalid) naming `where`.
double parse_number(std::string_view text, const std::string& where);
int64_t parse_integer(std::string_view text, const std::string& where);

/// A metric's value as a step record gives it (metrics.jsonl, a bundle, the live stream): a number,
/// null (a NaN: JSON has no NaN, and nlohmann writes one as null) or "nan", "inf", "-inf"; nullopt
/// for any other value (an annotation, not a metric). For nlohmann's json and ordered_json.
template <typename Json>
std::optional<double> metric_value(const Json& value) {
  if (value.is_number()) return value.template get<double>();
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (value.is_string()) {
    const auto& text = value.template get_ref<const std::string&>();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

/// One row, fields quoted where needed; bytes that are not UTF-8 are written as U+FFFD.
void write_csv_row(std::ostream& out, const std::vector<std::string>& fields);

/// Reads rows one by one; quoted fields may hold commas, quotes ("") and line breaks.
class CsvReader {
 public:
  CsvReader(std::istream& in, std::string file_name);
  /// False at the end of the input. Throws StoreError(invalid) on an unterminated quote.
  bool next(std::vector<std::string>& fields);
  /// "metrics.csv line 7": where the last row read started.
  std::string where() const;

 private:
  std::istream& in_;
  std::string file_name_;
  int64_t line_ = 0;
  int64_t row_line_ = 0;
};

}  // namespace tessera::store
