// CSV rows and exact number text for run bundles.
#include "store/csv.hpp"

#include <charconv>
#include <cmath>
#include <istream>
#include <limits>
#include <ostream>

#include "spec/utf8.hpp"
#include "store/errors.hpp"

namespace tessera::store {

std::string format_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

double parse_number(std::string_view text, const std::string& where) {
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  double value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || result.ec != std::errc() || result.ptr != text.data() + text.size())
    throw StoreError(ErrorKind::invalid, where + ": '" + std::string(text) + "' is not a number");
  return value;
}

int64_t parse_integer(std::string_view text, const std::string& where) {
  int64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || result.ec != std::errc() || result.ptr != text.data() + text.size())
    throw StoreError(ErrorKind::invalid, where + ": '" + std::string(text) + "' is not an integer");
  return value;
}

void write_csv_row(std::ostream& out, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out << ',';
    // UTF-8 as import requires: a byte of another encoding (a history edited by hand) as U+FFFD.
    std::string replaced;
    const std::string& f = spec::invalid_utf8_at(fields[i]) == std::string_view::npos
                               ? fields[i]
                               : (replaced = spec::utf8_replacing_invalid(fields[i]));
    if (f.find_first_of(",\"\r\n") == std::string::npos) {
      out << f;
      continue;
    }
    out << '"';
    for (char c : f) {
      if (c == '"') out << '"';
      out << c;
    }
    out << '"';
  }
  out << '\n';
}

CsvReader::CsvReader(std::istream& in, std::string file_name) : in_(in), file_name_(std::move(file_name)) {}

std::string CsvReader::where() const { return file_name_ + " line " + std::to_string(row_line_); }

bool CsvReader::next(std::vector<std::string>& fields) {
  fields.clear();
  std::string line;
  if (!std::getline(in_, line)) return false;
  row_line_ = ++line_;
  std::string field;
  bool quoted = false;
  for (;;) {
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted) {
        if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else if (c == '"') {
          quoted = false;
        } else {
          field += c;
        }
      } else if (c == '"') {
        quoted = true;
      } else if (c == ',') {
        fields.push_back(std::move(field));
        field.clear();
      } else if (c == '\r' && i + 1 == line.size()) {
        // CRLF line end
      } else {
        field += c;
      }
    }
    if (!quoted) break;
    field += '\n';  // a line break inside a quoted field
    if (!std::getline(in_, line)) throw StoreError(ErrorKind::invalid, where() + ": a quoted field is not closed");
    ++line_;
  }
  fields.push_back(std::move(field));
  return true;
}

}  // namespace tessera::store
