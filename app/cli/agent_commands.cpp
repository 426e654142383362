// tessera-cli agents status | trust | client-key, and slurm: the node agents seen from the workbench.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/text_table.hpp"
#include "launch/agent_connection.hpp"
#include "launch/local_agent.hpp"
#include "launch/slurm.hpp"
#include "planner/plan.hpp"
#include "planner/runtime_support.hpp"
#include "protocol/keys.hpp"
#include "spec/run_spec.hpp"
#include "store/types.hpp"

namespace tessera::cli {

void require_tessera_train_runs(const spec::RunSpec& spec) {
  if (auto problems = planner::tessera_train_problems(spec); !problems.empty()) throw spec::SpecError(std::move(problems));
}

std::vector<std::string> split_agents(const std::string& list) {
  std::vector<std::string> endpoints;
  std::stringstream items(list);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.empty()) continue;
    try {
      launch::endpoint_host(item);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--agents: ") + e.what());
    }
    // One agent per node: an agent given twice would refuse the second node's launch as busy.
    if (const auto same = std::find(endpoints.begin(), endpoints.end(), item); same != endpoints.end())
      throw UsageError("--agents: " + item + " is given for node " + std::to_string(same - endpoints.begin()) +
                       " and node " + std::to_string(endpoints.size()) + " (one agent per node)");
    endpoints.push_back(item);
  }
  if (endpoints.empty()) throw UsageError("--agents lists no agent");
  return endpoints;
}

void add_agent_commands(CLI::App& app) {
  auto* agents = app.add_subcommand("agents", "The node agents: status, pinned keys");
  agents->require_subcommand(1);
  {
    auto* cmd = agents->add_subcommand("status", "Inventory of each agent: host, cores, memory, GPUs, runs");
    static std::string list;
    cmd->add_option("--agents", list, "tcp://HOST:PORT,... (default: the local agent)")->check(non_empty());
    cmd->callback([] {
      const auto credentials = launch::Credentials::from_config_dir();
      std::vector<std::string> endpoints;
      if (!list.empty()) {
        endpoints = split_agents(list);
      } else {
        std::ifstream in(protocol::config_dir() + "/local-agent/endpoint");
        std::string endpoint;
        if (!(in >> endpoint)) {
          std::cout << "no local agent has been started (tessera-cli launch starts one); give --agents\n";
          return;
        }
        endpoints.push_back(endpoint);
      }
      TextTable table({"agent", "state", "host", "version", "cores", "memory GiB", "GPUs", "ranks", "runs", "CURVE"},
                      {false, false, false, false, true, true, false, true, true, false});
      int unreachable = 0;
      zmq::context_t context;
      for (const auto& endpoint : endpoints) {
        try {
          launch::AgentConnection connection(context, endpoint, credentials);
          const auto inv = connection.request("hello", {{"client", "tessera-cli"}}, "inventory", std::chrono::milliseconds(3000));
          std::string gpus;
          for (const auto& g : inv["gpus"]) gpus += (gpus.empty() ? "" : ", ") + g.value("name", std::string("?"));
          std::string runs;
          for (const auto& r : inv["runs"])
            runs += (runs.empty() ? "" : " ") + r.value("run", std::string()).substr(0, 8) + ":" + r.value("state", std::string());
          table.add_row({endpoint, "up", inv.value("hostname", std::string()), inv.value("version", std::string()),
                         std::to_string(inv.value("cpu_cores", 0)), format_gib(inv.value("memory_bytes", int64_t{0})),
                         gpus.empty() ? "none" : gpus,
                         std::to_string(inv.value("ranks_in_use", 0)) + "/" + std::to_string(inv.value("max_ranks", 0)),
                         runs.empty() ? "-" : runs, inv.value("encrypted", false) ? "yes" : "no"});
        } catch (const std::exception& e) {
          ++unreachable;
          table.add_row({endpoint, "unreachable", "", "", "", "", "", "", "", ""});
          std::cerr << "warning: " << printable(e.what(), true) << "\n";
        }
      }
      std::cout << table.str();
      if (unreachable > 0) throw std::runtime_error(std::to_string(unreachable) + " agent(s) unreachable");
    });
  }
  {
    auto* cmd = agents->add_subcommand("trust", "Pin an agent's public key (its agent.pub) for its endpoint");
    static std::string endpoint, key_file;
    cmd->add_option("endpoint", endpoint, "tcp://HOST:PORT")->required();
    cmd->add_option("key", key_file, "the agent's agent.pub")->required();
    cmd->callback([] {
      try {
        launch::endpoint_host(endpoint);
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
      std::string key;
      try {
        key = protocol::read_public_key(key_file);
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
      const auto credentials = launch::Credentials::from_config_dir();
      protocol::KnownAgents(credentials.known_agents_path).pin(endpoint, key);
      std::cout << "pinned " << endpoint << " " << key << " in " << credentials.known_agents_path << "\n";
    });
  }
  agents->add_subcommand("client-key", "Print this workbench's public key (for an agent's --authorized-keys)")
      ->callback([] { std::cout << launch::Credentials::from_config_dir().client.public_key << "\n"; });

  {
    auto* cmd = app.add_subcommand("slurm", "A Slurm batch script: one agent per node with srun, then the launch");
    static std::string spec_path, out_path, name, time_limit, partition, account;
    static int port = 7070;
    cmd->add_option("spec", spec_path, "Run spec (JSON)")->required();
    cmd->add_option("-o,--output", out_path, "where to write the script")->required();
    cmd->add_option("--port", port, "the agents' TCP port")->check(CLI::Range(1, 65535));
    cmd->add_option("--name", name, "run name (default: the spec's); each job's run adds \" (job ID)\"");
    cmd->add_option("--time", time_limit,
                    "sbatch --time, [D-]HH:MM:SS (default: 1.5 x the plan's predicted run + 15 min)");
    cmd->add_option("--partition", partition, "sbatch --partition");
    cmd->add_option("--account", account, "sbatch --account");
    cmd->callback([] {
      const auto spec = spec::load_spec_file(spec_path);
      require_tessera_train_runs(spec);
      if (!time_limit.empty() && !launch::is_slurm_time(time_limit))
        throw UsageError("--time " + time_limit + ": give [D-]HH:MM:SS (as 12:00:00 or 2-00:00:00) or whole minutes");
      // Each job's run is named after it, with what the script adds: the history would refuse it in the
      // job, after its wait in the queue.
      if (!name.empty())
        if (const auto problem = store::run_name_problem(launch::longest_job_run_name(name)); !problem.empty())
          throw UsageError("--name (with the \" (job ID, restart N)\" each job adds): " + problem);
      for (const auto& [option, value] : {std::pair{"--partition", partition}, std::pair{"--account", account}})
        if (!value.empty() && !launch::is_slurm_word(value))
          throw UsageError(std::string(option) + " " + value + ": letters, digits, '_', '-', '.' and ',' only");
      launch::SlurmOptions options;
      options.cli = std::filesystem::canonical("/proc/self/exe").string();
      options.agent = launch::find_program("tessera-agent", "TESSERA_AGENT", "agent");
      options.runtime = launch::find_program("tessera-train", "TESSERA_TRAIN", "runtime");
      options.port = port;
      options.name = name;
      options.partition = partition;
      options.account = account;
      std::string time_note;
      if (!time_limit.empty()) {
        options.time_limit = time_limit;
      } else {
        // The run as planned, with room for loading and checkpoints: 1.5 x + 15 min, whole 5 minutes.
        const double run_s = planner::make_plan(spec).prediction.iteration_time_s * static_cast<double>(spec.training.train_steps);
        // Past a year the default is no limit a scheduler takes (10^12 steps of llama3-70b-64xh100 made one of
        // 236 million days).
        constexpr double kMostDefault_s = 365.0 * 86400;
        if (!(1.5 * run_s + 900 <= kMostDefault_s))
          throw UsageError("the default time limit, 1.5 x the predicted " + format_fixed(run_s / 86400, 0) + " days of " +
                           std::to_string(spec.training.train_steps) +
                           " steps + 15 min, is more than a year: give the job's limit with --time");
        const int64_t limit_s = (static_cast<int64_t>(std::ceil((1.5 * run_s + 900) / 300))) * 300;
        char text[32];
        const int64_t days = limit_s / 86400, rest = limit_s % 86400;
        if (days > 0)
          std::snprintf(text, sizeof text, "%lld-%02lld:%02lld:00", static_cast<long long>(days),
                        static_cast<long long>(rest / 3600), static_cast<long long>(rest % 3600 / 60));
        else
          std::snprintf(text, sizeof text, "%02lld:%02lld:00", static_cast<long long>(rest / 3600),
                        static_cast<long long>(rest % 3600 / 60));
        options.time_limit = text;
        time_note = ": 1.5 x the predicted " + format_fixed(run_s / 3600, 2) + " h of " +
                    std::to_string(spec.training.train_steps) + " steps + 15 min (--time sets another)";
      }
      write_file_whole(out_path, launch::slurm_script(spec, options), /*executable=*/true);
      std::cout << "wrote " << out_path << " (" << spec.cluster.nodes << (spec.cluster.nodes == 1 ? " node" : " nodes")
                << "); submit it with sbatch " << out_path << "\n  time limit " << options.time_limit << time_note << "\n";
    });
  }
}

}  // namespace tessera::cli
