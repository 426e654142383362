// Tests of backend/spec: presets, defaults, round trip, and one case per validation rule.
#include <QtTest/QtTest>

#include <limits>

#include "spec/json_keys.hpp"
#include "spec/json_nesting.hpp"
#include "spec/presets.hpp"
#include "spec/run_spec.hpp"

using namespace tessera::spec;
using nlohmann::json;

namespace {

json base_spec() {
  return json::parse(R"({
    "model": {"preset": "llama3-8b"},
    "parallel": {"tp": 2, "pp": 2},
    "training": {"micro_batch_size": 1, "global_batch_size": 64},
    "cluster": {"gpu": "h100-sxm", "nodes": 1, "gpus_per_node": 8}
  })");
}

// The messages of a spec that must fail.
std::vector<FieldError> errors_of(const json& doc) {
  try {
    parse_spec(doc);
  } catch (const SpecError& e) {
    return e.errors();
  }
  return {};
}

bool has_error(const std::vector<FieldError>& errors, const std::string& field, const std::string& fragment) {
  for (const auto& e : errors)
    if (e.field == field && e.message.find(fragment) != std::string::npos) return true;
  return false;
}

std::string dump(const std::vector<FieldError>& errors) {
  std::string out;
  for (const auto& e : errors) out += "[" + e.field + "] " + e.message + "\n";
  return out;
}

}  // namespace

class TestSpec : public QObject {
  Q_OBJECT
 private slots:
  void presetFillsModelAndDerivesDp() {
    const RunSpec s = parse_spec(base_spec());
    QCOMPARE(s.model.num_layers, int64_t{32});
    QCOMPARE(s.model.num_query_groups, int64_t{8});
    QCOMPARE(s.model.ffn_hidden_size, int64_t{14336});
    QCOMPARE(s.model.vocab_size, int64_t{128256});
    QVERIFY(s.model.arch == Arch::llama);
    QCOMPARE(s.parallel.dp, int64_t{0});
    QCOMPARE(s.data_parallel(), int64_t{2});
    QCOMPARE(s.num_microbatches(), int64_t{32});
  }

  void explicitFieldsOverridePreset() {
    json doc = base_spec();
    doc["model"]["num_layers"] = 16;
    doc["model"]["seq_length"] = 2048;
    const RunSpec s = parse_spec(doc);
    QCOMPARE(s.model.num_layers, int64_t{16});
    QCOMPARE(s.model.seq_length, int64_t{2048});
    QCOMPARE(s.model.hidden_size, int64_t{4096});
  }

  void defaultsForOmittedDerivedFields() {
    json doc = json::parse(R"({"model": {"arch": "gpt", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "vocab_size": 256, "seq_length": 32},
      "cluster": {"gpu": "cpu", "nodes": 1, "gpus_per_node": 2}})");
    const RunSpec s = parse_spec(doc);
    QCOMPARE(s.model.ffn_hidden_size, int64_t{256});
    QCOMPARE(s.model.num_query_groups, int64_t{4});
    QCOMPARE(s.training.global_batch_size, int64_t{2});  // one microbatch per DP rank
  }

  void roundTripIsExact() {
    json doc = base_spec();
    doc["name"] = "round trip";
    doc["parallel"]["sequence_parallel"] = true;
    doc["training"]["recompute"] = "selective";
    const RunSpec s = parse_spec(doc);
    const RunSpec again = parse_spec(json::parse(to_json(s).dump()));
    QVERIFY(s == again);
    QCOMPARE(again.name, std::string("round trip"));
    // Every field is written, save_every's 0 too; what agents are sent leaves save_every out at 0
    // (agents of the release before it refuse it) and has it when set.
    QCOMPARE(to_json(s)["training"]["save_every"].get<int64_t>(), int64_t{0});
    QVERIFY(!to_json(s, JsonFields::for_agents)["training"].contains("save_every"));
    QVERIFY(parse_spec(json::parse(to_json(s, JsonFields::for_agents).dump())) == s);
    doc["training"]["save_every"] = 50;
    const RunSpec saving = parse_spec(doc);
    QCOMPARE(to_json(saving, JsonFields::for_agents)["training"]["save_every"].get<int64_t>(), int64_t{50});
    QVERIFY(parse_spec(json::parse(to_json(saving).dump())) == saving);
  }

  // A history's spec from before global_batch_size 0 was refused still reads (derived), as it did.
  void storedSpecsReadAsTheyWereStored() {
    json doc = base_spec();
    doc["training"]["global_batch_size"] = 0;
    QVERIFY_THROWS_EXCEPTION(SpecError, parse_spec(doc));
    const RunSpec stored = parse_stored_spec(doc);
    doc["training"].erase("global_batch_size");
    QCOMPARE(stored.training.global_batch_size, parse_spec(doc).training.global_batch_size);
  }

  void setFieldChecksTypes() {
    RunSpec s = parse_spec(base_spec());
    set_field(s, "parallel.tp", 4);
    QCOMPARE(s.parallel.tp, int64_t{4});
    QVERIFY_THROWS_EXCEPTION(SpecError, set_field(s, "parallel.tp", "four"));
    QCOMPARE(s.parallel.tp, int64_t{4});  // unchanged on error
    QVERIFY_THROWS_EXCEPTION(SpecError, set_field(s, "parallel.tpp", 2));
    try {  // a field of another section: pointed to it
      set_field(s, "training.seq_length", 4096);
      QFAIL("training.seq_length was accepted");
    } catch (const SpecError& e) {
      QVERIFY2(std::string(e.what()).find("unknown field training.seq_length (seq_length belongs in model: did you mean "
                                          "model.seq_length?)") != std::string::npos, e.what());
    }
    // A whole section is no field: "parallel" suggested itself, "model" suggested cluster.nodes.
    for (const char* section : {"parallel", "model"})
      try {
        set_field(s, section, 4);
        QFAIL("a section was set");
      } catch (const SpecError& e) {
        const std::string message = e.what();
        QVERIFY2(message.find(std::string(section) + " is a section, not a field: set one of its fields, as " + section + ".") !=
                     std::string::npos, e.what());
        QVERIFY2(message.find("nodes") == std::string::npos, e.what());
      }
    set_field(s, "model.preset", "gpt2-124m");
    QCOMPARE(s.model.hidden_size, int64_t{768});
    QCOMPARE(s.model.ffn_hidden_size, int64_t{3072});
    // A t5's decoder follows the encoder's length unless given (also after seq_length changes); a
    // length given is written back.
    RunSpec t5 = parse_spec({{"model", {{"preset", "t5-large"}}}});
    QCOMPARE(t5.model.output_seq_length(), int64_t{512});
    QVERIFY(!to_json(t5)["model"].contains("decoder_seq_length"));
    set_field(t5, "model.seq_length", 1024);
    QCOMPARE(t5.model.layer_seq_length(24), int64_t{1024});
    QVERIFY(!to_json(s)["model"].contains("decoder_seq_length"));
    RunSpec shorter = parse_spec({{"model", {{"preset", "t5-large"}}}});
    set_field(shorter, "model.decoder_seq_length", 128);
    QCOMPARE(to_json(shorter)["model"]["decoder_seq_length"].get<int64_t>(), int64_t{128});
    QCOMPARE(parse_spec(to_json(shorter)), shorter);
    QCOMPARE(shorter.model.layer_seq_length(0), int64_t{512});
    QCOMPARE(shorter.model.layer_seq_length(24), int64_t{128});
    QCOMPARE(shorter.model.output_seq_length(), int64_t{128});
    // A field without its section: the one meant is named.
    try {
      set_field(s, "tp", 4);
      QFAIL("tp was accepted");
    } catch (const SpecError& e) {
      QVERIFY2(std::string(e.what()).find("unknown field tp (did you mean parallel.tp?)") != std::string::npos, e.what());
    }
    // The run's name is a field too, and text only.
    set_field(s, "name", "TP4 trial");
    QCOMPARE(s.name, std::string("TP4 trial"));
    QVERIFY_THROWS_EXCEPTION(SpecError, set_field(s, "name", 4));
    QCOMPARE(s.name, std::string("TP4 trial"));
  }

  // A preset that is not a string is one mistake, said once (it was also read as the field, twice).
  void aBadPresetIsSaidOnce() {
    try {
      parse_spec(nlohmann::json::parse(R"({"model": {"preset": 5}})"));
      QFAIL("a preset of 5 was accepted");
    } catch (const SpecError& e) {
      QCOMPARE(e.errors().size(), size_t{1});
      QCOMPARE(e.errors()[0].message, std::string("model.preset must be a string, got 5"));
    }
  }

  // A file that is no JSON at all is said to be so (a binary was "nested more than 64 deep"); a byte
  // order mark and leading blanks are not that.
  void aFileThatIsNoJsonIsSaidSo() {
    try {
      parse_spec_text(std::string("\x89PNG\r\n\x1a\n[[[[", 12));
      QFAIL("a PNG header was accepted");
    } catch (const SpecError& e) {
      QCOMPARE(e.errors().size(), size_t{1});
      QCOMPARE(e.errors()[0].message, std::string("the spec is not JSON: it starts with byte 0x89 at offset 0 (a run spec is one "
                                                  "JSON object, {…})"));
    }
    try {
      parse_spec_text("\xEF\xBB\xBF \n  <spec/>");
      QFAIL("XML was accepted");
    } catch (const SpecError& e) {
      QVERIFY2(e.errors()[0].message.find("starts with byte 0x3C at offset 7") != std::string::npos, e.errors()[0].message.c_str());
    }
    QCOMPARE(parse_spec_text("\xEF\xBB\xBF\n {\"model\": {\"preset\": \"tiny-gpt\"}}").model.preset, std::string("tiny-gpt"));
  }

  void validationRules_data() {
    QTest::addColumn<QString>("patch");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("fragment");
    auto row = [](const char* name, const char* patch, const char* field, const char* fragment) {
      QTest::newRow(name) << patch << field << fragment;
    };
    row("tp divides heads", R"({"parallel": {"tp": 3, "pp": 1}, "cluster": {"nodes": 1, "gpus_per_node": 6}})",
        "parallel.tp", "parallel.tp=3 must divide model.num_attention_heads=32");
    row("tp divides groups", R"({"parallel": {"tp": 16, "pp": 1}, "cluster": {"nodes": 2, "gpus_per_node": 8}})",
        "parallel.tp", "parallel.tp=16 must divide model.num_query_groups=8");
    row("world size", R"({"parallel": {"dp": 3}})", "parallel.dp", "must equal the world size");
    row("dp derivable", R"({"parallel": {"tp": 2, "pp": 2}, "cluster": {"nodes": 1, "gpus_per_node": 6}})",
        "parallel.dp", "cannot be derived");
    row("pp*vpp divides layers", R"({"parallel": {"pp": 2, "vpp": 3, "schedule": "interleaved"}})", "parallel.pp",
        "must divide model.num_layers=32");
    row("gbs divisible", R"({"training": {"global_batch_size": 63}})", "training.global_batch_size",
        "must be divisible by training.micro_batch_size·parallel.dp");
    row("sp needs seq % tp", R"({"model": {"seq_length": 1001}, "parallel": {"sequence_parallel": true}})",
        "parallel.sequence_parallel", "to divide model.seq_length=1001");
    row("sp needs seq/cp % tp",
        R"({"model": {"seq_length": 8200}, "parallel": {"tp": 8, "cp": 2, "pp": 1, "sequence_parallel": true},
            "cluster": {"nodes": 2, "gpus_per_node": 8}})",
        "parallel.sequence_parallel", "each context-parallel rank's share of the sequence, model.seq_length / cp = 8200 / 2 = 4100");
    row("min_lr at most lr, values kept", R"({"training": {"lr": 1e-7, "min_lr": 3e-7}})", "training.min_lr",
        "training.min_lr=3e-07 must be between 0 and training.lr=1e-07");
    row("cp needs seq % 2cp", R"({"model": {"seq_length": 1002}, "parallel": {"cp": 2, "tp": 1}})", "parallel.cp",
        "divisible by 2·cp = 4");
    row("experts divisible by ep",
        R"({"model": {"preset": "mixtral-8x7b"}, "parallel": {"tp": 1, "pp": 1, "ep": 3},
            "cluster": {"nodes": 1, "gpus_per_node": 6}, "training": {"global_batch_size": 6}})",
        "parallel.ep", "parallel.ep=3 must divide model.num_experts=8");
    row("ep divides dp*cp", R"({"model": {"preset": "mixtral-8x7b"}, "parallel": {"tp": 2, "pp": 2, "ep": 4}})",
        "parallel.ep", "must divide parallel.dp·cp");
    row("ep needs experts", R"({"parallel": {"ep": 2, "tp": 1, "pp": 1}})", "parallel.ep", "needs a mixture of experts");
    row("interleaved microbatches", R"({"parallel": {"pp": 4, "tp": 2, "vpp": 2, "schedule": "interleaved"},
        "training": {"global_batch_size": 6}})", "parallel.schedule", "multiple of parallel.pp=4");
    row("vpp needs interleaved", R"({"parallel": {"vpp": 2}})", "parallel.vpp", "needs parallel.schedule=interleaved");
    row("interleaved needs vpp", R"({"parallel": {"schedule": "interleaved"}})", "parallel.schedule", "needs parallel.vpp >= 2");
    row("positive integers", R"({"parallel": {"tp": 0}})", "parallel.tp", "must be a positive integer");
    row("positive dp", R"({"parallel": {"dp": -2}})", "parallel.dp", "must be a positive integer");
    row("bounded counts", R"({"model": {"num_layers": 100000}})", "model.num_layers", "must be at most 10000");
    row("tp*pp*cp within the world", R"({"parallel": {"tp": 8, "pp": 4, "cp": 2}})", "parallel.tp",
        "exceeds the world size");
    row("global batch 0", R"({"training": {"global_batch_size": 0}})", "training.global_batch_size",
        "training.global_batch_size=0 must be a positive integer (omit it for one microbatch per data-parallel rank)");
    // The other counts that omitted are derived: 0 was taken as "derive" (ffn 0 on llama3-8b planned 8.84 B
    // parameters with f = 4h instead of the preset's 14336).
    row("ffn 0", R"({"model": {"preset": "llama3-8b", "ffn_hidden_size": 0}})", "model.ffn_hidden_size",
        "model.ffn_hidden_size=0 must be a positive integer (omit it for 4·hidden_size)");
    row("query groups 0", R"({"model": {"preset": "llama3-8b", "num_query_groups": 0}})", "model.num_query_groups",
        "model.num_query_groups=0 must be a positive integer (omit it for one per attention head, MHA)");
    row("expert width -1", R"({"model": {"preset": "mixtral-8x7b", "moe_ffn_hidden_size": -1}})", "model.moe_ffn_hidden_size",
        "model.moe_ffn_hidden_size=-1 must be a positive integer (omit it for ffn_hidden_size)");
    row("decoder sequence 0", R"({"model": {"preset": "t5-large", "decoder_seq_length": 0}})", "model.decoder_seq_length",
        "model.decoder_seq_length=0 must be a positive integer (omit it to follow seq_length)");
    row("zero stage range", R"({"parallel": {"zero_stage": 4}})", "parallel.zero_stage", "must be 0, 1, 2 or 3");
    row("zero-2 with pp", R"({"parallel": {"zero_stage": 2}})", "parallel.zero_stage", "cannot be combined");
    row("unknown field alias", R"({"parallel": {"tensor_parallel": 2}})", "parallel.tensor_parallel",
        "did you mean parallel.tp");
    row("megatron argument name", R"({"parallel": {"pipeline_model_parallel_size": 2}})",
        "parallel.pipeline_model_parallel_size", "did you mean parallel.pp");
    row("unknown field typo", R"({"training": {"micro_batch_sise": 2}})", "training.micro_batch_sise",
        "did you mean training.micro_batch_size?");
    row("unknown section", R"({"modle": {}})", "modle", "did you mean model?");
    row("field of another section", R"({"model": {"tp": 2}})", "model.tp", "(tp belongs in parallel: did you mean parallel.tp?)");
    row("megatron name in another section", R"({"model": {"tensor_model_parallel_size": 2}})",
        "model.tensor_model_parallel_size", "(tp belongs in parallel: did you mean parallel.tp?)");
    row("training field in parallel", R"({"parallel": {"micro_batch_size": 2}})", "parallel.micro_batch_size",
        "did you mean training.micro_batch_size?");
    row("bad enum", R"({"parallel": {"schedule": "1f1c"}})", "parallel.schedule", "did you mean \"1f1b\"");
    row("wrong type", R"({"parallel": {"tp": "2"}})", "parallel.tp", "must be an integer, got \"2\"");
    row("unknown preset", R"({"model": {"preset": "llama3-8"}})", "model.preset", "did you mean \"llama3-8b\"");
    row("preset in capitals", R"({"model": {"preset": "LLAMA3-8B"}})", "model.preset", "did you mean \"llama3-8b\"");
    row("t5 without its layers", R"({"model": {"arch": "t5"}})", "model.encoder_layers",
        "model.arch=t5 needs model.encoder_layers and model.decoder_layers");
    row("decoder length only for t5", R"({"model": {"decoder_seq_length": 128}})", "model.decoder_seq_length",
        "model.decoder_seq_length is only for model.arch=t5");
    row("t5 decoder length positive", R"({"model": {"preset": "t5-large", "decoder_seq_length": -1}})",
        "model.decoder_seq_length", "model.decoder_seq_length=-1");
    row("sp divides the decoder length", R"({"model": {"preset": "t5-large", "decoder_seq_length": 129}, "parallel": {"sequence_parallel": true}})",
        "parallel.sequence_parallel", "needs parallel.tp·cp = 2 to divide model.decoder_seq_length=129");
    // A name of megabytes was recorded as a run, which failed when the agent refused the launch message.
    static const std::string long_name = "{\"name\": \"" + std::string(1025, 'n') + "\"}";  // (moc reads no raw strings)
    row("name at most 1024 bytes", long_name.c_str(), "name", "name is 1025 bytes long, at most 1024 are allowed");
    row("name of one line", "{\"name\": \"two\\nlines\"}", "name", "name is one line, without control characters (byte 0x0A at offset 3)");
    // U+202E (right-to-left override) made "run \u202Elive" read as "run evil" in every list.
    row("name without bidi override", "{\"name\": \"run \\u202Elive\"}", "name",
        "name must not hold a bidirectional override (U+202E at offset 4)");
    row("name without bidi isolate", "{\"name\": \"a\\u2069\"}", "name", "(U+2069 at offset 1)");
    row("unknown gpu", R"({"cluster": {"gpu": "h100"}})", "cluster.gpu",
        "cluster.gpu=\"h100\" is not a known GPU preset (did you mean \"h100-sxm\"?)");
    row("gpu of two presets", R"({"cluster": {"gpu": "a100"}})", "cluster.gpu", "(did you mean \"a100-40gb\" or \"a100-80gb\"?)");
    row("preset begun", R"({"model": {"preset": "gpt3"}})", "model.preset", "(did you mean \"gpt3-175b\"?)");
    row("preset of three", R"({"model": {"preset": "llama3"}})", "model.preset",
        "(did you mean \"llama3-405b\", \"llama3-70b\" or \"llama3-8b\"?)");
    row("hidden divisible by heads", R"({"model": {"hidden_size": 4100}})", "model.hidden_size",
        "must be divisible by model.num_attention_heads=32");
    row("groups divide heads", R"({"model": {"num_query_groups": 5}})", "model.num_query_groups",
        "must divide model.num_attention_heads=32");
    row("min_lr <= lr", R"({"training": {"lr": 0.001, "min_lr": 0.01}})", "training.min_lr", "must be between 0");
    row("weight decay's value named", R"({"training": {"weight_decay": -0.5}})", "training.weight_decay",
        "training.weight_decay=-0.5 must be a finite number");
    row("interleaving's microbatches explained", R"({"parallel": {"pp": 4, "vpp": 2, "schedule": "interleaved"}, "training": {"global_batch_size": 6}})",
        "parallel.schedule", "training.global_batch_size / (micro_batch_size·dp) = 6 / 1 = 6, to be a multiple of parallel.pp=4");
    row("save_every not negative", R"({"training": {"save_every": -1}})", "training.save_every", "must be 0 (a checkpoint at the end only) or more");
    row("megatron save interval", R"({"training": {"save_interval": 100}})", "training.save_interval",
        "did you mean training.save_every");
    row("top-k <= experts", R"({"model": {"preset": "mixtral-8x7b", "moe_top_k": 9}})", "model.moe_top_k",
        "must not exceed model.num_experts=8");
    // Uneven pipeline stages (llama3-8b: 32 layers; tp 2 on 8 GPUs).
    row("uneven stages need a pipeline", R"({"parallel": {"pp": 1, "first_stage_layers": 3}})",
        "parallel.first_stage_layers", "parallel.first_stage_layers=3 needs parallel.pp above 1");
    row("uneven stage a multiple of vpp",
        R"({"parallel": {"pp": 4, "vpp": 2, "schedule": "interleaved", "last_stage_layers": 3}})",
        "parallel.last_stage_layers", "parallel.last_stage_layers=3 must be a multiple of parallel.vpp=2: each of the stage's virtual "
        "stages holds an equal share (0 and 0 split them evenly, 8 × 4)");
    row("two uneven stages add up, split offered",
        R"({"model": {"num_layers": 30}, "parallel": {"pp": 2, "vpp": 2, "schedule": "interleaved", "first_stage_layers": 14,
            "last_stage_layers": 14}})",
        "parallel.first_stage_layers", "= 28 must equal model.num_layers=30 on parallel.pp=2 stages (16 and 14 split them as 16, 14)");
    row("uneven rest splits evenly", R"({"parallel": {"pp": 4, "first_stage_layers": 6}})", "parallel.first_stage_layers",
        "the 26 layers that parallel.first_stage_layers=6 leaves of model.num_layers=32 must split evenly over the other 3 stages "
        "(0 and 0 split them evenly, 8 × 4)");
    row("uneven rest splits over virtual stages",
        R"({"parallel": {"pp": 4, "vpp": 2, "schedule": "interleaved", "first_stage_layers": 4, "last_stage_layers": 2}})",
        "parallel.first_stage_layers", "the 26 layers that parallel.first_stage_layers + last_stage_layers = 6 leaves of "
        "model.num_layers=32 must split evenly over the other 2 stages times parallel.vpp=2 virtual stages");
    row("uneven ends leave too few", R"({"parallel": {"pp": 4, "first_stage_layers": 16, "last_stage_layers": 16}})",
        "parallel.first_stage_layers", "leaves 0 of model.num_layers=32 for the other 2 stages, which need at least 2 (0 and 0 split "
        "them evenly, 8 × 4)");
    row("uneven ends leave one stage too few", R"({"parallel": {"pp": 3, "tp": 1, "first_stage_layers": 16, "last_stage_layers": 16},
        "cluster": {"gpus_per_node": 3}, "training": {"global_batch_size": 63}})",
        "parallel.first_stage_layers", "for the other 1 stage, which needs at least 1 (11 and 10 split them as 11 × 2, 10)");
    row("uneven ends more than the layers", R"({"parallel": {"pp": 4, "first_stage_layers": 20, "last_stage_layers": 20}})",
        "parallel.first_stage_layers", "parallel.first_stage_layers + last_stage_layers = 40 is more than model.num_layers=32 (0 and 0");
    row("two uneven stages hold every layer", R"({"parallel": {"first_stage_layers": 10, "last_stage_layers": 10}})",
        "parallel.first_stage_layers", "parallel.first_stage_layers + last_stage_layers = 20 must equal model.num_layers=32 on parallel.pp=2 stages");
    row("uneven stage not negative", R"({"parallel": {"last_stage_layers": -1}})", "parallel.last_stage_layers",
        "parallel.last_stage_layers=-1 must be 0 (an even share of the layers) or a positive integer");
    row("megatron's first stage flag", R"({"parallel": {"decoder_first_pipeline_num_layers": 7}})",
        "parallel.decoder_first_pipeline_num_layers", "did you mean parallel.first_stage_layers");
    row("an uneven split offered", R"({"model": {"preset": "llama3-405b"}, "parallel": {"tp": 8, "pp": 16}, "cluster": {"nodes": 16}})",
        "parallel.pp", "parallel.pp·vpp = 16·1 = 16 must divide model.num_layers=126, or parallel.first_stage_layers and "
        "last_stage_layers set the end stages apart (7 and 7 split them as 7, 8 × 14, 7)");
  }

  void validationRules() {
    QFETCH(QString, patch);
    QFETCH(QString, field);
    QFETCH(QString, fragment);
    json doc = base_spec();
    doc.merge_patch(json::parse(patch.toStdString()));
    const auto errors = errors_of(doc);
    QVERIFY2(has_error(errors, field.toStdString(), fragment.toStdString()), dump(errors).c_str());
  }

  // Llama 3 405B as Meta trained it: 16 stages of 7, 8 × 14 and 7 layers (Dubey et al. 2024, §3.3.2).
  void unevenStagesSplitTheLayers() {
    json doc = base_spec();
    doc.merge_patch(json::parse(R"({"model": {"preset": "llama3-405b"}, "cluster": {"nodes": 16},
      "parallel": {"tp": 8, "pp": 16, "first_stage_layers": 7, "last_stage_layers": 7}})"));
    const RunSpec s = parse_spec(doc);
    QCOMPARE(s.stage_layers(0), int64_t{7});
    for (int64_t stage = 1; stage < 15; ++stage) QCOMPARE(s.stage_layers(stage), int64_t{8});
    QCOMPARE(s.stage_layers(15), int64_t{7});
    QCOMPARE(s.chunk_layers(0), (std::pair<int64_t, int64_t>{0, 7}));
    QCOMPARE(s.chunk_layers(1), (std::pair<int64_t, int64_t>{7, 15}));
    QCOMPARE(s.chunk_layers(14), (std::pair<int64_t, int64_t>{111, 119}));
    QCOMPARE(s.chunk_layers(15), (std::pair<int64_t, int64_t>{119, 126}));
    QVERIFY(s.stages_split_layers());
    QCOMPARE(s.stage_layers_text(), std::string("7, 8 × 14, 7"));
    QVERIFY(parse_spec(json::parse(to_json(s).dump())) == s);
    // Only the last stage set: the first takes an even share of the rest with the middle ones.
    doc["parallel"].erase("first_stage_layers");
    doc["parallel"]["last_stage_layers"] = 6;
    const RunSpec last_only = parse_spec(doc);
    QCOMPARE(last_only.stage_layers(0), int64_t{8});
    QCOMPARE(last_only.stage_layers(15), int64_t{6});
    QCOMPARE(last_only.stage_layers_text(), std::string("8 × 15, 6"));
    doc["parallel"].erase("last_stage_layers");
    doc["parallel"]["pp"] = 2;
    doc["cluster"]["nodes"] = 2;
    QCOMPARE(parse_spec(doc).stage_layers_text(), std::string("63 × 2"));
  }

  // With virtual stages, chunk c of each stage holds 1/vpp of its layers, in stage order from layer
  // c·num_layers/vpp (Megatron Core's get_transformer_layer_offset): 32 layers on 4 stages of 2, 12,
  // 12, 6 layers are chunks of 1, 6, 6, 3.
  void unevenStagesWithVirtualStages() {
    json doc = base_spec();
    doc["parallel"] = json::parse(R"({"tp": 2, "pp": 4, "vpp": 2, "schedule": "interleaved", "first_stage_layers": 2,
                                      "last_stage_layers": 6})");
    const RunSpec s = parse_spec(doc);
    const std::vector<std::pair<int64_t, int64_t>> want = {{0, 1}, {1, 7}, {7, 13}, {13, 16}, {16, 17}, {17, 23}, {23, 29}, {29, 32}};
    for (int64_t virtual_stage = 0; virtual_stage < 8; ++virtual_stage)
      QCOMPARE(s.chunk_layers(virtual_stage), want[virtual_stage]);
    // An even split is not sent to agents (those of earlier releases refuse the fields); this one is.
    QCOMPARE(to_json(s, JsonFields::for_agents)["parallel"]["last_stage_layers"].get<int64_t>(), int64_t{6});
    doc["parallel"].erase("first_stage_layers");
    doc["parallel"].erase("last_stage_layers");
    QVERIFY(!to_json(parse_spec(doc), JsonFields::for_agents)["parallel"].contains("first_stage_layers"));
    QCOMPARE(to_json(parse_spec(doc))["parallel"]["first_stage_layers"].get<int64_t>(), int64_t{0});
  }

  // A split on one stage is refused, and no split of it is taken as one (stages_split_layers); an even
  // split spelled with first_stage_layers is even (checkpoints and exports treat it so); the search's
  // split of a new PP.
  void stageSplitPredicates() {
    json doc = base_spec();
    doc["parallel"] = {{"tp", 8}, {"pp", 1}, {"first_stage_layers", 7}};
    RunSpec one = parse_spec(doc, PresetCatalog::builtin(), Rules::none);
    QVERIFY(!one.stages_split_layers());
    QVERIFY(!one.even_stages());
    QCOMPARE(one.stage_layers_text(), std::string());
    QVERIFY(fit_stage_split(one));
    QCOMPARE(one.parallel.first_stage_layers, int64_t{0});
    QVERIFY(one.stages_split_layers() && one.even_stages());
    doc["parallel"] = {{"tp", 2}, {"pp", 4}, {"first_stage_layers", 8}};
    const RunSpec spelled = parse_spec(doc);
    QVERIFY(spelled.sets_end_stages() && spelled.even_stages() && !spelled.uneven_stages());
    doc["parallel"] = {{"tp", 2}, {"pp", 4}, {"first_stage_layers", 5}, {"last_stage_layers", 3}};
    RunSpec uneven = parse_spec(doc);
    QVERIFY(!uneven.even_stages() && uneven.uneven_stages());
    uneven.parallel.pp = 3;
    QVERIFY(fit_stage_split(uneven));
    QCOMPARE(uneven.stage_layers_text(), std::string("11 × 2, 10"));
    uneven.parallel.pp = 64;  // more stages than layers: no split, the spec as it was
    QVERIFY(!fit_stage_split(uneven));
    QCOMPARE(uneven.parallel.first_stage_layers, int64_t{11});
    // A file the workbench opens as it is (no rule checked): counts whose product overflows, or far
    // more stages than layers, split nothing, at once (pp·vpp wrapped to 0 and divided by it).
    doc["parallel"] = {{"pp", int64_t{1} << 32}, {"vpp", int64_t{1} << 32}, {"first_stage_layers", int64_t{1} << 62},
                       {"last_stage_layers", std::numeric_limits<int64_t>::max()}};
    RunSpec huge = parse_spec(doc, PresetCatalog::builtin(), Rules::none);
    QVERIFY(!huge.stages_split_layers() && !huge.even_stages() && !huge.uneven_stages());
    QCOMPARE(huge.stage_layers_text(), std::string());
    QCOMPARE(huge.chunk_layers(0), (std::pair<int64_t, int64_t>{0, 0}));
    QVERIFY(!fit_stage_split(huge));
    doc["parallel"] = {{"pp", int64_t{1} << 40}};
    QVERIFY(!parse_spec(doc, PresetCatalog::builtin(), Rules::none).stages_split_layers());
  }

  void balancedEndStages() {
    using Split = std::optional<std::pair<int64_t, int64_t>>;
    QCOMPARE(balanced_end_stages(126, 16, 1), (Split{{7, 7}}));
    QCOMPARE(balanced_end_stages(126, 8, 1), (Split{{15, 15}}));
    QCOMPARE(balanced_end_stages(126, 4, 1), (Split{{31, 31}}));
    QCOMPARE(balanced_end_stages(126, 64, 1), (Split{{1, 1}}));
    QCOMPARE(balanced_end_stages(126, 16, 2), (Split{{8, 6}}));  // multiples of vpp; the last the smaller
    QCOMPARE(balanced_end_stages(5, 2, 1), (Split{{3, 2}}));
    QCOMPARE(balanced_end_stages(32, 4, 1), Split{});    // even
    QCOMPARE(balanced_end_stages(126, 128, 1), Split{});  // more stages than layers
    QCOMPARE(balanced_end_stages(96, 64, 1), Split{});    // 62 middle stages of 2 would leave the ends none
    QCOMPARE(balanced_end_stages(9, 4, 2), Split{});      // 9 layers make no chunks of whole layers
  }

  // A dense model's expert width follows ffn_hidden_size: an ffn too wide is reported once, not twice.
  void aDenseModelsDerivedExpertWidthIsNotReported() {
    json doc = base_spec();
    doc["model"]["ffn_hidden_size"] = int64_t{1} << 25;
    const auto errors = errors_of(doc);
    QCOMPARE(errors.size(), size_t{1});
    QCOMPARE(errors.front().field, std::string("model.ffn_hidden_size"));
  }

  void nameOfTheLongestLengthIsValid() {
    json doc = base_spec();
    doc["name"] = std::string(1024, 'n');
    QVERIFY2(errors_of(doc).empty(), dump(errors_of(doc)).c_str());
    doc["name"] = std::string(1025, 'n');
    QCOMPARE(errors_of(doc).size(), size_t{1});
  }

  // Rules::none reads a spec whose fields parse but whose rules fail (what the workbench opens), and
  // still refuses what does not parse; validate() then finds the broken rules.
  void rulesNoneReadsWhatParses() {
    json doc = base_spec();
    doc["parallel"]["tp"] = 3;
    const RunSpec spec = parse_spec(doc, PresetCatalog::builtin(), Rules::none);
    QCOMPARE(spec.parallel.tp, int64_t{3});
    QVERIFY(has_error(validate(spec), "parallel.tp", "must divide"));
    QVERIFY(validate(spec, PresetCatalog::builtin(), Rules::none).empty());
    doc["parallel"]["tp"] = "three";
    QVERIFY_THROWS_EXCEPTION(SpecError, parse_spec(doc, PresetCatalog::builtin(), Rules::none));
  }

  void missingFieldsAreNamed() {
    const auto errors = errors_of(json::parse(R"({"model": {"arch": "gpt", "hidden_size": 64}})"));
    QVERIFY2(has_error(errors, "model.num_layers", "is missing"), dump(errors).c_str());
    QVERIFY(has_error(errors, "model.vocab_size", "is missing"));
    // An unknown preset is the one error: not also every model field it would have given.
    const auto preset = errors_of(json::parse(R"({"model": {"preset": "nope"}})"));
    QCOMPARE(preset.size(), size_t{1});
    QCOMPARE(preset[0].field, std::string("model.preset"));
  }

  void nonFiniteNumbersAreRejected() {
    QVERIFY_THROWS_EXCEPTION(SpecError, parse_spec_text(R"({"training": {"lr": 1e400}})"));
    RunSpec s = parse_spec(base_spec());
    set_field(s, "training.lr", std::numeric_limits<double>::infinity());
    QVERIFY(has_error(validate(s), "training.lr", "must be a finite number"));
  }

  void malformedJsonIsASpecError() {
    try {
      parse_spec_text("{\"model\": ");
      QFAIL("no error");
    } catch (const SpecError& e) {
      QVERIFY(std::string(e.what()).find("not valid JSON") != std::string::npos);
    }
  }

  // Text that is no JSON says what broke and where, without nlohmann's "[json.exception.parse_error.101]"
  // and the raw token it quotes; an empty file says it is empty.
  void notJsonSaysWhereInPlainWords() {
    const auto message_of = [](const std::string& text) {
      try {
        parse_spec_text(text);
      } catch (const SpecError& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    for (const std::string empty : {"", " \n\t", "\xEF\xBB\xBF"})
      QCOMPARE(message_of(empty), std::string("the spec is empty (a run spec is one JSON object, {…})"));
    struct Case {
      std::string text, expected;
    };
    for (const auto& [text, expected] :
         {Case{"{\"model\": ", "the spec is not valid JSON: parse error at line 1, column 11: syntax error while parsing value - "
                                "unexpected end of input; expected '[', '{', or a literal"},
          Case{"{\"model\": tru}", "the spec is not valid JSON: parse error at line 1, column 14: syntax error while parsing value - "
                                   "invalid literal"},
          Case{"{\"training\": {\"lr\": 1e400}}", "the spec is not valid JSON: number overflow parsing '1e400'"},
          Case{"{\"training\": {\"lr\": 1" + std::string(400, '0') + "}}",
               "the spec is not valid JSON: number overflow parsing '1" + std::string(39, '0') + "...' (401 characters)"}}) {
      const std::string message = message_of(text);
      QVERIFY2(message.find(expected) != std::string::npos, message.c_str());
      QVERIFY2(message.find("json.exception") == std::string::npos && message.find("last read") == std::string::npos,
               message.c_str());
    }
    // A string whose text looks like nlohmann's "'; expected ..." tail: nothing of it is kept (the
    // token, 1000 bytes and an ill-formed byte, was).
    const std::string lookalike = message_of("{\"a\": \"'; expected " + std::string(1000, 'x') + "\xFF\"}");
    QVERIFY2(lookalike.find("ill-formed UTF-8 byte") != std::string::npos && lookalike.find("xxx") == std::string::npos &&
                 lookalike.size() < 200 &&
                 std::none_of(lookalike.begin(), lookalike.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }),
             lookalike.c_str());
    // Text that is not nlohmann's is kept as it is.
    QCOMPARE(json_error_reason("cannot read"), std::string("cannot read"));
  }

  // Text nested deeper than a dump's recursion can take is refused before it is parsed; 64 levels are
  // read as usual; a huge value quoted in an error is cut short.
  void deepOrHugeInputGivesAShortError() {
    const std::string deep = "{\"model\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
    try {
      parse_spec_text(deep);
      QFAIL("no error");
    } catch (const SpecError& e) {
      // "{" is level 1 at byte 0, the k-th "[" level k + 1 at byte 9 + k: level 65 at byte 73.
      QVERIFY2(std::string(e.what()).find("the spec nests arrays and objects more than 64 deep (at byte 73)") !=
                   std::string::npos,
               e.what());
    }
    // nlohmann's parser stops at a NUL byte: an object followed by NUL and garbage was read as the object.
    try {
      parse_spec_text(std::string("{\"model\": {}}\0garbage", 21));
      QFAIL("no error");
    } catch (const SpecError& e) {
      QVERIFY2(std::string(e.what()).find("the spec holds a NUL byte at offset 13, which no JSON text has") != std::string::npos,
               e.what());
    }
    const std::string levels_64 = "{\"model\": {\"num_layers\": " + std::string(62, '[') + std::string(62, ']') + "}}";
    try {
      parse_spec_text(levels_64);
      QFAIL("no error");
    } catch (const SpecError& e) {
      QVERIFY2(has_error(e.errors(), "model.num_layers", "must be an integer, got [[["), dump(e.errors()).c_str());
    }
    auto doc = base_spec();
    doc["parallel"]["tp"] = json::array();
    for (int i = 0; i < 100000; ++i) doc["parallel"]["tp"].push_back(1);
    const auto errors = errors_of(doc);
    QVERIFY2(has_error(errors, "parallel.tp", "must be an integer, got [1,1,"), dump(errors).c_str());
    QVERIFY2(has_error(errors, "parallel.tp", "(200001 bytes)"), dump(errors).c_str());
    for (const auto& e : errors) QVERIFY2(e.message.size() < 300, e.message.c_str());
  }

  // A key given twice in one object is refused with its path (nlohmann kept the last one silently).
  void keyGivenTwiceIsNamed() {
    const std::string text = R"({"model": {"preset": "llama3-8b"}, "parallel": {"tp": 2, "pp": 1, "tp": 1},
                                 "cluster": {"gpu": "h100-sxm", "nodes": 1, "gpus_per_node": 8}})";
    try {
      parse_spec_text(text);
      QFAIL("no error");
    } catch (const SpecError& e) {
      QVERIFY2(has_error(e.errors(), "parallel.tp", "the spec gives parallel.tp twice"), dump(e.errors()).c_str());
    }
    try {
      parse_spec_json(R"({"": 1, "": 2})", "x.json");
      QFAIL("no error");
    } catch (const SpecError& e) {
      QVERIFY2(std::string(e.what()).find("x.json gives the key \"\" twice") != std::string::npos, e.what());
    }
    // The same key in two objects is no duplicate.
    const auto s = parse_spec_text(R"({"model": {"preset": "llama3-8b"}, "parallel": {"tp": 2, "pp": 2},
                                       "training": {"micro_batch_size": 1, "global_batch_size": 64},
                                       "cluster": {"gpu": "h100-sxm", "nodes": 1, "gpus_per_node": 8}})");
    QCOMPARE(s.parallel.tp, int64_t{2});
    // A long key is shown cut to 64 bytes, before a character rather than inside one (é is 2 bytes:
    // 63 bytes would end inside the 32nd), and the whole key, 100,000 bytes, is not copied.
    std::string e_acute;
    for (int i = 0; i < 50000; ++i) e_acute += "\xC3\xA9";
    try {
      parse_spec_text("{\"" + e_acute + "\": 1, \"" + e_acute + "\": 2}");
      QFAIL("no error");
    } catch (const SpecError& e) {
      const std::string message = e.what();
      QVERIFY2(message.find("the spec gives " + e_acute.substr(0, 64) + "... twice") != std::string::npos, message.c_str());
      QVERIFY(message.size() < 300);
    }
    QCOMPARE(shown_key_path("a" + e_acute), "a" + e_acute.substr(0, 62) + "...");
  }

  void gpuPresetFromDeviceName() {
    const int64_t gib = int64_t{1} << 30;
    QCOMPARE(gpu_preset_id_for_device("NVIDIA H200", 141 * gib), std::string("h200"));
    QCOMPARE(gpu_preset_id_for_device("NVIDIA H100 80GB HBM3", 80 * gib), std::string("h100-sxm"));
    QCOMPARE(gpu_preset_id_for_device("NVIDIA H100 PCIe", 80 * gib), std::string());
    QCOMPARE(gpu_preset_id_for_device("NVIDIA H100 NVL", 94 * gib), std::string());
    QCOMPARE(gpu_preset_id_for_device("NVIDIA A100-SXM4-80GB", 80 * gib), std::string("a100-80gb"));
    QCOMPARE(gpu_preset_id_for_device("NVIDIA A100-SXM4-40GB", 40 * gib), std::string("a100-40gb"));
    QCOMPARE(gpu_preset_id_for_device("NVIDIA B200", 180 * gib), std::string("b200"));
    QCOMPARE(gpu_preset_id_for_device("NVIDIA L40S", 46 * gib), std::string("l40s"));
    QCOMPARE(gpu_preset_id_for_device("Tesla V100-SXM2-16GB", 16 * gib), std::string());
    // Every id it answers is a preset of the catalog.
    for (const char* name : {"NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB",
                             "NVIDIA B200", "NVIDIA L40S"})
      QVERIFY2(PresetCatalog::builtin().gpu(gpu_preset_id_for_device(name, 80 * gib)) != nullptr, name);
  }

  void everyPresetParses() {
    for (const auto& id : PresetCatalog::builtin().model_ids()) {
      json doc = {{"model", {{"preset", id}}}, {"cluster", {{"gpu", "a100-80gb"}, {"nodes", 1}, {"gpus_per_node", 1}}}};
      try {
        parse_spec(doc);
      } catch (const SpecError& e) {
        QFAIL((id + ": " + e.what()).c_str());
      }
    }
    QCOMPARE(PresetCatalog::builtin().gpu_ids().size(), size_t{7});
    QCOMPARE(PresetCatalog::builtin().gpu("h100-sxm")->peak_tflops(Precision::bf16), 989.0);
  }

  void nearestFieldPath() {
    QCOMPARE(nearest_field_path("tp"), std::string("parallel.tp"));
    QCOMPARE(nearest_field_path("foo.tp"), std::string("parallel.tp"));  // an unknown section: every section
    QCOMPARE(nearest_field_path("parallel.tensor_parallel"), std::string("parallel.tp"));  // an alias
    QCOMPARE(nearest_field_path("model.num_layer"), std::string("model.num_layers"));
    QCOMPARE(nearest_field_path("training.arch"), std::string());  // a known section keeps to its own fields
  }

  // With the spec before, a schedule named as a word follows the new one, in any case; without it, or
  // as part of another word, the name stays.
  void relabelLayoutRenamesTheSchedule() {
    auto before = parse_spec(json::parse(R"({"model": {"preset": "llama3-70b"}, "parallel": {"tp": 8, "pp": 8, "vpp": 2,
        "schedule": "interleaved"}, "training": {"global_batch_size": 64}, "cluster": {"gpu": "h100-sxm", "nodes": 8, "gpus_per_node": 8}})"));
    RunSpec after = before;
    after.parallel.schedule = Schedule::zb_h1;
    after.parallel.vpp = 1;
    QCOMPARE(relabel_layout("GPT-3 (TP8·PP8·DP1, interleaved)", after, 0, &before), std::string("GPT-3 (TP8·PP8·DP1, zb-h1)"));
    QCOMPARE(relabel_layout("Interleaved run", after, 0, &before), std::string("zb-h1 run"));
    QCOMPARE(relabel_layout("interleaved-v2 run", after, 0, &before), std::string("interleaved-v2 run"));  // not a word of its own
    QCOMPARE(relabel_layout("GPT-3 (TP8·PP8·DP1, interleaved)", after), std::string("GPT-3 (TP8·PP8·DP1, interleaved)"));
    RunSpec one_f = before;
    one_f.parallel.schedule = Schedule::one_f_one_b;
    one_f.parallel.vpp = 1;
    QCOMPARE(relabel_layout("70B 1F1B test", before, 0, &one_f), std::string("70B interleaved test"));
    QCOMPARE(relabel_layout("70B (TP8·PP8·DP1, interleaved)", one_f, 0, &before), std::string("70B (TP8·PP8·DP1, 1f1b)"));
  }

  void relabelLayoutRenamesWhatTheNameSpells() {
    json doc = {{"model", {{"preset", "llama3-70b"}}},
                {"parallel", {{"tp", 2}, {"pp", 8}, {"cp", 4}, {"sequence_parallel", true}, {"zero_stage", 0}}},
                {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 8}, {"gpus_per_node", 8}}}};
    const auto spec = parse_spec(doc);
    QCOMPARE(spec.layout_label(), std::string("TP2·PP8·DP1·CP4·SP"));
    QCOMPARE(relabel_layout("Llama-3-70B on 64 H100 (TP8·PP4·DP2)", spec), std::string("Llama-3-70B on 64 H100 (TP2·PP8·DP1·CP4·SP)"));
    QCOMPARE(relabel_layout("Llama-3-8B on one H100 node (TP2·DP4, ZeRO-1)", spec),
             std::string("Llama-3-8B on one H100 node (TP2·PP8·DP1·CP4·SP, ZeRO-0)"));
    QCOMPARE(relabel_layout("x TP4·PP2·DP2·CP2·EP8·VPP2·SP y", spec), std::string("x TP2·PP8·DP1·CP4·SP y"));
    // A layout spelled with the spec's counts stays as written, though it leaves out ·SP or PP1: an edit
    // that did not change the layout (a ZeRO stage) does not rename the run.
    QCOMPARE(relabel_layout("70B (TP2·PP8·DP1·CP4, ZeRO-1)", spec), std::string("70B (TP2·PP8·DP1·CP4, ZeRO-0)"));
    QCOMPARE(relabel_layout("70B (TP2·PP8·CP4)", spec), std::string("70B (TP2·PP8·CP4)"));
    QCOMPARE(relabel_layout("70B (TP2·DP1)", spec), std::string("70B (TP2·DP1)"));  // leaves out PP8, CP4 and SP
    // The spec's whole label before an edit follows it, also where the edit only added a part: the
    // name "(TP2·PP8·DP1·SP)" stayed after ep 1 -> 2, still true but without EP2 (helper-5).
    json cp1 = doc;
    cp1["parallel"]["cp"] = 1;
    cp1["parallel"]["dp"] = 4;
    cp1["model"] = {{"preset", "mixtral-8x7b"}};
    const auto before_ep = parse_spec(cp1);
    QCOMPARE(before_ep.layout_label(), std::string("TP2·PP8·DP4·SP"));
    json with_ep = cp1;
    with_ep["parallel"]["ep"] = 2;
    QCOMPARE(relabel_layout("Mixtral (TP2·PP8·DP4·SP)", parse_spec(with_ep), 0, &before_ep), std::string("Mixtral (TP2·PP8·DP4·EP2·SP)"));
    QCOMPARE(relabel_layout("Mixtral (TP2·PP8·DP4·SP)", parse_spec(with_ep)), std::string("Mixtral (TP2·PP8·DP4·SP)"));  // no before: as written
    QCOMPARE(relabel_layout("Mixtral (TP2·DP4)", parse_spec(with_ep), 0, &before_ep), std::string("Mixtral (TP2·DP4)"));  // a short name stays
    // A new model preset or GPU: the preset the name spells, in any case and spelling, becomes the new
    // preset's id, and the GPU's model word the new one's ("Llama-3-70B on 32 H100" stayed above a
    // Mixtral plan, helper-7); without `before`, or for a word that only contains them, nothing.
    const auto llama = parse_spec(doc);
    QCOMPARE(relabel_layout("Llama-3-70B on 64 H100 (TP2·PP8·DP1·CP4·SP)", parse_spec(cp1), 0, &llama),
             std::string("mixtral-8x7b on 64 H100 (TP2·PP8·DP4·SP)"));
    QCOMPARE(relabel_layout("llama3 70b sweep, LLAMA-3-70B-ft, xllama3-70b, llama3-70bx", parse_spec(cp1), 0, &llama),
             std::string("mixtral-8x7b sweep, mixtral-8x7b-ft, xllama3-70b, llama3-70bx"));
    QCOMPARE(relabel_layout("Llama-3-70B on 64 H100", parse_spec(cp1)), std::string("Llama-3-70B on 64 H100"));
    json h200 = doc;
    h200["cluster"]["gpu"] = "h200";
    QCOMPARE(relabel_layout("Llama-3-70B on 64 H100, one H100 node each; H1000, llama-h100-sweep", parse_spec(h200), 0, &llama),
             std::string("Llama-3-70B on 64 H200, one H200 node each; H1000, llama-H200-sweep"));
    json cpu = doc;
    cpu["cluster"]["gpu"] = "cpu";
    QCOMPARE(relabel_layout("Llama-3-70B on 64 H100", parse_spec(cpu, PresetCatalog::builtin(), Rules::none), 0, &llama),
             std::string("Llama-3-70B on 64 H100"));  // a CPU has no model word to put there
    // A count too long for any integer is no layout of this spec (std::stoll threw out of range).
    QCOMPARE(relabel_layout("x TP99999999999999999999999 y", spec), std::string("x TP2·PP8·DP1·CP4·SP y"));
    json no_sp = doc;
    no_sp["parallel"]["sequence_parallel"] = false;
    QCOMPARE(relabel_layout("70B (TP2·PP8·DP1·CP4·SP)", parse_spec(no_sp)), std::string("70B (TP2·PP8·DP1·CP4)"));
    // A name that spells no layout stays; "TPU" and "SP" alone are no layout.
    QCOMPARE(relabel_layout("my run on TPU-like SP", spec), std::string("my run on TPU-like SP"));
    QCOMPARE(relabel_layout("", spec), std::string());
    // A new cluster: the GPU count the name was written for becomes the spec's (64 here), where it
    // stands as a count; a version, a longer number or a GPU's model number stays.
    QCOMPARE(relabel_layout("Llama-3-70B on 128 H100 (TP8·PP4·DP4)", spec, 128),
             std::string("Llama-3-70B on 64 H100 (TP2·PP8·DP1·CP4·SP)"));
    QCOMPARE(relabel_layout("128 GPUs, v1.128 1280 x128 H128 run", spec, 128), std::string("64 GPUs, v1.128 1280 x128 H128 run"));
    QCOMPARE(relabel_layout("on 64 H100", spec, 64), std::string("on 64 H100"));  // the same count
    QCOMPARE(relabel_layout("on 32 H100", spec, 0), std::string("on 32 H100"));   // no count before
    // Only a count of GPUs, CPUs or ranks, after a space or "(": not GPT-2, ZeRO-2 or 2 layers.
    QCOMPARE(relabel_layout("GPT-2 XL, 2 layers, on 2 GPUs (2 ranks)", spec, 2),
             std::string("GPT-2 XL, 2 layers, on 64 GPUs (64 ranks)"));
    QCOMPARE(relabel_layout("(2 B200) 2 nodes", spec, 2), std::string("(64 B200) 2 nodes"));
  }
};

QTEST_APPLESS_MAIN(TestSpec)
#include "test_spec.moc"
