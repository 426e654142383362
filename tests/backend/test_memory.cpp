// Memory model: the megatron profile against Megatron-LM's theoretical_memory_usage.py formulas
// worked out by hand, and the tessera profile's activation terms against Korthikanti et al. Table 2.
#include <QtTest/QtTest>

#include "planner/plan.hpp"

using namespace tessera;

namespace {
spec::RunSpec make(nlohmann::json patch) {
  nlohmann::json doc = {{"model", {{"preset", "llama3-8b"}}},
                        {"parallel", {{"tp", 2}, {"pp", 2}, {"sequence_parallel", true}, {"distributed_optimizer", true}}},
                        {"training", {{"micro_batch_size", 1}, {"global_batch_size", 8}, {"recompute", "selective"}}},
                        {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}}};
  if (patch.is_object()) doc.merge_patch(patch);
  return spec::parse_spec(doc);
}
planner::MemoryEstimate memory(const spec::RunSpec& s, planner::MemoryProfile profile) {
  planner::PlanOptions options;
  options.memory_profile = profile;
  return planner::make_plan(s, options).memory;
}
}  // namespace

class TestMemory : public QObject {
  Q_OBJECT
 private slots:
  void megatronProfileMatchesTheScript() {
    // llama3-8b, TP2 PP2 DP2, SP + selective, distributed optimizer, mbs 1, 4 microbatches.
    // Layers: 2*32*4096^2*((1+8/32)*1 + 3.5*1.5 + 2/4096 + 1/(32*4096)) = 6,979,854,336.
    // Embedding: 4096 * 128256 (already a multiple of 128*2) = 525,336,576.
    // Most loaded shard: (6,979,854,336/2 + 525,336,576)/2 = 2,007,631,872 params x (6 + 12/2) bytes.
    const auto m = memory(make({}), planner::MemoryProfile::megatron);
    const auto& s0 = m.stages[0];
    QCOMPARE(s0.weights_bytes + s0.gradients_bytes + s0.optimizer_bytes, int64_t{2'007'631'872} * 12);
    QCOMPARE(s0.weights_bytes, int64_t{2'007'631'872} * 2);
    // Activations: s*b*h*(18 + 4*14336/4096) * 32 layers + 8*s*b*pp + s*b*h*pp, x min(1, 4/2), / tp.
    const int64_t sbh = 8192LL * 4096;
    QCOMPARE(s0.activations_bytes, (sbh * 32 * 32 + 8 * 8192 * 2 + sbh * 2) / 2);
    // The other stage holds the remaining layers only (the script's "other shards").
    const auto& s1 = m.stages[1];
    QCOMPARE(s1.weights_bytes + s1.gradients_bytes + s1.optimizer_bytes, int64_t{6'979'854'336} / 4 * 12);
    QCOMPARE(m.peak_bytes, std::max(s0.total_bytes(), s1.total_bytes()));
  }

  void megatronNonDistributedIs18BytesPerParameter() {
    const auto m = memory(make({{"parallel", {{"distributed_optimizer", false}}}}), planner::MemoryProfile::megatron);
    const auto& s0 = m.stages[0];
    QCOMPARE(s0.weights_bytes + s0.gradients_bytes + s0.optimizer_bytes, int64_t{2'007'631'872} * 18);
  }

  void megatronPadsTheVocabulary() {
    // gpt2-124m, tp 1, pp 1: vocab 50257 padded to 50304 (multiple of 128); tied, so one embedding.
    nlohmann::json doc = {{"model", {{"preset", "gpt2-124m"}}},
                          {"parallel", {{"tp", 1}, {"pp", 1}}},
                          {"cluster", {{"gpu", "a100-80gb"}, {"nodes", 1}, {"gpus_per_node", 1}}}};
    planner::PlanOptions options;
    options.memory_profile = planner::MemoryProfile::megatron;
    const auto m = planner::make_plan(spec::parse_spec(doc), options).memory;
    const double layers = 2.0 * 12 * 768 * 768 * (2 + 4 + 2.0 / 768 + 1.0 / (12 * 768));
    const double params = layers + 768.0 * 50304;
    QCOMPARE(m.stages[0].weights_bytes, static_cast<int64_t>(std::llround(params * 2)));
  }

  void korthikantiActivationTerms() {
    // GPT-3 175B shape, 16-bit, no flash: sbh(34 + 5as/h) without TP; sbh(10 + 24/t + 5as/(ht)) with TP;
    // 34 sbh / t with TP + SP + selective; 2 sbh with full recompute (Korthikanti et al. 2022, Table 2).
    nlohmann::json base = {{"model", {{"preset", "gpt3-175b"}}},
                           {"parallel", {{"tp", 1}, {"pp", 1}}},
                           {"training", {{"flash_attention", false}, {"precision", "bf16"}}},
                           {"cluster", {{"gpu", "a100-80gb"}, {"nodes", 1}, {"gpus_per_node", 8}}}};
    auto per_layer = [&](nlohmann::json patch) {
      nlohmann::json doc = base;
      if (patch.is_object()) doc.merge_patch(patch);
      return planner::layer_activation_bytes(spec::parse_spec(doc), 0);
    };
    const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
    const double sbh = s * b * h;
    QCOMPARE(per_layer({}), sbh * (34 + 5 * a * s / h));
    QCOMPARE(per_layer({{"parallel", {{"tp", 8}}}}), sbh * (10 + 24 / t + 5 * a * s / (h * t)));
    QCOMPARE(per_layer({{"parallel", {{"tp", 8}, {"sequence_parallel", true}}}, {"training", {{"recompute", "selective"}}}}),
             sbh * 34 / t + 4 * a * s * b / t);  // + fp32 log-sum-exp of the recomputed softmax
    QCOMPARE(per_layer({{"training", {{"recompute", "full"}}}}), 2 * sbh);
  }

  void optimizerShardsWithZero() {
    const auto zero0 = memory(make({{"parallel", {{"distributed_optimizer", false}, {"pp", 1}, {"dp", 4}}}}),
                              planner::MemoryProfile::tessera);
    const auto zero1 = memory(make({{"parallel", {{"pp", 1}, {"dp", 4}}}}), planner::MemoryProfile::tessera);
    const auto zero3 = memory(make({{"parallel", {{"distributed_optimizer", false}, {"zero_stage", 3}, {"pp", 1}, {"dp", 4}}}}),
                              planner::MemoryProfile::tessera);
    QVERIFY(std::abs(zero1.stages[0].optimizer_bytes * 4 - zero0.stages[0].optimizer_bytes) <= 4);
    QCOMPARE(zero1.stages[0].gradients_bytes, zero0.stages[0].gradients_bytes);
    QVERIFY(std::abs(zero3.stages[0].weights_bytes * 4 - zero0.stages[0].weights_bytes) <= 4);
    QVERIFY(zero3.stages[0].buffers_bytes > 0);  // gathered layers
  }

  void inFlightMicrobatchesFollowTheSchedule() {
    // 1F1B: stage 0 holds pp microbatches, the last stage one; GPipe holds all of them everywhere.
    const auto onef = memory(make({{"training", {{"global_batch_size", 16}}}}), planner::MemoryProfile::tessera);
    const auto gpipe = memory(make({{"training", {{"global_batch_size", 16}}}, {"parallel", {{"schedule", "gpipe"}}}}),
                              planner::MemoryProfile::tessera);
    QVERIFY(gpipe.stages[0].activations_bytes > 3 * onef.stages[0].activations_bytes);
    QVERIFY(onef.stages[0].activations_bytes > onef.stages[1].activations_bytes);
    QVERIFY(!onef.stages.empty() && onef.capacity_bytes == int64_t{85'520'809'984});
  }
};

QTEST_APPLESS_MAIN(TestMemory)
#include "test_memory.moc"
