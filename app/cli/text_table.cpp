// Plain-text tables and number formatting for tessera-cli.
#include "cli/text_table.hpp"

#include <algorithm>
#include <cstdio>

namespace tessera::cli {

TextTable::TextTable(std::vector<std::string> header, std::vector<bool> right_aligned)
    : header_(std::move(header)), right_(std::move(right_aligned)) {
  right_.resize(header_.size(), true);
  if (!right_.empty()) right_[0] = false;
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

namespace {

// Columns a cell takes on a terminal: one per character, so "TP2·PP2" is 7 wide, not its 8 bytes
// (UTF-8 continuation bytes, 10xxxxxx, are not counted).
size_t display_width(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

std::string TextTable::str() const {
  std::vector<size_t> width(header_.size());
  for (size_t i = 0; i < header_.size(); ++i) width[i] = display_width(header_[i]);
  for (const auto& row : rows_)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string pad(width[i] - display_width(cells[i]), ' ');
      out += right_[i] ? pad + cells[i] : cells[i] + pad;
      if (i + 1 < cells.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string format_fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string format_count(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string format_gib(int64_t bytes) { return format_fixed(static_cast<double>(bytes) / (1024.0 * 1024 * 1024), 2); }

std::string format_bytes(int64_t bytes) {
  if (bytes >= int64_t{1} << 30) return format_gib(bytes) + " GiB";
  return format_fixed(static_cast<double>(bytes) / (1024.0 * 1024), 2) + " MiB";
}

std::string format_si(double value, const std::string& unit) {
  const char* suffix[] = {"", " K", " M", " B", " T"};
  int i = 0;
  while (value >= 1000 && i < 4) {
    value /= 1000;
    ++i;
  }
  return format_fixed(value, value < 10 ? 2 : 1) + suffix[i] + (unit.empty() ? "" : " " + unit);
}

}  // namespace tessera::cli
