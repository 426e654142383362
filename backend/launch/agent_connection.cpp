// AgentConnection: socket set-up, checked receive, bounded request/reply.
#include "launch/agent_connection.hpp"

#include <algorithm>
#include <cerrno>
#include <sstream>

#include "protocol/endpoint.hpp"

namespace tessera::launch {

using Clock = std::chrono::steady_clock;

std::optional<std::string> Credentials::server_key(const std::string& endpoint) const {
  if (auto key = protocol::KnownAgents(known_agents_path).key_of(endpoint)) return key;
  if (protocol::is_loopback_endpoint(endpoint)) return std::nullopt;
  throw AgentError("no pinned key for agent " + endpoint + ": copy its agent.pub here and run `tessera-cli agents trust " +
                   endpoint + " agent.pub` (keys are listed in " + known_agents_path + ")");
}

Credentials Credentials::from_config_dir() {
  const std::string dir = protocol::config_dir();
  return {protocol::ensure_keypair(dir, "client"), dir + "/known_agents"};
}

AgentConnection::AgentConnection(zmq::context_t& context, std::string endpoint, const Credentials& credentials)
    : endpoint_(std::move(endpoint)), socket_(context, zmq::socket_type::dealer), last_heard_(Clock::now()) {
  endpoint_host(endpoint_);
  if (protocol::is_ipv6_host(protocol::parse_tcp_endpoint(endpoint_))) socket_.set(zmq::sockopt::ipv6, true);
  if (const auto key = credentials.server_key(endpoint_)) {
    socket_.set(zmq::sockopt::curve_serverkey, *key);
    socket_.set(zmq::sockopt::curve_publickey, credentials.client.public_key);
    socket_.set(zmq::sockopt::curve_secretkey, credentials.client.secret_key);
  }
  socket_.set(zmq::sockopt::maxmsgsize, protocol::kMaxTransportFrameBytes);
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::rcvhwm, 100000);
  socket_.connect(endpoint_);
}

void AgentConnection::send(std::string_view type, nlohmann::json body) {
  const std::string frame = protocol::make_frame(type, std::move(body));
  if (!socket_.send(zmq::buffer(frame), zmq::send_flags::dontwait))
    throw AgentError("agent " + endpoint_ + " is not taking messages (send queue full)");
}

int poll_sockets(zmq::pollitem_t* items, size_t count, std::chrono::milliseconds timeout) {
  try {
    return zmq::poll(items, count, timeout);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
    for (size_t i = 0; i < count; ++i) items[i].revents = 0;
    return -1;
  }
}

std::optional<protocol::Frame> AgentConnection::receive(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    // A signal (Ctrl-C, a child's end) cut the wait short: wait out what is left of it.
    if (poll_sockets(&item, 1, std::max(left, std::chrono::milliseconds(0))) < 0) continue;
    if (!(item.revents & ZMQ_POLLIN)) return std::nullopt;
    zmq::message_t message;
    if (!socket_.recv(message, zmq::recv_flags::dontwait)) continue;
    last_heard_ = Clock::now();
    bool more = message.more();
    while (more) {  // a multi-frame message is not ours: drain and count it
      zmq::message_t part;
      (void)socket_.recv(part);
      more = part.more();
    }
    if (message.more()) {
      ++malformed_;
      continue;
    }
    try {
      return protocol::read_frame(message.to_string_view());
    } catch (const protocol::ProtocolError& e) {
      ++malformed_;
      refused_type_ = e.in_reply_to();
      refused_why_ = e.what();
    }
    if (Clock::now() >= deadline) return std::nullopt;
  }
}

nlohmann::json AgentConnection::request(std::string_view type, nlohmann::json body, std::string_view reply_type,
                                        std::chrono::milliseconds timeout) {
  send(type, std::move(body));
  return await_reply(type, reply_type, Clock::now() + timeout, timeout);
}

nlohmann::json AgentConnection::await_reply(std::string_view type, std::string_view reply_type, Clock::time_point deadline,
                                            std::chrono::milliseconds timeout) {
  // Past the deadline what is already queued is still read: requests to several agents share one
  // deadline, and a reply that came while another agent was awaited is there. A bounded number: an
  // agent holds at most its send window of data frames unacknowledged (docs/protocol.md).
  constexpr int kQueuedPastDeadline = 256;
  // A reply refused as it arrived (too large for its type) is said at once, as this request's answer.
  refused_type_.clear();
  refused_why_.clear();
  const auto refused = [&] {
    if (!refused_type_.empty() && refused_type_ == reply_type)
      throw AgentError("agent " + endpoint_ + " answered " + std::string(type) + ", but the answer was refused as it arrived: " +
                       refused_why_);
  };
  for (int past = 0; past < kQueuedPastDeadline; past += Clock::now() >= deadline) {
    const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                               std::chrono::milliseconds(0));
    auto frame = receive(std::min(left, std::chrono::milliseconds(100)));
    refused();
    if (!frame) {
      if (Clock::now() >= deadline) break;
      continue;
    }
    nlohmann::json& reply = frame->message;
    const auto& t = reply["type"].get_ref<const std::string&>();
    if (t == reply_type) return std::move(reply);
    // An error answering another request (a queued ack's) is not this one's refusal.
    const auto* in_reply_to = reply.contains("in_reply_to") ? &reply["in_reply_to"] : nullptr;
    const std::string answers = in_reply_to && in_reply_to->is_string() ? in_reply_to->get<std::string>() : "";
    if (t == "error" && (answers.empty() || answers == type))
      throw AgentError("agent " + endpoint_ + " refused " + std::string(type) + ": " +
                       reply.value("code", std::string("?")) + ": " + reply.value("message", std::string()));
  }
  throw AgentTimeout("no reply from agent " + endpoint_ + " within " + std::to_string(timeout.count()) +
                   " ms (not running, unreachable, or it refused this workbench's key)");
}

nlohmann::json hello_within(zmq::context_t& context, const std::string& endpoint, const Credentials& credentials,
                            std::string_view client, std::chrono::milliseconds timeout) {
  // One hello: ZeroMQ keeps it queued until the agent's socket is there (a Slurm job's agents may
  // still be starting) and reconnects on its own, so there is nothing to ask again.
  try {
    return AgentConnection(context, endpoint, credentials)
        .request("hello", {{"client", std::string(client)}}, "inventory", timeout);
  } catch (const AgentTimeout&) {
    std::ostringstream waited;
    waited << std::chrono::duration<double>(timeout).count();
    throw AgentTimeout("no reply from agent " + endpoint + " within " + waited.str() +
                       " s (not running, unreachable, or it refused this workbench's key)");
  }
}

std::string endpoint_host(const std::string& endpoint) {
  try {
    return protocol::parse_tcp_endpoint(endpoint).host;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("agent endpoint " + std::string(e.what()));
  }
}

}  // namespace tessera::launch
