// Parameter counts of the presets against their published totals, and per-stage / per-rank splits.
#include <QtTest/QtTest>

#include "planner/flops.hpp"
#include "planner/params.hpp"

using namespace tessera;

namespace {
spec::RunSpec preset_spec(const std::string& id, nlohmann::json parallel = nlohmann::json::object(), int64_t gpus = 1,
                          nlohmann::json training = nlohmann::json::object()) {
  nlohmann::json doc = {{"model", {{"preset", id}}},
                        {"parallel", parallel},
                        {"training", training},
                        {"cluster", {{"gpu", "a100-80gb"}, {"nodes", 1}, {"gpus_per_node", gpus}}}};
  return spec::parse_spec(doc);
}
int64_t total_of(const std::string& id) { return planner::count_parameters(preset_spec(id).model).total; }
}  // namespace

class TestParams : public QObject {
  Q_OBJECT
 private slots:
  void publishedTotals() {
    QCOMPARE(total_of("llama3-8b"), int64_t{8'030'261'248});
    QCOMPARE(total_of("llama3-70b"), int64_t{70'553'706'496});
    QCOMPARE(total_of("mixtral-8x7b"), int64_t{46'702'792'704});
    // Active per token (Mistral AI: 12.9 B of 46.7 B): the total less 6 of 8 experts' weights in each of
    // 32 layers, 3 matrices of 4096 x 14336 each: 46,702,792,704 - 32 x 6 x 3 x 4096 x 14336.
    QCOMPARE(planner::count_parameters(preset_spec("mixtral-8x7b").model).active_per_token,
             int64_t{46'702'792'704} - int64_t{32} * 6 * 3 * 4096 * 14336);
    QCOMPARE(planner::count_parameters(preset_spec("llama3-8b").model).active_per_token, int64_t{8'030'261'248});  // dense: all
    QCOMPARE(total_of("gpt2-124m"), int64_t{124'439'808});
    QCOMPARE(total_of("llama2-7b"), int64_t{6'738'415'616});
    QCOMPARE(total_of("llama3-405b"), int64_t{405'853'388'800});
    // Hugging Face t5-large (tied, relative position bias): 737,668,096.
    QCOMPARE(total_of("t5-large"), int64_t{737'668'096});
    // Without relative positions, no bias tables: 32 buckets × 16 heads in each of the two stacks
    // fewer (they were counted whatever the position embedding, helper-4).
    for (const char* positions : {"rope", "learned"}) {
      auto t5 = preset_spec("t5-large").model;
      t5.position_embedding = spec::enum_from_string<spec::PositionEmbedding>(positions).value();
      const int64_t learned_table = t5.position_embedding == spec::PositionEmbedding::learned ? t5.seq_length * t5.hidden_size : 0;
      QCOMPARE(planner::count_parameters(t5).total, int64_t{737'668'096} - 2 * 32 * 16 + learned_table);
    }
    // Hugging Face BertForPreTraining bert-large-uncased: BertModel 335,141,888 + MLM head + NSP head.
    QCOMPARE(total_of("bert-large"), int64_t{336'226'108});
    const double gpt3 = static_cast<double>(total_of("gpt3-175b"));
    QVERIFY2(std::abs(gpt3 - 174.6e9) < 0.05e9, std::to_string(gpt3).c_str());
  }

  void stagesSumToTotalWithoutTp() {
    // Untied model: the per-stage totals partition the model exactly.
    const auto s = preset_spec("llama3-8b", {{"pp", 4}}, 4);
    const auto params = planner::count_parameters(s.model);
    const auto stages = planner::stage_parameters(s, params, 1);
    QCOMPARE(stages.size(), size_t{4});
    int64_t sum = 0, rank_sum = 0;
    for (const auto& st : stages) {
      sum += st.total;
      rank_sum += st.on_rank();
      QCOMPARE(st.layers.size(), size_t{8});
    }
    QCOMPARE(sum, params.total);
    QCOMPARE(rank_sum, params.total);  // tp = 1 and no padding: ranks hold exactly the model
    QCOMPARE(stages[0].layers.front(), int64_t{0});
    QCOMPARE(stages[3].layers.back(), int64_t{31});
  }

  // Uneven stages (Llama 3 405B as Meta trained it, 7, 8 × 14, 7): each stage holds its own count of
  // layers, in order, and the stages still partition the model.
  void unevenStagesHoldTheirOwnLayers() {
    const auto s = preset_spec("llama3-405b", {{"pp", 16}, {"first_stage_layers", 7}, {"last_stage_layers", 7}}, 16);
    const auto params = planner::count_parameters(s.model);
    const auto stages = planner::stage_parameters(s, params, 1);
    int64_t sum = 0, next_layer = 0;
    for (size_t i = 0; i < stages.size(); ++i) {
      const auto& st = stages[i];
      QCOMPARE(st.layers.size(), size_t{i == 0 || i == 15 ? 7u : 8u});
      for (int64_t layer : st.layers) QCOMPARE(layer, next_layer++);
      sum += st.total;
    }
    QCOMPARE(next_layer, int64_t{126});
    QCOMPARE(sum, params.total);
    // The first stage: 7 layers and the embedding; a middle one 8 layers.
    QCOMPARE(stages[0].total, 7 * params.layers[0].total() + params.embedding_total());
    QCOMPARE(stages[1].total, 8 * params.layers[0].total());
  }

  void interleavedStagesHoldStridedChunks() {
    const auto s = preset_spec("tiny-gpt", {{"pp", 2}, {"vpp", 2}, {"schedule", "interleaved"}}, 2,
                               {{"global_batch_size", 4}});
    const auto stages = planner::stage_parameters(s, planner::count_parameters(s.model), 1);
    QCOMPARE(stages[0].layers, (std::vector<int64_t>{0, 2}));
    QCOMPARE(stages[1].layers, (std::vector<int64_t>{1, 3}));
    // By chunk: the embedding in stage 0's first chunk, the output layer in the last stage's last;
    // the chunks add up to the stage.
    const auto params = planner::count_parameters(s.model);
    const int64_t layer = params.layers[0].dense_on_rank(1);
    const int64_t vocab = planner::padded_vocab(s.model.vocab_size, 1) * s.model.hidden_size;
    QCOMPARE(stages[0].chunk_dense_on_rank[0], layer + vocab + params.embedding_replicated);
    QCOMPARE(stages[0].chunk_dense_on_rank[1], layer);
    QCOMPARE(stages[1].chunk_dense_on_rank[0], layer);
    QVERIFY(stages[1].chunk_dense_on_rank[1] >= layer + vocab);  // the output layer or the tied embedding's copy
    for (const auto& st : stages) {
      QCOMPARE(st.chunk_dense_on_rank[0] + st.chunk_dense_on_rank[1], st.dense_on_rank);
      QCOMPARE(st.chunk_expert_on_rank, (std::vector<int64_t>{0, 0}));
    }
  }

  void tensorParallelSplitsByHand() {
    // tiny-gpt with tp=2: layer = qkv (64x192 + 192) + proj (64x64 + 64) + mlp (64x256 + 256 + 256x64 + 64) + 2 LN (128 each).
    const auto s = preset_spec("tiny-gpt", {{"tp", 2}}, 2);
    const auto params = planner::count_parameters(s.model);
    const auto& layer = params.layers[0];
    QCOMPARE(layer.total(), int64_t{64 * 192 + 192 + 64 * 64 + 64 + 64 * 256 + 256 + 256 * 64 + 64 + 2 * 128});
    QCOMPARE(layer.dense_on_rank(2), int64_t{(64 * 192 + 192 + 64 * 64 + 64 * 256 + 256 + 256 * 64) / 2 + 64 + 64 + 256});
    const auto stages = planner::stage_parameters(s, params, 2);
    // One stage: 4 layers + vocab-parallel embedding (256/2 x 64) + replicated positions (64x64) + final LN.
    QCOMPARE(stages[0].on_rank(), 4 * layer.dense_on_rank(2) + 128 * 64 + 64 * 64 + 128);
  }

  void expertsSplitByEpAndTp() {
    const auto s = preset_spec("mixtral-8x7b", {{"tp", 2}, {"ep", 4}}, 8);
    const auto params = planner::count_parameters(s.model);
    const int64_t experts_per_layer = 8 * 3 * 4096 * 14336;
    QCOMPARE(params.layers[0].expert_sharded, experts_per_layer);
    QCOMPARE(params.layers[0].expert_on_rank(2, 4), experts_per_layer / 8);
  }

  void megatronVocabPadding() {
    QCOMPARE(planner::padded_vocab(50257, 128 * 8), int64_t{51200});
    QCOMPARE(planner::padded_vocab(256, 2), int64_t{256});
    QCOMPARE(planner::padded_vocab(50257, 1), int64_t{50257});
  }

  void flopsMatchNarayananFormula() {
    // Narayanan et al. 2021, eq. 3: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full recompute,
    // attention counted in full. GPT-3 175B shape with vocab 51200, B = 1536.
    nlohmann::json doc = {{"model", {{"preset", "gpt3-175b"}, {"vocab_size", 51200}}},
                          {"parallel", {{"tp", 8}, {"pp", 8}}},
                          {"training", {{"micro_batch_size", 1}, {"global_batch_size", 1536}, {"recompute", "full"}}},
                          {"cluster", {{"gpu", "a100-80gb"}, {"nodes", 8}, {"gpus_per_node", 8}}}};
    const auto s = spec::parse_spec(doc);
    const auto f = planner::iteration_flops(s, false);
    const double B = 1536, sq = 2048, l = 96, h = 12288, V = 51200;
    const double expected = 96 * B * sq * l * h * h * (1 + sq / (6 * h) + V / (16 * l * h));
    // The paper's formula drops the O(h) bias/norm terms; ours has none of those in FLOPs either.
    QVERIFY2(std::abs(f.hardware_per_iteration / expected - 1) < 1e-9, std::to_string(f.hardware_per_iteration / expected).c_str());
    QCOMPARE(f.model_per_iteration, expected * 3 / 4 + 6 * B * sq * h * V / 4);  // model = 3 passes of the layers, logits unchanged
    const auto causal = planner::iteration_flops(s, true);
    QVERIFY(causal.model_per_iteration < f.model_per_iteration);
    QVERIFY(causal.causal);
    // BERT's self-attention is bidirectional: asking for causal FLOPs halves nothing and says so.
    const auto bert = spec::parse_spec({{"model", {{"preset", "bert-large"}}},
                                        {"training", {{"micro_batch_size", 1}, {"global_batch_size", 8}}},
                                        {"cluster", {{"gpu", "a100-80gb"}, {"nodes", 1}, {"gpus_per_node", 8}}}});
    const auto bert_causal = planner::iteration_flops(bert, true);
    QCOMPARE(bert_causal.model_per_iteration, planner::iteration_flops(bert, false).model_per_iteration);
    QVERIFY(!bert_causal.causal);
  }

  void t5DecoderRunsAtItsOwnLength() {
    // T5-Large with Megatron's example lengths, encoder 512 and decoder 128, counted by hand per
    // sample: each encoder layer over 512 tokens, each decoder layer over 128 with cross-attention
    // to 512 keys (its K and V projected from the 512 encoder outputs), the logits over 128.
    const auto spec = spec::parse_spec({{"model", {{"preset", "t5-large"}, {"decoder_seq_length", 128}}},
                                        {"training", {{"micro_batch_size", 1}, {"global_batch_size", 16}}},
                                        {"cluster", {{"gpu", "a100-80gb"}, {"nodes", 1}, {"gpus_per_node", 1}}}});
    const double se = 512, sd = 128, h = 1024, q = 1024, kv = 1024, f = 4096, V = 32128, B = 16;
    const double encoder = se * (h * (q + 2 * kv) + q * h) + 2 * se * se * q + se * 2 * h * f;
    const double decoder = sd * (h * (q + 2 * kv) + q * h) + 2 * sd * sd * q  // self-attention
                           + sd * 2 * h * q + se * h * 2 * kv + 2 * sd * se * q     // cross-attention
                           + sd * 2 * h * f;
    const double expected = 6 * B * (24 * encoder + 24 * decoder + sd * h * V);
    const auto flops = planner::iteration_flops(spec, false);
    QVERIFY2(std::abs(flops.model_per_iteration / expected - 1) < 1e-12, std::to_string(flops.model_per_iteration / expected).c_str());
    QCOMPARE(flops.tokens_per_iteration, int64_t{16 * 512});  // the encoder's tokens
    // Causal counting halves the decoder's self-attention scores only.
    const double halved = 6 * B * 24 * (sd * sd * q);
    QVERIFY(std::abs(flops.model_per_iteration - planner::iteration_flops(spec, true).model_per_iteration - halved) < 1e-6 * halved);
  }
};

QTEST_APPLESS_MAIN(TestParams)
#include "test_params.moc"
