// A single-pass JSON scanner that builds nothing: it checks that a text is one JSON value by the same
// rules as nlohmann::json::accept (RFC 8259; strings of valid UTF-8 without control characters, valid
// escapes and surrogate pairs; no comments; numbers that fit a double) and can report each token to a
// handler as a view into the text. The agent checks every record a rank reports with it (no DOM, no
// copy); the workbench reads data frames with it (wire.hpp, read_frame).
#pragma once

#include <string>
#include <string_view>

namespace tessera::protocol {

/// The tokens of a scanned text, in order. Strings and keys are the raw bytes between the quotes
/// (`escaped`: they hold a backslash escape, see unescape()); numbers are their text.
class JsonHandler {
 public:
  virtual ~JsonHandler() = default;
  virtual void begin_object() = 0;
  virtual void key(std::string_view raw, bool escaped) = 0;
  virtual void end_object() = 0;
  virtual void begin_array() = 0;
  virtual void end_array() = 0;
  virtual void string(std::string_view raw, bool escaped) = 0;
  /// `integer`: no fraction and no exponent.
  virtual void number(std::string_view text, bool integer) = 0;
  virtual void boolean(bool value) = 0;
  virtual void null() = 0;
};

/// Whether `text` is exactly one JSON value (surrounding whitespace allowed).
bool is_json(std::string_view text);
/// is_json(), and the value of an object's top-level "type" member in *type (unescaped; "" when there is
/// none or it is no string): what the agent needs of a rank's record without building it.
bool is_json(std::string_view text, std::string* type);
/// As is_json(), reporting each token to `handler` as it is read; on false the handler has seen a
/// prefix of the tokens and must drop what it built.
bool scan_json(std::string_view text, JsonHandler& handler);
/// The text of a string token that scan_json() accepted: escapes resolved, \u escapes as UTF-8.
std::string unescape(std::string_view raw);

}  // namespace tessera::protocol
