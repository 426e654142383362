// The nesting limit for JSON read from outside (spec files, run bundles, metrics lines, wire frames).
// nlohmann/json parses iteratively, but dumping, comparing and copying a document recurse once per
// level: 200 KB of brackets nested 100,000 deep overflow the stack of whatever touches the document
// next. Such text is refused before it is parsed; no document of Tessera's nests beyond ~10 levels.
// Nor does any JSON text hold a NUL byte, and nlohmann's parser takes one for the end of its input:
// `{...}\0garbage` read from a file would pass as the object alone. json_text_error refuses both.
// json_error_reason turns nlohmann's exception text into the reason a user reads.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::spec {

inline constexpr int kMaxJsonNesting = 64;

/// The byte offset at which `text` opens its (limit + 1)-th nested array or object (brackets inside
/// strings not counted), or std::string_view::npos when it nests no deeper than `limit`. Does not
/// check the text is JSON.
inline size_t json_too_deep_at(std::string_view text, int limit = kMaxJsonNesting) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

/// "<what> nests arrays and objects more than 64 deep (at byte N)" when `text` does, else nothing:
/// `if (auto error = json_nesting_error(text, what)) throw SomeError(*error);` before parsing.
inline std::optional<std::string> json_nesting_error(std::string_view text, std::string_view what) {
  const size_t at = json_too_deep_at(text);
  if (at == std::string_view::npos) return std::nullopt;
  return std::string(what) + " nests arrays and objects more than " + std::to_string(kMaxJsonNesting) +
         " deep (at byte " + std::to_string(at) + ")";
}

/// "<what> holds a NUL byte at offset N, which no JSON text has" when `text` holds one, else
/// json_nesting_error: the checks of text read from outside, before it is parsed.
inline std::optional<std::string> json_text_error(std::string_view text, std::string_view what) {
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    return std::string(what) + " holds a NUL byte at offset " + std::to_string(nul) + ", which no JSON text has";
  return json_nesting_error(text, what);
}

/// nlohmann/json's exception text (e.what()) as a reason to show after "<what> is not valid JSON: ":
/// "parse error at line 1, column 8: syntax error while parsing value - invalid literal; expected end
/// of input". Left out: the "[json.exception.parse_error.101] " prefix, which means nothing to a
/// user, and the raw token nlohmann quotes ("; last read: '…'"), which may be megabytes of the input
/// or the ill-formed UTF-8 itself; the line and column say where. A number too large for a double
/// keeps its text, cut to 40 characters: "number overflow parsing '1e400'".
inline std::string json_error_reason(std::string_view nlohmann_what) {
  std::string reason(nlohmann_what);
  if (const auto end = reason.find("] "); reason.rfind("[json.exception", 0) == 0 && end != std::string::npos)
    reason.erase(0, end + 2);
  // The first "; last read: '" is nlohmann's (what comes before it is its own wording). After the
  // token it may add "; expected X", X one of a few; a token could itself end in such text, so only
  // a tail nlohmann writes is kept, and the rest is dropped.
  if (const auto quoted = reason.find("; last read: '"); quoted != std::string::npos) {
    std::string kept;
    for (const std::string_view expected : {"end of input", "string literal", "':'", "'[', '{', or a literal", "']'", "'}'"}) {
      const std::string tail = "'; expected " + std::string(expected);
      if (reason.size() >= quoted + 14 + tail.size() && reason.compare(reason.size() - tail.size(), tail.size(), tail) == 0)
        kept = tail.substr(1);
    }
    reason.replace(quoted, std::string::npos, kept);
  }
  constexpr std::string_view kOverflow = "number overflow parsing '";
  constexpr size_t kShownChars = 40;
  if (reason.rfind(kOverflow, 0) == 0 && reason.size() > kOverflow.size() + kShownChars + 1)
    reason = reason.substr(0, kOverflow.size() + kShownChars) + "...' (" +
             std::to_string(reason.size() - kOverflow.size() - 1) + " characters)";
  return reason;
}

}  // namespace tessera::spec
