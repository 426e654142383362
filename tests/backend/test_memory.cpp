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
    // The last stage: the remaining layers (the script's "other shards") and the output layer (untied:
    // 4096 x 128256 / tp), one microbatch in flight and the output layer's and loss's inputs.
    const auto& s1 = m.stages[1];
    QCOMPARE(s1.weights_bytes + s1.gradients_bytes + s1.optimizer_bytes,
             (int64_t{6'979'854'336} / 4 + int64_t{525'336'576} / 2) * 12);
    QCOMPARE(s1.activations_bytes, (sbh * 32 * 16 + 4 * sbh + 4 * 8192LL * 128256) / 2);
    QCOMPARE(m.peak_bytes, std::max(s0.total_bytes(), s1.total_bytes()));

    // Interleaved (v = 2, 4 microbatches): stage 0 holds 5 chunk-microbatches, the script's
    // 1 + (p-1)/(p·v) = 1.25 on p = 2 stage-microbatches; stage 1 holds 3 chunks, 1.5 of them.
    const auto inter = memory(make({{"parallel", {{"vpp", 2}, {"schedule", "interleaved"}}}}), planner::MemoryProfile::megatron);
    QCOMPARE(inter.stages[0].activations_bytes,
             static_cast<int64_t>(std::llround((sbh * 32.0 * 16 * 2 + (8.0 * 8192 + sbh) * 2) * 1.25 / 2)));
    QCOMPARE(inter.stages[1].activations_bytes,
             static_cast<int64_t>(std::llround((sbh * 32.0 * 16 * 1.5 + 4.0 * sbh + 4.0 * 8192 * 128256) / 2)));
  }

  // Uneven stages, 12 and 20 of llama3-8b's 32 layers: each stage's weights and activations follow its
  // own layers (the script's terms of megatronProfileMatchesTheScript, by stage). One layer's
  // parameters: 6,979,854,336 / 32 = 218,120,448.
  void megatronProfileFollowsUnevenStages() {
    const auto m = memory(make({{"parallel", {{"first_stage_layers", 12}, {"last_stage_layers", 20}}}}),
                          planner::MemoryProfile::megatron);
    const int64_t layer = 218'120'448, half_embedding = 525'336'576 / 2, sbh = 8192LL * 4096;
    const auto& s0 = m.stages[0];
    QCOMPARE(s0.weights_bytes + s0.gradients_bytes + s0.optimizer_bytes, (12 * layer / 2 + half_embedding) * 12);
    QCOMPARE(s0.activations_bytes, (sbh * 32 * 12 * 2 + 8 * 8192 * 2 + sbh * 2) / 2);
    const auto& s1 = m.stages[1];
    QCOMPARE(s1.weights_bytes + s1.gradients_bytes + s1.optimizer_bytes, (20 * layer / 2 + half_embedding) * 12);
    QCOMPARE(s1.activations_bytes, (sbh * 32 * 20 + 4 * sbh + 4 * 8192LL * 128256) / 2);
    // The tessera profile too: the first stage, with fewer layers, holds less than the even split's.
    const auto even = memory(make({}), planner::MemoryProfile::tessera);
    const auto uneven = memory(make({{"parallel", {{"first_stage_layers", 12}, {"last_stage_layers", 20}}}}),
                               planner::MemoryProfile::tessera);
    QVERIFY(uneven.stages[0].activations_bytes < even.stages[0].activations_bytes);
    QVERIFY(uneven.stages[0].weights_bytes < even.stages[0].weights_bytes);
    QVERIFY(uneven.stages[1].weights_bytes > even.stages[1].weights_bytes);
  }

  void lossTermsOnlyOnTheirChunks() {
    // Interleaved MoE (the paper's terms): only the last virtual stage's chunk holds the fp32 logits, at
    // most one microbatch of it on the last stage; a larger vocabulary adds its logits once, not once per
    // chunk-microbatch in flight there (5 of them).
    auto last_stage = [](int64_t vocab) {
      nlohmann::json doc = {{"model", {{"preset", "mixtral-8x7b"}, {"vocab_size", vocab}}},
                            {"parallel", {{"tp", 2}, {"pp", 4}, {"vpp", 2}, {"schedule", "interleaved"},
                                          {"sequence_parallel", true}, {"ep", 2}}},
                            {"training", {{"micro_batch_size", 1}, {"global_batch_size", 16}}},
                            {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 2}, {"gpus_per_node", 8}}}};
      return planner::make_plan(spec::parse_spec(doc));
    };
    const int64_t seq = spec::parse_spec({{"model", {{"preset", "mixtral-8x7b"}}}}).model.seq_length;
    const int64_t added_vocab = 1 << 20;
    const int64_t logits_bytes = 4 * seq * added_vocab / 2;  // fp32, 1/tp of the vocabulary
    const auto larger = last_stage(1 << 21), smaller = last_stage((1 << 21) - added_vocab);
    QCOMPARE(planner::peak_in_flight(larger.schedule, 3), 5);
    const int64_t grown = larger.memory.stages[3].activations_bytes - smaller.memory.stages[3].activations_bytes;
    QVERIFY2(std::abs(grown - logits_bytes) <= 2, qPrintable(QString("%1 vs %2").arg(grown).arg(logits_bytes)));
  }

  void zeroBubbleHoldsActivationsUntilW() {
    // ZB-H1 keeps a microbatch's GEMM inputs and output gradients for its deferred W: every stage holds
    // min(p, m), where 1F1B's stage r holds p - r; stage 0 is 1F1B's peak either way.
    auto plan = [](const char* schedule) {
      nlohmann::json doc = {{"model", {{"preset", "mixtral-8x7b"}}},
                            {"parallel", {{"tp", 2}, {"pp", 4}, {"schedule", schedule}, {"ep", 2}}},
                            {"training", {{"micro_batch_size", 1}, {"global_batch_size", 16}}},
                            {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 2}, {"gpus_per_node", 8}}}};
      return planner::make_plan(spec::parse_spec(doc)).memory;
    };
    const auto zb = plan("zb-h1"), onef = plan("1f1b");
    QCOMPARE(zb.stages[0].activations_bytes, onef.stages[0].activations_bytes);
    // The middle stages hold layers only: 4 microbatches against 1F1B's 3 and 2.
    QVERIFY(std::abs(zb.stages[1].activations_bytes * 3 - onef.stages[1].activations_bytes * 4) <= 8);
    QVERIFY(std::abs(zb.stages[2].activations_bytes * 2 - onef.stages[2].activations_bytes * 4) <= 8);
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
    // ZeRO-3 holds two gathered layers in bf16 (the current and the prefetched next) beyond ZeRO-2's
    // buffers: a Llama-3-8B layer is 4096·(4096 + 2·1024 + 4096) attention + 3·4096·14336 MLP weights,
    // halved by tp 2, and its two norms (2·4096, replicated).
    const auto zero2 = memory(make({{"parallel", {{"distributed_optimizer", false}, {"zero_stage", 2}, {"pp", 1}, {"dp", 4}}}}),
                              planner::MemoryProfile::tessera);
    const double layer_on_rank = (4096.0 * (4096 + 2 * 1024 + 4096) + 3.0 * 4096 * 14336) / 2 + 2 * 4096;
    QVERIFY2(std::abs(static_cast<double>(zero3.stages[0].buffers_bytes - zero2.stages[0].buffers_bytes) - 2 * 2 * layer_on_rank) <= 1,
             qPrintable(QString::number(zero3.stages[0].buffers_bytes - zero2.stages[0].buffers_bytes)));
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
