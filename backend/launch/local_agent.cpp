// Local agent: find the programs, reuse a live agent or start a detached one.
#include "launch/local_agent.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tessera::launch {

namespace fs = std::filesystem;

namespace {

bool executable(const fs::path& path) { return fs::is_regular_file(path) && ::access(path.c_str(), X_OK) == 0; }

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Answers a hello within `timeout` with our key.
bool answers(const std::string& endpoint, const Credentials& credentials, std::chrono::milliseconds timeout) {
  try {
    zmq::context_t context;
    AgentConnection connection(context, endpoint, credentials);
    connection.request("hello", {{"client", "tessera-local"}}, "inventory", timeout);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::string find_program(const std::string& name, const std::string& env_var, const std::string& build_subdir) {
  if (const char* value = std::getenv(env_var.c_str()); value && *value) {
    if (!executable(value)) throw std::runtime_error(env_var + "=" + value + " is not an executable file");
    return value;
  }
  const fs::path self_dir = fs::canonical("/proc/self/exe").parent_path();
  for (const fs::path& candidate : {self_dir / name, self_dir.parent_path() / build_subdir / name})
    if (executable(candidate)) return candidate.string();
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty() && executable(fs::path(dir) / name)) return (fs::path(dir) / name).string();
  }
  throw std::runtime_error("cannot find " + name + " (set " + env_var + ", or put it next to " + self_dir.string() +
                           " or on PATH)");
}

std::string ensure_local_agent(const Credentials& credentials, double idle_exit_s) {
  const fs::path dir = fs::path(protocol::config_dir()) / "local-agent";
  fs::create_directories(dir);
  const fs::path endpoint_file = dir / "endpoint";
  if (fs::exists(endpoint_file)) {
    const std::string endpoint = read_file(endpoint_file);
    if (!endpoint.empty() && answers(endpoint, credentials, std::chrono::milliseconds(1500))) return endpoint;
  }
  if (!fs::exists(dir / "agent.key")) protocol::write_keypair(dir.string(), "agent", protocol::generate_keypair());
  {
    std::ofstream authorized(dir / "authorized_keys", std::ios::trunc);
    authorized << credentials.client.public_key << " this workbench\n";
  }
  const std::string agent = find_program("tessera-agent", "TESSERA_AGENT", "agent");
  const std::string runtime = find_program("tessera-train", "TESSERA_TRAIN", "runtime");
  const fs::path log = dir / "agent.log";
  fs::remove(log);
  const std::vector<std::string> args{agent, "--bind", "tcp://127.0.0.1:0", "--keys", dir.string(),
                                      "--authorized-keys", (dir / "authorized_keys").string(), "--runtime", runtime,
                                      "--workdir", (dir / "work").string(), "--exit-when-idle-s",
                                      std::to_string(idle_exit_s)};
  const std::string pid_path = (dir / "agent.pid").string();
  std::vector<char*> argv;
  std::vector<std::string> copies = args;
  for (auto& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Detached (double fork, new session): the agent outlives this command and holds the run.
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int in = ::open("/dev/null", O_RDONLY);
    if (out >= 0) {
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
    }
    if (in >= 0) dup2(in, STDIN_FILENO);
    const int pid_file = ::open(pid_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (pid_file >= 0) {
      char text[24];
      int n = 0;
      for (pid_t p = getpid(); p > 0; p /= 10) text[n++] = static_cast<char>('0' + p % 10);
      for (int i = n - 1; i >= 0; --i) (void)!write(pid_file, &text[i], 1);
      ::close(pid_file);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  waitpid(child, nullptr, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = read_file(log);
    const auto at = text.find("listening on ");
    const auto end = at == std::string::npos ? std::string::npos : text.find(' ', at + 13);
    if (end != std::string::npos) {
      const std::string endpoint = text.substr(at + 13, end - at - 13);
      protocol::KnownAgents(credentials.known_agents_path).pin(endpoint, protocol::read_public_key((dir / "agent.pub").string()));
      std::ofstream(endpoint_file, std::ios::trunc) << endpoint;
      return endpoint;
    }
    if (text.find("error") != std::string::npos) throw std::runtime_error("the local agent did not start: " + text);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("the local agent did not start within 10 s (see " + log.string() + ")");
}

}  // namespace tessera::launch
