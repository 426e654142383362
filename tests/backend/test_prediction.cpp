// The performance model against Narayanan et al. 2021 Table 1 (every row within the file's
// tolerance, ±15%), the bubble / MFU relations the prediction must keep, and terms checked on their
// own: p2p bytes, flash attention's causal saving, each ZeRO stage's traffic and what its compute hides,
// the experts' optimizer shard.
#include <QtTest/QtTest>

#include <fstream>
#include <map>

#include "planner/plan.hpp"

using namespace tessera;

class TestPrediction : public QObject {
  Q_OBJECT
 private slots:
  void narayananTable1() {
    std::ifstream in(TESSERA_SOURCE_DIR "/resources/validation/narayanan2021-table1.json");
    QVERIFY(in.good());
    const auto doc = nlohmann::json::parse(in);
    const double tolerance = doc["tolerance"].get<double>();
    QCOMPARE(doc["rows"].size(), size_t{10});
    double worst = 0;
    for (const auto& row : doc["rows"]) {
      const auto plan = planner::make_plan(spec::parse_spec(row["spec"]));
      const double published = row["published_tflops_per_gpu"].get<double>();
      const double predicted = plan.prediction.hardware_tflops_per_gpu;
      const double error = predicted / published - 1;
      worst = std::max(worst, std::abs(error));
      qInfo("%-8s published %5.0f predicted %6.1f error %+5.1f%%", row["label"].get<std::string>().c_str(), published,
            predicted, 100 * error);
      QVERIFY2(std::abs(error) <= tolerance, row["label"].get<std::string>().c_str());
    }
    qInfo("worst error %.1f%%", 100 * worst);
  }

  void predictionIsConsistent() {
    nlohmann::json doc = {{"model", {{"preset", "llama3-70b"}}},
                          {"parallel", {{"tp", 8}, {"pp", 4}, {"sequence_parallel", true}}},
                          {"training", {{"micro_batch_size", 1}, {"global_batch_size", 128}}},
                          {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 8}, {"gpus_per_node", 8}}}};
    const auto plan = planner::make_plan(spec::parse_spec(doc));
    const auto& p = plan.prediction;
    QVERIFY(p.iteration_time_s > 0);
    QCOMPARE(p.tokens_per_s, 128.0 * 8192 / p.iteration_time_s);
    QCOMPARE(p.mfu, p.model_tflops_per_gpu / 989.0);
    QVERIFY(p.hfu >= p.mfu);
    QVERIFY(p.iteration_time_s >= p.pipeline_s);
    QVERIFY(p.mfu > 0.2 && p.mfu < 0.7);  // a sane range for a dense model on H100s

    // More microbatches shrink the 1F1B bubble toward (p-1)/(m+p-1).
    doc["training"]["global_batch_size"] = 512;
    const auto bigger = planner::make_plan(spec::parse_spec(doc));
    QVERIFY(bigger.prediction.bubble_fraction < p.bubble_fraction);
    QVERIFY(bigger.prediction.mfu > p.mfu);
  }

  void recomputeCostsTimeNotModelFlops() {
    nlohmann::json doc = {{"model", {{"preset", "llama3-8b"}}},
                          {"parallel", {{"tp", 2}}},
                          {"training", {{"micro_batch_size", 1}, {"global_batch_size", 32}}},
                          {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}}};
    const auto none = planner::make_plan(spec::parse_spec(doc));
    doc["training"]["recompute"] = "full";
    const auto full = planner::make_plan(spec::parse_spec(doc));
    QCOMPARE(full.flops.model_per_iteration, none.flops.model_per_iteration);
    QVERIFY(full.flops.hardware_per_iteration > none.flops.hardware_per_iteration);
    QVERIFY(full.prediction.iteration_time_s > none.prediction.iteration_time_s);
    QVERIFY(full.memory.peak_bytes < none.memory.peak_bytes);
  }

  void pipelineSendsOneTpShard() {
    // Under SP a rank sends its sequence shard, without SP Megatron's scatter-gather piece: e·tokens·h/t
    // either way (SP sent the whole activation, t times too much). Both layouts cross nodes between
    // stages (stride tp·dp = 16 ranks on nodes of 8), so TP 8 sends half of TP 4's bytes.
    nlohmann::json doc = {{"model", {{"preset", "llama3-70b"}}},
                          {"parallel", {{"tp", 8}, {"pp", 4}, {"sequence_parallel", true}}},
                          {"training", {{"micro_batch_size", 1}, {"global_batch_size", 128}}},
                          {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 8}, {"gpus_per_node", 8}}}};
    const double latency = planner::PerformanceConstants{}.collective_latency_s;
    auto transfer_s = [&](int64_t tp, bool sp) {
      doc["parallel"]["tp"] = tp;
      doc["parallel"]["sequence_parallel"] = sp;
      return planner::make_plan(spec::parse_spec(doc)).prediction.costs.p2p_s - latency;
    };
    const double tp8 = transfer_s(8, true), tp4 = transfer_s(4, true);
    QVERIFY(tp8 > 0);
    QVERIFY2(std::abs(2 * tp8 - tp4) <= 1e-9 * tp4, qPrintable(QString("%1 vs %2").arg(tp8).arg(tp4)));
    QCOMPARE(transfer_s(8, false), tp8);
  }

  void t5CrossAttentionIsNeverHalved() {
    // Flash attention skips the masked half of a causal self-attention only: a t5 decoder layer saves
    // what a gpt layer of the same shape saves (its self-attention), not twice that. Memory-bound work
    // and TP are left out (elementwise_passes 0, tp 1) so that the attention core is what differs.
    planner::PerformanceConstants c;
    c.elementwise_passes = 0;
    const auto* gpu = spec::PresetCatalog::builtin().gpu("h100-sxm");
    auto saved_by_flash = [&](nlohmann::json model, int64_t layer) {
      nlohmann::json doc = {{"model", model},
                            {"training", {{"micro_batch_size", 1}, {"global_batch_size", 8}, {"flash_attention", false}}},
                            {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}}};
      const double off = planner::layer_time(spec::parse_spec(doc), *gpu, layer, c).forward_s;
      doc["training"]["flash_attention"] = true;
      return off - planner::layer_time(spec::parse_spec(doc), *gpu, layer, c).forward_s;
    };
    const auto t5 = spec::parse_spec({{"model", {{"preset", "t5-large"}}}}).model;
    const nlohmann::json gpt = {{"arch", "gpt"},          {"num_layers", 4},
                                {"hidden_size", t5.hidden_size}, {"num_attention_heads", t5.num_attention_heads},
                                {"ffn_hidden_size", t5.ffn_hidden_size}, {"vocab_size", t5.vocab_size},
                                {"seq_length", t5.seq_length}};
    const double gpt_saves = saved_by_flash(gpt, 0);
    QVERIFY(gpt_saves > 0);
    QVERIFY(std::abs(saved_by_flash({{"preset", "t5-large"}}, t5.encoder_layers) - gpt_saves) <= 1e-9 * gpt_saves);
    QCOMPARE(saved_by_flash({{"preset", "t5-large"}}, 0), 0.0);  // the encoder is not causal
  }

  void t5ShorterDecoderCostsLessTimeAndMemory() {
    // A decoder of 128 tokens instead of 512: its layers take less time and hold fewer activations,
    // the encoder's are untouched, the step is shorter.
    auto spec_with = [](int64_t decoder) {
      return spec::parse_spec({{"model", {{"preset", "t5-large"}, {"decoder_seq_length", decoder}}},
                               {"parallel", {{"pp", 2}}},
                               {"training", {{"micro_batch_size", 4}, {"global_batch_size", 64}, {"flash_attention", false}}},
                               {"cluster", {{"gpu", "a100-80gb"}, {"nodes", 1}, {"gpus_per_node", 2}}}});
    };
    const auto full = spec_with(512), short_decoder = spec_with(128);
    const auto* gpu = spec::PresetCatalog::builtin().gpu("a100-80gb");
    const planner::PerformanceConstants c;
    QCOMPARE(planner::layer_time(short_decoder, *gpu, 0, c).forward_s, planner::layer_time(full, *gpu, 0, c).forward_s);
    QVERIFY(planner::layer_time(short_decoder, *gpu, 24, c).forward_s < 0.5 * planner::layer_time(full, *gpu, 24, c).forward_s);
    QCOMPARE(planner::layer_activation_bytes(short_decoder, 0), planner::layer_activation_bytes(full, 0));
    QVERIFY(planner::layer_activation_bytes(short_decoder, 24) < 0.5 * planner::layer_activation_bytes(full, 24));
    const auto plan_full = planner::make_plan(full), plan_short = planner::make_plan(short_decoder);
    QVERIFY(plan_short.prediction.iteration_time_s < plan_full.prediction.iteration_time_s);
    QVERIFY(plan_short.memory.stages[1].activations_bytes < plan_full.memory.stages[1].activations_bytes);  // the decoder stage
    QCOMPARE(plan_short.memory.stages[0].activations_bytes, plan_full.memory.stages[0].activations_bytes);   // the encoder stage
  }

  // Llama-3-8B without TP or PP on 16 GPUs over two nodes: data parallelism alone, its collectives on
  // the NIC. bf16: gradients of 4 bytes, parameters of 2.
  static nlohmann::json dataParallelSpec(int64_t zero_stage, int64_t global_batch) {
    return {{"model", {{"preset", "llama3-8b"}}},
            {"parallel", {{"tp", 1}, {"pp", 1}, {"zero_stage", zero_stage}}},
            {"training", {{"micro_batch_size", 1}, {"global_batch_size", global_batch}, {"precision", "bf16"}}},
            {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 2}, {"gpus_per_node", 8}}}};
  }

  void zeroStagesTraffic() {
    // One unit u = (n-1)/n·Ψ/bandwidth per byte of a parameter; L = one collective's latency.
    // ZeRO-1 reduce-scatters 4-byte gradients and gathers 2-byte parameters once a step, the last
    // gradient bucket in a collective of its own: 6u + 3L. Plain DP all-reduces the gradients:
    // 2·4u + 2L. ZeRO-2 keeps no whole gradient, so it reduce-scatters after every microbatch:
    // m(4u + L) + 2u + L. ZeRO-3 also gathers the parameters for every forward and backward:
    // m(2u + L + 2u + L + 4u + L) (Rajbhandari et al. 2020 §7.2's 3Ψ per microbatch).
    const double latency = planner::PerformanceConstants{}.collective_latency_s;
    auto comm = [](int64_t zero) { return planner::make_plan(spec::parse_spec(dataParallelSpec(zero, 64))).prediction.dp_comm_s; };
    const double m = 64 / 16;
    const double zero1 = comm(1);
    const double u = (zero1 - 3 * latency) / 6;
    QVERIFY(u > 0);
    auto near = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::abs(b); };
    QVERIFY2(near(comm(0), 8 * u + 2 * latency), qPrintable(QString("%1 vs %2").arg(comm(0)).arg(8 * u + 2 * latency)));
    QVERIFY2(near(comm(2), m * (4 * u + latency) + 2 * u + latency), qPrintable(QString::number(comm(2))));
    QVERIFY2(near(comm(3), m * (8 * u + 3 * latency)), qPrintable(QString::number(comm(3))));
  }

  void dataParallelCommunicationHidesBehindItsOwnCompute() {
    // One stream of collectives per stage, each from when it is ready: the step's parameter gather
    // (ZeRO-1/2) from the start, due by the end of the first forward (else the stage waits); ZeRO-3's
    // gathers from each forward's and backward's start, ZeRO-2/3's gradient reduce-scatter from each
    // backward's; ZeRO-1's reduction from the last backward's start, but for the last bucket, from its
    // end. Megatron-LM fills buckets of max(40M, 1M·dp) parameters in reverse order, so the last one
    // holds the word embedding (128256 × 4096 here, larger than a bucket). Without pipeline
    // parallelism the ops run back to back: F B F B … (1F1B). On the NIC, 8B parameters take longer
    // than a microbatch's compute, so the stream runs past the pipeline.
    const double latency = planner::PerformanceConstants{}.collective_latency_s;
    const int m = 64 / 16;
    const auto zero1_plan = planner::make_plan(spec::parse_spec(dataParallelSpec(1, 64)));
    const auto& zero1 = zero1_plan.prediction;
    const double u = (zero1.dp_comm_s - 3 * latency) / 6;
    const double reduce_scatter = 4 * u + latency, gather = 2 * u + latency;
    const double on_rank = static_cast<double>(zero1_plan.stage_params.at(0).dense_on_rank);
    const double last_bucket = 128256.0 * 4096 / on_rank;  // of the gradients
    QVERIFY(last_bucket > 0.05 && last_bucket < 0.1);
    for (int64_t zero : {1, 2, 3}) {
      planner::PlanOptions options;
      options.record_events = true;
      const auto pr = planner::make_plan(spec::parse_spec(dataParallelSpec(zero, 64)), options).prediction;
      const double f = pr.costs.forward_s[0], b = pr.costs.backward_s[0], pipeline = m * (f + b);
      QVERIFY(std::abs(pr.pipeline_s - pipeline) <= 1e-9 * pipeline);
      double stream = 0, wait = 0;
      auto run = [&](double ready, double cost) { stream = std::max(stream, ready) + cost; };
      if (zero <= 2) {
        run(0, gather);
        wait = std::max(0.0, stream - f);
      }
      for (int i = 0; zero >= 2 && i < m; ++i) {
        if (zero == 3) run(i * (f + b), gather);
        run(i * (f + b) + f, (zero == 3 ? gather : 0.0) + reduce_scatter);
      }
      if (zero == 1) {
        run(pipeline - b, 4 * u * (1 - last_bucket) + latency);
        run(pipeline, 4 * u * last_bucket + latency);
      }
      const double expected = wait + std::max(0.0, stream - pipeline);
      QVERIFY2(pr.dp_exposed_s > 0, qPrintable(QString("ZeRO-%1").arg(zero)));
      QVERIFY2(std::abs(pr.dp_exposed_s - expected) <= 1e-9 * expected,
               qPrintable(QString("ZeRO-%1: %2 vs %3").arg(zero).arg(pr.dp_exposed_s).arg(expected)));
      QCOMPARE(pr.dp_gather_wait_s, wait);
      QVERIFY(std::abs(pr.iteration_time_s - (pr.pipeline_s + pr.dp_exposed_s + pr.optimizer_s)) <= 1e-12 * pr.iteration_time_s);
      // The strip ends where the exposed communication does: the optimizer follows it at once.
      double last = 0;
      for (const auto& d : pr.dp_events) last = std::max(last, d.end_s);
      QVERIFY2(std::abs(last + pr.dp_gather_wait_s - (pr.pipeline_s + pr.dp_exposed_s)) <= 1e-9 * last,
               qPrintable(QString("ZeRO-%1: strip ends %2").arg(zero).arg(last)));
      // ZeRO-2's reduce-scatters are named as such, ZeRO-3's backward collectives as both.
      for (const auto& d : pr.dp_events)
        if (d.microbatch >= 0)
          QVERIFY(d.kind == (zero == 3 ? (d.end_s - d.start_s > gather * 1.5 ? planner::DpEvent::Kind::gather_reduce_scatter
                                                                                 : planner::DpEvent::Kind::all_gather)
                                       : planner::DpEvent::Kind::reduce_scatter));
    }
  }

  void gradientReductionFollowsEachChunksLastBackward() {
    // GPT-3 175B on Table 1's layout: 8 stages of 2 chunks, interleaved, ZeRO-0. As Megatron-LM's
    // interleaved schedule launches them: each chunk's all-reduce whole, after the backward that comes
    // `stage` backwards after the chunk's last one on its stage (or after the stage's last), one after
    // the other on the stage's stream. Then the tied word embedding's all-reduce between stage 0 and
    // stage 7, once both streams are done. What ends after the pipeline is exposed.
    std::ifstream in(TESSERA_SOURCE_DIR "/resources/examples/gpt3-175b-table1.json");
    planner::PlanOptions options;
    options.record_events = true;
    const auto plan = planner::make_plan(spec::parse_spec(nlohmann::json::parse(in)), options);
    const auto& pr = plan.prediction;
    const int pp = 8;
    std::vector<std::vector<planner::TimelineEvent>> backwards(pp);
    for (const auto& e : pr.simulation.events)
      if (e.op.kind == planner::OpKind::backward) backwards[e.stage].push_back(e);
    std::map<std::pair<int, int>, double> launch;  // (stage, chunk)
    for (int s = 0; s < pp; ++s) {
      auto& b = backwards[s];
      std::sort(b.begin(), b.end(), [](const auto& x, const auto& y) { return x.start_s < y.start_s; });
      for (int chunk = 0; chunk < 2; ++chunk) {
        int last = -1;
        for (int i = 0; i < static_cast<int>(b.size()); ++i)
          if (b[i].op.chunk == chunk) last = i;
        launch[{s, chunk}] = b[std::min(last + s, static_cast<int>(b.size()) - 1)].end_s;
      }
    }
    QCOMPARE(pr.dp_events.size(), size_t{2 * pp + 2});
    std::vector<double> stream_free(pp, 0.0), stage_done(pp, 0.0);
    std::map<std::pair<int, int>, double> reduction_start;
    std::vector<planner::DpEvent> embedding;
    double reduced_by = 0;
    for (const auto& d : pr.dp_events) {
      QCOMPARE(d.microbatch, -1);
      QVERIFY(d.end_s > d.start_s);
      reduced_by = std::max(reduced_by, d.end_s);
      if (d.kind == planner::DpEvent::Kind::embedding_all_reduce) {
        embedding.push_back(d);
        continue;
      }
      QVERIFY(d.kind == planner::DpEvent::Kind::all_reduce);
      QVERIFY(!reduction_start.count({d.stage, d.chunk}));  // one per chunk
      // From its launch, or when the previous one on the stream ends.
      QVERIFY(std::abs(d.start_s - std::max(launch.at({d.stage, d.chunk}), stream_free[d.stage])) <= 1e-12);
      stream_free[d.stage] = d.end_s;
      stage_done[d.stage] = std::max(stage_done[d.stage], d.end_s);
      reduction_start[{d.stage, d.chunk}] = d.start_s;
    }
    QCOMPARE(reduction_start.size(), size_t{2 * pp});
    // Interleaving finishes a stage's second chunk first: its reduction goes first.
    for (int s = 0; s < pp; ++s) QVERIFY(reduction_start.at({s, 1}) < reduction_start.at({s, 0}));
    // The cool-down hides the last stage's reduction: it ends before stage 0's.
    QVERIFY(stage_done[pp - 1] < stage_done[0]);
    const double makespan = pr.simulation.makespan_s;
    // The embedding's all-reduce: on stage 0's first chunk and stage 7's last, after both streams;
    // 51200 × 12288 / 8 fp16 gradients between two nodes.
    QCOMPARE(embedding.size(), size_t{2});
    QCOMPARE(embedding[0].stage, 0);
    QCOMPARE(embedding[1].stage, pp - 1);
    QCOMPARE(embedding[1].chunk, 1);
    for (const auto& e : embedding) {
      QCOMPARE(e.start_s, std::max({makespan, stage_done[0], stage_done[pp - 1]}));
      QCOMPARE(e.end_s, reduced_by);
    }
    // Stage 0's stream ends last: the whole all-reduce is exposed.
    const double embedding_s = pr.embedding_all_reduce_s;
    QVERIFY(std::abs(embedding_s - (embedding[0].end_s - embedding[0].start_s)) <= 1e-12);
    QVERIFY2(embedding_s > 0.001 && embedding_s < 0.1, qPrintable(QString::number(embedding_s)));
    QVERIFY(reduced_by > makespan);
    QVERIFY(std::abs(pr.dp_exposed_s - (reduced_by - makespan)) <= 1e-9 * pr.dp_exposed_s);
    // Without events the figures are the same.
    const auto quiet = planner::make_plan(plan.spec).prediction;
    QVERIFY(quiet.dp_events.empty());
    QCOMPARE(quiet.iteration_time_s, pr.iteration_time_s);
  }

  void oneF1BBucketsOnStageZeroOnly() {
    // Llama-3-70B's example, 1F1B over 4 stages, distributed optimizer: stage 0 reduce-scatters bucket
    // by bucket from its last backward's start, the last bucket (with the 128256 × 8192 / 8 word
    // embedding) from its end; the other stages keep one bucket and reduce it once their last backward
    // has ended.
    std::ifstream in(TESSERA_SOURCE_DIR "/resources/examples/llama3-70b-64xh100.json");
    planner::PlanOptions options;
    options.record_events = true;
    const auto plan = planner::make_plan(spec::parse_spec(nlohmann::json::parse(in)), options);
    const auto& pr = plan.prediction;
    std::map<int, std::pair<double, double>> last_backward;  // stage -> start, end
    for (const auto& e : pr.simulation.events)
      if (e.op.kind == planner::OpKind::backward && e.start_s >= last_backward[e.stage].first)
        last_backward[e.stage] = {e.start_s, e.end_s};
    std::map<int, std::vector<planner::DpEvent>> reductions;
    for (const auto& d : pr.dp_events)
      if (d.kind == planner::DpEvent::Kind::reduce_scatter) reductions[d.stage].push_back(d);
    QCOMPARE(reductions.size(), size_t{4});
    QCOMPARE(reductions[0].size(), size_t{2});
    QCOMPARE(reductions[0][0].start_s, last_backward[0].first);
    QCOMPARE(reductions[0][1].start_s, std::max(last_backward[0].second, reductions[0][0].end_s));
    const double on_rank = static_cast<double>(plan.stage_params[0].dense_on_rank);
    const double share = (reductions[0][1].end_s - reductions[0][1].start_s) /
                         (reductions[0][0].end_s - reductions[0][0].start_s + reductions[0][1].end_s - reductions[0][1].start_s);
    QVERIFY2(std::abs(share - 128256.0 * 8192 / 8 / on_rank) < 0.01, qPrintable(QString::number(share)));
    for (int s = 1; s < 4; ++s) {
      QCOMPARE(reductions[s].size(), size_t{1});
      QCOMPARE(reductions[s][0].start_s, last_backward[s].second);
    }
  }

  void untiedOrSingleStageModelsHaveNoEmbeddingAllReduce() {
    // Llama's output layer is its own (untied): nothing to sum between the stages; and a tied model
    // on one stage holds the embedding once.
    nlohmann::json doc = {{"model", {{"preset", "llama3-8b"}}},
                          {"parallel", {{"tp", 2}, {"pp", 4}}},
                          {"training", {{"micro_batch_size", 1}, {"global_batch_size", 64}}},
                          {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 2}, {"gpus_per_node", 8}}}};
    QCOMPARE(planner::make_plan(spec::parse_spec(doc)).prediction.embedding_all_reduce_s, 0.0);
    doc["model"]["tie_embeddings"] = true;
    QVERIFY(planner::make_plan(spec::parse_spec(doc)).prediction.embedding_all_reduce_s > 0);
    doc["parallel"]["pp"] = 1;
    QCOMPARE(planner::make_plan(spec::parse_spec(doc)).prediction.embedding_all_reduce_s, 0.0);
    // Stage 0 and stage 3 on one node exchange over NVLink, on two nodes over the NIC.
    const auto embedding_s = [&](int64_t nodes) {
      doc["parallel"]["pp"] = 4;
      doc["cluster"]["nodes"] = nodes;
      planner::PlanOptions options;
      options.record_events = true;
      for (const auto& d : planner::make_plan(spec::parse_spec(doc), options).prediction.dp_events)
        if (d.kind == planner::DpEvent::Kind::embedding_all_reduce) return d.end_s - d.start_s;
      return 0.0;
    };
    const double one_node = embedding_s(1), two_nodes = embedding_s(2);
    QVERIFY2(one_node > 0 && two_nodes > 5 * one_node, qPrintable(QString("%1 vs %2").arg(one_node).arg(two_nodes)));
  }

  void shardedGradientsCostMoreWithMoreMicrobatches() {
    // Doubling the microbatches (global batch 64 -> 128, micro-batch 1) adds the same compute to every
    // stage; ZeRO-2 and ZeRO-3 also repeat their collectives, ZeRO-1 does not.
    auto added = [](int64_t zero) {
      const auto step = [&](int64_t gbs) { return planner::make_plan(spec::parse_spec(dataParallelSpec(zero, gbs))).prediction.iteration_time_s; };
      return step(128) - step(64);
    };
    const double zero1 = added(1), zero2 = added(2), zero3 = added(3);
    QVERIFY2(zero1 < zero2 && zero2 < zero3, qPrintable(QString("%1 %2 %3").arg(zero1).arg(zero2).arg(zero3)));
  }

  void distributedOptimizerShardsExpertsOverExpertDataParallel() {
    // Each rank updates 1/8 of the experts either way: all of them over dp 8, or its eighth (ep 8) alone.
    nlohmann::json doc = {{"model", {{"preset", "mixtral-8x7b"}}},
                          {"parallel", {{"tp", 1}, {"pp", 1}, {"ep", 1}, {"distributed_optimizer", true}}},
                          {"training", {{"micro_batch_size", 1}, {"global_batch_size", 64}}},
                          {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}}};
    const double ep1 = planner::make_plan(spec::parse_spec(doc)).prediction.optimizer_s;
    doc["parallel"]["ep"] = 8;
    const double ep8 = planner::make_plan(spec::parse_spec(doc)).prediction.optimizer_s;
    QVERIFY(ep1 > 0);
    QVERIFY2(std::abs(ep8 - ep1) <= 1e-9 * ep1, qPrintable(QString("%1 vs %2").arg(ep8).arg(ep1)));
  }
};

QTEST_APPLESS_MAIN(TestPrediction)
#include "test_prediction.moc"
