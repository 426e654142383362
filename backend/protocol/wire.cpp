// Frame parsing and field checks of the agent wire protocol.
#include "protocol/wire.hpp"

#include <array>
#include <charconv>
#include <cstdlib>
#include <utility>

#include "protocol/json_scan.hpp"
#include "spec/json_keys.hpp"
#include "spec/json_nesting.hpp"

namespace tessera::protocol {

namespace {

struct TypeLimit {
  std::string_view type;
  int64_t max_bytes;
};

// What each side accepts, with the size limit of each type.
constexpr std::array<TypeLimit, 6> kAgentReceives{{{"hello", kMaxControlFrameBytes},
                                                   {"launch", 1 << 20},
                                                   {"attach", kMaxControlFrameBytes},
                                                   {"ack", kMaxControlFrameBytes},
                                                   {"stop", kMaxControlFrameBytes},
                                                   {"heartbeat", kMaxControlFrameBytes}}};
constexpr std::array<TypeLimit, 7> kWorkbenchReceives{{{"inventory", 1 << 20},
                                                       {"launched", 1 << 16},
                                                       {"attached", kMaxControlFrameBytes},
                                                       {"stopping", kMaxControlFrameBytes},
                                                       {"data", kMaxFrameBytes},
                                                       {"heartbeat", kMaxControlFrameBytes},
                                                       {"error", 1 << 16}}};

template <size_t N>
int64_t limit_of(const std::array<TypeLimit, N>& table, std::string_view type) {
  for (const auto& entry : table)
    if (entry.type == type) return entry.max_bytes;
  return -1;
}

std::string type_name(const nlohmann::json& value) { return value.type_name(); }

template <size_t N>
int64_t largest(const std::array<TypeLimit, N>& table) {
  int64_t most = 0;
  for (const auto& entry : table) most = std::max(most, entry.max_bytes);
  return most;
}

// Nothing larger than the largest message this side accepts is parsed at all; a frame is an object.
void check_size(std::string_view bytes, Side receiver) {
  const int64_t most = receiver == Side::agent ? largest(kAgentReceives) : largest(kWorkbenchReceives);
  if (static_cast<int64_t>(bytes.size()) > most)
    throw ProtocolError(ErrorCode::too_large, "frame of " + std::to_string(bytes.size()) + " bytes exceeds " +
                                                  std::to_string(most));
  if (bytes.empty() || bytes.front() != '{') throw ProtocolError(ErrorCode::bad_json, "frame is not a JSON object");
  // No JSON text holds a NUL byte (not even in a string), and nlohmann's parser takes one for the end of
  // its input: `{"v":1,"type":"hello"}\0junk` was read as the hello.
  if (const auto nul = bytes.find('\0'); nul != std::string_view::npos)
    throw ProtocolError(ErrorCode::bad_json, "frame holds a NUL byte at offset " + std::to_string(nul) + ", which no JSON text has");
  if (auto error = spec::json_nesting_error(bytes, "the frame")) throw ProtocolError(ErrorCode::bad_json, *error);
}

// The version, a known type, and the size limit of that type.
void check_envelope(const nlohmann::json& message, size_t bytes, Side receiver) {
  // The type first, so that a refusal of a known type's envelope says which message it refused.
  const auto type = message.find("type");
  const bool named = type != message.end() && type->is_string();
  const std::string name = named ? type->get<std::string>() : std::string();
  const int64_t limit = receiver == Side::agent ? limit_of(kAgentReceives, name) : limit_of(kWorkbenchReceives, name);
  const auto v = message.find("v");
  if (v == message.end() || !v->is_number_integer() || v->get<int64_t>() != kProtocolVersion)
    throw ProtocolError(ErrorCode::bad_version, "\"v\" must be " + std::to_string(kProtocolVersion), limit < 0 ? "" : name);
  if (!named) throw ProtocolError(ErrorCode::unknown_type, "\"type\" must be a string");
  if (limit < 0) {
    const std::string shown = name.size() > 32 ? name.substr(0, 32) + "..." : name;
    throw ProtocolError(ErrorCode::unknown_type, "unknown message type \"" + shown + "\"");
  }
  if (static_cast<int64_t>(bytes) > limit)
    throw ProtocolError(ErrorCode::too_large, name + " of " + std::to_string(bytes) + " bytes exceeds " + std::to_string(limit), name);
}

// A JSON number as nlohmann reads it: an integer that fits is int64 (negative) or uint64, anything
// else a double (the scanner has checked it is finite).
nlohmann::json number_value(std::string_view text, bool integer) {
  const char* first = text.data();
  const char* last = first + text.size();
  if (integer && text.front() == '-') {
    int64_t value = 0;
    if (const auto r = std::from_chars(first, last, value); r.ec == std::errc() && r.ptr == last) return value;
  } else if (integer) {
    uint64_t value = 0;
    if (const auto r = std::from_chars(first, last, value); r.ec == std::errc() && r.ptr == last) return value;
  }
  double value = 0;
  if (std::from_chars(first, last, value).ec == std::errc::result_out_of_range)
    value = std::strtod(std::string(text).c_str(), nullptr);  // an underflow: 0 or subnormal, as strtod gives
  return value;
}

// Builds a frame from the scanner's tokens: a DOM of the message, except that the elements of its
// top-level "records" array become Records (their nested values DOMs).
class FrameReader : public JsonHandler {
 public:
  /// A field takes at least 5 bytes of the frame ("k":1): this is room for most frames' fields.
  explicit FrameReader(size_t bytes) { frame.fields.reserve(bytes / 16); }

  Frame frame;

  /// Points each record at its fields, once no more fields are added.
  void link() {
    if (!frame.records) return;
    const std::span<const Record::Field> all(frame.fields);
    for (size_t i = 0; i < frame.records->size(); ++i) {
      const size_t end = i + 1 < starts_.size() ? starts_[i + 1] : all.size();
      (*frame.records)[i].fields = all.subspan(starts_[i], end - starts_[i]);
    }
  }

  void begin_object() override { open(nlohmann::json::object()); }
  void begin_array() override { open(nlohmann::json::array()); }
  void end_object() override { stack_.pop_back(); }
  void end_array() override { stack_.pop_back(); }
  void key(std::string_view raw, bool escaped) override {
    text(key_, raw, escaped);
    if (stack_.size() == 1 && key_ == "records") {  // a repeated key: the last value counts
      frame.records.reset();
      frame.fields.clear();
      starts_.clear();
      frame.message.erase("records");
    }
  }
  void string(std::string_view raw, bool escaped) override {
    std::string value;
    text(value, raw, escaped);
    put(std::move(value));
  }
  void number(std::string_view text, bool integer) override { put(number_value(text, integer)); }
  void boolean(bool value) override { put(value); }
  void null() override { put(nullptr); }

 private:
  enum class Where { message, records, record, dom };
  struct Level {
    Where where;
    nlohmann::json* dom;  // the container of a dom level
  };

  static void text(std::string& out, std::string_view raw, bool escaped) {
    if (escaped) out = unescape(raw);
    else out.assign(raw);
  }

  // Where a value inside the current level goes.
  nlohmann::json& slot() {
    Level& top = stack_.back();
    switch (top.where) {
      case Where::message: return frame.message[key_];
      case Where::record: return frame.fields.emplace_back(Record::Field{key_, nullptr}).value;
      case Where::dom: return top.dom->is_array() ? top.dom->emplace_back() : (*top.dom)[key_];
      case Where::records: break;  // never: put() and open() handle the records array's elements
    }
    return scratch_;
  }

  void put(nlohmann::json value) {
    if (stack_.back().where == Where::records) return void(new_record());  // not an object
    slot() = std::move(value);
  }

  Record& new_record() {
    starts_.push_back(frame.fields.size());
    return frame.records->emplace_back();
  }

  void open(nlohmann::json container) {
    if (stack_.empty()) {
      frame.message = std::move(container);
      stack_.push_back({Where::message, &frame.message});
    } else if (stack_.size() == 1 && key_ == "records" && container.is_array()) {
      frame.records.emplace();
      stack_.push_back({Where::records, nullptr});
    } else if (stack_.back().where == Where::records) {
      Record& record = new_record();
      if (container.is_object()) {
        record.object = true;
        stack_.push_back({Where::record, nullptr});
      } else {  // an array where a record belongs: read, kept nowhere
        scratch_ = std::move(container);
        stack_.push_back({Where::dom, &scratch_});
      }
    } else {
      nlohmann::json& target = slot();
      target = std::move(container);
      stack_.push_back({Where::dom, &target});
    }
  }

  std::vector<Level> stack_;
  std::string key_;
  nlohmann::json scratch_;
  std::vector<size_t> starts_;  // per record, the index of its first field in frame.fields
};

}  // namespace

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::bad_frame: return "bad_frame";
    case ErrorCode::too_large: return "too_large";
    case ErrorCode::bad_json: return "bad_json";
    case ErrorCode::bad_version: return "bad_version";
    case ErrorCode::unknown_type: return "unknown_type";
    case ErrorCode::bad_field: return "bad_field";
    case ErrorCode::unknown_run: return "unknown_run";
    case ErrorCode::busy: return "busy";
    case ErrorCode::launch_failed: return "launch_failed";
    case ErrorCode::internal: return "internal";
  }
  return "unknown";
}

// "frame is not valid JSON: parse error at line 1, column 8: ...": says which byte broke the frame
// (invalid UTF-8, junk after the object, a cut-off frame) rather than only that it did.
static ProtocolError not_valid_json(const nlohmann::json::exception& error) {
  return ProtocolError(ErrorCode::bad_json, "frame is not valid JSON: " + spec::json_error_reason(error.what()));
}

nlohmann::json parse_frame(std::string_view bytes, Side receiver) {
  check_size(bytes, receiver);
  // An agent acts on what it receives: a key given twice (which "run" is meant?) is refused. The
  // workbench reads, as read_frame() does, the last of two.
  nlohmann::json message;
  std::optional<std::string> duplicate;
  try {
    message = receiver == Side::agent ? spec::parse_json_unique_keys(bytes, duplicate)
                                      : nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    throw not_valid_json(e);
  }
  if (!message.is_object()) throw ProtocolError(ErrorCode::bad_json, "frame is not a JSON object");
  if (duplicate) {
    throw ProtocolError(ErrorCode::bad_json, "the frame gives \"" + spec::shown_key_path(*duplicate) + "\" twice (which one is meant?)");
  }
  check_envelope(message, bytes.size(), receiver);
  return message;
}

Frame read_frame(std::string_view bytes) {
  check_size(bytes, Side::workbench);
  FrameReader reader(bytes.size());
  if (!scan_json(bytes, reader)) {
    // The scan says only that it failed; a second parse, on this error path alone, says where.
    try {
      (void)nlohmann::json::parse(bytes.begin(), bytes.end());
    } catch (const nlohmann::json::exception& e) {
      throw not_valid_json(e);
    }
    throw ProtocolError(ErrorCode::bad_json, "frame is not a JSON object");
  }
  check_envelope(reader.frame.message, bytes.size(), Side::workbench);
  reader.link();
  return std::move(reader.frame);
}

const nlohmann::json* Record::find(std::string_view key) const {
  for (auto it = fields.rbegin(); it != fields.rend(); ++it)
    if (it->key == key) return &it->value;
  return nullptr;
}

std::string_view Record::type() const {
  const auto* value = find("type");
  return value && value->is_string() ? std::string_view(value->get_ref<const std::string&>()) : std::string_view();
}

nlohmann::json Record::to_json() const {
  if (!object) return nullptr;
  nlohmann::json dom = nlohmann::json::object();
  for (const auto& field : fields) dom[field.key] = field.value;
  return dom;
}

std::string make_frame(std::string_view type, nlohmann::json body) {
  nlohmann::json message = nlohmann::json::object();
  message["v"] = kProtocolVersion;
  message["type"] = type;
  for (auto& [key, value] : body.items()) message[key] = std::move(value);
  return message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string make_error(ErrorCode code, const std::string& message, std::string_view in_reply_to) {
  return make_frame("error", {{"code", to_string(code)}, {"message", message}, {"in_reply_to", in_reply_to}});
}

std::string get_string(const nlohmann::json& message, const char* field, size_t max_bytes) {
  const auto it = message.find(field);
  if (it == message.end() || !it->is_string())
    throw ProtocolError(ErrorCode::bad_field, std::string(field) + " must be a string");
  const auto& text = it->get_ref<const std::string&>();
  if (text.size() > max_bytes)
    throw ProtocolError(ErrorCode::bad_field, std::string(field) + " exceeds " + std::to_string(max_bytes) + " bytes");
  return text;
}

int64_t get_int(const nlohmann::json& message, const char* field, int64_t min, int64_t max) {
  const auto it = message.find(field);
  if (it == message.end() || !it->is_number_integer())
    throw ProtocolError(ErrorCode::bad_field, std::string(field) + " must be an integer");
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(max))
    throw ProtocolError(ErrorCode::bad_field, std::string(field) + " must be at most " + std::to_string(max));
  const int64_t value = it->get<int64_t>();
  if (value < min || value > max)
    throw ProtocolError(ErrorCode::bad_field, std::string(field) + "=" + std::to_string(value) + " must be in [" +
                                                  std::to_string(min) + ", " + std::to_string(max) + "]");
  return value;
}

const nlohmann::json& get_array(const nlohmann::json& message, const char* field, size_t max_items) {
  const auto it = message.find(field);
  if (it == message.end() || !it->is_array())
    throw ProtocolError(ErrorCode::bad_field, std::string(field) + " must be an array");
  if (it->size() > max_items)
    throw ProtocolError(ErrorCode::bad_field, std::string(field) + " has more than " + std::to_string(max_items) + " items");
  return *it;
}

const nlohmann::json& get_object(const nlohmann::json& message, const char* field) {
  const auto it = message.find(field);
  if (it == message.end() || !it->is_object())
    throw ProtocolError(ErrorCode::bad_field, std::string(field) + " must be an object (found " +
                                                  (it == message.end() ? std::string("nothing") : type_name(*it)) + ")");
  return *it;
}

const std::vector<Record>& get_records(const Frame& frame, size_t max_items) {
  if (!frame.records) throw ProtocolError(ErrorCode::bad_field, "records must be an array");
  if (frame.records->size() > max_items)
    throw ProtocolError(ErrorCode::bad_field, "records has more than " + std::to_string(max_items) + " items");
  return *frame.records;
}

bool is_run_id(std::string_view text) {
  if (text.size() != 32) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string get_run_id(const nlohmann::json& message, const char* field) {
  std::string id = get_string(message, field, 64);
  if (!is_run_id(id)) throw ProtocolError(ErrorCode::bad_field, std::string(field) + " must be 32 lowercase hex digits");
  return id;
}

}  // namespace tessera::protocol
