// CURVE key files, authorized keys, pinned agent keys and the loopback test.
#include "protocol/keys.hpp"

#include "protocol/endpoint.hpp"

#include <algorithm>
#include <sys/stat.h>
#include <zmq.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace tessera::protocol {

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

void write_file(const fs::path& path, const std::string& text, fs::perms perms) {
  if (fs::exists(path)) throw std::runtime_error(path.string() + " exists already; not overwriting it");
  {
    std::ofstream out(path);
    if (!out) throw std::runtime_error("cannot write " + path.string());
    fs::permissions(path, perms, fs::perm_options::replace);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
  }
}

}  // namespace

KeyPair generate_keypair() {
  std::array<char, 41> pub{}, sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0)
    throw std::runtime_error("this libzmq has no CURVE support (built without libsodium)");
  return {pub.data(), sec.data()};
}

bool is_z85_key(const std::string& text) {
  if (text.size() != 40) return false;
  std::array<uint8_t, 32> bytes{};
  return zmq_z85_decode(bytes.data(), text.c_str()) != nullptr;
}

void write_keypair(const std::string& dir, const std::string& name, const KeyPair& keys) {
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  write_file(fs::path(dir) / (name + ".key"),
             "# Tessera CURVE key pair: keep this file secret\npublic " + keys.public_key + "\nsecret " +
                 keys.secret_key + "\n",
             fs::perms::owner_read | fs::perms::owner_write);
  write_file(fs::path(dir) / (name + ".pub"), keys.public_key + "\n",
             fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
}

KeyPair read_keypair(const std::string& dir, const std::string& name) {
  const fs::path path = fs::path(dir) / (name + ".key");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string() + " (create it with `tessera-agent keygen " + dir + "`)");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    throw std::runtime_error(path.string() + " is readable by others; chmod 600 it");
  KeyPair keys;
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string label, value;
    fields >> label >> value;
    if (label == "public") keys.public_key = value;
    else if (label == "secret") keys.secret_key = value;
  }
  if (!is_z85_key(keys.public_key) || !is_z85_key(keys.secret_key))
    throw std::runtime_error(path.string() + " must hold a line \"public KEY\" and a line \"secret KEY\" (Z85, 40 characters)");
  return keys;
}

KeyPair ensure_keypair(const std::string& dir, const std::string& name) {
  if (!fs::exists(fs::path(dir) / (name + ".key"))) write_keypair(dir, name, generate_keypair());
  return read_keypair(dir, name);
}

std::string read_public_key(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const std::string key = line.substr(0, line.find_first_of(" \t"));
    if (!is_z85_key(key)) throw std::runtime_error(path + ": \"" + key + "\" is not a Z85 public key");
    return key;
  }
  throw std::runtime_error(path + " holds no key");
}

std::set<std::string> read_authorized_keys(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read authorized keys " + path);
  std::set<std::string> keys;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const std::string key = line.substr(0, line.find_first_of(" \t"));
    if (!is_z85_key(key))
      throw std::runtime_error(path + ":" + std::to_string(number) + ": \"" + key + "\" is not a Z85 public key");
    keys.insert(key);
  }
  return keys;
}

KnownAgents::KnownAgents(std::string path) : path_(std::move(path)) {}

std::optional<std::string> KnownAgents::key_of(const std::string& endpoint) const {
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(trim(line));
    std::string ep, key;
    if (fields >> ep >> key && ep == endpoint) return key;
  }
  return std::nullopt;
}

void KnownAgents::pin(const std::string& endpoint, const std::string& public_key) {
  if (!is_z85_key(public_key)) throw std::runtime_error("\"" + public_key + "\" is not a Z85 public key");
  // One "ENDPOINT KEY" line each: an endpoint with a space or line break would write another entry.
  if (endpoint.empty() || std::any_of(endpoint.begin(), endpoint.end(), is_blank_or_control))
    throw std::runtime_error("an agent endpoint to pin must have no spaces or control characters");
  std::map<std::string, std::string> entries;
  {
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(trim(line));
      std::string ep, key;
      if (fields >> ep >> key) entries[ep] = key;
    }
  }
  entries[endpoint] = public_key;
  fs::create_directories(fs::path(path_).parent_path());
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& [ep, key] : entries) out << ep << ' ' << key << '\n';
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  fs::rename(tmp, path_);
}

bool is_loopback_endpoint(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0) return true;
  std::string host;
  try {
    host = parse_tcp_endpoint(endpoint, PortRule::bind).host;
  } catch (const std::invalid_argument&) {
    return false;
  }
  if (host == "localhost" || host == "::1") return true;
  if (host.rfind("127.", 0) != 0 || host.size() > 15) return false;
  return host.find_first_not_of("0123456789.") == std::string::npos;  // an address, not a host name
}

std::string config_dir() {
  if (const char* dir = std::getenv("TESSERA_CONFIG_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return std::string(xdg) + "/tessera";
  const char* home = std::getenv("HOME");
  if (!home || !*home) throw std::runtime_error("neither TESSERA_CONFIG_DIR, XDG_CONFIG_HOME nor HOME is set");
  return std::string(home) + "/.config/tessera";
}

}  // namespace tessera::protocol
