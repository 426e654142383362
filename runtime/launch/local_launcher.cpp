// fork/exec of the local ranks and the supervision loop.
#include "runtime/launch/local_launcher.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>
#include <thread>

namespace tessera::runtime {

namespace {

volatile sig_atomic_t g_forwarded_signal = 0;
void remember_signal(int sig) { g_forwarded_signal = sig; }

std::string describe(int rank, int status) {
  if (WIFEXITED(status)) return "rank " + std::to_string(rank) + " exited with code " + std::to_string(WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  return "rank " + std::to_string(rank) + " was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

// Stops the remaining ranks: SIGTERM to each one's process group, SIGKILL after a grace period.
void stop_all(std::map<pid_t, int>& running) {
  for (auto& [pid, rank] : running) kill(-pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!running.empty() && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) running.erase(pid);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& [pid, rank] : running) kill(-pid, SIGKILL);
  for (auto& [pid, rank] : running) waitpid(pid, nullptr, 0);
  running.clear();
}

}  // namespace

int free_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error(std::string("finding a free port: ") + std::strerror(errno));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

LaunchResult launch_local(const std::string& executable, const std::vector<std::string>& args, int nproc) {
  const std::string port = std::to_string(free_local_port());
  struct sigaction forward{};
  forward.sa_handler = remember_signal;
  sigaction(SIGINT, &forward, nullptr);
  sigaction(SIGTERM, &forward, nullptr);

  std::map<pid_t, int> running;
  const pid_t launcher = getpid();
  for (int rank = 0; rank < nproc; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      stop_all(running);
      throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      setpgid(0, 0);                        // its own process group: the launcher stops it as a unit
      prctl(PR_SET_PDEATHSIG, SIGKILL);     // and it dies with the launcher
      if (getppid() != launcher) _exit(111);  // the launcher died before prctl took effect
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", port.c_str(), 1);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(executable.c_str()));
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(executable.c_str(), argv.data());
      std::fprintf(stderr, "tessera-train: cannot start rank %d (%s): %s\n", rank, executable.c_str(), std::strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid);
    running[pid] = rank;
  }

  LaunchResult result;
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR && g_forwarded_signal) {
        result = {128 + g_forwarded_signal, -1, std::string("interrupted by signal ") + strsignal(g_forwarded_signal)};
        stop_all(running);
        break;
      }
      continue;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const int rank = it->second;
    running.erase(it);
    if (failed(status)) {
      result = {1, rank, describe(rank, status)};
      stop_all(running);
    }
  }
  return result;
}

}  // namespace tessera::runtime
