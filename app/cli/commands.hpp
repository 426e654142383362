// The subcommands of tessera-cli, each group registered by its own file.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "option_checks.hpp"
#include "spec/run_spec.hpp"

namespace tessera::cli {

/// A user error at the edge (bad argument, unreadable file): printed without a trace, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// `text` written to `path` whole or not at all: into a file beside it, then renamed over it (a full
/// disk or a file size limit left a saved spec or script cut short, the file it replaced gone). A
/// UsageError with the system's reason otherwise, `path` as it was (file_output.cpp).
void write_file_whole(const std::string& path, const std::string& text, bool executable = false);

/// plan, presets, validate, search, schedule, export megatron, import hf (plan_commands.cpp).
void add_plan_commands(CLI::App& app);
/// runs list, show, compare, export, import, tag, note, delete (runs_commands.cpp).
void add_runs_commands(CLI::App& app);

/// data prepare (data_commands.cpp).
void add_data_commands(CLI::App& app);
/// agents status | trust | client-key, slurm (agent_commands.cpp).
void add_agent_commands(CLI::App& app);
/// launch, runs follow, runs stop (launch_commands.cpp; after add_runs_commands).
void add_launch_commands(CLI::App& app);
/// Throws spec::SpecError with what tessera-train does not train in `spec` (launch and slurm refuse
/// it before any agent starts a rank that would).
void require_tessera_train_runs(const spec::RunSpec& spec);
/// The history file a command writes (--db, else $TESSERA_DB, else the default): created when
/// missing; a directory or device there is a UsageError (exit 2) naming what chose it.
std::string writable_history_path(const std::string& db);
/// "tcp://a:1,tcp://b:2" → endpoints; UsageError for anything else.
std::vector<std::string> split_agents(const std::string& list);

}  // namespace tessera::cli
