// Checkpoints: a run resumed from its newest complete checkpoint continues with bit-identical losses
// and grad norms (CPU, fixed threads); a checkpoint without manifest is skipped as incomplete, a metrics
// record cut short, or holding NUL bytes, is dropped; a checkpoint whose artifact record was lost gets it again from its
// manifest, and each checkpoint is recorded once; another layout (the model compared by its fields, the differing one named), a truncated rank file or no checkpoint at all is refused
// with exit code 2, as is --save-every without --out.
#include <QtTest/QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "train_runner.hpp"

using namespace tessera::test;

namespace {

// Loss and grad norm as written (full double precision) of rank 0, by step.
std::map<int64_t, std::pair<double, double>> exact_steps(const std::string& out) {
  std::map<int64_t, std::pair<double, double>> steps;
  for (const auto& [step, m] : read_steps(out)) steps[step] = {m.loss, m.grad_norm};
  return steps;
}

// A spec of tiny-gpt on one rank for three steps (warm-up one), written into `dir`.
QString three_steps_on_one_rank(const QTemporaryDir& dir) {
  auto doc = tiny_spec("tiny-gpt", Layout{}, 3);
  doc["training"]["warmup_steps"] = 1;
  return QString::fromStdString(write_file(dir, "one.json", doc.dump()));
}

// Four 0xff bytes written over the middle of `file`, its size unchanged: damage only a checksum finds.
void damage_in_place(const std::string& file) {
  std::fstream damage(file, std::ios::in | std::ios::out | std::ios::binary);
  damage.seekp(static_cast<std::streamoff>(std::filesystem::file_size(file) / 2));
  damage.write("\xff\xff\xff\xff", 4);
}

}  // namespace

class TestTrainCheckpoint : public QObject {
  Q_OBJECT
 private slots:
  void resumeEqualsUninterruptedAndRefusesWhatDoesNotFit() {
    QTemporaryDir dir;
    Layout layout;  // DP=2 with the distributed optimizer: each rank's file holds its optimizer shard
    layout.dp = 2;
    layout.distributed_optimizer = true;
    const QString spec = QString::fromStdString(write_file(dir, "dp2.json", tiny_spec("tiny-gpt", layout, 20).dump()));
    const QString a = dir.filePath("a"), b = dir.filePath("b");
    const QStringList common{"--spec", spec, "--nproc", "2", "--threads", "1", "--data", "synthetic", "--save-every", "10"};
    Run run = tessera_train(common + QStringList{"--out", a});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    run = tessera_train(common + QStringList{"--out", b});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    const std::string last = b.toStdString() + "/checkpoints/step_00000020";
    QVERIFY(std::filesystem::exists(last + "/rank_00000.pt") && std::filesystem::exists(last + "/rank_00001.pt"));
    // As if the run had died while writing step 20's checkpoint: no manifest, so not complete.
    std::filesystem::remove(last + "/manifest.json");
    const std::string metrics = b.toStdString() + "/metrics.jsonl";
    // As if it had died between step 10's manifest and its artifact record: that line is gone.
    {
      std::ifstream in(metrics);
      std::string line, kept;
      while (std::getline(in, line))
        if (line.find("\"type\":\"artifact\"") == std::string::npos || line.find("\"step\":10,") == std::string::npos) kept += line + "\n";
      in.close();
      std::ofstream(metrics, std::ios::trunc) << kept;
    }
    // As if a crash had left zeros where a block of the file was never written, just after a record
    // of rank 1's step 5 (rank 0's are compared below): the line holds the whole record, then NULs.
    int64_t zeroed_line = 0;
    {
      std::ifstream in(metrics);
      std::string line, kept;
      for (int64_t number = 1; std::getline(in, line); ++number) {
        if (zeroed_line == 0 && line.find("\"type\":\"step\"") != std::string::npos && line.find("\"step\":5,") != std::string::npos &&
            line.find("\"rank\":1,") != std::string::npos) {
          zeroed_line = number;
          line += std::string(6, '\0') + "\"loss\":1}";
        }
        kept += line + "\n";
      }
      in.close();
      std::ofstream(metrics, std::ios::trunc) << kept;
    }
    QVERIFY(zeroed_line > 0);
    // And as if the disk had filled while step 21's record was written: the line is cut short.
    const auto whole_lines = [&] {
      std::ifstream in(metrics);
      return std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
    }();
    std::ofstream(metrics, std::ios::app) << "{\"type\":\"step\",\"step\":21,\"lo";  // (moc reads no raw strings)

    run = tessera_train(common + QStringList{"--out", b, "--resume"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    QVERIFY2(run.out.find("resumed from " + b.toStdString() + "/checkpoints/step_00000010") != std::string::npos,
             run.out.c_str());
    QVERIFY(run.out.find("step   11/20") != std::string::npos && run.out.find("step   10/20") == std::string::npos);
    QVERIFY2(run.err.find("dropping line " + std::to_string(whole_lines + 1) + " of " + metrics + ", not a whole record") !=
                 std::string::npos,
             run.err.c_str());
    QVERIFY2(run.err.find("dropping line " + std::to_string(zeroed_line) + " of " + metrics + ", not a whole record (it holds NUL bytes)") !=
                 std::string::npos,
             run.err.c_str());
    {
      std::ifstream in(metrics, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      QVERIFY2(bytes.find('\0') == std::string::npos, "the resumed metrics file kept the NUL bytes");
    }
    const auto uninterrupted = exact_steps(a.toStdString()), resumed = exact_steps(b.toStdString());
    QCOMPARE(resumed.size(), size_t(20));  // steps 11-20 of the first run replaced, not duplicated
    QVERIFY(resumed == uninterrupted);     // bit-identical
    // Each checkpoint once: step 10's record written again from its manifest, step 20's by the resumed run.
    std::map<int64_t, nlohmann::json> checkpoints;
    {
      std::ifstream in(metrics);
      for (std::string line; std::getline(in, line);) {
        const auto record = nlohmann::json::parse(line);
        if (record.at("type") != "artifact") continue;
        QVERIFY2(checkpoints.emplace(record.at("step").get<int64_t>(), record).second, line.c_str());
      }
    }
    QCOMPARE(checkpoints.size(), size_t{2});
    const std::string ten = b.toStdString() + "/checkpoints/step_00000010";
    QVERIFY(std::filesystem::equivalent(checkpoints.at(10).at("path").get<std::string>(), ten));
    QCOMPARE(checkpoints.at(10).at("size_bytes").get<int64_t>(),
             static_cast<int64_t>(std::filesystem::file_size(ten + "/rank_00000.pt") + std::filesystem::file_size(ten + "/rank_00001.pt")));
    QVERIFY(checkpoints.at(10).at("wall_time_s").get<double>() > 0);  // step 10's time on rank 0's clock
    QVERIFY(checkpoints.at(20).at("wall_time_s").get<double>() > 0);
    // The resumed session's clock goes on from step 10's: every rank's step records keep rising.
    {
      std::map<int64_t, double> last_wall_s;  // rank → the wall time of its previous step record
      std::ifstream in(metrics);
      for (std::string line; std::getline(in, line);) {
        const auto record = nlohmann::json::parse(line);
        if (record.at("type") != "step") continue;
        const int64_t rank = record.at("rank").get<int64_t>();
        const double wall_s = record.at("wall_time_s").get<double>();
        QVERIFY2(!last_wall_s.count(rank) || wall_s > last_wall_s[rank], line.c_str());
        last_wall_s[rank] = wall_s;
      }
      QCOMPARE(last_wall_s.size(), size_t{2});
    }

    // Another layout: TP=2 instead of DP=2.
    Layout tp2;
    tp2.tp = 2;
    const QString other = QString::fromStdString(write_file(dir, "tp2.json", tiny_spec("tiny-gpt", tp2, 20).dump()));
    run = tessera_train({"--spec", other, "--nproc", "2", "--out", b, "--resume"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("written by another layout") != std::string::npos, run.err.c_str());
    // Another world size is another layout too, said so (it read as a manifest listing too few ranks).
    Layout alone;
    alone.distributed_optimizer = true;
    const QString one = QString::fromStdString(write_file(dir, "one.json", tiny_spec("tiny-gpt", alone, 20).dump()));
    run = tessera_train({"--spec", one, "--out", b, "--resume"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("written by another layout (dp = 2 in the checkpoint, 1 now)") != std::string::npos, run.err.c_str());
    // Another learning rate (or seed, or batch) on --resume trained on and replaced the run's spec.json:
    // refused, naming the setting, and spec.json is the run's still. (--steps may change the length:
    // aDamagedRankFileIsRefusedByItsChecksum resumes a 3-step run with --steps 4.)
    auto faster = tiny_spec("tiny-gpt", layout, 20);
    faster["training"]["lr"] = 0.001;
    const QString faster_path = QString::fromStdString(write_file(dir, "faster.json", faster.dump()));
    run = tessera_train({"--spec", faster_path, "--nproc", "2", "--out", b, "--resume"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("was written with other training settings (training.lr = 0.003 in the checkpoint, 0.001 now): "
                          "a resumed run keeps its schedule, seed and batch") != std::string::npos,
             run.err.c_str());
    QCOMPARE(nlohmann::json::parse(std::ifstream(b.toStdString() + "/spec.json"))["training"]["lr"].get<double>(), 0.003);

    std::filesystem::resize_file(last + "/rank_00001.pt", 1000);
    run = tessera_train(common + QStringList{"--out", b, "--resume"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("rank_00001.pt is truncated") != std::string::npos, run.err.c_str());

    QVERIFY(QDir(dir.path()).mkdir("empty"));
    run = tessera_train(common + QStringList{"--out", dir.filePath("empty"), "--resume"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("no complete checkpoint") != std::string::npos, run.err.c_str());

    // A damaged manifest is refused naming the file and the field (it said "cannot use value() with
    // array"; a step of -5 was taken and failed inside a rank).
    const std::string manifest = last + "/manifest.json";
    const auto original = nlohmann::json::parse(std::ifstream(manifest));
    const auto refusal = [&](const nlohmann::json& m) {
      std::ofstream(manifest) << m.dump();
      return tessera_train(common + QStringList{"--out", b, "--resume"});
    };
    run = refusal(nlohmann::json::array());
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find(manifest + ": not a JSON object") != std::string::npos, run.err.c_str());
    auto edited = original;
    edited["step"] = -5;
    run = refusal(edited);
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find(manifest + ": step must be a non-negative integer") != std::string::npos, run.err.c_str());
    edited = original;
    edited["step"] = 10;
    run = refusal(edited);
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find(manifest + ": step 10 is not the step of its directory step_00000020") != std::string::npos, run.err.c_str());
    edited = original;
    edited["layout"] = nlohmann::json::array();
    run = refusal(edited);
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find(manifest + ": layout must be a JSON object") != std::string::npos, run.err.c_str());
    edited = original;
    edited.erase("rank_file_bytes");
    run = refusal(edited);
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find(manifest + ": rank_file_bytes must list the bytes of each rank's file") != std::string::npos,
             run.err.c_str());
  }

  // A rank file damaged in place (its size unchanged) is refused by its checksum: LibTorch's reader
  // loaded it and the run went on, to a NaN loss once 0xff bytes landed in the weights.
  // A smoke run whose warm-up --steps cut (5 to 3) is extended by a larger --steps: the checkpoint
  // records the warm-up as the spec wrote it, so the resumed run's is not taken for another one.
  void aRunWhoseWarmupStepsCutIsExtended() {
    QTemporaryDir dir;
    const QString spec = QString::fromStdString(write_file(dir, "five.json", tiny_spec("tiny-gpt", Layout{}, 20).dump()));
    const QStringList common{"--spec", spec, "--threads", "1", "--data", "synthetic", "--out", dir.filePath("out")};
    Run run = tessera_train(common + QStringList{"--steps", "3"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    QVERIFY2(run.err.find("training.warmup_steps=5 cut to 3") != std::string::npos, run.err.c_str());
    run = tessera_train(common + QStringList{"--steps", "6", "--resume"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    QCOMPARE(read_steps(dir.filePath("out").toStdString()).size(), size_t(6));
    // Its warm-up changed in the spec is still another schedule.
    auto longer = tiny_spec("tiny-gpt", Layout{}, 20);
    longer["training"]["warmup_steps"] = 7;
    const QString longer_path = QString::fromStdString(write_file(dir, "seven.json", longer.dump()));
    run = tessera_train({"--spec", longer_path, "--threads", "1", "--data", "synthetic", "--out", dir.filePath("out"),
                         "--steps", "9", "--resume"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("training.warmup_steps = 5 in the checkpoint, 7 now") != std::string::npos, run.err.c_str());
  }

  // Uneven stages put other layers in each stage's files: a checkpoint of 1 and 3 layers on two stages
  // resumes with that split and is refused, the split named, by an even one (whose files would hold
  // layers 0-1 and 2-3).
  void unevenStagesResumeOnlyTheirOwnSplit() {
    QTemporaryDir dir;
    Layout uneven;
    uneven.pp = 2;
    uneven.last_stage_layers = 3;
    const QString spec = QString::fromStdString(write_file(dir, "uneven.json", tiny_spec("tiny-gpt", uneven, 20).dump()));
    const QString out = dir.filePath("out");
    const QStringList common{"--nproc", "2", "--threads", "1", "--data", "synthetic", "--out", out};
    Run run = tessera_train(common + QStringList{"--spec", spec, "--steps", "2"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    Layout even;
    even.pp = 2;
    const QString even_spec = QString::fromStdString(write_file(dir, "even.json", tiny_spec("tiny-gpt", even, 20).dump()));
    run = tessera_train(common + QStringList{"--spec", even_spec, "--steps", "3", "--resume"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("written by another layout (stage_layers = [1,3] in the checkpoint, absent now)") != std::string::npos,
             run.err.c_str());
    run = tessera_train(common + QStringList{"--spec", spec, "--steps", "3", "--resume"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    QCOMPARE(read_steps(out.toStdString()).size(), size_t(3));
    // An even split however spelled holds the same layers: 2 and 2 resumes a run of 2 and 2 written before.
    const QString even_out = dir.filePath("even");
    const QStringList even_common{"--nproc", "2", "--threads", "1", "--data", "synthetic", "--out", even_out};
    run = tessera_train(even_common + QStringList{"--spec", even_spec, "--steps", "2"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    Layout spelled = even;
    spelled.first_stage_layers = 2;
    const QString spelled_spec = QString::fromStdString(write_file(dir, "spelled.json", tiny_spec("tiny-gpt", spelled, 20).dump()));
    run = tessera_train(even_common + QStringList{"--spec", spelled_spec, "--steps", "3", "--resume"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
  }

  void aDamagedRankFileIsRefusedByItsChecksum() {
    QTemporaryDir dir;
    const QString spec = three_steps_on_one_rank(dir);
    const QString out = dir.filePath("out");
    const QStringList common{"--spec", spec, "--threads", "1", "--data", "synthetic", "--out", out};
    Run run = tessera_train(common);
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    const std::string file = out.toStdString() + "/checkpoints/step_00000003/rank_00000.pt";
    const auto manifest = nlohmann::json::parse(std::ifstream(out.toStdString() + "/checkpoints/step_00000003/manifest.json"));
    QCOMPARE(manifest.at("rank_file_checksums").size(), size_t{1});
    QCOMPARE(manifest.at("rank_file_checksums")[0].get<std::string>().size(), size_t{16});
    damage_in_place(file);
    run = tessera_train(common + QStringList{"--resume", "--steps", "4"});
    QVERIFY(run.exit_code != 0);
    QVERIFY2(run.err.find(file + " is damaged: its checksum is ") != std::string::npos, run.err.c_str());
    QCOMPARE(read_steps(out.toStdString()).size(), size_t(3));  // nothing trained on it
  }

  // A resume that fails on a damaged rank file leaves the output as it was: the step records after the
  // checkpoint were dropped (and spec.json replaced) before the rank file was read, so the run could not
  // be resumed from a repaired checkpoint either.
  void aFailedResumeKeepsTheRecordsAndTheSpec() {
    QTemporaryDir dir;
    const QString spec = QString::fromStdString(write_file(dir, "six.json", tiny_spec("tiny-gpt", Layout{}, 6).dump()));
    const QString out = dir.filePath("out");
    const QStringList common{"--spec", spec, "--threads", "1", "--data", "synthetic", "--out", out};
    Run run = tessera_train(common + QStringList{"--save-every", "3"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    const std::string root = out.toStdString();
    std::filesystem::remove(root + "/checkpoints/step_00000006/manifest.json");  // killed while writing it
    const auto contents = [](const std::string& path) {
      std::ifstream in(path, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const std::string metrics_before = contents(root + "/metrics.jsonl"), spec_before = contents(root + "/spec.json");
    const std::string file = root + "/checkpoints/step_00000003/rank_00000.pt";
    damage_in_place(file);
    run = tessera_train(common + QStringList{"--resume", "--steps", "8"});
    QVERIFY(run.exit_code != 0);
    QVERIFY2(run.err.find(file + " is damaged") != std::string::npos, run.err.c_str());
    QCOMPARE(read_steps(root).size(), size_t(6));
    QVERIFY(contents(root + "/metrics.jsonl") == metrics_before);
    QVERIFY(contents(root + "/spec.json") == spec_before);
    // A copy of a checkpoint beside it is not a checkpoint (it was taken for the newest and refused);
    // --steps before the checkpoint's step trained nothing, exit 0, and recorded a shorter spec.
    std::filesystem::remove_all(root);
    run = tessera_train(common + QStringList{"--save-every", "3"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    std::filesystem::copy(root + "/checkpoints/step_00000003", root + "/checkpoints/step_00000003.bak",
                          std::filesystem::copy_options::recursive);
    run = tessera_train(common + QStringList{"--resume", "--steps", "2"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("is of step 6, after the run's last step 2 (training.train_steps, or --steps): give --steps 6 or more") !=
                 std::string::npos,
             run.err.c_str());
    // What a run killed mid-checkpoint left (a temporary as large as a rank file) goes at the next start.
    const std::string stale = root + "/checkpoints/step_00000003/rank_00000.pt.tmp";
    std::ofstream(stale) << "half a rank file";
    run = tessera_train(common + QStringList{"--resume", "--steps", "7"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    QVERIFY2(run.out.find("step_00000006") != std::string::npos, run.out.c_str());
    QCOMPARE(read_steps(root).size(), size_t(7));
    QVERIFY(!std::filesystem::exists(stale));
    // A rank file that is a directory is named so (it said "is missing"); a --resume into a directory
    // that does not exist is refused without creating it (and its lock).
    const std::string newest = root + "/checkpoints/step_00000007/rank_00000.pt";
    std::filesystem::remove(newest);
    std::filesystem::create_directory(newest);
    run = tessera_train(common + QStringList{"--resume", "--steps", "8"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find(newest + " is not a regular file") != std::string::npos, run.err.c_str());
    const QString nowhere = dir.filePath("nowhere/deeper");
    run = tessera_train({"--spec", spec, "--threads", "1", "--data", "synthetic", "--out", nowhere, "--resume"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("is no directory, so it holds no checkpoint to resume") != std::string::npos, run.err.c_str());
    QVERIFY(!QFileInfo::exists(dir.filePath("nowhere")));
  }

  // The model is compared by its fields, not by the preset's name they came from: the same fields given
  // without model.preset resume (they were refused, printing both model objects without naming the
  // preset), and a field that differs is named with its section.
  void resumeComparesTheModelByItsFields() {
    QTemporaryDir dir;
    const QString spec = three_steps_on_one_rank(dir);
    const QString out = dir.filePath("out");
    const QStringList common{"--threads", "1", "--data", "synthetic", "--out", out};
    Run run = tessera_train(QStringList{"--spec", spec} + common);
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    // tiny-gpt by hand: embeddings 256·64 + 64·64, 4 layers of 2 norms (4·64), QKV (3·64² + 3·64),
    // projection (64² + 64), MLP (2·64·256 + 256 + 64), and the final norm (2·64): 220,544.
    // And the attention kernel ATen picks: on the CPU in fp32, its flash attention.
    QVERIFY2(run.out.find("rank 0 holds 220544 parameters (the model has 220544); attention: flash_attention") !=
                 std::string::npos,
             run.out.c_str());

    auto doc = nlohmann::json::parse(std::ifstream(spec.toStdString()));
    doc["model"] = {{"arch", "gpt"},           {"num_layers", 4},         {"hidden_size", 64},
                    {"num_attention_heads", 4}, {"ffn_hidden_size", 256}, {"vocab_size", 256},
                    {"seq_length", 64},         {"normalization", "layernorm"}, {"activation", "gelu"},
                    {"position_embedding", "learned"}, {"tie_embeddings", true}};  // tiny-gpt's fields, spelled out
    doc["training"]["train_steps"] = 4;
    const QString explicit_fields = QString::fromStdString(write_file(dir, "explicit.json", doc.dump()));
    run = tessera_train(QStringList{"--spec", explicit_fields, "--resume"} + common);
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    QVERIFY2(run.out.find("resumed from " + out.toStdString() + "/checkpoints/step_00000003") != std::string::npos,
             run.out.c_str());
    QCOMPARE(read_steps(out.toStdString()).size(), size_t(4));

    // A checkpoint written before this rule keeps the preset's name in its layout: it resumes too.
    const std::string manifest = out.toStdString() + "/checkpoints/step_00000004/manifest.json";
    auto old_manifest = nlohmann::json::parse(std::ifstream(manifest));
    QVERIFY(!old_manifest["layout"]["model"].contains("preset"));
    old_manifest["layout"]["model"]["preset"] = "tiny-gpt";
    std::ofstream(manifest) << old_manifest.dump();
    doc["training"]["train_steps"] = 5;
    const QString five = QString::fromStdString(write_file(dir, "five.json", doc.dump()));
    run = tessera_train(QStringList{"--spec", five, "--resume"} + common);
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    QCOMPARE(read_steps(out.toStdString()).size(), size_t(5));

    doc["model"]["ffn_hidden_size"] = 128;
    doc["training"]["train_steps"] = 6;
    const QString narrower = QString::fromStdString(write_file(dir, "narrower.json", doc.dump()));
    run = tessera_train(QStringList{"--spec", narrower, "--resume"} + common);
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("written by another layout (model.ffn_hidden_size = 256 in the checkpoint, 128 now)") !=
                 std::string::npos,
             run.err.c_str());
    QCOMPARE(read_steps(out.toStdString()).size(), size_t(5));  // nothing trained
  }

  // Benchmarks (tests/gpu/check.sh) train without writing a checkpoint, not even the final one.
  void noCheckpointWritesMetricsOnly() {
    QTemporaryDir dir;
    const QString spec = three_steps_on_one_rank(dir);
    const QString out = dir.filePath("out");
    const Run run = tessera_train({"--spec", spec, "--threads", "1", "--data", "synthetic", "--out", out, "--no-checkpoint"});
    QVERIFY2(run.exit_code == 0, run.err.c_str());
    QCOMPARE(read_steps(out.toStdString()).size(), size_t(3));
    QVERIFY(!std::filesystem::exists(out.toStdString() + "/checkpoints"));
    // Checkpoints need somewhere to go: --save-every without --out is refused (it wrote nothing).
    const Run nowhere = tessera_train({"--spec", spec, "--threads", "1", "--data", "synthetic", "--save-every", "1"});
    QCOMPARE(nowhere.exit_code, 2);
    QVERIFY2(nowhere.err.find("--save-every needs --out DIR") != std::string::npos, nowhere.err.c_str());
  }
};

QTEST_APPLESS_MAIN(TestTrainCheckpoint)
#include "test_train_checkpoint.moc"
