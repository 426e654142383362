// The agent wire protocol (docs/protocol.md): version, limits, error codes, and the checked reading of
// one received frame. Every frame is one UTF-8 JSON object {"v":1,"type":...}; nothing acts on a frame
// before parse_frame() (or, on the workbench, read_frame()) and the per-type field checks have accepted it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::protocol {

inline constexpr int kProtocolVersion = 1;
/// Transport bound (ZMQ_MAXMSGSIZE on both ends): a larger frame drops the connection.
inline constexpr int64_t kMaxTransportFrameBytes = 64LL << 20;
/// Protocol bound: a larger frame below the transport bound gets a too_large error reply.
inline constexpr int64_t kMaxFrameBytes = 16LL << 20;
/// Control messages are small (all but launch, inventory, launched, error and data: wire.cpp's tables).
inline constexpr int64_t kMaxControlFrameBytes = 4096;
/// One record a rank reports (a JSON line).
inline constexpr int64_t kMaxRecordBytes = 64 * 1024;
inline constexpr int kHeartbeatInterval_ms = 1000;
/// A peer silent for liveness × interval is gone.
inline constexpr int kHeartbeatLiveness = 3;
/// Ranks report here (set by the agent in each rank's environment).
inline constexpr const char* kReportEndpointEnv = "TESSERA_REPORT_ENDPOINT";

enum class ErrorCode {
  bad_frame,      ///< more than one frame, or not text
  too_large,      ///< above the size limit of its type
  bad_json,       ///< not a JSON object
  bad_version,    ///< "v" missing or not kProtocolVersion
  unknown_type,   ///< "type" missing or not a known message
  bad_field,      ///< a field missing, mistyped or out of range
  unknown_run,    ///< a run this agent does not hold
  busy,           ///< the agent cannot take the run (ranks, duplicate id)
  launch_failed,  ///< the runtime could not be started
  internal,       ///< a valid request the agent failed to carry out (disk full, no free port)
};
std::string_view to_string(ErrorCode code);

/// A message the receiver refuses; the reply is an error message with this code.
class ProtocolError : public std::runtime_error {
 public:
  /// `in_reply_to`: the type of the refused message where its envelope was refused after the type was
  /// read (a known type of a wrong version or over its size limit), else "".
  ProtocolError(ErrorCode code, const std::string& message, std::string in_reply_to = {})
      : std::runtime_error(message), code_(code), in_reply_to_(std::move(in_reply_to)) {}
  ErrorCode code() const { return code_; }
  const std::string& in_reply_to() const { return in_reply_to_; }

 private:
  ErrorCode code_;
  std::string in_reply_to_;
};

/// Reads one received frame: size, JSON object, version, known type (for the receiving side).
/// Returns the object; throws ProtocolError.
enum class Side { agent, workbench };
nlohmann::json parse_frame(std::string_view bytes, Side receiver);

/// One record of a data frame as read_frame() reads it: its top-level fields in the order sent, each
/// value a nlohmann::json (a scalar holds no heap memory; a nested value is a whole DOM), kept in its
/// Frame's storage. A record that is not a JSON object has `object` false and no fields.
struct Record {
  struct Field {
    std::string key;
    nlohmann::json value;
  };
  bool object = false;
  std::span<const Field> fields;  ///< in Frame::fields
  /// The value of `key` (the last one when a key repeats, as a DOM keeps it); nullptr when absent.
  const nlohmann::json* find(std::string_view key) const;
  /// The "type" field when it is a string, else "".
  std::string_view type() const;
  /// The record as a DOM (null for a record that is not an object).
  nlohmann::json to_json() const;
};

/// A frame as the workbench reads it: the message without its "records" array, and that array's
/// records (nullopt when the frame has no "records" array). Movable, not copyable: the records view
/// `fields`, the fields of all records in one array (no allocation per record).
struct Frame {
  Frame() = default;
  Frame(Frame&&) = default;
  Frame& operator=(Frame&&) = default;
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;

  nlohmann::json message;
  std::optional<std::vector<Record>> records;
  std::vector<Record::Field> fields;
};

/// parse_frame() on the workbench's side, reading a data frame's records straight into Records instead
/// of a DOM (the same checks, the same errors).
Frame read_frame(std::string_view bytes);

/// The envelope {"v":1,"type":type} with the fields of `body` added.
std::string make_frame(std::string_view type, nlohmann::json body = nlohmann::json::object());
/// {"v":1,"type":"error","code":...,"message":...,"in_reply_to":...}
std::string make_error(ErrorCode code, const std::string& message, std::string_view in_reply_to);

/// Field checks; each throws ProtocolError(bad_field) naming the field and the rule.
std::string get_string(const nlohmann::json& message, const char* field, size_t max_bytes);
int64_t get_int(const nlohmann::json& message, const char* field, int64_t min, int64_t max);
const nlohmann::json& get_array(const nlohmann::json& message, const char* field, size_t max_items);
const nlohmann::json& get_object(const nlohmann::json& message, const char* field);
/// The records of a frame read by read_frame() ("records must be an array", at most `max_items`).
const std::vector<Record>& get_records(const Frame& frame, size_t max_items);
/// A run id: 32 lowercase hex digits (also what the agent names the run directory after).
std::string get_run_id(const nlohmann::json& message, const char* field = "run");
bool is_run_id(std::string_view text);

}  // namespace tessera::protocol
