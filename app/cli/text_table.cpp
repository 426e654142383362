// Plain-text tables and number formatting for tessera-cli.
#include "cli/text_table.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "planner/memory.hpp"
#include "spec/utf8.hpp"

namespace tessera::cli {

TextTable::TextTable(std::vector<std::string> header, std::vector<bool> right_aligned)
    : header_(std::move(header)), right_(std::move(right_aligned)) {
  right_.resize(header_.size(), true);
  if (!right_.empty()) right_[0] = false;
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(header_.size());
  for (auto& cell : cells) cell = printable(cell);  // a run's name or a path from the history: never raw
  rows_.push_back(std::move(cells));
}

namespace {

// Columns a code point takes on a terminal (after Markus Kuhn's wcwidth, without the locale): 0 for
// combining marks and zero-width characters, 2 for East Asian wide and fullwidth characters and
// emoji, else 1.
int code_point_width(char32_t c) {
  if ((c >= 0x0300 && c <= 0x036F) || (c >= 0x200B && c <= 0x200F) || (c >= 0xFE00 && c <= 0xFE0F) || c == 0x20E3)
    return 0;
  const bool wide = (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF && c != 0x303F) ||
                    (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
                    (c >= 0xFF00 && c <= 0xFF60) || (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
                    (c >= 0x1F680 && c <= 0x1F6FF) || (c >= 0x1F900 && c <= 0x1FAFF) || (c >= 0x20000 && c <= 0x3FFFD);
  return wide ? 2 : 1;
}

// The code point at text[i], or nullopt for a byte that starts no valid UTF-8 sequence.
std::optional<spec::Utf8CodePoint> decode(const std::string& text, size_t i) {
  return spec::utf8_decode(std::string_view(text).substr(i));
}

// What a character of `text` prints as, and its columns: a control character (a newline, an escape
// sequence's ESC, C1's CSI) as a space, a byte of invalid UTF-8 as U+FFFD; a newline stays one when
// `keep_newlines`.
template <typename Each>
void for_each_printable(const std::string& text, bool keep_newlines, Each each) {
  for (size_t i = 0; i < text.size();) {
    const auto c = decode(text, i);
    if (!c) {
      each(std::string_view("\xEF\xBF\xBD"), size_t{1});
      ++i;
      continue;
    }
    const bool control = c->value < 0x20 || (c->value >= 0x7F && c->value <= 0x9F);
    if (control && keep_newlines && c->value == '\n') each(std::string_view("\n"), size_t{0});
    else if (control) each(std::string_view(" "), size_t{1});
    else each(std::string_view(text).substr(i, c->length), static_cast<size_t>(code_point_width(c->value)));
    i += c->length;
  }
}

// Columns a cell takes: "TP2·PP2" is 7 wide, not its 8 bytes; "ラン" 4. Invalid UTF-8 counts a
// column per byte.
size_t display_width(const std::string& text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) {
    const auto c = decode(text, i);
    width += c ? static_cast<size_t>(code_point_width(c->value)) : 1;
    i += c ? c->length : 1;
  }
  return width;
}

}  // namespace

std::string printable(const std::string& text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for_each_printable(text, keep_newlines, [&](std::string_view piece, size_t) { out += piece; });
  return out;
}

std::string table_cell(const std::string& text, size_t max_columns) {
  std::vector<std::pair<std::string_view, size_t>> pieces;  // what is printed for each character, its columns
  size_t width = 0;
  for_each_printable(text, false, [&](std::string_view piece, size_t columns) {
    pieces.emplace_back(piece, columns);
    width += columns;
  });
  // Whole characters while they and the "…" fit.
  const bool cut = width > max_columns;
  std::string out;
  size_t used = 0;
  for (const auto& [piece, columns] : pieces) {
    if (cut && used + columns + 1 > max_columns) break;
    out += piece;
    used += columns;
  }
  return cut ? out + "…" : out;
}

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
  if (bytes >= planner::kMaxMemoryTermBytes) return "over 1 EiB";
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
