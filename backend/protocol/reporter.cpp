// Reporter: a ZeroMQ PUSH socket to the agent.
#include "protocol/reporter.hpp"

#include <cstdlib>
#include <stdexcept>

#include <zmq.hpp>

#include "protocol/wire.hpp"

namespace tessera::protocol {

struct Reporter::Impl {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::push};
};

Reporter::Reporter(const std::string& endpoint, int queue_records) : impl_(std::make_unique<Impl>()) {
  impl_->socket.set(zmq::sockopt::sndhwm, queue_records);
  impl_->socket.set(zmq::sockopt::linger, kDeliverAtExit_ms);
  impl_->socket.connect(endpoint);
}

Reporter::~Reporter() = default;

std::unique_ptr<Reporter> Reporter::from_environment() {
  const char* endpoint = std::getenv(kReportEndpointEnv);
  if (!endpoint || !*endpoint) return nullptr;
  return std::make_unique<Reporter>(endpoint);
}

void Reporter::send(std::string_view json_object) {
  if (static_cast<int64_t>(json_object.size()) > kMaxRecordBytes)
    throw std::invalid_argument("record of " + std::to_string(json_object.size()) + " bytes exceeds " +
                                std::to_string(kMaxRecordBytes));
  impl_->socket.send(zmq::const_buffer(json_object.data(), json_object.size()), zmq::send_flags::none);
}

}  // namespace tessera::protocol
