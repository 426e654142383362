// One rank of a training run: rendezvous, groups from the rank grid, the model shard, the schedule
// executor, gradient reduction, clipping, AdamW, metrics. What it refuses to train is
// planner::tessera_train_problems (backend/planner/runtime_support.hpp), checked before any rank starts.
#pragma once

#include <string>
#include <vector>

#include "spec/errors.hpp"
#include "spec/run_spec.hpp"

namespace tessera::runtime {

/// What a rank learns from its environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).
struct RankEnvironment {
  int rank = 0, world_size = 1, local_rank = 0, local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

/// Reads the variables; all absent means a single process. Throws std::invalid_argument naming the
/// variable that is malformed or missing.
RankEnvironment rank_environment_from_env();

/// The CUDA device index of a rank: GPU `local_rank` of the `visible_gpus` this process sees, or GPU 0
/// when the launcher made one GPU visible per rank (the agent sets CUDA_VISIBLE_DEVICES so). Throws
/// std::invalid_argument when none is visible, or when local_rank ≥ visible_gpus > 1 (two ranks would
/// share a GPU).
int cuda_device_of(int local_rank, int visible_gpus);

struct TrainOptions {
  std::string out_dir;            ///< "" = no files, stdout only
  std::string data = "synthetic";  ///< "synthetic" or a token file
  int threads = 1;                ///< intra-op threads of this rank
  int64_t save_every = 0;         ///< checkpoint every N steps (0: only at the end); needs out_dir
  bool checkpoint = true;         ///< false: no checkpoint at all (benchmarks)
  bool resume = false;            ///< continue from the newest complete checkpoint in out_dir
  /// The spec's training.warmup_steps before --steps cut it to the run's length (0: not cut): what a
  /// checkpoint records and --resume compares, so that a larger --steps extends the run.
  int64_t uncut_warmup_steps = 0;
  std::string device = "cpu";     ///< "cpu" (Gloo) or "cuda" (NCCL; GPU LOCAL_RANK)
  bool fused_kernels = false;     ///< Tessera's fused kernels instead of the ATen ops (--kernels fused)
  /// Pipeline sends and receives through one group per direction (--pipeline-links directed)
  bool directed_pipeline_links = false;
};

/// The shipped corpus's token file next to this executable (build/resources/corpus/kjv.tokens).
std::string default_data_path();

/// Trains the spec as rank `env.rank`; throws on any failure (CommError names dead peers).
void train(const spec::RunSpec& spec, const TrainOptions& options, const RankEnvironment& env);

}  // namespace tessera::runtime
