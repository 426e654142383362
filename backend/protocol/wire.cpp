// Frame parsing and field checks of the agent wire protocol.
#include "protocol/wire.hpp"

#include <array>
#include <utility>

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
  }
  return "unknown";
}

nlohmann::json parse_frame(std::string_view bytes, Side receiver) {
  // Nothing larger than the largest message this side accepts is parsed at all.
  const int64_t most = receiver == Side::agent ? largest(kAgentReceives) : largest(kWorkbenchReceives);
  if (static_cast<int64_t>(bytes.size()) > most)
    throw ProtocolError(ErrorCode::too_large, "frame of " + std::to_string(bytes.size()) + " bytes exceeds " +
                                                  std::to_string(most));
  if (bytes.empty() || bytes.front() != '{') throw ProtocolError(ErrorCode::bad_json, "frame is not a JSON object");
  nlohmann::json message = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (message.is_discarded() || !message.is_object())
    throw ProtocolError(ErrorCode::bad_json, "frame is not a JSON object");
  const auto v = message.find("v");
  if (v == message.end() || !v->is_number_integer() || v->get<int64_t>() != kProtocolVersion)
    throw ProtocolError(ErrorCode::bad_version, "\"v\" must be " + std::to_string(kProtocolVersion));
  const auto type = message.find("type");
  if (type == message.end() || !type->is_string())
    throw ProtocolError(ErrorCode::unknown_type, "\"type\" must be a string");
  const auto& name = type->get_ref<const std::string&>();
  const int64_t limit = receiver == Side::agent ? limit_of(kAgentReceives, name) : limit_of(kWorkbenchReceives, name);
  if (limit < 0) {
    const std::string shown = name.size() > 32 ? name.substr(0, 32) + "..." : name;
    throw ProtocolError(ErrorCode::unknown_type, "unknown message type \"" + shown + "\"");
  }
  if (static_cast<int64_t>(bytes.size()) > limit)
    throw ProtocolError(ErrorCode::too_large, name + " of " + std::to_string(bytes.size()) + " bytes exceeds " +
                                                  std::to_string(limit));
  return message;
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
