// fork/execve with a close-on-exec error pipe, process group and parent-death signal.
#include "agent/rank_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace tessera::agent {

namespace {

void close_pair(int fds[2]) {
  for (int i = 0; i < 2; ++i)
    if (fds[i] >= 0) ::close(fds[i]);
}

}  // namespace

SpawnedProcess spawn_process(const std::string& program, const std::vector<std::string>& args,
                             const std::vector<std::string>& env_overrides, const std::string& cwd) {
  // Everything the child needs is built before fork: after it only async-signal-safe calls.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& o : env_overrides) overridden = overridden || o.compare(0, name.size() + 1, name + "=") == 0;
    if (!overridden) env.push_back(entry);
  }
  env.insert(env.end(), env_overrides.begin(), env_overrides.end());
  std::vector<char*> envp, argv;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string program_copy = program;
  argv.push_back(program_copy.data());
  std::vector<std::string> args_copy = args;
  for (auto& a : args_copy) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0) {
    const int e = errno;
    close_pair(out), close_pair(err), close_pair(status);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(e));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close_pair(out), close_pair(err), close_pair(status);
    throw std::runtime_error(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the agent died before prctl took effect
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    int child_errno = 0;
    if (chdir(cwd.c_str()) != 0) {
      child_errno = errno;
    } else {
      execve(argv[0], argv.data(), envp.data());
      child_errno = errno;
    }
    (void)!write(status[1], &child_errno, sizeof child_errno);
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so that the group exists before any kill(-pid)
  ::close(out[1]);
  ::close(err[1]);
  ::close(status[1]);
  int child_errno = 0;
  ssize_t n;
  do n = read(status[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  ::close(status[0]);
  if (n == sizeof child_errno) {
    waitpid(pid, nullptr, 0);
    ::close(out[0]);
    ::close(err[0]);
    throw std::runtime_error("cannot execute " + program + ": " + std::strerror(child_errno));
  }
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK);
  return {pid, out[0], err[0]};
}

std::string describe_exit(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* name = strsignal(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : std::string());
  }
  return "stopped (status " + std::to_string(wait_status) + ")";
}

}  // namespace tessera::agent
