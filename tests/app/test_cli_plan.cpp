// tessera-cli's planning commands run as a process: the plan --json document, errors with exit
// code 2 and no stack trace, overrides, schedule, Megatron export and Hugging Face import.
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <fstream>

#include <nlohmann/json.hpp>

namespace {

struct Result {
  int exit_code = -1;
  std::string out, err;
};

Result cli(const QStringList& args) {
  QProcess process;
  process.start(TESSERA_CLI, args);
  if (!process.waitForFinished(60000)) return {};
  return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
          process.readAllStandardOutput().toStdString(), process.readAllStandardError().toStdString()};
}

QString example(const char* name) { return QString(TESSERA_SOURCE_DIR "/resources/examples/") + name; }
QString data(const char* name) { return QString(TESSERA_SOURCE_DIR "/tests/app/data/") + name; }

std::vector<std::string> keys(const nlohmann::ordered_json& object) {
  std::vector<std::string> out;
  for (const auto& [k, v] : object.items()) out.push_back(k);
  return out;
}

}  // namespace

class TestCliPlan : public QObject {
  Q_OBJECT
 private slots:
  void planJsonHasExactlyTheDocumentedShape() {
    const auto r = cli({"plan", example("llama3-70b-64xh100.json"), "--json"});
    QCOMPARE(r.exit_code, 0);
    const auto j = nlohmann::ordered_json::parse(r.out);  // keeps the printed key order
    QCOMPARE(keys(j), (std::vector<std::string>{"world_size", "parameters", "memory", "flops", "pipeline", "predicted"}));
    QCOMPARE(j["world_size"].get<int64_t>(), int64_t{64});
    QCOMPARE(j["parameters"]["total"].get<int64_t>(), int64_t{70'553'706'496});
    int64_t stage_sum = 0;
    for (const auto& v : j["parameters"]["per_stage"]) stage_sum += v.get<int64_t>();
    // Untied embeddings: the stages partition the model.
    QCOMPARE(stage_sum, int64_t{70'553'706'496});
    QCOMPARE(keys(j["memory"]), (std::vector<std::string>{"profile", "stages", "peak_bytes", "capacity_bytes", "fits"}));
    QCOMPARE(j["memory"]["stages"].size(), size_t{4});
    for (const auto& st : j["memory"]["stages"]) {
      QCOMPARE(keys(st), (std::vector<std::string>{"stage", "weights_bytes", "gradients_bytes", "optimizer_bytes",
                                                   "activations_bytes", "buffers_bytes", "total_bytes"}));
      QCOMPARE(st["total_bytes"].get<int64_t>(),
               st["weights_bytes"].get<int64_t>() + st["gradients_bytes"].get<int64_t>() +
                   st["optimizer_bytes"].get<int64_t>() + st["activations_bytes"].get<int64_t>() +
                   st["buffers_bytes"].get<int64_t>());
    }
    QCOMPARE(j["memory"]["capacity_bytes"].get<int64_t>(), int64_t{85'520'809'984});
    QCOMPARE(keys(j["flops"]), (std::vector<std::string>{"model_per_iteration", "hardware_per_iteration",
                                                         "tokens_per_iteration", "causal"}));
    QCOMPARE(j["flops"]["tokens_per_iteration"].get<int64_t>(), int64_t{128 * 8192});
    QCOMPARE(j["pipeline"]["microbatches"].get<int64_t>(), int64_t{64});
    QCOMPARE(keys(j["predicted"]), (std::vector<std::string>{"iteration_time_s", "model_tflops_per_gpu",
                                                             "hardware_tflops_per_gpu", "mfu", "hfu", "tokens_per_s"}));
    QVERIFY(j["predicted"]["mfu"].get<double>() > 0.2);
  }

  void gridAndProfiles() {
    const auto r = cli({"plan", example("tiny-3d.json"), "--json", "--grid", "--memory-profile", "megatron"});
    QCOMPARE(r.exit_code, 0);
    const auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["grid"]["ranks"].size(), size_t{8});
    QCOMPARE(j["grid"]["groups"]["tp"][0], (nlohmann::json{0, 1}));
    QCOMPARE(j["grid"]["groups"]["pp"][0], (nlohmann::json{0, 4}));
    QCOMPARE(j["memory"]["profile"].get<std::string>(), std::string("megatron"));
  }

  void humanOutputShowsTheTables() {
    const auto r = cli({"plan", example("gpt3-175b-table1.json")});
    QCOMPARE(r.exit_code, 0);
    for (const char* fragment : {"Parameters: 174,", "Memory per GPU (tessera profile, GiB; capacity 80.00 GiB)", "verdict",
                                 "interleaved", "bubble", "MFU", "model TFLOP/s/GPU"})
      QVERIFY2(r.out.find(fragment) != std::string::npos, fragment);
    // On CPU ranks: their name, MiB and GFLOP/s (a peak of a few MiB read "0.00" GiB, speeds "0.0" TFLOP/s).
    const auto tiny = cli({"plan", example("tiny-3d.json")});
    QCOMPARE(tiny.exit_code, 0);
    for (const char* fragment : {"8 CPU ranks (", "Memory per rank (tessera profile, MiB; capacity 24.00 GiB)",
                                 "model GFLOP/s/rank", " MiB of 24.00 GiB: fits"})
      QVERIFY2(tiny.out.find(fragment) != std::string::npos, (std::string(fragment) + "\n" + tiny.out).c_str());
    QVERIFY2(tiny.out.find(" 0.00 ") == std::string::npos, tiny.out.c_str());
  }

  void overridesReplanAndAreValidated() {
    const auto base = nlohmann::json::parse(cli({"plan", example("llama3-70b-64xh100.json"), "--json"}).out);
    const auto r = cli({"plan", example("llama3-70b-64xh100.json"), "--json", "--pp", "8", "--mbs", "2"});
    QCOMPARE(r.exit_code, 0);
    const auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["memory"]["stages"].size(), size_t{8});
    QCOMPARE(j["pipeline"]["microbatches"].get<int64_t>(), int64_t{64});  // 128 / (2 * dp 1)
    QVERIFY(j["memory"]["peak_bytes"] != base["memory"]["peak_bytes"]);

    const auto bad = cli({"plan", example("llama3-70b-64xh100.json"), "--tp", "3"});
    QCOMPARE(bad.exit_code, 2);
    QVERIFY2(bad.err.find("parallel.tp=3 must divide model.num_attention_heads=64") != std::string::npos, bad.err.c_str());
  }

  void errorsExitTwoWithoutTrace() {
    QTemporaryDir dir;
    const QString bad = dir.filePath("bad.json");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"model": {"preset": "llama3-8b"}, "parallel": {"tp": 2, "pipeline_parallel": 2}})");
    f.close();
    for (const QStringList& args : {QStringList{"plan", bad}, QStringList{"validate", bad}, QStringList{"plan", "/no/such.json"},
                                    QStringList{"plan", example("tiny-3d.json"), "--tp", "abc"}, QStringList{"frobnicate"},
                                    // NaN passes a range check (it waited for ever): refused
                                    QStringList{"launch", example("tiny-3d.json"), "--agents", "tcp://127.0.0.1:1",
                                                "--connect-timeout-s", "nan"},
                                    // empty: it meant the default (the local agent, the default history)
                                    QStringList{"launch", example("tiny-3d.json"), "--agents", ""},
                                    QStringList{"runs", "list", "--db", ""}, QStringList{"agents", "status", "--agents", ""}}) {
      const auto r = cli(args);
      QCOMPARE(r.exit_code, 2);
      QVERIFY(!r.err.empty());
      QVERIFY(r.err.find("terminate") == std::string::npos);
    }
    // Out of an integer field's range: refused, not wrapped (2^32 + 1 was ZeRO-1, 2^63 a negative tp).
    const auto zero = cli({"plan", example("tiny-3d.json"), "--zero", "4294967297"});
    QCOMPARE(zero.exit_code, 2);
    QVERIFY2(zero.err.find("parallel.zero_stage must be an integer from -2147483648 to 2147483647, got 4294967297") !=
                 std::string::npos,
             zero.err.c_str());
    // Beyond int64: refused with the number given (CLI11 clamped it to 2^63 - 1, and that was quoted).
    for (const char* beyond : {"99999999999999999999", "-99999999999999999999", "0x1ffffffffffffffff"}) {
      const auto r = cli({"plan", example("tiny-3d.json"), "--tp", beyond});
      QCOMPARE(r.exit_code, 2);
      QVERIFY2(r.err.find(std::string("--tp: ") + beyond + " is beyond the 64-bit integer range") != std::string::npos, r.err.c_str());
    }
    // Sizes beyond any machine: memory that does not fit, never negative.
    const auto huge = cli({"plan", example("llama3-8b-8xh100.json"), "--seq", "16777216", "--mbs", "1048576", "--gbs",
                           "8388608", "--json"});
    QCOMPARE(huge.exit_code, 0);
    const auto plan = nlohmann::json::parse(huge.out);
    QCOMPARE(plan["memory"]["fits"], false);
    for (const auto& stage : plan["memory"]["stages"])
      for (const auto& [term, bytes] : stage.items()) QVERIFY2(bytes.get<int64_t>() >= 0, (term + " " + bytes.dump()).c_str());

    QVERIFY(cli({"frobnicate"}).err.find("the commands: presets, validate, plan,") != std::string::npos);
    QVERIFY(cli({"runs", "frob"}).err.find("the commands of runs: list, show,") != std::string::npos);

    const auto directory = cli({"validate", dir.path()});
    QCOMPARE(directory.exit_code, 2);
    QVERIFY2(directory.err.find(dir.path().toStdString() + " is a directory") != std::string::npos, directory.err.c_str());

    const auto r = cli({"validate", bad});
    QVERIFY2(r.err.find("unknown field parallel.pipeline_parallel (did you mean parallel.pp?)") != std::string::npos,
             r.err.c_str());
  }

  void scheduleTableAndEvents() {
    const auto r = cli({"schedule", example("tiny-3d.json"), "--json"});
    QCOMPARE(r.exit_code, 0);
    const auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["stages"].size(), size_t{2});
    QCOMPARE(j["stages"][0].size(), size_t{8});  // 4 microbatches x (F, B)
    QCOMPARE(j["events"].size(), size_t{16});
    QVERIFY(j["bubble_fraction"].get<double>() > 0);
    const auto human = cli({"schedule", example("tiny-3d.json")});
    QCOMPARE(human.exit_code, 0);
    QVERIFY2(human.out.find("stage 1") != std::string::npos, human.out.c_str());
  }

  void exportMegatron() {
    const auto r = cli({"export", "megatron", example("llama3-70b-64xh100.json")});
    QCOMPARE(r.exit_code, 0);
    for (const char* fragment : {"pretrain_gpt.py", "--num-layers 80", "--tensor-model-parallel-size 8",
                                 "--pipeline-model-parallel-size 4", "--group-query-attention", "--num-query-groups 8",
                                 "--swiglu", "--sequence-parallel", "--use-distributed-optimizer", "--bf16",
                                 "--recompute-granularity selective", "--untie-embeddings-and-output-weights"})
      QVERIFY2(r.out.find(fragment) != std::string::npos, fragment);
    QVERIFY(r.out.find("--save-interval") == std::string::npos);  // training.save_every 0: at the end only
    QTemporaryDir dir;
    nlohmann::json spec;
    std::ifstream(example("llama3-70b-64xh100.json").toStdString()) >> spec;
    spec["training"]["save_every"] = 500;
    std::ofstream(dir.filePath("70b.json").toStdString()) << spec.dump();
    const auto interval = cli({"export", "megatron", dir.filePath("70b.json")});
    QCOMPARE(interval.exit_code, 0);
    QVERIFY2(interval.out.find("--save-interval 500") != std::string::npos, interval.out.c_str());
  }

  void importHuggingFace() {
    QTemporaryDir dir;
    const QString out = dir.filePath("llama.json");
    auto r = cli({"import", "hf", data("llama3-8b-config.json"), "-o", out});
    QCOMPARE(r.exit_code, 0);
    r = cli({"plan", out, "--json"});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(nlohmann::json::parse(r.out)["parameters"]["total"].get<int64_t>(), int64_t{8'030'261'248});
    r = cli({"import", "hf", data("mixtral-config.json")});
    QCOMPARE(r.exit_code, 0);
    const auto mixtral = nlohmann::json::parse(r.out);
    QCOMPARE(mixtral["model"]["num_experts"].get<int64_t>(), int64_t{8});
    r = cli({"import", "hf", data("gpt2-config.json")});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(nlohmann::json::parse(r.out)["model"]["ffn_hidden_size"].get<int64_t>(), int64_t{3072});
    const auto bad = cli({"import", "hf", example("tiny-3d.json")});
    QCOMPARE(bad.exit_code, 2);
    QVERIFY(bad.err.find("model_type") != std::string::npos);
    // Fields of the wrong type are named (they were nlohmann's type_error, exit 1).
    auto config = nlohmann::json::parse(std::ifstream(data("gpt2-config.json").toStdString()));
    for (const auto& [field, value] : {std::pair{"model_type", nlohmann::json(5)}, std::pair{"tie_word_embeddings", nlohmann::json("yes")}}) {
      auto odd = config;
      odd[field] = value;
      const QString path = dir.filePath(QString("odd-%1.json").arg(field));
      std::ofstream(path.toStdString()) << odd.dump();
      const auto refused = cli({"import", "hf", path});
      QCOMPARE(refused.exit_code, 2);
      QVERIFY2(refused.err.find(std::string("config field ") + field + " must be") != std::string::npos, refused.err.c_str());
    }
  }

  // A spec section that is not an object, with an override into it: the spec's error, exit 2.
  void overridesIntoASectionThatIsNoObject() {
    QTemporaryDir dir;
    for (const char* section : {"\"x\"", "null", "[1]"}) {
      auto doc = nlohmann::json::parse(std::ifstream(example("tiny-3d.json").toStdString()));
      doc["parallel"] = nlohmann::json::parse(section);
      const QString path = dir.filePath("odd.json");
      std::ofstream(path.toStdString()) << doc.dump();
      for (const QStringList& args : {QStringList{"plan", path, "--tp", "2"}, QStringList{"plan", path, "--nodes", "1"}}) {
        const auto r = cli(args);
        QCOMPARE(r.exit_code, 2);
        QVERIFY2(r.err.find("parallel must be a JSON object, got " + doc["parallel"].dump()) != std::string::npos, r.err.c_str());
        QVERIFY2(r.err.find("json.exception") == std::string::npos, r.err.c_str());
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestCliPlan)
#include "test_cli_plan.moc"
