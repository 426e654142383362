// The specs tessera-train refuses (runtime_support.hpp).
#include "planner/runtime_support.hpp"

#include <stdexcept>

#include "planner/schedule.hpp"

namespace tessera::planner {

std::vector<spec::FieldError> tessera_train_problems(const spec::RunSpec& spec) {
  std::vector<spec::FieldError> errors;
  auto fail = [&](const std::string& field, const std::string& message) { errors.push_back({field, message}); };
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  const auto& t = spec.training;
  if (m.arch != spec::Arch::gpt && m.arch != spec::Arch::llama)
    fail("model.arch", "model.arch=" + std::string(spec::to_string(m.arch)) + ": tessera-train trains gpt and llama models");
  if (m.is_moe()) fail("model.num_experts", "model.num_experts=" + std::to_string(m.num_experts) + ": tessera-train trains dense models (model.num_experts must be 1)");
  if (m.position_embedding == spec::PositionEmbedding::relative)
    fail("model.position_embedding", "model.position_embedding=relative: tessera-train supports learned and rope");
  if (m.vocab_size % p.tp != 0)
    fail("model.vocab_size", "model.vocab_size=" + std::to_string(m.vocab_size) + " must be divisible by parallel.tp=" +
                                 std::to_string(p.tp) + " for tessera-train's vocab-parallel layers");
  if (p.cp != 1) fail("parallel.cp", "parallel.cp=" + std::to_string(p.cp) + ": tessera-train has no context parallelism (parallel.cp must be 1)");
  if (p.ep != 1) fail("parallel.ep", "parallel.ep=" + std::to_string(p.ep) + ": tessera-train has no expert parallelism (parallel.ep must be 1)");
  if (p.schedule == spec::Schedule::zb_h1)
    fail("parallel.schedule", "parallel.schedule=zb-h1: tessera-train executes gpipe, 1f1b and interleaved");
  if (spec.effective_zero_stage() > 1)
    fail("parallel.zero_stage", "parallel.zero_stage=" + std::to_string(p.zero_stage) +
                                    ": tessera-train shards the optimizer state (ZeRO-1, distributed_optimizer), not gradients or weights");
  if (t.precision != spec::Precision::fp32 && t.precision != spec::Precision::bf16)
    fail("training.precision", "training.precision=" + std::string(spec::to_string(t.precision)) +
                                   ": tessera-train trains fp32, or bf16 with fp32 master weights (fp16 would need "
                                   "loss scaling, fp8 scaling recipes; neither is implemented)");
  if (errors.empty()) {
    try {
      make_schedule(p.schedule, static_cast<int>(p.pp), static_cast<int>(p.vpp),
                             static_cast<int>(spec.num_microbatches()));
    } catch (const std::invalid_argument& e) {
      fail("parallel.schedule", e.what());
    }
  }
  return errors;
}

}  // namespace tessera::planner
