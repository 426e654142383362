// The agents' addresses: the one parser of tcp://HOST:PORT (workbench side and agent side), and the
// bytes that would let an address or a name become another line or field of a file shown safely
// (is_control_byte is spec/utf8.hpp's, the one the history's names and tags are held to).
#pragma once

#include <string>
#include <string_view>

#include "spec/utf8.hpp"

namespace tessera::protocol {

using spec::is_control_byte;
/// A control character or a space: it would split a whitespace-separated field (known_agents).
constexpr bool is_blank_or_control(char c) { return c == ' ' || is_control_byte(c); }

/// `text` with every byte that `unsafe` picks shown as '?', for an error message or a comment line.
std::string with_unsafe_shown(std::string_view text, bool (*unsafe)(char) = is_blank_or_control);

enum class PortRule {
  connect,  ///< 1-65535: an address to connect to
  bind,     ///< 0-65535 or '*': 0 and '*' ask for a free port
};

struct TcpEndpoint {
  std::string host;  ///< without the brackets of an IPv6 address
  std::string port;  ///< digits, or "*" (PortRule::bind)
};

/// An IPv6 address as HOST (tcp://[::1]:7070): its socket needs ZMQ_IPV6 set, or ZeroMQ refuses the
/// bind ("No such device") and a connect never completes.
inline bool is_ipv6_host(const TcpEndpoint& endpoint) { return endpoint.host.find(':') != std::string::npos; }

/// Why `host` cannot be a host name or an address for MASTER_ADDR (IPv4, IPv6 with a %scope), or "":
/// the one rule of the agent (a launch's master_addr) and tessera-train (its environment). A name that
/// is merely unknown passes: the rendezvous waits for it (a pod's DNS record may come late). ":::" and
/// "-oProxy" passed the agent's and the rank spent the rendezvous's minute on them.
std::string host_syntax_problem(std::string_view host);

/// Splits tcp://HOST:PORT. Throws std::invalid_argument "ENDPOINT is not tcp://HOST:PORT (RULE)"
/// for anything else: another scheme, an empty host or port, a port out of `rule`'s range, and any
/// space or control character (shown as '?' in the message).
TcpEndpoint parse_tcp_endpoint(std::string_view endpoint, PortRule rule = PortRule::connect);

}  // namespace tessera::protocol
