// The JSON scanner: an explicit stack instead of recursion (a 64 KiB record may nest deeply), one
// template for both the plain check (no handler, nothing reported) and the reporting scan.
#include "protocol/json_scan.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "spec/utf8.hpp"

namespace tessera::protocol {

namespace {

// The handler of is_json(): every token is dropped.
struct NoHandler {
  void begin_object() {}
  void key(std::string_view, bool) {}
  void end_object() {}
  void begin_array() {}
  void end_array() {}
  void string(std::string_view, bool) {}
  void number(std::string_view, bool) {}
  void boolean(bool) {}
  void null() {}
};

// The handler of is_json(text, type): keeps the top-level "type" string of an object.
struct TypeHandler {
  int depth = 0;
  bool at_type = false;  // the next value is the top-level "type"
  std::string type;
  // A value of the top-level "type" that is no string clears it: the last "type" decides, as it does
  // for the workbench reading the record.
  void other_value() {
    if (at_type) type.clear();
    at_type = false;
  }
  void begin_object() { other_value(), ++depth; }
  void key(std::string_view raw, bool escaped);
  void end_object() { --depth; }
  void begin_array() { other_value(), ++depth; }
  void end_array() { --depth; }
  void string(std::string_view raw, bool escaped);
  void number(std::string_view, bool) { other_value(); }
  void boolean(bool) { other_value(); }
  void null() { other_value(); }
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

template <class Handler>
class Scanner {
 public:
  Scanner(std::string_view text, Handler& handler) : p_(text.data()), end_(text.data() + text.size()), handler_(handler) {}

  bool run() {
    skip_space();
    while (true) {
      bool opened = false;
      if (!value(opened)) return false;
      if (opened) continue;  // the first value (or key) of a container comes next
      bool done = false;
      if (!after_value(done)) return false;
      if (done) return true;
    }
  }

 private:
  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool at(char c) const { return p_ != end_ && *p_ == c; }

  // One value, or the opening of a non-empty container (`opened`; its first key is read).
  bool value(bool& opened) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{':
        ++p_;
        handler_.begin_object();
        skip_space();
        if (at('}')) {
          ++p_;
          handler_.end_object();
          return true;
        }
        stack_.push_back('{');
        opened = true;
        return key();
      case '[':
        ++p_;
        handler_.begin_array();
        skip_space();
        if (at(']')) {
          ++p_;
          handler_.end_array();
          return true;
        }
        stack_.push_back('[');
        opened = true;
        return true;
      case '"': {
        std::string_view raw;
        bool escaped = false;
        if (!string(raw, escaped)) return false;
        handler_.string(raw, escaped);
        return true;
      }
      case 't':
        if (!literal("true")) return false;
        handler_.boolean(true);
        return true;
      case 'f':
        if (!literal("false")) return false;
        handler_.boolean(false);
        return true;
      case 'n':
        if (!literal("null")) return false;
        handler_.null();
        return true;
      default: return number();
    }
  }

  // After a value: closes the containers it ends; reads the next key of an object.
  bool after_value(bool& done) {
    while (true) {
      skip_space();
      if (stack_.empty()) {
        done = true;
        return p_ == end_;
      }
      if (p_ == end_) return false;
      const char c = *p_++;
      const bool object = stack_.back() == '{';
      if (c == ',') {
        skip_space();
        return !object || key();
      }
      if (c != (object ? '}' : ']')) return false;
      if (object) handler_.end_object();
      else handler_.end_array();
      stack_.pop_back();
    }
  }

  // "key" : — leaves p_ at the value.
  bool key() {
    if (!at('"')) return false;
    std::string_view raw;
    bool escaped = false;
    if (!string(raw, escaped)) return false;
    handler_.key(raw, escaped);
    skip_space();
    if (!at(':')) return false;
    ++p_;
    skip_space();
    return true;
  }

  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }

  bool digits() {
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return true;
  }

  bool number() {
    const char* start = p_;
    if (at('-')) ++p_;
    const char* first_digit = p_;
    if (at('0')) ++p_;
    else if (!digits()) return false;
    const auto integer_digits = p_ - first_digit;
    bool integer = true, exponent = false;
    if (at('.')) {
      ++p_;
      integer = false;
      if (!digits()) return false;
    }
    if (at('e') || at('E')) {
      ++p_;
      integer = false;
      exponent = true;
      if (at('+') || at('-')) ++p_;
      if (!digits()) return false;
    }
    const std::string_view text(start, static_cast<size_t>(p_ - start));
    // Without an exponent, up to 308 integer digits stay below the largest double; beyond that the
    // value is converted, as nlohmann does, and must be finite.
    if (exponent || integer_digits > 308) {
      const std::string copy(text);
      if (!std::isfinite(std::strtod(copy.c_str(), nullptr))) return false;
    }
    handler_.number(text, integer);
    return true;
  }

  // The UTF-8 sequence starting at p_ (a byte >= 0x80).
  bool utf8() {
    const size_t n = spec::utf8_sequence_length(std::string_view(p_, static_cast<size_t>(end_ - p_)));
    p_ += n;
    return n > 0;
  }

  bool hex4(unsigned& value) {
    if (end_ - p_ < 4) return false;
    value = 0;
    for (int i = 0; i < 4; ++i) {
      const int d = hex_digit(*p_++);
      if (d < 0) return false;
      value = value * 16 + static_cast<unsigned>(d);
    }
    return true;
  }

  // p_ at the opening quote; `raw` gets the bytes between the quotes.
  bool string(std::string_view& raw, bool& escaped) {
    const char* start = ++p_;
    while (true) {
      if (p_ == end_) return false;
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        raw = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c >= 0x80) {
        if (!utf8()) return false;
        continue;
      }
      ++p_;
      if (c != '\\') continue;
      escaped = true;
      if (p_ == end_) return false;
      switch (*p_++) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': break;
        case 'u': {
          unsigned code = 0;
          if (!hex4(code)) return false;
          if (code >= 0xDC00 && code <= 0xDFFF) return false;  // a low surrogate alone
          if (code >= 0xD800 && code <= 0xDBFF) {                // must be followed by a low one
            unsigned low = 0;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
          }
          break;
        }
        default: return false;
      }
    }
  }

  const char* p_;
  const char* end_;
  Handler& handler_;
  std::string stack_;  // '{' or '[' per open container
};

void append_utf8(std::string& out, unsigned code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

unsigned read_hex4(const char* p) {
  unsigned value = 0;
  for (int i = 0; i < 4; ++i) value = value * 16 + static_cast<unsigned>(hex_digit(p[i]));
  return value;
}

}  // namespace

bool is_json(std::string_view text) {
  NoHandler none;
  return Scanner<NoHandler>(text, none).run();
}

void TypeHandler::key(std::string_view raw, bool escaped) { at_type = depth == 1 && (escaped ? unescape(raw) == "type" : raw == "type"); }

void TypeHandler::string(std::string_view raw, bool escaped) {
  if (at_type) type = escaped ? unescape(raw) : std::string(raw);
  at_type = false;
}

bool is_json(std::string_view text, std::string* type) {
  TypeHandler handler;
  const bool valid = Scanner<TypeHandler>(text, handler).run();
  *type = std::move(handler.type);
  return valid;
}

bool scan_json(std::string_view text, JsonHandler& handler) { return Scanner<JsonHandler>(text, handler).run(); }

std::string unescape(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      out += raw[i];
      continue;
    }
    switch (raw[++i]) {
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        unsigned code = read_hex4(raw.data() + i + 1);
        i += 4;
        if (code >= 0xD800 && code <= 0xDBFF) {  // scan_json checked the low surrogate follows
          code = 0x10000 + ((code - 0xD800) << 10) + (read_hex4(raw.data() + i + 3) - 0xDC00);
          i += 6;
        }
        append_utf8(out, code);
        break;
      }
      default: out += raw[i];  // '"', '\\', '/'
    }
  }
  return out;
}

}  // namespace tessera::protocol
