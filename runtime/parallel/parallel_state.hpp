// This rank's place in the layout: its coordinates from the planner's rank grid and one communicator
// per parallel dimension (a SoloCommunicator where the dimension is 1; Gloo on the CPU, NCCL on a GPU).
#pragma once

#include <memory>

#include <c10/core/Device.h>

#include "planner/grid.hpp"
#include "runtime/comm/communicator.hpp"
#include "spec/run_spec.hpp"

namespace tessera::runtime {

class GlooWorld;

struct ParallelState {
  planner::RankCoord coord;
  int64_t tp = 1, pp = 1, dp = 1, vpp = 1;
  bool sequence_parallel = false;
  std::unique_ptr<Communicator> tp_group, pp_group, dp_group;
  /// First and last stage of this pipeline (tied word embedding); null unless pp > 1 and this rank is
  /// on the first or last stage.
  std::unique_ptr<Communicator> embedding_group;

  bool first_stage() const { return coord.pp == 0; }
  bool last_stage() const { return coord.pp == pp - 1; }
  /// Every communicator this rank holds (for the time-in-communication metric).
  std::vector<const Communicator*> all_groups() const;
};

/// How the pipeline group's sends and receives travel: `group` through the pp group itself, `directed`
/// through one group of two per direction between neighbouring stages (comm/directed_links.hpp; what
/// NCCL needs, as it matches by order; on Gloo it runs the same exchanges for the tests).
enum class PipelineLinks { group, directed };

/// Builds the groups of `rank` from make_rank_grid(spec); every rank of the world must call it.
/// On a CUDA `device` the groups are NCCL communicators on it, on the CPU Gloo ones.
ParallelState make_parallel_state(GlooWorld& world, const spec::RunSpec& spec, const at::Device& device = at::kCPU,
                                  PipelineLinks pipeline_links = PipelineLinks::group);

}  // namespace tessera::runtime
