// The gold test: for tiny-gpt and tiny-llama, every parallel layout (uneven pipeline stages too, and the distributed optimizer
// and recomputation, which must not change the numbers either) gives the same per-step loss and
// grad norm as the single-process run for 20 steps, within 1e-4 relative (fp32, one thread per
// rank). tessera-train runs as a process (--nproc N) and the metrics files are compared.
#include <QtTest/QtTest>

#include <cmath>

#include "train_runner.hpp"

using namespace tessera::test;

namespace {

constexpr int64_t kSteps = 20;
constexpr double kTolerance = 1e-4;

// The first step whose loss or grad norm differs from the reference's by kTolerance or more, said;
// empty when every step of both runs agrees (and both ran kSteps steps).
QString firstDifference(const std::map<int64_t, StepMetrics>& reference, const std::map<int64_t, StepMetrics>& parallel) {
  if (reference.size() != size_t(kSteps) || parallel.size() != size_t(kSteps))
    return QString("%1 reference and %2 parallel steps of %3").arg(reference.size()).arg(parallel.size()).arg(kSteps);
  for (const auto& [step, want] : reference) {
    const auto& got = parallel.at(step);
    if (relative(got.loss, want.loss) >= kTolerance || relative(got.grad_norm, want.grad_norm) >= kTolerance)
      return QString("step %1: loss %2 vs %3, grad norm %4 vs %5")
          .arg(step)
          .arg(got.loss, 0, 'g', 9).arg(want.loss, 0, 'g', 9)
          .arg(got.grad_norm, 0, 'g', 9).arg(want.grad_norm, 0, 'g', 9);
  }
  return {};
}

}  // namespace

class TestTrainGold : public QObject {
  Q_OBJECT
 private slots:
  void sameLossAndGradNormAsOneProcess_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("dp");
    QTest::addColumn<int>("vpp");
    QTest::addColumn<bool>("sp");
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<bool>("distributed_optimizer");
    QTest::addColumn<QString>("recompute");
    QTest::addColumn<int>("first_stage_layers");
    QTest::addColumn<int>("last_stage_layers");
    for (const char* preset : {"tiny-gpt", "tiny-llama"}) {
      auto row = [&](const char* name) { return &QTest::newRow((std::string(preset) + " " + name).c_str()); };
      *row("TP=2") << preset << 2 << 1 << 1 << 1 << false << "1f1b" << false << "none" << 0 << 0;
      *row("TP=2 SP") << preset << 2 << 1 << 1 << 1 << true << "1f1b" << false << "none" << 0 << 0;
      *row("PP=2 1F1B") << preset << 1 << 2 << 1 << 1 << false << "1f1b" << false << "none" << 0 << 0;
      *row("PP=2 GPipe") << preset << 1 << 2 << 1 << 1 << false << "gpipe" << false << "none" << 0 << 0;
      *row("PP=2 VPP=2") << preset << 1 << 2 << 1 << 2 << false << "interleaved" << false << "none" << 0 << 0;
      *row("DP=2") << preset << 1 << 1 << 2 << 1 << false << "1f1b" << false << "none" << 0 << 0;
      *row("DP=2 distributed optimizer") << preset << 1 << 1 << 2 << 1 << false << "1f1b" << true << "none" << 0 << 0;
      *row("TP=2 SP full recompute") << preset << 2 << 1 << 1 << 1 << true << "1f1b" << false << "full" << 0 << 0;
      *row("PP=2 selective recompute") << preset << 1 << 2 << 1 << 1 << false << "1f1b" << false << "selective" << 0 << 0;
      *row("TP=2 PP=2 DP=2") << preset << 2 << 2 << 2 << 1 << false << "1f1b" << false << "none" << 0 << 0;
      // Uneven stages (Megatron-LM's --decoder-first/last-pipeline-num-layers): layers 0-1 | 2 | 3, and 0 | 1-3.
      *row("PP=3 first stage 2 layers") << preset << 1 << 3 << 1 << 1 << false << "1f1b" << false << "none" << 2 << 0;
      *row("PP=2 last stage 3 layers") << preset << 1 << 2 << 1 << 1 << false << "1f1b" << false << "none" << 0 << 3;
    }
  }

  void sameLossAndGradNormAsOneProcess() {
    QFETCH(QString, preset);
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(int, dp);
    QFETCH(int, vpp);
    QFETCH(bool, sp);
    QFETCH(QString, schedule);
    QFETCH(bool, distributed_optimizer);
    QFETCH(QString, recompute);
    QFETCH(int, first_stage_layers);
    QFETCH(int, last_stage_layers);
    Layout layout{tp, pp, dp, vpp, sp, schedule.toStdString(), distributed_optimizer, recompute.toStdString()};
    layout.first_stage_layers = first_stage_layers;
    layout.last_stage_layers = last_stage_layers;
    // Two microbatches per data-parallel rank, so pipelines have work in flight on both stages.
    layout.global_batch = layout.micro_batch * 2 * dp;
    Layout single;
    single.global_batch = layout.global_batch;

    const std::string p = preset.toStdString();
    // The single-process reference of a preset and batch is trained once for all rows.
    const auto reference = train_synthetic_once(p, single, kSteps);
    const auto parallel = train_synthetic_once(p, layout, kSteps);
    const QString difference = firstDifference(reference, parallel);
    QVERIFY2(difference.isEmpty(), qPrintable(difference));
    // It trains: the loss falls over the 20 steps.
    QVERIFY(reference.at(kSteps).loss < reference.at(1).loss - 0.3);
  }

  // Uneven stages with virtual stages: 6 layers on PP=2·VPP=2 as 2 and 4 (chunks of 1 and 2 layers:
  // layers 0 | 1-2 | 3 | 4-5), and as 4 and 2, against the single process of the same 6 layers.
  void unevenVirtualStagesMatchOneProcess() {
    for (const char* preset : {"tiny-gpt", "tiny-llama"})
      for (const auto& [first, last] : {std::pair<int64_t, int64_t>{2, 0}, {0, 2}}) {
        Layout layout;
        layout.pp = 2;
        layout.vpp = 2;
        layout.schedule = "interleaved";
        layout.num_layers = 6;
        layout.first_stage_layers = first;
        layout.last_stage_layers = last;
        layout.global_batch = layout.micro_batch * 2;
        Layout single;
        single.num_layers = 6;
        single.global_batch = layout.global_batch;
        const auto reference = train_synthetic_once(preset, single, kSteps);
        const auto parallel = train_synthetic_once(preset, layout, kSteps);
        const QString difference = firstDifference(reference, parallel);
        QVERIFY2(difference.isEmpty(), qPrintable(QString("%1 as %2, %3: %4").arg(preset).arg(first).arg(last).arg(difference)));
      }
  }

  // The shipped corpus (the default --data): tiny-gpt learns byte statistics quickly.
  void lossFallsOnTheShippedCorpus() {
    QTemporaryDir dir;
    Layout layout;
    layout.micro_batch = 4;
    layout.global_batch = 8;
    const std::string spec = write_file(dir, "corpus.json", tiny_spec("tiny-gpt", layout, 40).dump());
    const std::string out = dir.filePath("out").toStdString();
    const Run run = tessera_train({"--spec", QString::fromStdString(spec), "--out", QString::fromStdString(out), "--threads", "1"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    const auto steps = read_steps(out);
    QCOMPARE(steps.size(), size_t(40));
    qInfo("tiny-gpt on the corpus: loss %.3f at step 1, %.3f at step 40 (nats per byte)", steps.at(1).loss, steps.at(40).loss);
    QVERIFY(steps.at(1).loss > 5.0);   // ln 256 = 5.55 at initialisation
    QVERIFY(steps.at(40).loss < 3.2);
  }
};

QTEST_APPLESS_MAIN(TestTrainGold)
#include "test_train_gold.moc"
