// tessera-train: trains a run spec as one rank (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT from the
// environment, as torchrun sets them) or, with --nproc N, launches N local ranks of itself.
// Bad input exits 2 before any rank starts; a failed rank exits 1 naming the cause.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <c10/util/Exception.h>
#include <torch/cuda.h>

#include "app/option_checks.hpp"
#include "runtime/comm/comm_error.hpp"
#include "runtime/comm/gloo_world.hpp"
#include "data/token_file.hpp"
#include "runtime/launch/host_memory.hpp"
#include "runtime/launch/local_launcher.hpp"
#include "runtime/train/batches.hpp"
#include "runtime/train/checkpoint.hpp"
#include "planner/runtime_support.hpp"
#include "runtime/train/trainer.hpp"
#include "spec/run_spec.hpp"

namespace {

using tessera::spec::FieldError;
using tessera::spec::SpecError;

[[noreturn]] void exit_now(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);  // no destructors: a failed peer may have left communication threads blocked
}

// The output directory exists (or is created) and accepts files.
void require_writable_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string probe = dir + "/.tessera-write-test-" + std::to_string(getpid());
  FILE* f = ec ? nullptr : std::fopen(probe.c_str(), "w");
  if (!f) throw SpecError({{"--out", "--out " + dir + " is not a writable directory"}});
  std::fclose(f);
  std::filesystem::remove(probe);
}

// Whether DIR/metrics.jsonl holds a run's step records (read up to the first one).
bool holds_step_records(const std::string& dir) {
  std::ifstream in(dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.contains("type") && record["type"] == "step") return true;
  }
  return false;
}

// One tessera-train per --out on a machine: a second one writing the same metrics.jsonl and
// checkpoints would lose one run's records. Held (flock) until the process ends; the --nproc
// launcher holds it for its ranks (TESSERA_TRAIN_OUT_LOCKED).
void lock_out_dir(const std::string& dir) {
  if (std::getenv("TESSERA_TRAIN_OUT_LOCKED")) return;
  const std::string path = dir + "/.tessera-train.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw SpecError({{"--out", "--out " + dir + ": cannot open " + path + ": " + std::strerror(errno)}});
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    const ssize_t got = ::pread(fd, pid, sizeof(pid) - 1, 0);
    std::string holder = got > 0 ? std::string(pid, static_cast<size_t>(got)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    throw SpecError({{"--out", "--out " + dir + " is in use by another tessera-train" + (holder.empty() ? "" : " (pid " + holder + ")") +
                                   ": give another --out, or wait until it ends"}});
  }
  const std::string mine = std::to_string(getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) < 0) {
    // The pid is only for the message above: the lock holds without it.
  }
}

// A whole number from 1 to `most`, said so when it is not (CLI11's PositiveNumber printed "Value 0
// not in range 0.000000 to 1797693…", and 99999999999999999999 became 9223372036854775807).
CLI::Validator whole_number_from_one(int64_t most) {
  return CLI::Validator(
      [most](std::string& text) -> std::string {
        int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > most)
          return "must be a whole number from 1 to " + std::to_string(most) + ", got '" + text + "'";
        return {};
      },
      "1.." + std::to_string(most));
}

// What LibTorch says of a failure, without its C++ backtrace.
std::string message_of(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

}  // namespace

int main(int argc, char** argv) {
  // --nproc starts its ranks as /proc/self/exe, which the kernel names "exe": named so, pgrep and pkill
  // find them as they find the launcher.
  prctl(PR_SET_NAME, "tessera-train", 0, 0, 0);
  tessera::runtime::turn_off_flight_recorder_unless_asked();  // changes the environment: before any thread
  CLI::App app{"tessera-train: trains a Tessera run spec (TP, SP, PP, DP) with LibTorch"};
  std::string spec_path, out_dir, data;
  int64_t steps = 0;
  int nproc = 0, threads = 0;
  int64_t save_every = 0;
  bool resume = false, no_checkpoint = false;
  app.add_option("--spec", spec_path, "run spec (JSON)")->required();
  app.add_option("--out", out_dir, "directory for spec.json and metrics.jsonl");
  app.add_option("--data", data, "token file (docs/data.md) or `synthetic`; default: the shipped corpus");
  app.add_option("--steps", steps, "train this many steps (overrides training.train_steps)")
      ->check(whole_number_from_one(int64_t{1} << 40));
  app.add_option("--save-every", save_every, "checkpoint every N steps (always at the end; needs --out)")
      ->check(whole_number_from_one(int64_t{1} << 40));
  app.add_flag("--no-checkpoint", no_checkpoint, "write no checkpoint, not even at the end (benchmarks)")
      ->excludes("--save-every");
  app.add_flag("--resume", resume, "continue from the newest complete checkpoint in --out");
  bool no_memory_check = false;
  app.add_flag("--no-memory-check", no_memory_check,
               "with --device cpu, start even when the planner predicts the ranks need more memory than is available");
  app.add_option("--nproc", nproc, "launch this many local ranks (must equal the spec's world size)")
      ->check(whole_number_from_one(4096));
  app.add_option("--threads", threads, "intra-op threads per rank (default: cores / local ranks)")
      ->check(CLI::Range(1, 1024));
  std::string device = "cpu";
  app.add_option("--device", device, "cpu (Gloo) or cuda (NCCL; the spec's precision, fp32 or bf16, on either; see docs/performance.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  std::string kernels;  // default: fused on a GPU, aten on the CPU (where the references are plain loops)
  app.add_option("--kernels", kernels,
                 "aten (LibTorch's ops) or fused (Tessera's kernels: the CPU references on CPU, the CUDA kernels on "
                 "GPUs) for the norms, RoPE, the activation, the cross-entropy and AdamW; default: fused with --device cuda, "
                 "aten with --device cpu")
      ->check(CLI::IsMember({"aten", "fused"}));
  std::string pipeline_links;  // default: directed with NCCL (which matches by order), group with Gloo
  app.add_option("--pipeline-links", pipeline_links,
                 "group (pipeline sends and receives through the pp group) or directed (one group of two per "
                 "direction between neighbouring stages); default: directed with --device cuda, group with --device cpu")
      ->check(CLI::IsMember({"group", "directed"}));
  tessera::cli::refuse_empty_values(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help, or a bad argument: 2 as for every refusal
  }

  tessera::spec::RunSpec spec;
  tessera::runtime::RankEnvironment env;
  int64_t uncut_warmup_steps = 0;  // the spec's warm-up when --steps cut it
  try {
    spec = tessera::spec::load_spec_file(spec_path);
    if (steps > 0) spec.training.train_steps = steps;
    // A short run of a spec that warms up for longer (a smoke test of the shipped examples): the
    // warm-up is cut to the run, said once by local rank 0 (--nproc's ranks get --steps too).
    if (steps > 0 && spec.training.warmup_steps > steps) {
      uncut_warmup_steps = spec.training.warmup_steps;
      const char* rank = std::getenv("LOCAL_RANK");
      if (nproc == 0 && (!rank || std::string(rank) == "0"))
        std::cerr << "tessera-train: note: --steps " << steps << ": training.warmup_steps="
                  << spec.training.warmup_steps << " cut to " << steps << "\n";
      spec.training.warmup_steps = steps;
    }
    auto errors = tessera::planner::tessera_train_problems(spec);
    if (steps > 0)  // the spec was valid as written: what breaks now, --steps broke
      for (const auto& e : tessera::spec::validate(spec, tessera::spec::PresetCatalog::builtin()))
        errors.push_back({"--steps", "--steps " + std::to_string(steps) + ": " + e.message});
    if (data.empty()) data = tessera::runtime::default_data_path();
    if (errors.empty() && data != "synthetic") {
      try {  // read once here, so a bad file stops the run before any rank starts
        tessera::runtime::FileTokens(data, spec.training.seed, spec.model.vocab_size, spec.model.seq_length,
                                     spec.training.global_batch_size);
      } catch (const tessera::data::DataError& e) {
        errors.push_back({"--data", e.what()});
      }
    }
    if (device == "cuda") {
      const auto gpus = static_cast<int64_t>(torch::cuda::device_count());
      if (gpus == 0)
        errors.push_back({"--device", "--device cuda: no CUDA GPU is visible to this process "
                                      "(torch::cuda::device_count() = 0); use --device cpu"});
      else if (nproc > gpus)
        errors.push_back({"--device", "--device cuda: --nproc " + std::to_string(nproc) + " ranks on this machine need as "
                                      "many GPUs, but " + std::to_string(gpus) + " are visible (one GPU per rank)"});
    }
    const int64_t world = spec.world_size();
    if (nproc > 0 && nproc != world)
      errors.push_back({"--nproc", "--nproc " + std::to_string(nproc) + " must equal the spec's world size " +
                                       std::to_string(world) + " (cluster.nodes × cluster.gpus_per_node)"});
    // The ranks on this machine: all of them with --nproc, else the launcher's (LOCAL_WORLD_SIZE) or
    // this one. Checked once, by the launcher or by local rank 0.
    const char* local_world = std::getenv("LOCAL_WORLD_SIZE");
    const char* local_rank = std::getenv("LOCAL_RANK");
    // The process that owns the run on this machine: the --nproc launcher, or local rank 0.
    const bool owns_machine = nproc > 0 || !local_rank || std::string(local_rank) == "0";
    const bool checks_memory = device == "cpu" && !no_memory_check && errors.empty() && owns_machine;
    if (checks_memory) {
      const int64_t local_ranks = nproc > 0 ? nproc : (local_world ? std::max(1L, std::atol(local_world)) : 1);
      if (const auto available = tessera::runtime::host_available_bytes()) {
        const int64_t needed = tessera::runtime::predicted_host_bytes(spec, local_ranks);
        if (auto problem = tessera::runtime::host_memory_problem(spec, local_ranks, needed, *available); !problem.empty())
          errors.push_back({"--device", problem});
      }
    }
    if (!errors.empty()) throw SpecError(errors);
    // What is resumed is there already: a --resume into a directory that does not exist created it
    // (and its lock) before it was refused.
    if (resume && !out_dir.empty() && !std::filesystem::is_directory(out_dir))
      throw SpecError({FieldError{"--resume", "--resume: --out " + out_dir + " is no directory, so it holds no checkpoint to resume "
                                                                            "(nothing was created)"}});
    if (!out_dir.empty()) require_writable_dir(out_dir);
    // A fresh run into the checkpoints of an earlier one: --resume would later take the earlier
    // run's newest checkpoint and splice two runs together. Refused, nothing removed.
    if (!out_dir.empty() && !resume)
      if (const auto earlier = tessera::runtime::newest_checkpoint(out_dir))
        throw SpecError({FieldError{"--out", "--out " + out_dir + " holds checkpoints of an earlier run (newest " + *earlier +
                                                 "): continue it with --resume, or give another --out (nothing was removed)"}});
    if (!out_dir.empty() && owns_machine) lock_out_dir(out_dir);
    // An earlier run that kept no checkpoint (--no-checkpoint, or stopped before its first): its
    // metrics.jsonl would be overwritten. Checked once the directory is this process's (a run still
    // training there is refused by the lock above); the ranks of a launcher do not check again.
    if (!out_dir.empty() && !resume && owns_machine && !std::getenv("TESSERA_TRAIN_OUT_LOCKED") && holds_step_records(out_dir))
      throw SpecError({FieldError{"--out", "--out " + out_dir + " holds the step records of an earlier run (metrics.jsonl) " +
                                               "and no checkpoint to resume it from: give another --out, or remove " + out_dir +
                                               "/metrics.jsonl (nothing was removed)"}});
    if (nproc > 0) ::setenv("TESSERA_TRAIN_OUT_LOCKED", "1", 1);
    if (resume && out_dir.empty()) throw SpecError({FieldError{"--resume", "--resume needs --out DIR (where the checkpoints are)"}});
    if (save_every > 0 && out_dir.empty())
      throw SpecError({FieldError{"--save-every", "--save-every needs --out DIR (where the checkpoints go)"}});
    if (resume) {
      try {
        tessera::runtime::resumable_step(out_dir, spec, uncut_warmup_steps);
      } catch (const tessera::runtime::CheckpointError& e) {
        throw SpecError({FieldError{"--resume", e.what()}});
      }
    }
    if (nproc == 0) {
      env = tessera::runtime::rank_environment_from_env();
      // A single process started by hand: its rendezvous store takes a free port, so that two such
      // runs on one machine do not collide on a fixed one.
      if (!std::getenv("RANK") && !std::getenv("WORLD_SIZE")) env.master_port = tessera::runtime::free_local_port();
      if (env.world_size != world)
        throw SpecError({{"WORLD_SIZE", "WORLD_SIZE=" + std::to_string(env.world_size) +
                                            " must equal the spec's world size " + std::to_string(world) +
                                            " (or use --nproc " + std::to_string(world) + ")"}});
    }
  } catch (const SpecError& e) {
    for (const auto& error : e.errors()) std::cerr << "tessera-train: error: " << error.message << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tessera-train: error: " << message_of(e) << "\n";
    return 2;
  }

  if (nproc > 0) {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--nproc") {
        ++i;
        continue;
      }
      if (a.rfind("--nproc=", 0) == 0) continue;
      args.push_back(a);
    }
    // Checked here for all of them: a rank checking again while its siblings load could refuse what
    // this accepted.
    if (!no_memory_check) args.push_back("--no-memory-check");
    if (threads == 0) {
      args.push_back("--threads");
      args.push_back(std::to_string(std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(nproc))));
    }
    try {
      const auto result = tessera::runtime::launch_local("/proc/self/exe", args, nproc);
      if (result.exit_code != 0) std::cerr << "tessera-train: " << result.message << "; stopped the other ranks\n";
      return result.exit_code;
    } catch (const std::exception& e) {
      std::cerr << "tessera-train: error: " << e.what() << "\n";
      return 1;
    }
  }

  tessera::runtime::TrainOptions options;
  options.out_dir = out_dir;
  options.data = data;
  options.save_every = save_every > 0 ? save_every : spec.training.save_every;  // the flag overrides the spec
  options.checkpoint = !no_checkpoint;
  options.resume = resume;
  options.uncut_warmup_steps = uncut_warmup_steps;
  options.device = device;
  options.fused_kernels = kernels.empty() ? device == "cuda" : kernels == "fused";
  options.directed_pipeline_links = pipeline_links.empty() ? device == "cuda" : pipeline_links == "directed";
  options.threads = threads > 0 ? threads
                                : static_cast<int>(std::max(1u, std::thread::hardware_concurrency() /
                                                                    static_cast<unsigned>(env.local_world_size)));
  try {
    tessera::runtime::train(spec, options, env);
  } catch (const tessera::runtime::CommError& e) {
    std::cerr << "tessera-train: " << e.what() << "\n";
    exit_now(1);
  } catch (const std::exception& e) {
    std::cerr << "tessera-train: rank " << env.rank << ": " << message_of(e) << "\n";
    exit_now(1);
  }
  exit_now(0);
}
