// tcp://HOST:PORT parsing, the host-name rule and the safe-byte tests (endpoint.hpp).
#include "protocol/endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace tessera::protocol {

std::string host_syntax_problem(std::string_view host) {
  if (host.empty()) return "it is empty";
  if (host.size() > 253) return "it is " + std::to_string(host.size()) + " characters long, a host name at most 253";
  for (const char c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' && c != ':' && c != '%')
      return std::string("it holds ") + (c == ' ' ? std::string("a space") : "'" + std::string(1, c) + "'") +
             ", which no host name or address has";
  if (host.front() == '-') return "it starts with '-', which no host name has";
  if (host.find(':') != std::string_view::npos) {
    const std::string address(host.substr(0, host.find('%')));
    in6_addr parsed{};
    if (::inet_pton(AF_INET6, address.c_str(), &parsed) != 1) return "it has ':' but is no IPv6 address";
  }
  return {};
}

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
