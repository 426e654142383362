// tessera-train's refusals and failures: a spec the planner or the runtime rejects, bad arguments and
// environment exit 2 before any rank starts, naming the field; a rank that dies makes the launcher
// stop the others and name it, and without the launcher the surviving rank names the dead peer.
#include <QElapsedTimer>
#include <QtTest/QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "runtime/train/trainer.hpp"
#include "train_runner.hpp"

using namespace tessera::test;

namespace {

// tessera-train under a file-size limit of `kib` KiB (a write past it fails as on a full disk, EFBIG,
// with SIGXFSZ ignored); -1 as the exit code when it did not end normally within a minute.
Run train_with_file_limit(int kib, const QStringList& args) {
  QProcess p;
  p.start("bash", QStringList{"-c", QStringLiteral("trap '' XFSZ; ulimit -f %1; exec \"$0\" \"$@\"").arg(kib), TESSERA_TRAIN} + args);
  const bool ended = p.waitForFinished(60000);
  return {ended && p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput().toStdString(),
          p.readAllStandardError().toStdString()};
}

std::string spec_file(const QTemporaryDir& dir, const std::string& name, nlohmann::json spec) {
  return write_file(dir, name + ".json", spec.dump());
}

// The child of `parent` whose environment has RANK=<rank>, or 0.
pid_t child_with_rank(qint64 parent, int rank) {
  std::ifstream children("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
  pid_t pid = 0;
  while (children >> pid) {
    std::ifstream environ("/proc/" + std::to_string(pid) + "/environ");
    std::string entry;
    while (std::getline(environ, entry, '\0'))
      if (entry == "RANK=" + std::to_string(rank)) return pid;
  }
  return 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool wait_for(QProcess& p, const std::string& text, std::string& seen, int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  while (timer.elapsed() < timeout_ms) {
    p.waitForReadyRead(200);
    seen += p.readAllStandardOutput().toStdString();
    if (seen.find(text) != std::string::npos) return true;
    if (p.state() == QProcess::NotRunning) return false;
  }
  return false;
}

}  // namespace

class TestTrainErrors : public QObject {
  Q_OBJECT
 private slots:
  void refusedSpecsNameTheField_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("named");
    QTest::newRow("planner: tp must divide heads") << "parallel.tp" << "3" << "parallel.tp";
    QTest::newRow("runtime: fp16") << "training.precision" << "\"fp16\"" << "training.precision=fp16";
    QTest::newRow("runtime: zb-h1") << "parallel.schedule" << "\"zb-h1\"" << "parallel.schedule=zb-h1";
    QTest::newRow("runtime: ZeRO-2") << "parallel.zero_stage" << "2" << "parallel.zero_stage=2";
  }
  void refusedSpecsNameTheField() {
    QFETCH(QString, field);
    QFETCH(QString, value);
    QFETCH(QString, named);
    QTemporaryDir dir;
    Layout layout;
    layout.dp = 2;
    auto spec = tiny_spec("tiny-gpt", layout, 5);
    const auto dot = field.indexOf('.');
    spec[field.left(dot).toStdString()][field.mid(dot + 1).toStdString()] = nlohmann::json::parse(value.toStdString());
    const std::string out = dir.filePath("out").toStdString();
    const Run run = tessera_train({"--spec", QString::fromStdString(spec_file(dir, "bad", spec)), "--out",
                                   QString::fromStdString(out), "--nproc", "2"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find(named.toStdString()) != std::string::npos, run.err.c_str());
    QVERIFY(!std::filesystem::exists(out + "/metrics.jsonl"));  // no rank started
  }

  void badArgumentsAndEnvironmentExit2() {
    QTemporaryDir dir;
    Layout layout;
    layout.dp = 2;
    const QString spec = QString::fromStdString(spec_file(dir, "ok", tiny_spec("tiny-gpt", layout, 5)));
    Run run = tessera_train({"--spec", dir.filePath("missing.json")});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("missing.json") != std::string::npos, run.err.c_str());
    // --out '' trained without output, --data '' on the shipped corpus: refused, as every empty value.
    for (const char* option : {"--out", "--data"}) {
      run = tessera_train({"--spec", spec, option, ""});
      QCOMPARE(run.exit_code, 2);
      QVERIFY2(run.err.find(std::string(option) + ": must not be empty") != std::string::npos, run.err.c_str());
    }
    run = tessera_train({"--spec", spec, "--nproc", "3"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("--nproc 3 must equal the spec's world size 2") != std::string::npos, run.err.c_str());
    run = tessera_train({"--spec", spec, "--nproc", "2", "--out", "/proc/tessera-out"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("--out /proc/tessera-out is not a writable directory") != std::string::npos, run.err.c_str());
    // --steps below the spec's warm-up (a smoke test of a real spec): the warm-up is cut to the run,
    // said once, not by every rank.
    auto warm = tiny_spec("tiny-gpt", layout, 5);
    warm["training"]["warmup_steps"] = 3;
    run = tessera_train({"--spec", QString::fromStdString(spec_file(dir, "warm", warm)), "--steps", "2", "--nproc", "2"});
    QCOMPARE(run.exit_code, 0);
    const std::string cut = "note: --steps 2: training.warmup_steps=3 cut to 2";
    QVERIFY2(run.err.find(cut) != std::string::npos && run.err.find(cut) == run.err.rfind(cut), run.err.c_str());
    run = tessera_train({"--spec", spec, "--threads", "100000"});  // accepted, it never finished a step
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("--threads") != std::string::npos && run.err.find("not in range 1 to 1024") != std::string::npos, run.err.c_str());
    // A GPU-sized spec on the CPU: Llama-3-70B's ranks need hundreds of GiB, refused with the figures
    // before any rank starts (it would end in the kernel's OOM killer).
    const std::string huge = spec_file(dir, "huge", {{"model", {{"preset", "llama3-70b"}, {"seq_length", 1024}}},
                                                     {"parallel", {{"tp", 1}, {"pp", 2}}},
                                                     {"training", {{"micro_batch_size", 1}, {"precision", "bf16"}}},
                                                     {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 2}}}});
    run = tessera_train({"--spec", QString::fromStdString(huge), "--nproc", "2"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("--device cpu: the planner predicts 2 ranks of this spec need ") != std::string::npos &&
                 run.err.find("is available (MemAvailable): the spec is planned for cluster.gpu=h100-sxm: train it with "
                              "--device cuda, or use a smaller model or batch (--no-memory-check starts it anyway)") !=
                     std::string::npos,
             run.err.c_str());
    QVERIFY2(run.err.find("rank 0") == std::string::npos, run.err.c_str());
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("RANK", "0");
    env.insert("WORLD_SIZE", "2");
    p.setProcessEnvironment(env);  // MASTER_ADDR and MASTER_PORT missing
    p.start(TESSERA_TRAIN, {"--spec", spec});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(p.readAllStandardError().contains("MASTER_ADDR"));
  }

  // Numbers CLI11 and the environment used to take wrongly: 0 said to be in range, a 20-digit step
  // count read as 2^63 - 1, LOCAL_WORLD_SIZE=0 a division by zero (SIGFPE), RANK=2^32 rank 0.
  void badNumbersAreRefusedNamingTheRule() {
    QTemporaryDir dir;
    const QString spec = QString::fromStdString(spec_file(dir, "one", tiny_spec("tiny-gpt", Layout{}, 6)));
    Run run = tessera_train({"--spec", spec, "--nproc", "0"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("--nproc: must be a whole number from 1 to 4096, got '0'") != std::string::npos, run.err.c_str());
    run = tessera_train({"--spec", spec, "--steps", "99999999999999999999"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("must be a whole number from 1 to 1099511627776, got '99999999999999999999'") != std::string::npos,
             run.err.c_str());
    const auto with_env = [&](const std::map<QString, QString>& vars) {
      QProcess p;
      auto env = QProcessEnvironment::systemEnvironment();
      env.insert("MASTER_ADDR", "127.0.0.1");
      env.insert("MASTER_PORT", "29581");
      for (const auto& [name, value] : vars) env.insert(name, value);
      p.setProcessEnvironment(env);
      p.start(TESSERA_TRAIN, {"--spec", spec, "--data", "synthetic"});
      p.waitForFinished(60000);
      return Run{p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, "", p.readAllStandardError().toStdString()};
    };
    run = with_env({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_WORLD_SIZE", "0"}});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("LOCAL_RANK=0 must be below LOCAL_WORLD_SIZE=0") != std::string::npos, run.err.c_str());
    // RANK out of range is named as RANK, not as the LOCAL_RANK that defaults to it.
    run = with_env({{"RANK", "5"}, {"WORLD_SIZE", "2"}});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("RANK=5 must be below WORLD_SIZE=2") != std::string::npos && run.err.find("LOCAL_RANK") == std::string::npos,
             run.err.c_str());
    // A MASTER_ADDR that no host can have, at once (the rendezvous retried its lookup for 85 s).
    QElapsedTimer clock;
    clock.start();
    run = with_env({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "no such host"}});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("MASTER_ADDR=\"no such host\" is not a host name or address: it holds a space, which no host "
                          "name or address has") != std::string::npos,
             run.err.c_str());
    QVERIFY2(clock.elapsed() < 20000, qPrintable(QString::number(clock.elapsed())));
    run = with_env({{"RANK", "4294967296"}, {"WORLD_SIZE", "1"}});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("RANK=\"4294967296\" must be an integer from 0 to 2147483647") != std::string::npos, run.err.c_str());
  }

  // One run per --out: a fresh run into an earlier run's checkpoints is refused (a later --resume
  // took the earlier run's newest checkpoint and spliced the two), into an earlier run's step records
  // without checkpoints too, and so is a second run while one trains there (it unlinked the first
  // one's metrics.jsonl); nothing of the first is touched.
  void anOutputDirectoryBelongsToOneRun() {
    QTemporaryDir dir;
    const QString out = dir.filePath("out");
    const QString spec = QString::fromStdString(spec_file(dir, "short", tiny_spec("tiny-gpt", Layout{}, 6)));
    QCOMPARE(tessera_train({"--spec", spec, "--out", out, "--data", "synthetic"}).exit_code, 0);
    const auto metrics_before = read_file(out.toStdString() + "/metrics.jsonl");
    Run run = tessera_train({"--spec", spec, "--out", out, "--data", "synthetic"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("holds checkpoints of an earlier run (newest step_00000006): continue it with --resume") != std::string::npos,
             run.err.c_str());
    QCOMPARE(read_file(out.toStdString() + "/metrics.jsonl"), metrics_before);
    // An earlier run that kept no checkpoint: its metrics.jsonl was overwritten (exit 0).
    const QString bare = dir.filePath("bare");
    QCOMPARE(tessera_train({"--spec", spec, "--out", bare, "--data", "synthetic", "--no-checkpoint"}).exit_code, 0);
    const auto bare_before = read_file(bare.toStdString() + "/metrics.jsonl");
    run = tessera_train({"--spec", spec, "--out", bare, "--data", "synthetic", "--no-checkpoint"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("--out " + bare.toStdString() + " holds the step records of an earlier run (metrics.jsonl) and no "
                          "checkpoint to resume it from") != std::string::npos,
             run.err.c_str());
    QCOMPARE(read_file(bare.toStdString() + "/metrics.jsonl"), bare_before);

    const QString busy = dir.filePath("busy");
    const QString long_spec = QString::fromStdString(spec_file(dir, "long", tiny_spec("tiny-gpt", Layout{}, 100000)));
    QProcess first;
    first.start(TESSERA_TRAIN, {"--spec", long_spec, "--out", busy, "--data", "synthetic", "--no-checkpoint"});
    std::string seen;
    QVERIFY2(wait_for(first, "step    1/", seen, 60000), seen.c_str());
    run = tessera_train({"--spec", long_spec, "--out", busy, "--data", "synthetic", "--no-checkpoint"});
    QCOMPARE(run.exit_code, 2);
    QVERIFY2(run.err.find("--out " + busy.toStdString() + " is in use by another tessera-train (pid " +
                          std::to_string(first.processId()) + ")") != std::string::npos,
             run.err.c_str());
    QVERIFY(std::filesystem::file_size(busy.toStdString() + "/metrics.jsonl") > 0);
    first.kill();
    first.waitForFinished();
  }

  // A checkpoint that cannot be written (the disk full; here the file-size limit, which fails the
  // write as a full disk does) ends the rank with the file and the reason, exit 1, and leaves no
  // manifest and no temporary: LibTorch's writer used to abort the process (std::terminate).
  void aCheckpointThatCannotBeWrittenEndsTheRankWithTheReason() {
    QTemporaryDir dir;
    const QString out = dir.filePath("out");
    const QString spec = QString::fromStdString(spec_file(dir, "ckpt", tiny_spec("tiny-gpt", Layout{}, 6)));
    const Run run = train_with_file_limit(64, {"--spec", spec, "--out", out, "--data", "synthetic"});
    const std::string& err = run.err;
    QCOMPARE(run.exit_code, 1);
    QVERIFY2(err.find("cannot write checkpoint file " + out.toStdString() + "/checkpoints/step_00000006/rank_00000.pt.tmp: File too large") !=
                 std::string::npos,
             err.c_str());
    QVERIFY(!std::filesystem::exists(out.toStdString() + "/checkpoints/step_00000006/manifest.json"));
    QVERIFY(!std::filesystem::exists(out.toStdString() + "/checkpoints/step_00000006/rank_00000.pt.tmp"));
  }

  // The metrics file filling up (a full disk; here the file-size limit) is said with the file and the
  // reason: the short write left errno unset and the rank said "writing metrics: Success".
  void aMetricsFileThatCannotBeWrittenIsNamed() {
    QTemporaryDir dir;
    const QString out = dir.filePath("out");
    const QString spec = QString::fromStdString(spec_file(dir, "full", tiny_spec("tiny-gpt", Layout{}, 200)));
    const Run run = train_with_file_limit(16, {"--spec", spec, "--out", out, "--data", "synthetic", "--no-checkpoint"});
    const std::string& err = run.err;
    QCOMPARE(run.exit_code, 1);
    QVERIFY2(err.find("cannot write " + out.toStdString() + "/metrics.jsonl: File too large") != std::string::npos, err.c_str());
  }

  // A learning rate that sends the loss to NaN: the run ends at that step (recorded, not applied) with
  // exit 1 on every rank; it trained on to the end in NaN and exited 0.
  void aDivergedRunEndsAtItsFirstNonFiniteStep() {
    QTemporaryDir dir;
    const QString out = dir.filePath("out");
    Layout two;
    two.dp = 2;
    auto doc = tiny_spec("tiny-gpt", two, 6);
    doc["training"]["lr"] = 1e300;
    doc["training"]["min_lr"] = 1e299;
    const QString spec = QString::fromStdString(spec_file(dir, "diverging", doc));
    const Run run = tessera_train({"--spec", spec, "--nproc", "2", "--threads", "1", "--out", out, "--data", "synthetic"});
    QCOMPARE(run.exit_code, 1);
    QVERIFY2(run.err.find(": the run diverged (training.lr=1e+300); this step was not applied and no checkpoint was written") !=
                 std::string::npos,
             run.err.c_str());
    std::map<int64_t, int> steps;  // step -> records of it (both ranks)
    int64_t first_nan = 0;
    std::ifstream in(out.toStdString() + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line);
      if (j.at("type") != "step") continue;
      const int64_t step = j.at("step").get<int64_t>();
      ++steps[step];
      const auto finite = [&](const char* field) { return j.at(field).is_number() && std::isfinite(j.at(field).get<double>()); };
      if (!finite("loss") || !finite("grad_norm")) first_nan = first_nan ? first_nan : step;
    }
    QVERIFY(first_nan >= 1);
    QVERIFY2(run.err.find("step " + std::to_string(first_nan) + ": the loss is ") != std::string::npos, run.err.c_str());
    QCOMPARE(steps.rbegin()->first, first_nan);  // nothing after it
    QCOMPARE(steps[first_nan], 2);               // every rank recorded it
    QVERIFY(!std::filesystem::exists(out.toStdString() + "/checkpoints"));
  }

  void singleProcessRunDoesNotNeedAFixedPort() {
    // Hold torchrun's default port 29500 (if nobody else does already): a run started by hand without
    // RANK/WORLD_SIZE must still rendezvous, on a free port of its own.
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    QVERIFY(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(29500);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    const bool held = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && listen(fd, 1) == 0;
    QTemporaryDir dir;
    const QString spec = QString::fromStdString(spec_file(dir, "single", tiny_spec("tiny-gpt", Layout{}, 5)));
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"}) env.remove(name);
    p.setProcessEnvironment(env);
    p.start(TESSERA_TRAIN, {"--spec", spec, "--threads", "1", "--out", dir.filePath("out")});
    const bool finished = p.waitForFinished(60000);
    close(fd);
    QVERIFY(finished);
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QCOMPARE(read_steps(dir.filePath("out").toStdString()).size(), size_t{5});
    if (!held) qInfo("port 29500 was already taken by another process: the run still had to avoid it");
  }

  void deviceCudaWithoutAGpuIsRefused() {
    QTemporaryDir dir;
    Layout layout;
    layout.dp = 2;
    const QString spec = QString::fromStdString(spec_file(dir, "ok", tiny_spec("tiny-gpt", layout, 5)));
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("CUDA_VISIBLE_DEVICES", "");  // no GPU, on any machine
    p.setProcessEnvironment(env);
    p.start(TESSERA_TRAIN, {"--spec", spec, "--nproc", "2", "--device", "cuda", "--out", dir.filePath("out")});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 2);
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(err.contains("--device cuda: no CUDA GPU is visible to this process"), err.constData());
    QVERIFY(!QFile::exists(dir.filePath("out/metrics.jsonl")));  // no rank started
    p.start(TESSERA_TRAIN, {"--spec", spec, "--device", "tpu"});
    QVERIFY(p.waitForFinished(30000));
    QVERIFY(p.exitCode() != 0);
    QVERIFY(p.readAllStandardError().contains("--device"));
  }

  // The GPU of a rank: LOCAL_RANK among the GPUs it sees, GPU 0 when it sees one (the agent makes one
  // visible per rank); more ranks on a node than GPUs is refused, not two ranks put on one GPU.
  void cudaDeviceOfALocalRank() {
    using tessera::runtime::cuda_device_of;
    QCOMPARE(cuda_device_of(0, 1), 0);
    QCOMPARE(cuda_device_of(5, 1), 0);
    QCOMPARE(cuda_device_of(3, 8), 3);
    QCOMPARE(cuda_device_of(7, 8), 7);
    auto refusal = [](int local_rank, int visible) -> std::string {
      try {
        cuda_device_of(local_rank, visible);
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
      return "";
    };
    QVERIFY2(refusal(8, 8).find("LOCAL_RANK=8 but this process sees 8 GPUs") != std::string::npos, refusal(8, 8).c_str());
    QVERIFY2(refusal(2, 0).find("no CUDA device is visible") != std::string::npos, refusal(2, 0).c_str());
  }

  void badDataFilesAreRefusedBeforeAnyRankStarts() {
    QTemporaryDir dir;
    Layout layout;
    layout.dp = 2;
    const QString spec = QString::fromStdString(spec_file(dir, "ok", tiny_spec("tiny-gpt", layout, 5)));
    const std::string corpus = TESSERA_BINARY_DIR "/resources/corpus/kjv.tokens";
    const std::string small = dir.filePath("small.tokens").toStdString();
    std::filesystem::copy_file(corpus, small);
    std::filesystem::resize_file(small, 32 + 2 * 100);
    {  // a valid file of 100 tokens: smaller than one batch (4 sequences of 65 tokens)
      std::fstream header(small, std::ios::in | std::ios::out | std::ios::binary);
      header.seekp(24);
      const char count[8] = {100, 0, 0, 0, 0, 0, 0, 0};
      header.write(count, 8);
    }
    const std::string truncated = dir.filePath("truncated.tokens").toStdString();
    std::filesystem::copy_file(corpus, truncated);
    std::filesystem::resize_file(truncated, 1000);
    const std::string text = write_file(dir, "text.txt", "plain text, not tokens, but long enough for a header");
    const std::vector<std::pair<std::string, std::string>> cases = {
        {dir.filePath("missing.tokens").toStdString(), "cannot be opened"},
        {text, "not a Tessera token file"},
        {truncated, "truncated or corrupt"},
        {small, "fewer than one global batch"}};
    for (const auto& [path, problem] : cases) {
      const Run run = tessera_train({"--spec", spec, "--nproc", "2", "--data", QString::fromStdString(path)});
      QCOMPARE(run.exit_code, 2);
      QVERIFY2(run.err.find(path) != std::string::npos && run.err.find(problem) != std::string::npos, run.err.c_str());
    }
  }

  void launcherStopsTheRanksAndNamesTheOneThatDied() {
    QTemporaryDir dir;
    Layout layout;
    layout.dp = 2;
    QProcess launcher;
    launcher.start(TESSERA_TRAIN, {"--spec", QString::fromStdString(spec_file(dir, "dp2", tiny_spec("tiny-gpt", layout, 100000))),
                                   "--nproc", "2", "--threads", "1"});
    std::string seen;
    QVERIFY2(wait_for(launcher, "step    2/", seen, 60000), seen.c_str());
    const pid_t rank1 = child_with_rank(launcher.processId(), 1);
    QVERIFY(rank1 > 0);
    ::kill(rank1, SIGKILL);
    QVERIFY(launcher.waitForFinished(30000));
    QCOMPARE(launcher.exitCode(), 1);
    const std::string err = launcher.readAllStandardError().toStdString();
    QVERIFY2(err.find("rank 1 was killed by signal 9") != std::string::npos, err.c_str());
    QCOMPARE(child_with_rank(launcher.processId(), 0), 0);  // nothing left behind
  }

  void survivingRankNamesTheDeadPeer() {
    QTemporaryDir dir;
    Layout layout;
    layout.dp = 2;
    const QString spec = QString::fromStdString(spec_file(dir, "dp2", tiny_spec("tiny-gpt", layout, 100000)));
    QProcess ranks[2];
    for (int r = 0; r < 2; ++r) {
      auto env = QProcessEnvironment::systemEnvironment();
      env.insert("RANK", QString::number(r));
      env.insert("WORLD_SIZE", "2");
      env.insert("MASTER_ADDR", "127.0.0.1");
      env.insert("MASTER_PORT", QString::number(29000 + (::getpid() % 2000)));
      ranks[r].setProcessEnvironment(env);
      ranks[r].start(TESSERA_TRAIN, {"--spec", spec, "--threads", "1"});
    }
    std::string seen;
    QVERIFY2(wait_for(ranks[0], "step    2/", seen, 60000), seen.c_str());
    ranks[1].kill();
    ranks[1].waitForFinished();
    QVERIFY(ranks[0].waitForFinished(60000));
    QCOMPARE(ranks[0].exitCode(), 1);
    const std::string err = ranks[0].readAllStandardError().toStdString();
    QVERIFY2(err.find("peer rank 1 died") != std::string::npos, err.c_str());
  }
};

QTEST_APPLESS_MAIN(TestTrainErrors)
#include "test_train_errors.moc"
