// bf16 mixed precision on the CPU path (the same code the GPU path runs, on another device): bf16
// weights and activations with fp32 master weights, fp32 gradient accumulation and reduction. It
// trains like fp32 (every step's loss within 0.5%, but not equal: bf16 is really computed), every
// parallel layout agrees with the one-process bf16 run within 2e-3, and a resumed run under the
// distributed optimizer continues bit-identically (each checkpoint holds the exact fp32 masters).
#include <QtTest/QtTest>

#include <cmath>
#include <filesystem>

#include "train_runner.hpp"

using namespace tessera::test;

namespace {

constexpr int64_t kSteps = 20;

std::map<int64_t, StepMetrics> train(const QTemporaryDir& dir, const std::string& name, const std::string& preset,
                                     const Layout& layout, const QStringList& extra = {}) {
  return train_synthetic(dir, name, preset, layout, kSteps, extra);
}

Layout bf16(Layout layout) {
  layout.precision = "bf16";
  layout.global_batch = layout.micro_batch * 2 * layout.dp;
  return layout;
}

}  // namespace

class TestTrainMixedPrecision : public QObject {
  Q_OBJECT
 private slots:
  void bf16TracksFp32() {
    for (const char* preset : {"tiny-gpt", "tiny-llama"}) {
      Layout fp32 = bf16(Layout{});
      fp32.precision = "fp32";
      const auto reference = train_synthetic_once(preset, fp32, kSteps);
      const auto mixed = train_synthetic_once(preset, bf16(Layout{}), kSteps);  // also the layouts' reference
      QCOMPARE(reference.size(), size_t(kSteps));
      QCOMPARE(mixed.size(), size_t(kSteps));
      double largest = 0;
      for (const auto& [step, want] : reference) {
        const double difference = relative(mixed.at(step).loss, want.loss);
        largest = std::max(largest, difference);
        QVERIFY2(difference < 5e-3, qPrintable(QString("%1 step %2: bf16 loss %3 vs fp32 %4").arg(preset).arg(step)
                                                   .arg(mixed.at(step).loss, 0, 'g', 9).arg(want.loss, 0, 'g', 9)));
      }
      qInfo("%s: bf16 loss within %.2e of fp32 over %lld steps", preset, largest, static_cast<long long>(kSteps));
      QVERIFY2(largest > 1e-6, "bf16 gave the fp32 losses: the model did not compute in bf16");
      QVERIFY(mixed.at(kSteps).loss < mixed.at(1).loss - 0.3);  // it trains
    }
  }

  void layoutsAgreeWithOneProcess_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("dp");
    QTest::addColumn<bool>("sp");
    QTest::addColumn<bool>("distributed_optimizer");
    for (const char* preset : {"tiny-gpt", "tiny-llama"}) {
      auto row = [&](const char* name) { return &QTest::newRow((std::string(preset) + " " + name).c_str()); };
      *row("TP=2 SP") << preset << 2 << 1 << 1 << true << false;
      *row("PP=2") << preset << 1 << 2 << 1 << false << false;
      *row("DP=2 distributed optimizer") << preset << 1 << 1 << 2 << false << true;
      *row("TP=2 PP=2 DP=2") << preset << 2 << 2 << 2 << false << false;
    }
  }
  void layoutsAgreeWithOneProcess() {
    QFETCH(QString, preset);
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(int, dp);
    QFETCH(bool, sp);
    QFETCH(bool, distributed_optimizer);
    Layout layout;
    layout.tp = tp;
    layout.pp = pp;
    layout.dp = dp;
    layout.sequence_parallel = sp;
    layout.distributed_optimizer = distributed_optimizer;
    layout = bf16(layout);
    Layout single = bf16(Layout{});
    single.global_batch = layout.global_batch;
    // The one-process run of a preset and batch is trained once for all rows.
    const auto reference = train_synthetic_once(preset.toStdString(), single, kSteps);
    const auto parallel = train_synthetic_once(preset.toStdString(), layout, kSteps);
    QCOMPARE(reference.size(), size_t(kSteps));
    QCOMPARE(parallel.size(), size_t(kSteps));
    for (const auto& [step, want] : reference)
      QVERIFY2(relative(parallel.at(step).loss, want.loss) < 2e-3,
               qPrintable(QString("step %1: loss %2 vs %3").arg(step).arg(parallel.at(step).loss, 0, 'g', 9)
                              .arg(want.loss, 0, 'g', 9)));
  }

  void resumeUnderDistributedOptimizerIsExact() {
    QTemporaryDir dir;
    Layout layout;
    layout.dp = 2;
    layout.distributed_optimizer = true;
    layout = bf16(layout);
    const auto uninterrupted = train_synthetic_once("tiny-gpt", layout, kSteps);  // the layouts' DP=2 row
    const QStringList save{"--save-every", "10"};
    const auto first = train(dir, "b", "tiny-gpt", layout, save);
    QCOMPARE(first.size(), size_t(kSteps));
    // Step 20's checkpoint made incomplete: the resume starts from step 10's.
    std::filesystem::remove(dir.filePath("b/checkpoints/step_00000020/manifest.json").toStdString());
    const auto resumed = train(dir, "b", "tiny-gpt", layout, QStringList{"--resume"});
    QCOMPARE(resumed.size(), size_t(kSteps));
    for (const auto& [step, want] : uninterrupted) {
      QCOMPARE(resumed.at(step).loss, want.loss);  // bit-identical
      QCOMPARE(resumed.at(step).grad_norm, want.grad_norm);
    }
  }
};

QTEST_APPLESS_MAIN(TestTrainMixedPrecision)
#include "test_train_mixed_precision.moc"
