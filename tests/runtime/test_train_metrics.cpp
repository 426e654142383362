// What tessera-train reports: DIR/spec.json (the full spec) and DIR/metrics.jsonl with one step
// record per step and rank carrying every documented field with sane values, one timeline record
// per executed F and B, and one artifact record per checkpoint (training.save_every and the end; rank 0,
// once complete).
#include <QtTest/QtTest>

#include <chrono>
#include <filesystem>
#include <set>

#include "train_runner.hpp"

using namespace tessera::test;

class TestTrainMetrics : public QObject {
  Q_OBJECT
 private slots:
  // bf16 on the CPU: the peak is timed in the fastest operand layout, so the model's MFU is a share of
  // it (ATen's bf16 GEMM of a·b without AVX-512 BF16 is ~20x slower than of a·bᵀ; timed in that layout
  // the peak was 0.9 GFLOP/s and tiny-gpt reported 447% MFU).
  void bf16MfuIsAShareOfThePeak() {
    QTemporaryDir dir;
    Layout layout;
    layout.precision = "bf16";
    auto doc = tiny_spec("tiny-gpt", layout, 3);
    doc["training"]["warmup_steps"] = 1;
    const std::string spec = write_file(dir, "bf16.json", doc.dump());
    const std::string out = dir.filePath("out").toStdString();
    const Run run = tessera_train({"--spec", QString::fromStdString(spec), "--out", QString::fromStdString(out),
                                   "--threads", "1", "--data", "synthetic"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    std::ifstream in(out + "/metrics.jsonl");
    std::string line;
    int steps = 0;
    while (std::getline(in, line)) {
      const auto j = nlohmann::json::parse(line);
      if (j["type"] != "step") continue;
      ++steps;
      const double mfu = j["mfu"].get<double>();
      QVERIFY2(mfu > 0 && mfu <= 1.0, qPrintable(QString("step %1: MFU %2 of %3 TFLOP/s").arg(j["step"].get<int>())
                                                     .arg(mfu).arg(j["peak_tflops"].get<double>())));
    }
    QCOMPARE(steps, 3);
  }

  void metricsOfAPipelineRun() {
    QTemporaryDir dir;
    Layout layout;
    layout.pp = 2;
    layout.global_batch = 8;  // 4 microbatches of 2
    auto doc = tiny_spec("tiny-gpt", layout, 6);
    doc["training"]["save_every"] = 4;  // a checkpoint at step 4 and, as always, at the end
    const std::string spec = write_file(dir, "pp2.json", doc.dump());
    const std::string out = dir.filePath("out").toStdString();
    const Run run = tessera_train({"--spec", QString::fromStdString(spec), "--out", QString::fromStdString(out),
                                   "--nproc", "2", "--threads", "1", "--data", "synthetic"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    QVERIFY(run.out.find("MFU") != std::string::npos && run.out.find("bubble") != std::string::npos);

    std::ifstream spec_json(out + "/spec.json");
    const auto written = nlohmann::json::parse(spec_json);
    QCOMPARE(written["parallel"]["pp"].get<int>(), 2);
    QCOMPARE(written["training"]["train_steps"].get<int>(), 6);

    std::ifstream in(out + "/metrics.jsonl");
    std::string line;
    std::map<int, int> steps_of_rank;
    std::set<double> peaks;  // every rank's MFU is a share of one peak: the median of the ranks' timings
    std::map<std::pair<int, int>, std::vector<nlohmann::json>> ops;  // (rank, step)
    std::vector<nlohmann::json> artifacts;
    while (std::getline(in, line)) {
      const auto j = nlohmann::json::parse(line);
      if (j["type"] == "step") {
        ++steps_of_rank[j["rank"].get<int>()];
        for (const char* key : {"wall_time_s", "loss", "grad_norm", "lr", "step_time_s", "tokens_per_s", "comm_s",
                                "model_tflops", "peak_tflops", "mfu", "bubble", "peak_memory_bytes", "live_memory_bytes", "peak_reserved_bytes"})
          QVERIFY2(j.contains(key), key);
        QCOMPARE(j["peak_reserved_bytes"].get<int64_t>(), j["peak_memory_bytes"].get<int64_t>());  // no CPU cache
        QVERIFY(j["mfu"].get<double>() > 0 && j["mfu"].get<double>() <= 1.0);
        peaks.insert(j["peak_tflops"].get<double>());
        QVERIFY(std::abs(j["mfu"].get<double>() - j["model_tflops"].get<double>() / j["peak_tflops"].get<double>()) < 1e-12);
        QVERIFY(j["bubble"].get<double>() >= 0 && j["bubble"].get<double>() < 1.0);
        QVERIFY(j["comm_s"].get<double>() > 0);  // pipeline sends and receives
        // Live memory includes at least the weights, gradients and two Adam moments (fp32).
        QVERIFY(j["live_memory_bytes"].get<int64_t>() > 4 * 4 * 100000);
        QVERIFY(j["peak_memory_bytes"].get<int64_t>() >= j["live_memory_bytes"].get<int64_t>());
      } else if (j["type"] == "artifact") {
        artifacts.push_back(j);
      } else {
        QCOMPARE(j["type"].get<std::string>(), std::string("timeline"));
        QCOMPARE(j["stage"].get<int>(), j["rank"].get<int>());  // pp=2, tp=dp=1: rank = stage
        QVERIFY(j["end_s"].get<double>() >= j["start_s"].get<double>());
        ops[{j["rank"].get<int>(), j["step"].get<int>()}].push_back(j);
      }
    }
    QCOMPARE(steps_of_rank, (std::map<int, int>{{0, 6}, {1, 6}}));
    QCOMPARE(peaks.size(), size_t{1});
    QVERIFY2(run.out.find("the median over the ranks of a GEMM measured on the CPU") != std::string::npos, run.out.c_str());
    for (const auto& [key, list] : ops) {
      QCOMPARE(list.size(), size_t(8));  // F and B of 4 microbatches
      std::set<std::pair<std::string, int>> seen;
      for (const auto& op : list) seen.insert({op["op"].get<std::string>(), op["microbatch"].get<int>()});
      QCOMPARE(seen.size(), size_t(8));
      for (size_t i = 1; i < list.size(); ++i) QVERIFY(list[i]["start_s"].get<double>() >= list[i - 1]["end_s"].get<double>());
    }
    QCOMPARE(ops.size(), size_t(12));

    // The checkpoints of training.save_every and the end, reported by rank 0 with the bytes of both
    // ranks' files.
    QCOMPARE(artifacts.size(), size_t(2));
    QCOMPARE(artifacts[0]["step"].get<int64_t>(), int64_t{4});
    const auto& checkpoint = artifacts[1];
    QCOMPARE(checkpoint["kind"].get<std::string>(), std::string("checkpoint"));
    QCOMPARE(checkpoint["step"].get<int64_t>(), int64_t{6});
    QCOMPARE(checkpoint["rank"].get<int64_t>(), int64_t{0});
    const std::filesystem::path path = checkpoint["path"].get<std::string>();
    QVERIFY2(path.is_absolute() && std::filesystem::equivalent(path, out + "/checkpoints/step_00000006"), path.c_str());
    int64_t rank_files_bytes = 0;
    for (const char* file : {"rank_00000.pt", "rank_00001.pt"})
      rank_files_bytes += static_cast<int64_t>(std::filesystem::file_size(path / file));
    QCOMPARE(checkpoint["size_bytes"].get<int64_t>(), rank_files_bytes);
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    QVERIFY(checkpoint["created_ms"].get<int64_t>() <= now_ms && checkpoint["created_ms"].get<int64_t>() > now_ms - 600'000);
  }
};

QTEST_APPLESS_MAIN(TestTrainMetrics)
#include "test_train_metrics.moc"
