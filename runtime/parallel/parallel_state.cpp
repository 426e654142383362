// Process groups from the planner's rank grid (one source of truth for which ranks form a group).
#include "runtime/parallel/parallel_state.hpp"

#include <stdexcept>

#include "runtime/comm/directed_links.hpp"
#include "runtime/comm/gloo_world.hpp"
#ifdef TESSERA_WITH_NCCL
#include "runtime/comm/nccl_communicator.hpp"
#endif
#include "runtime/comm/solo_communicator.hpp"

namespace tessera::runtime {

std::vector<const Communicator*> ParallelState::all_groups() const {
  std::vector<const Communicator*> out{tp_group.get(), pp_group.get(), dp_group.get()};
  if (embedding_group) out.push_back(embedding_group.get());
  return out;
}

ParallelState make_parallel_state(GlooWorld& world, const spec::RunSpec& spec, const at::Device& device,
                                  PipelineLinks pipeline_links) {
#ifndef TESSERA_WITH_NCCL
  if (device.is_cuda()) throw std::runtime_error("this tessera-train was built without NCCL: use --device cpu");
#endif
  const auto grid = planner::make_rank_grid(spec);
  const int64_t rank = world.rank();
  ParallelState state;
  state.coord = grid.ranks.at(rank);
  state.tp = grid.tp;
  state.pp = grid.pp;
  state.dp = grid.dp;
  state.vpp = spec.parallel.vpp;
  state.sequence_parallel = spec.parallel.sequence_parallel && grid.tp > 1;

  auto make_group = [&](const std::string& name, const std::vector<int64_t>& members) -> std::unique_ptr<Communicator> {
#ifdef TESSERA_WITH_NCCL
    if (device.is_cuda()) return make_nccl_group(world, name, members, device.index());
#endif
    return world.make_group(name, members);
  };
  // Group names carry their index so that every group of a kind has its own store prefix.
  auto group = [&](const std::string& kind) -> std::unique_ptr<Communicator> {
    const auto& groups = grid.groups.at(kind);
    for (size_t i = 0; i < groups.size(); ++i)
      for (int64_t r : groups[i].ranks)
        if (r == rank) {
          if (groups[i].ranks.size() == 1) return std::make_unique<SoloCommunicator>(kind, rank);
          return make_group(kind + std::to_string(i), groups[i].ranks);
        }
    return nullptr;
  };
  state.tp_group = group("tp");
  state.dp_group = group("dp");
  state.pp_group = group("pp");
  if (grid.pp > 1 && pipeline_links == PipelineLinks::directed)
    state.pp_group = with_directed_links(std::move(state.pp_group), /*ring=*/state.vpp > 1,
                                         at::TensorOptions().device(device), make_group);
  if (grid.pp > 1 && spec.model.tie_embeddings && (state.first_stage() || state.last_stage()))
    state.embedding_group = group("embedding");
  return state;
}

}  // namespace tessera::runtime
