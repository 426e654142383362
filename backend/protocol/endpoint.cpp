// tcp://HOST:PORT parsing and the safe-byte tests (endpoint.hpp).
#include "protocol/endpoint.hpp"

#include <algorithm>
#include <stdexcept>

namespace tessera::protocol {

std::string with_unsafe_shown(std::string_view text, bool (*unsafe)(char)) {
  std::string shown;
  shown.reserve(text.size());
  for (char c : text) shown += unsafe(c) ? '?' : c;
  return shown;
}

TcpEndpoint parse_tcp_endpoint(std::string_view endpoint, PortRule rule) {
  const auto refuse = [&](const std::string& why) {
    throw std::invalid_argument(with_unsafe_shown(endpoint) + " is not tcp://HOST:PORT" + why);
  };
  constexpr std::string_view scheme = "tcp://";
  if (endpoint.substr(0, scheme.size()) != scheme) refuse("");
  if (std::any_of(endpoint.begin(), endpoint.end(), is_blank_or_control)) refuse(" (no spaces or control characters)");
  const std::string_view rest = endpoint.substr(scheme.size());
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size()) refuse("");
  const std::string_view port = rest.substr(colon + 1);
  const std::string range = rule == PortRule::connect ? " (PORT is 1-65535)" : " (PORT is 0-65535; 0 or * picks a free port)";
  if (!(rule == PortRule::bind && port == "*")) {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) refuse(range);
    const int number = std::stoi(std::string(port));
    if (number > 65535 || (rule == PortRule::connect && number < 1)) refuse(range);
  }
  std::string_view host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {std::string(host), std::string(port)};
}

}  // namespace tessera::protocol
