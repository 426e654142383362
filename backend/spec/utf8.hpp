// UTF-8 validity (RFC 3629) for text from outside: the JSON scanner's strings and a CSV bundle's
// fields (refused on import, replaced on export). No overlong forms, no surrogates, nothing above
// U+10FFFF. And the control characters that no one-line text (a name, a tag) may hold, and the
// bidirectional overrides that would make it read as other text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::spec {

/// The length (2-4) of the UTF-8 sequence that `text` starts with when its first byte is 0x80 or
/// above, or 0 when that sequence is not valid UTF-8.
inline size_t utf8_sequence_length(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto in = [&](size_t i, unsigned lo, unsigned hi) { return text.size() > i && byte(i) >= lo && byte(i) <= hi; };
  if (text.empty()) return 0;
  const unsigned c = byte(0);
  if (c >= 0xC2 && c <= 0xDF) return in(1, 0x80, 0xBF) ? 2 : 0;
  if (c == 0xE0) return in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
  if (c == 0xED) return in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF) ? 3 : 0;
  if (c == 0xF0) return in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  if (c == 0xF4) return in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  return 0;
}

/// A code point and the bytes of its UTF-8 sequence.
struct Utf8CodePoint {
  char32_t value = 0;
  size_t length = 0;
};

/// The code point that `text` (not empty) starts with, or nullopt when its first byte starts no valid
/// UTF-8 sequence (the byte then stands alone).
inline std::optional<Utf8CodePoint> utf8_decode(std::string_view text) {
  const auto first = static_cast<unsigned char>(text[0]);
  if (first < 0x80) return Utf8CodePoint{first, 1};
  const size_t length = utf8_sequence_length(text);
  if (length == 0) return std::nullopt;
  char32_t value = first & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) value = (value << 6) | (static_cast<unsigned char>(text[k]) & 0x3F);
  return Utf8CodePoint{value, length};
}

/// The byte offset of the first byte of `text` that does not start a valid UTF-8 sequence, or
/// std::string_view::npos when all of it is UTF-8.
inline size_t invalid_utf8_at(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = utf8_sequence_length(text.substr(i));
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

/// A control character (below 0x20: line break, tab, escape) or DEL: it would end a line of a file,
/// a comment or a header, or move the cursor of a terminal that shows it.
constexpr bool is_control_byte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

/// The offset of the first control character (is_control_byte) in `text`, or npos: what keeps a
/// name, a tag or an op to one line.
inline size_t control_character_at(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i)
    if (is_control_byte(text[i])) return i;
  return std::string_view::npos;
}

/// The explicit bidirectional formatting characters (U+202A-U+202E embeddings and overrides, U+2066-U+2069
/// isolates): in a name they reorder how the rest of the line reads ("Trojan Source", CVE-2021-42574),
/// so that a run shown as "live" is named "evil" and a list of runs reads as another one.
constexpr bool is_bidi_control(char32_t code_point) {
  return (code_point >= 0x202A && code_point <= 0x202E) || (code_point >= 0x2066 && code_point <= 0x2069);
}

/// The byte offset of the first bidirectional formatting character (is_bidi_control) in `text`, or npos.
inline size_t bidi_control_at(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto point = utf8_decode(text.substr(i));
    if (!point) {
      ++i;
      continue;
    }
    if (is_bidi_control(point->value)) return i;
    i += point->length;
  }
  return std::string_view::npos;
}

/// "U+202E at offset 3": the code point of `text` (valid UTF-8 there) at `offset`, for a message.
inline std::string code_point_at(std::string_view text, size_t offset) {
  constexpr char kHex[] = "0123456789ABCDEF";
  const auto point = utf8_decode(text.substr(offset));
  const char32_t value = point ? point->value : static_cast<unsigned char>(text[offset]);
  std::string digits;
  for (int shift = value > 0xFFFF ? 20 : 12; shift >= 0; shift -= 4) digits += kHex[(value >> shift) & 15];
  return "U+" + digits + " at offset " + std::to_string(offset);
}

/// "byte 0xFF at offset 3": the byte of `text` at `offset`, for a message that points at it.
inline std::string byte_at(std::string_view text, size_t offset) {
  constexpr char kHex[] = "0123456789ABCDEF";
  const auto byte = static_cast<unsigned char>(text[offset]);
  return std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 15] + " at offset " + std::to_string(offset);
}

/// `text` with every byte that does not start a valid UTF-8 sequence replaced by U+FFFD.
inline std::string utf8_replacing_invalid(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const size_t n = byte < 0x80 ? 1 : utf8_sequence_length(text.substr(i));
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace tessera::spec
