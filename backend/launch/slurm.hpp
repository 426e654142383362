// A Slurm batch script for a run: one tessera-agent per node started with srun (CURVE keys generated in
// the job directory, this workbench's key authorized), then `tessera-cli launch --follow` against them.
#pragma once

#include <string>

#include "spec/run_spec.hpp"

namespace tessera::launch {

struct SlurmOptions {
  std::string cli;      ///< absolute path of tessera-cli on the cluster
  std::string agent;    ///< absolute path of tessera-agent
  std::string runtime;  ///< absolute path of tessera-train
  int port = 7070;      ///< the agents' TCP port (TESSERA_AGENT_PORT overrides it at run time)
  std::string name;     ///< run name (default: the spec's); each job's run adds " (job ID)"
  std::string time_limit = "01:00:00";  ///< sbatch --time, [D-]HH:MM:SS
  std::string partition, account;       ///< sbatch --partition / --account when not empty
};

/// Whether `text` is a time limit sbatch takes as [D-]HH:MM:SS (or whole minutes).
bool is_slurm_time(const std::string& text);
/// Whether `text` can stand in an #SBATCH line unquoted (partition and account names: letters,
/// digits, '_', '-', '.', ',').
bool is_slurm_word(const std::string& text);

/// The script. With TESSERA_NODE_ONLY=1 it runs only the per-node command (what srun starts on each
/// node), which is how it is tested off a cluster.
std::string slurm_script(const spec::RunSpec& spec, const SlurmOptions& options);
/// The longest name a job's run of `name` can take: `name` with the " (job ID, restart N)" the
/// script adds, at the largest job id and restart count (what the history must accept).
std::string longest_job_run_name(const std::string& name);

}  // namespace tessera::launch
