// The performance model against Narayanan et al. 2021 Table 1 (every row within the file's
// tolerance, ±15%), and the bubble / MFU relations the prediction must keep.
#include <QtTest/QtTest>

#include <fstream>

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
};

QTEST_APPLESS_MAIN(TestPrediction)
#include "test_prediction.moc"
