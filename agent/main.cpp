// tessera-agent: the node daemon that starts the training runtime's ranks for a workbench and streams
// their records back (docs/protocol.md). `tessera-agent keygen DIR` writes its CURVE key pair.
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <zmq.hpp>

#include "agent/agent.hpp"
#include "option_checks.hpp"
#include "protocol/keys.hpp"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera-agent: starts Tessera training ranks on this node for a workbench"};
  tessera::agent::AgentOptions options;
  std::string keys_dir, authorized_keys;
  app.add_option("--bind", options.bind, "endpoint to listen on, tcp://HOST:PORT");
  app.add_option("--keys", keys_dir, "directory holding agent.key (CURVE; required unless HOST is loopback)");
  app.add_option("--authorized-keys", authorized_keys, "file of client public keys allowed to connect");
  app.add_option("--runtime", options.runtime, "the training runtime to start (default: tessera-train next to this program, else ../runtime/tessera-train as the build tree has it)");
  app.add_option("--workdir", options.workdir, "where run directories go")->default_val("./tessera-runs");
  app.add_option("--max-ranks", options.max_ranks, "ranks running at once (default: the GPUs NVML finds, 64 without GPUs)")->check(CLI::Range(0, 4096));
  app.add_option("--grace-s", options.grace_s, "seconds between SIGTERM and SIGKILL when stopping ranks")
      ->default_val(3.0)->check(tessera::cli::finite_range(0.0, 600.0));
  app.add_option("--exit-when-idle-s", options.exit_when_idle_s,
                 "exit after this many seconds without runs, unacknowledged data or clients (0 = never)")
      ->default_val(0.0)->check(tessera::cli::finite_range(0.0, 1e6));
  app.add_option("--outbox-memory-bytes", options.outbox_memory_bytes,
                 "per run, unacknowledged data kept in memory; older frames are spilled to the run directory")
      ->default_val(options.outbox_memory_bytes)->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--outbox-disk-bytes", options.outbox_disk_bytes,
                 "per run, the most unacknowledged data spilled to disk; beyond it the run's ranks are paused "
                 "(not read) until the workbench acknowledges")
      ->default_val(options.outbox_disk_bytes)->check(CLI::Range(int64_t{0}, int64_t{1} << 50));
  app.add_option("--keep-finished-runs", options.kept_finished_runs,
                 "ended runs whose data the workbench acknowledged, still listed in the inventory (the newest); "
                 "older ones are forgotten, their run directories kept")
      ->default_val(options.kept_finished_runs)->check(CLI::Range(int64_t{0}, int64_t{100000}));
  std::string keygen_dir;
  auto* keygen = app.add_subcommand("keygen", "write a CURVE key pair to DIR/agent.key and DIR/agent.pub");
  keygen->add_option("DIR", keygen_dir, "directory for the keys")->required();
  tessera::cli::refuse_empty_values(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help, or a bad argument
  }
  try {
    if (*keygen) {
      try {
        tessera::protocol::write_keypair(keygen_dir, "agent", tessera::protocol::generate_keypair());
      } catch (const std::filesystem::filesystem_error& e) {
        throw std::invalid_argument("keygen DIR " + keygen_dir + ": cannot write agent.key and agent.pub there: " +
                                    e.code().message());
      }
      std::cout << tessera::protocol::read_public_key(keygen_dir + "/agent.pub") << "\n";
      return 0;
    }
    if (options.bind.empty()) {
      std::cerr << "tessera-agent: error: --bind tcp://HOST:PORT is required\n";
      return 2;
    }
    if (options.runtime.empty()) {
      // Next to this program (an install), else where the build tree puts it (build/runtime/).
      const auto self_dir = std::filesystem::canonical("/proc/self/exe").parent_path();
      const auto built = self_dir.parent_path() / "runtime" / "tessera-train";
      options.runtime = (std::filesystem::exists(self_dir / "tessera-train") || !std::filesystem::exists(built)
                             ? self_dir / "tessera-train"
                             : built)
                            .string();
    }
    if (!keys_dir.empty()) options.keys = tessera::protocol::read_keypair(keys_dir, "agent");
    if (!authorized_keys.empty()) options.authorized_keys = tessera::protocol::read_authorized_keys(authorized_keys);
    tessera::agent::check_options(options);
  } catch (const std::exception& e) {
    std::cerr << "tessera-agent: error: " << e.what() << "\n";
    return 2;
  }
  try {
    tessera::agent::Agent agent(options);
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    signal(SIGPIPE, SIG_IGN);
    std::cout << "tessera-agent: listening on " << agent.endpoint()
              << (options.keys ? " (CURVE, " + std::to_string(options.authorized_keys.size()) + " authorized keys)"
                               : std::string(" (loopback, unencrypted)"))
              << std::endl;
    agent.serve(g_stop);
  } catch (const std::exception& e) {
    std::cerr << "tessera-agent: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
