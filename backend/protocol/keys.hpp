// CURVE key material of agents and workbenches: key pairs on disk, the agent's list of authorized client
// keys, the workbench's pinned agent keys (like SSH known hosts), and the loopback test for endpoints.
#pragma once

#include <optional>
#include <set>
#include <string>

namespace tessera::protocol {

/// Z85-encoded CURVE keys (40 characters each).
struct KeyPair {
  std::string public_key;
  std::string secret_key;
};

KeyPair generate_keypair();
/// A 40-character Z85 string that decodes to 32 bytes.
bool is_z85_key(const std::string& text);

/// Writes DIR/NAME.key (both keys, mode 0600) and DIR/NAME.pub (the public key), creating DIR (0700).
/// Throws std::runtime_error when a file exists already or cannot be written.
void write_keypair(const std::string& dir, const std::string& name, const KeyPair& keys);
/// Reads DIR/NAME.key. Throws std::runtime_error naming the file and what is wrong with it.
KeyPair read_keypair(const std::string& dir, const std::string& name);
/// Reads DIR/NAME.key, generating and writing the pair first when it does not exist.
KeyPair ensure_keypair(const std::string& dir, const std::string& name);
/// Reads a public key file: its first non-comment line. Throws std::runtime_error.
std::string read_public_key(const std::string& path);

/// An authorized-keys file: one Z85 public key per line, optionally followed by a comment; '#' lines
/// and blank lines ignored. Throws std::runtime_error naming the line of a malformed key.
std::set<std::string> read_authorized_keys(const std::string& path);

/// The workbench's pinned agent keys: lines "ENDPOINT KEY" in a file (created on first pin).
class KnownAgents {
 public:
  explicit KnownAgents(std::string path);
  std::optional<std::string> key_of(const std::string& endpoint) const;
  /// Adds or replaces the key of an endpoint and rewrites the file.
  void pin(const std::string& endpoint, const std::string& public_key);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// tcp://127.x.y.z:P, tcp://localhost:P, tcp://[::1]:P and ipc:// or inproc:// endpoints.
bool is_loopback_endpoint(const std::string& endpoint);

/// The user's Tessera config directory: $TESSERA_CONFIG_DIR, else $XDG_CONFIG_HOME/tessera, else
/// ~/.config/tessera.
std::string config_dir();

}  // namespace tessera::protocol
