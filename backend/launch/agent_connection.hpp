// The workbench's connection to one agent: a DEALER socket, CURVE with the agent's pinned public key
// (plain only for a loopback agent without a pinned key), checked frames in and out, request/reply with
// a bounded wait.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "protocol/keys.hpp"
#include "protocol/wire.hpp"

namespace tessera::launch {

/// zmq::poll, except that a signal arriving while it waits (Ctrl-C while following, which detaches)
/// returns -1 with nothing ready rather than throwing "Interrupted system call": the caller checks its
/// flag, or waits out the rest of its time.
int poll_sockets(zmq::pollitem_t* items, size_t count, std::chrono::milliseconds timeout);

/// An agent refused a request (its error message) or did not answer in time.
class AgentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// No reply in time: the agent may be gone, unreachable from here, or refusing this workbench's key.
class AgentTimeout : public AgentError {
 public:
  using AgentError::AgentError;
};

/// The workbench's own key pair and the agents' pinned keys, from the config directory.
struct Credentials {
  protocol::KeyPair client;
  std::string known_agents_path;
  /// The pinned key of `endpoint`; nullopt for a loopback endpoint without one (plain connection);
  /// throws AgentError for any other endpoint without one, saying how to pin it.
  std::optional<std::string> server_key(const std::string& endpoint) const;
  /// client.key/.pub and known_agents in protocol::config_dir() (keys generated on first use).
  static Credentials from_config_dir();
};

class AgentConnection {
 public:
  AgentConnection(zmq::context_t& context, std::string endpoint, const Credentials& credentials);
  const std::string& endpoint() const { return endpoint_; }
  zmq::socket_t& socket() { return socket_; }

  void send(std::string_view type, nlohmann::json body = nlohmann::json::object());
  /// The next checked message (protocol::read_frame: a data frame's records read without a DOM),
  /// waiting at most `timeout`; nullopt on timeout. A frame that fails the checks is counted in
  /// malformed() and skipped.
  std::optional<protocol::Frame> receive(std::chrono::milliseconds timeout);
  /// Sends and waits for a reply of type `reply_type` (heartbeats and data frames in between are
  /// skipped); an error reply or no reply within `timeout` throws AgentError.
  nlohmann::json request(std::string_view type, nlohmann::json body, std::string_view reply_type,
                         std::chrono::milliseconds timeout);
  /// The second half of request() for a `type` request already sent: its reply, waiting until
  /// `deadline` (so that requests sent to several agents at once are awaited together); `timeout` is
  /// what the AgentTimeout message names.
  nlohmann::json await_reply(std::string_view type, std::string_view reply_type, std::chrono::steady_clock::time_point deadline,
                             std::chrono::milliseconds timeout);

  std::chrono::steady_clock::time_point last_heard() const { return last_heard_; }
  int64_t malformed() const { return malformed_; }

 private:
  std::string endpoint_;
  zmq::socket_t socket_;
  std::chrono::steady_clock::time_point last_heard_;
  int64_t malformed_ = 0;
  std::string refused_type_, refused_why_;  ///< the last frame of a known type refused on arrival (too large)
};

/// The agent's inventory, waiting up to `timeout` for an agent that may still be starting (one hello,
/// queued until it connects). An error reply, or an endpoint this workbench cannot connect to (no
/// pinned key), throws AgentError at once; no reply, AgentTimeout saying the wait in seconds.
nlohmann::json hello_within(zmq::context_t& context, const std::string& endpoint, const Credentials& credentials,
                            std::string_view client, std::chrono::milliseconds timeout);

/// HOST of tcp://HOST:PORT (PORT 1-65535, no spaces or control characters anywhere). Throws
/// std::invalid_argument for anything else.
std::string endpoint_host(const std::string& endpoint);

}  // namespace tessera::launch
