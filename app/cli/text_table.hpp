// Aligned plain-text tables for the CLI's human output.
#pragma once

#include <string>
#include <vector>

namespace tessera::cli {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header, std::vector<bool> right_aligned = {});
  void add_row(std::vector<std::string> cells);
  std::string str() const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

/// `text` safe to print on a terminal: control characters (a newline or an escape sequence in a run's
/// name) as spaces, newlines kept when `keep_newlines`, invalid UTF-8 as U+FFFD. Table rows get it.
std::string printable(const std::string& text, bool keep_newlines = false);
/// printable(`text`) cut with "…" to at most `max_columns` terminal columns.
std::string table_cell(const std::string& text, size_t max_columns);

std::string format_fixed(double value, int decimals);
std::string format_count(int64_t value);   ///< 8,030,261,248
std::string format_gib(int64_t bytes);     ///< "12.34"
std::string format_bytes(int64_t bytes);   ///< "12.34 GiB", "3.70 MiB" below 1 GiB, "over 1 EiB" from 2^60
std::string format_si(double value, const std::string& unit);  ///< 8.03 B, 1.2 M

}  // namespace tessera::cli
