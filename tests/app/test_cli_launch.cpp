// tessera-cli launch / runs follow / runs stop as processes, against two agents on 127.0.0.1 and
// 127.0.0.2 running the fake_rank TEST DOUBLE, checked in the SQLite history: every step exactly once;
// a follower killed with SIGKILL mid-run and resumed backfills without gaps or duplicates (logs too);
// a failing rank named with its last lines; a stopped run; and the embedded local agent when no
// --agents are given.
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QtCore/QElapsedTimer>
#include <QtCore/QProcess>
#include <QtCore/QRegularExpression>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <algorithm>
#include <fstream>
#include <memory>
#include <thread>

#include "store/history.hpp"

using namespace tessera;

namespace {

struct Result {
  int exit_code = -1;
  QString out, err;
};

// A plain loopback agent (no keys) on `host` with a free port.
class Agent {
 public:
  Agent(const QString& host, const QString& workdir, const QStringList& env) {
    auto e = QProcessEnvironment::systemEnvironment();
    for (const auto& kv : env) e.insert(kv.section('=', 0, 0), kv.section('=', 1));
    process_.setProcessEnvironment(e);
    process_.start(TESSERA_AGENT, {"--bind", "tcp://" + host + ":0", "--runtime", TESSERA_FAKE_RANK, "--workdir", workdir,
                                   "--grace-s", "1"});
    QElapsedTimer timer;
    timer.start();
    QString out;
    while (timer.elapsed() < 10000 && endpoint_.isEmpty() && process_.state() != QProcess::NotRunning) {
      process_.waitForReadyRead(100);
      out += QString::fromUtf8(process_.readAllStandardOutput());
      const auto m = QRegularExpression("listening on (\\S+)").match(out);
      if (m.hasMatch()) endpoint_ = m.captured(1);
    }
  }
  ~Agent() {
    process_.terminate();
    if (!process_.waitForFinished(10000)) process_.kill();
    process_.waitForFinished(5000);
  }
  const QString& endpoint() const { return endpoint_; }
  // As a crashed node: no goodbye, its ranks left to themselves.
  void kill_now() {
    ::kill(static_cast<pid_t>(process_.processId()), SIGKILL);
    process_.waitForFinished(5000);
  }

 private:
  QProcess process_;
  QString endpoint_;
};

QString run_id_of(const QString& out) {
  const auto m = QRegularExpression("run ([0-9a-f]{32}) \\(").match(out);
  return m.hasMatch() ? m.captured(1) : QString();
}

}  // namespace

class TestCliLaunch : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  QProcessEnvironment env() const {
    auto e = QProcessEnvironment::systemEnvironment();
    e.insert("TESSERA_CONFIG_DIR", dir_.path() + "/config");
    e.insert("TESSERA_DB", dir_.path() + "/history.sqlite");
    e.insert("TESSERA_AGENT", TESSERA_AGENT);
    e.insert("TESSERA_TRAIN", TESSERA_FAKE_RANK);
    return e;
  }

  Result cli(const QStringList& args, int timeout_ms = 60000) const {
    QProcess process;
    process.setProcessEnvironment(env());
    process.start(TESSERA_CLI, args);
    if (!process.waitForFinished(timeout_ms)) {
      process.kill();
      process.waitForFinished();
      return {};
    }
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
            QString::fromUtf8(process.readAllStandardOutput()), QString::fromUtf8(process.readAllStandardError())};
  }

  QString spec(const QString& name, int steps, int nodes) const {
    const QString path = dir_.path() + "/" + name + ".json";
    std::ofstream(path.toStdString()) << nlohmann::json{
        {"name", name.toStdString()},
        {"model", {{"preset", "tiny-gpt"}}},
        {"parallel", {{"tp", 2}, {"dp", 2}}},
        {"training", {{"micro_batch_size", 1}, {"global_batch_size", 4}, {"precision", "fp32"}, {"train_steps", steps},
                      {"flash_attention", false}}},
        {"cluster", {{"gpu", "cpu"}, {"nodes", nodes}, {"gpus_per_node", 4 / nodes}}}}.dump();
    return path;
  }

  // Starts `follower` on the CLI with `args` and returns its output once it holds `text` (or after 15 s).
  QString follow_until(QProcess& follower, const QStringList& args, const QString& text) const {
    follower.setProcessEnvironment(env());
    follower.start(TESSERA_CLI, args);
    QElapsedTimer timer;
    timer.start();
    QString out;
    while (timer.elapsed() < 15000 && !out.contains(text)) {
      follower.waitForReadyRead(100);
      out += QString::fromUtf8(follower.readAllStandardOutput());
    }
    return out;
  }

  // Every rank's loss at every step exactly once, and exactly one "starting" log line per rank.
  void verify_exactly_once(const QString& id, int steps) const {
    store::History history((dir_.path() + "/history.sqlite").toStdString());
    for (int64_t rank = 0; rank < 4; ++rank) {
      const auto points = history.points(id.toStdString(), "loss", rank);
      QCOMPARE(points.size(), size_t(steps));
      for (int i = 0; i < steps; ++i) QCOMPARE(points[i].step, int64_t(i + 1));
    }
    int64_t starts = 0;
    for (const auto& line : history.logs(id.toStdString())) starts += line.line.find("starting") != std::string::npos;
    QCOMPARE(starts, int64_t{4});
  }

 private slots:
  // What tessera-train does not train is refused before any agent is asked (none listens at port 1),
  // by launch and by slurm alike, naming the rule; nothing enters the history.
  void refusesWhatTesseraTrainDoesNotRun() {
    const QString path = dir_.path() + "/zb.json";
    std::ofstream(path.toStdString()) << nlohmann::json{
        {"model", {{"preset", "tiny-gpt"}}},
        {"parallel", {{"pp", 2}, {"schedule", "zb-h1"}}},
        {"training", {{"global_batch_size", 8}, {"precision", "fp32"}}},
        {"cluster", {{"gpu", "cpu"}, {"nodes", 1}, {"gpus_per_node", 2}}}}.dump();
    for (const QStringList& args : {QStringList{"launch", path, "--agents", "tcp://127.0.0.1:1"},
                                    QStringList{"slurm", path, "-o", dir_.path() + "/job.sbatch"}}) {
      const auto r = cli(args, 20000);
      QCOMPARE(r.exit_code, 2);
      QVERIFY2(r.err.contains("error: parallel.schedule=zb-h1: tessera-train executes gpipe, 1f1b and interleaved"),
               qPrintable(r.err));
    }
    QVERIFY(!QFile::exists(dir_.path() + "/job.sbatch"));
  }

  // The Launch dialog's fit check, from the command line: 16 ranks on H100s on a node whose agent
  // reports fewer GPUs (none here) is refused naming the node, before a run is recorded.
  void refusesALayoutTheNodesDoNotFit() {
    Agent a("127.0.0.1", dir_.path() + "/fit", {"TESSERA_FAKE_STEP_MS=2"});
    const QString path = dir_.path() + "/h100.json";
    std::ofstream(path.toStdString()) << nlohmann::json{
        {"name", "on-h100"},
        {"model", {{"preset", "tiny-gpt"}}},
        {"training", {{"global_batch_size", 16}, {"micro_batch_size", 1}, {"precision", "bf16"}}},
        {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 16}}}}.dump();
    const auto r = cli({"launch", path, "--agents", a.endpoint()}, 20000);
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("the layout does not fit the agents' nodes:") && r.err.contains("runs 16 ranks on GPU h100-sxm but has"),
             qPrintable(r.err));
    // Nothing recorded: no history yet, or none with this run.
    const QString history = dir_.path() + "/history.sqlite";
    if (QFile::exists(history))
      for (const auto& run : store::History(history.toStdString()).runs({})) QVERIFY(run.name != "on-h100");
  }

  // Agents that cannot serve are refused before a run is recorded, at once: one given for two nodes,
  // and one whose key is not pinned (no retrying a configuration, as a busy loop once did until the
  // files ran out). An agent that never answers is waited for --connect-timeout-s, which the message says.
  void agentsThatCannotServeAreRefusedBeforeRecording() {
    Agent a("127.0.0.1", dir_.path() + "/twice", {"TESSERA_FAKE_STEP_MS=2"});
    const auto twice = cli({"launch", spec("twice", 10, 2), "--agents", a.endpoint() + "," + a.endpoint()}, 20000);
    QCOMPARE(twice.exit_code, 2);
    QVERIFY2(twice.err.contains("--agents: " + a.endpoint() + " is given for node 0 and node 1 (one agent per node)"),
             qPrintable(twice.err));
    QElapsedTimer timer;
    timer.start();
    const auto unpinned = cli({"launch", spec("unpinned", 10, 2), "--agents", "tcp://10.255.255.1:7000," + a.endpoint(),
                               "--connect-timeout-s", "30"}, 20000);
    QVERIFY2(timer.elapsed() < 5000, qPrintable(QString::number(timer.elapsed())));
    QCOMPARE(unpinned.exit_code, 2);  // a configuration to mend, as a bad argument (it was 1, the environment's)
    QVERIFY2(unpinned.err.contains("no pinned key for agent tcp://10.255.255.1:7000") && unpinned.err.count("error:") == 1,
             qPrintable(unpinned.err));
    timer.restart();
    const auto silent = cli({"launch", spec("silent", 10, 1), "--agents", "tcp://127.0.0.1:1", "--connect-timeout-s", "1.5"},
                            20000);
    QVERIFY2(timer.elapsed() >= 1500 && timer.elapsed() < 6000, qPrintable(QString::number(timer.elapsed())));
    QVERIFY2(silent.err.contains("no reply from agent tcp://127.0.0.1:1 within 1.5 s") &&
                 silent.err.contains("--connect-timeout-s waits longer"),
             qPrintable(silent.err));
    const QString history = dir_.path() + "/history.sqlite";
    if (QFile::exists(history))
      for (const auto& run : store::History(history.toStdString()).runs({}))
        QVERIFY(run.name != "twice" && run.name != "unpinned" && run.name != "silent");
  }

  void launchFollowsTwoNodesIntoTheHistory() {
    Agent a("127.0.0.1", dir_.path() + "/a", {"TESSERA_FAKE_STEP_MS=2"}), b("127.0.0.2", dir_.path() + "/b", {"TESSERA_FAKE_STEP_MS=2"});
    // A name with a control character is refused before any agent is asked.
    const auto escaped = cli({"launch", spec("two-nodes", 50, 2), "--agents", a.endpoint() + "," + b.endpoint(), "--name",
                              QStringLiteral("two\x1b[31mnodes")});
    QVERIFY2(escaped.exit_code == 2 && escaped.err.contains("--name: a run name is one line, without control characters"),
             qPrintable(escaped.err));
    // Its name carries C1's CSI, which no message may send to the terminal.
    const auto r = cli({"launch", spec("two-nodes", 50, 2), "--agents", a.endpoint() + "," + b.endpoint(), "--follow",
                        "--tag", "agent-test", "--name", QStringLiteral("two\u009b31mnodes")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("step    50  loss"));
    const QString id = run_id_of(r.out);
    QVERIFY(!id.isEmpty());
    verify_exactly_once(id, 50);
    const auto list = cli({"runs", "list", "--json"});
    const auto runs = nlohmann::json::parse(list.out.toStdString());
    QCOMPARE(runs.size(), size_t{1});
    QCOMPARE(runs[0]["status"], "done");
    QCOMPARE(runs[0]["tags"][0], "agent-test");
    // Following or stopping it now does nothing, says so, and leaves its end where it was.
    store::History before((dir_.path() + "/history.sqlite").toStdString());
    const auto ended = before.run(id.toStdString()).ended_ms;
    const auto followed = cli({"runs", "follow", id});
    QCOMPARE(followed.exit_code, 0);
    QVERIFY2(followed.out.contains("(two 31mnodes) already ended: done") && !followed.out.contains(QChar(0x9b)),
             qPrintable(followed.out));
    const auto stopped = cli({"runs", "stop", id});
    QCOMPARE(stopped.exit_code, 0);
    QVERIFY2(stopped.out.contains("(two 31mnodes) already ended: done") && stopped.out.contains("nothing to stop") &&
                 !stopped.out.contains(QChar(0x9b)),
             qPrintable(stopped.out));
    QVERIFY2(!r.out.contains(QChar(0x9b)), qPrintable(r.out));  // "run … (name) started"
    store::History after((dir_.path() + "/history.sqlite").toStdString());
    QCOMPARE(after.run(id.toStdString()).ended_ms, ended);
    QCOMPARE(after.run(id.toStdString()).status, store::RunStatus::done);
  }

  void killedFollowerResumesWithoutGapsOrDuplicates() {
    Agent a("127.0.0.1", dir_.path() + "/fa", {"TESSERA_FAKE_STEP_MS=10"}), b("127.0.0.2", dir_.path() + "/fb", {"TESSERA_FAKE_STEP_MS=10"});
    QProcess follower;
    QString out = follow_until(follower, {"launch", spec("follower", 300, 2), "--agents", a.endpoint() + "," + b.endpoint(), "--follow"},
                               "step    60 ");
    QVERIFY(out.contains("step    60 "));
    ::kill(static_cast<pid_t>(follower.processId()), SIGKILL);  // mid-run, mid-batch
    QVERIFY(follower.waitForFinished(5000));
    const QString id = run_id_of(out);
    QVERIFY(!id.isEmpty());
    const auto resumed = cli({"runs", "follow", id, "--quiet"});
    QVERIFY2(resumed.exit_code == 0, qPrintable(resumed.err + resumed.out));
    QVERIFY(resumed.out.contains("done"));
    verify_exactly_once(id, 300);
  }

  // Two followers write one history at once (a second terminal's launch --follow), each its own run;
  // following a run another process follows is refused naming that process.
  void twoFollowersWriteOneHistory() {
    Agent a("127.0.0.1", dir_.path() + "/wa", {"TESSERA_FAKE_STEP_MS=10"}), b("127.0.0.2", dir_.path() + "/wb", {"TESSERA_FAKE_STEP_MS=10"});
    const QString agents = a.endpoint() + "," + b.endpoint();
    QProcess first;
    QString out = follow_until(first, {"launch", spec("first-follower", 300, 2), "--agents", agents, "--follow"}, "step    20 ");
    QVERIFY(out.contains("step    20 "));
    const QString id = run_id_of(out);
    const auto beside = cli({"launch", spec("second-follower", 30, 2), "--agents", agents, "--follow"});
    QVERIFY2(beside.exit_code == 0 && beside.out.contains(" done "), qPrintable(beside.err + beside.out));
    const auto twice = cli({"runs", "follow", id, "--quiet"});
    QCOMPARE(twice.exit_code, 1);
    const QString refused = "is being recorded by another process (pid " + QString::number(first.processId()) + ")";
    QVERIFY2(twice.err.contains(refused) && twice.err.contains("runs show " + id.left(12)), qPrintable(twice.err));
    QVERIFY(first.waitForFinished(60000));
    QVERIFY2(first.exitCode() == 0, qPrintable(QString::fromUtf8(first.readAllStandardError())));
    verify_exactly_once(id, 300);
    verify_exactly_once(run_id_of(beside.out), 30);
    store::History history((dir_.path() + "/history.sqlite").toStdString());
    QCOMPARE(history.run(id.toStdString()).status, store::RunStatus::done);
  }

  // Ctrl-C while following detaches (exit 0, the run going on), whatever the follower was waiting in:
  // a signal inside ZeroMQ's poll ended it with "error: Interrupted system call", exit 1.
  void interruptDetachesTheFollowerAndTheRunGoesOn() {
    Agent a("127.0.0.1", dir_.path() + "/ia", {"TESSERA_FAKE_STEP_MS=10"}), b("127.0.0.2", dir_.path() + "/ib", {"TESSERA_FAKE_STEP_MS=10"});
    QProcess follower;
    QString out = follow_until(follower, {"launch", spec("interrupted", 100000, 2), "--agents", a.endpoint() + "," + b.endpoint(),
                                          "--follow"},
                               "step    20 ");
    QVERIFY(out.contains("step    20 "));
    ::kill(static_cast<pid_t>(follower.processId()), SIGINT);
    QVERIFY(follower.waitForFinished(10000));
    out += QString::fromUtf8(follower.readAllStandardOutput());
    const QString err = QString::fromUtf8(follower.readAllStandardError());
    QCOMPARE(follower.exitStatus(), QProcess::NormalExit);
    QVERIFY2(follower.exitCode() == 0 && out.contains("detached; the run goes on"), qPrintable(out + err));
    const QString id = run_id_of(out);
    {
      store::History history((dir_.path() + "/history.sqlite").toStdString());
      QCOMPARE(history.run(id.toStdString()).status, store::RunStatus::running);
    }
    QCOMPARE(cli({"runs", "stop", id}).exit_code, 0);
    const auto followed = cli({"runs", "follow", id, "--quiet"});
    QVERIFY2(followed.exit_code == 0 && followed.out.contains("stopped"), qPrintable(followed.err + followed.out));
  }

  void failingRankFailsTheRunNamingIt() {
    const QStringList env{"TESSERA_FAKE_STEP_MS=10", "TESSERA_FAKE_FAIL_RANK=2", "TESSERA_FAKE_FAIL_STEP=20"};
    Agent a("127.0.0.1", dir_.path() + "/xa", env), b("127.0.0.2", dir_.path() + "/xb", env);
    const auto r = cli({"launch", spec("failing", 100000, 2), "--agents", a.endpoint() + "," + b.endpoint(), "--follow"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("failed: rank 2 exited with code 3"), qPrintable(r.err));
    QVERIFY(r.err.contains("last lines of rank 2:"));
    QVERIFY(r.err.contains("injected failure at step 20"));
    store::History history((dir_.path() + "/history.sqlite").toStdString());
    const auto run = history.run(run_id_of(r.out).toStdString());
    QCOMPARE(run.status, store::RunStatus::failed);
    QVERIFY(run.exit_reason.find("rank 2") != std::string::npos);
  }

  void stoppedRunEndsStopped() {
    Agent a("127.0.0.1", dir_.path() + "/sa", {"TESSERA_FAKE_STEP_MS=20"}), b("127.0.0.2", dir_.path() + "/sb", {"TESSERA_FAKE_STEP_MS=20"});
    const auto started = cli({"launch", spec("stopped", 100000, 2), "--agents", a.endpoint() + "," + b.endpoint()});
    QCOMPARE(started.exit_code, 0);
    const QString id = run_id_of(started.out);
    const auto stop = cli({"runs", "stop", id.left(10)});
    QVERIFY2(stop.exit_code == 0, qPrintable(stop.err));
    QCOMPARE(stop.out.count(": stopping"), 2);
    const auto followed = cli({"runs", "follow", id, "--quiet"});
    QCOMPARE(followed.exit_code, 0);
    QVERIFY(followed.out.contains("stopped"));
    store::History history((dir_.path() + "/history.sqlite").toStdString());
    const auto run = history.run(id.toStdString());
    QCOMPARE(run.status, store::RunStatus::stopped);
    QCOMPARE(run.exit_reason, std::string("stopped by the user"));
  }

  // Launched without --follow, the run is detached: it stays running while other commands open the
  // history (each opening marks runs of a dead writer lost), and `runs follow` backfills it whole.
  void detachedRunStaysRunningAndFollowBackfillsIt() {
    Agent a("127.0.0.1", dir_.path() + "/da", {"TESSERA_FAKE_STEP_MS=10"}), b("127.0.0.2", dir_.path() + "/db", {"TESSERA_FAKE_STEP_MS=10"});
    const QString agents = a.endpoint() + "," + b.endpoint();
    const auto first = cli({"launch", spec("detached", 150, 2), "--agents", agents});
    QVERIFY2(first.exit_code == 0, qPrintable(first.err));
    const QString id = run_id_of(first.out);
    const auto second = cli({"launch", spec("detached-2", 20, 2), "--agents", agents});  // a second writer
    QVERIFY2(second.exit_code == 0, qPrintable(second.err));
    {
      store::History history((dir_.path() + "/history.sqlite").toStdString());
      QCOMPARE(history.run(id.toStdString()).status, store::RunStatus::running);
      QCOMPARE(history.run(run_id_of(second.out).toStdString()).status, store::RunStatus::running);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // frames wait in the agents' outboxes
    for (const QString& run : {id, run_id_of(second.out)}) {
      const auto followed = cli({"runs", "follow", run, "--quiet"});
      QVERIFY2(followed.exit_code == 0, qPrintable(followed.err + followed.out));
      QVERIFY(followed.out.contains(" done "));
    }
    verify_exactly_once(id, 150);
    verify_exactly_once(run_id_of(second.out), 20);
    store::History history((dir_.path() + "/history.sqlite").toStdString());
    QCOMPARE(history.run(id.toStdString()).status, store::RunStatus::done);
  }

  // A detached run followed after it ended keeps the end its agents timed, not the moment of the follow
  // ("took 1m 19s" for a run of seconds).
  void runFollowedAfterItsEndKeepsItsEndTime() {
    Agent a("127.0.0.1", dir_.path() + "/ea", {"TESSERA_FAKE_STEP_MS=10"}), b("127.0.0.2", dir_.path() + "/eb", {"TESSERA_FAKE_STEP_MS=10"});
    const auto started = cli({"launch", spec("ended-before", 20, 2), "--agents", a.endpoint() + "," + b.endpoint()});
    QVERIFY2(started.exit_code == 0, qPrintable(started.err));
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // 20 steps of 10 ms: long over
    const int64_t follow_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    const auto followed = cli({"runs", "follow", run_id_of(started.out), "--quiet"});
    QVERIFY2(followed.exit_code == 0 && followed.out.contains(" done "), qPrintable(followed.err + followed.out));
    store::History history((dir_.path() + "/history.sqlite").toStdString());
    const auto run = history.run(run_id_of(started.out).toStdString());
    QVERIFY(run.ended_ms && run.started_ms);
    QVERIFY2(*run.ended_ms < follow_ms - 1000, qPrintable(QString("ended %1 ms before the follow").arg(follow_ms - *run.ended_ms)));
    QVERIFY(*run.ended_ms >= *run.started_ms);
  }

  // A detached run one of whose agents died: `runs follow` backfills the other node, which it stops,
  // and records the run failed with the dead node lost (it used to fail to attach and leave the run
  // running). With node 0 dead, node 1's reply comes while node 0 is still awaited: it is read.
  void followOfADetachedRunWithADeadAgentRecordsItFailed_data() {
    QTest::addColumn<int>("dead");
    QTest::newRow("node 1 dead") << 1;
    QTest::newRow("node 0 dead") << 0;
  }
  void followOfADetachedRunWithADeadAgentRecordsItFailed() {
    QFETCH(int, dead);
    const QString tag = QString::number(dead);
    Agent a("127.0.0.1", dir_.path() + "/ka" + tag, {"TESSERA_FAKE_STEP_MS=10"});
    Agent b("127.0.0.2", dir_.path() + "/kb" + tag, {"TESSERA_FAKE_STEP_MS=10"});
    const auto started = cli({"launch", spec("dead-agent-" + tag, 100000, 2), "--agents", a.endpoint() + "," + b.endpoint()});
    QVERIFY2(started.exit_code == 0, qPrintable(started.err));
    const QString id = run_id_of(started.out);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    (dead == 0 ? a : b).kill_now();
    const auto followed = cli({"runs", "follow", id, "--quiet"});
    QCOMPARE(followed.exit_code, 1);
    store::History history((dir_.path() + "/history.sqlite").toStdString());
    const auto run = history.run(id.toStdString());
    QCOMPARE(run.status, store::RunStatus::failed);
    const std::string lost = "node " + std::to_string(dead) + " (" + (dead == 0 ? a : b).endpoint().toStdString() + ") lost";
    QVERIFY2(run.exit_reason.find(lost) == 0, run.exit_reason.c_str());
    QVERIFY(!history.points(id.toStdString(), "loss", 2 * (1 - dead)).empty());  // the living node's steps, backfilled
  }

  // `runs delete --force` of a run that is still followed: the follower stops, saying so, and stops
  // its ranks (they trained on for nobody); the run stays deleted.
  void runDeletedWhileFollowedStopsItsRanks() {
    Agent a("127.0.0.1", dir_.path() + "/xa", {"TESSERA_FAKE_STEP_MS=10"}), b("127.0.0.2", dir_.path() + "/xb", {"TESSERA_FAKE_STEP_MS=10"});
    const QString agents = a.endpoint() + "," + b.endpoint();
    const auto started = cli({"launch", spec("deleted-followed", 100000, 2), "--agents", agents});
    QVERIFY2(started.exit_code == 0, qPrintable(started.err));
    const QString id = run_id_of(started.out);
    QProcess follower;
    follower.setProcessEnvironment(env());
    follower.start(TESSERA_CLI, {"runs", "follow", id});
    QElapsedTimer timer;
    timer.start();
    QString out;
    while (timer.elapsed() < 15000 && !out.contains("step ")) {
      follower.waitForReadyRead(100);
      out += QString::fromUtf8(follower.readAllStandardOutput());
    }
    QVERIFY2(out.contains("step "), qPrintable(out));
    const auto deleted = cli({"runs", "delete", id, "--force"});
    QVERIFY2(deleted.exit_code == 0, qPrintable(deleted.err));
    QVERIFY(follower.waitForFinished(30000));
    QCOMPARE(follower.exitCode(), 1);
    const QString err = QString::fromUtf8(follower.readAllStandardError());
    QVERIFY2(err.contains("deleted from history") && err.contains("its ranks were asked to stop"), qPrintable(err));
    QString status;
    for (timer.restart(); timer.elapsed() < 15000 && status.count(id.left(8) + ":stopped") < 2;
         std::this_thread::sleep_for(std::chrono::milliseconds(200)))
      status = cli({"agents", "status", "--agents", agents}).out;
    QCOMPARE(status.count(id.left(8) + ":stopped"), 2);
    const auto runs = store::History((dir_.path() + "/history.sqlite").toStdString()).runs();
    QVERIFY(std::none_of(runs.begin(), runs.end(), [&](const store::RunRecord& r) { return r.id == id.toStdString(); }));
  }

  // When no agent of a run answers (this machine offline, its key refused, or all gone: no telling),
  // follow leaves the run running and says how to give it up; --agents-gone records it failed.
  void followWithNoAgentAnsweringLeavesTheRunRunning() {
    auto a = std::make_unique<Agent>("127.0.0.1", dir_.path() + "/na", QStringList{"TESSERA_FAKE_STEP_MS=10"});
    auto b = std::make_unique<Agent>("127.0.0.2", dir_.path() + "/nb", QStringList{"TESSERA_FAKE_STEP_MS=10"});
    const auto started = cli({"launch", spec("no-agent", 100000, 2), "--agents", a->endpoint() + "," + b->endpoint()});
    QVERIFY2(started.exit_code == 0, qPrintable(started.err));
    const QString id = run_id_of(started.out);
    a->kill_now();
    b->kill_now();
    QElapsedTimer waited;
    waited.start();
    const auto followed = cli({"runs", "follow", id, "--quiet"});
    QCOMPARE(followed.exit_code, 1);
    // Both agents are asked at once: one 5 s wait, not one per agent (10 s).
    QVERIFY2(waited.elapsed() < 9500, qPrintable(QString::number(waited.elapsed())));
    QVERIFY2(followed.err.contains("none of the run's 2 agents answered") && followed.err.contains("--agents-gone"),
             qPrintable(followed.err));
    {
      store::History history((dir_.path() + "/history.sqlite").toStdString());
      QCOMPARE(history.run(id.toStdString()).status, store::RunStatus::running);
    }
    QCOMPARE(cli({"runs", "follow", id, "--quiet", "--agents-gone"}).exit_code, 1);
    store::History history((dir_.path() + "/history.sqlite").toStdString());
    QCOMPARE(history.run(id.toStdString()).status, store::RunStatus::failed);
    QVERIFY2(history.run(id.toStdString()).exit_reason.find("node 0 (") == 0, history.run(id.toStdString()).exit_reason.c_str());
  }

  // A node's agent killed mid-run, and then a rank on the other node failing (as ranks do when
  // their peers went with the agent): the lost node is named as the cause, the rank after it.
  void lostNodeIsNamedBeforeTheRankThatFailedAfterIt() {
    const QString fail_file = dir_.path() + "/fail-rank-1";
    Agent a("127.0.0.1", dir_.path() + "/la", {"TESSERA_FAKE_STEP_MS=10", "TESSERA_FAKE_FAIL_RANK=1", "TESSERA_FAKE_FAIL_FILE=" + fail_file});
    Agent b("127.0.0.2", dir_.path() + "/lb", {"TESSERA_FAKE_STEP_MS=10"});
    QProcess follower;
    follower.setProcessEnvironment(env());
    follower.start(TESSERA_CLI, {"launch", spec("lost-node", 100000, 2), "--agents", a.endpoint() + "," + b.endpoint(), "--follow"});
    QElapsedTimer timer;
    timer.start();
    QString out;
    while (timer.elapsed() < 15000 && !out.contains("step    40 ")) {
      follower.waitForReadyRead(100);
      out += QString::fromUtf8(follower.readAllStandardOutput());
    }
    QVERIFY(out.contains("step    40 "));
    b.kill_now();
    QFile(fail_file).open(QIODevice::WriteOnly);  // rank 1 fails now; node 1 is found lost 3 s later
    QVERIFY(follower.waitForFinished(30000));
    const QString err = QString::fromUtf8(follower.readAllStandardError());
    QVERIFY2(err.contains("failed: node 1 (" + b.endpoint() + ") lost: no heartbeat for 3 s; then rank 1 exited with code 3"),
             qPrintable(err));
    store::History history((dir_.path() + "/history.sqlite").toStdString());
    QVERIFY(history.run(run_id_of(out).toStdString()).exit_reason.find("node 1 (") == 0);
  }

  // A spec given as a pipe (`launch <(jq … spec.json)`) is read once: the record's copy was read by
  // opening the path again, which on a pipe waits for a writer that has gone (and on a file could
  // record other bytes than those launched).
  void aSpecFromAPipeIsReadOnce() {
    Agent a("127.0.0.1", dir_.path() + "/pipe", {"TESSERA_FAKE_STEP_MS=2"});
    const QString fifo = dir_.path() + "/spec.fifo";
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    std::string text;
    {
      std::ifstream in(spec("piped", 20, 1).toStdString());
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    QProcess launch;
    launch.setProcessEnvironment(env());
    launch.start(TESSERA_CLI, {"launch", fifo, "--agents", a.endpoint(), "--follow"});
    // The spec goes in once the CLI opens the pipe to read (a non-blocking open fails until then): a
    // CLI that never opens it fails the test instead of hanging it.
    QElapsedTimer waited;
    waited.start();
    int fd = ::open(fifo.toLocal8Bit().constData(), O_WRONLY | O_NONBLOCK);
    while (fd < 0 && waited.elapsed() < 10000 && launch.state() != QProcess::NotRunning) {
      QThread::msleep(10);
      fd = ::open(fifo.toLocal8Bit().constData(), O_WRONLY | O_NONBLOCK);
    }
    QVERIFY2(fd >= 0, "the CLI did not open the pipe within 10 s");
    const int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    QCOMPARE(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
    if (!launch.waitForFinished(30000)) {
      launch.kill();
      launch.waitForFinished();
      QFAIL("the launch is still waiting after 30 s");
    }
    const QString out = QString::fromUtf8(launch.readAllStandardOutput()), err = QString::fromUtf8(launch.readAllStandardError());
    QVERIFY2(launch.exitCode() == 0, qPrintable(err + out));
    store::History history((dir_.path() + "/history.sqlite").toStdString());
    const auto run = history.run(run_id_of(out).toStdString());
    QCOMPARE(run.spec.dump(), nlohmann::ordered_json::parse(text).dump());
    QCOMPARE(run.status, store::RunStatus::done);
  }

  void localAgentRunsWithoutAgentsGiven() {
    const auto r = cli({"launch", spec("local", 20, 1), "--follow"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err + r.out));
    QVERIFY(r.out.contains("4 ranks on 1 node"));
    verify_exactly_once(run_id_of(r.out), 20);
    QVERIFY(QFile::exists(dir_.path() + "/config/local-agent/agent.key"));
    const auto status = cli({"agents", "status"});
    QCOMPARE(status.exit_code, 0);
    QVERIFY(status.out.contains(" up ") && status.out.contains("yes"));  // CURVE, even on loopback
    // The local agent would exit by itself once idle; the test does not wait for it.
    std::ifstream pid_file((dir_.path() + "/config/local-agent/agent.pid").toStdString());
    int64_t pid = 0;
    QVERIFY(static_cast<bool>(pid_file >> pid));
    QCOMPARE(::kill(static_cast<pid_t>(pid), SIGTERM), 0);
  }
};

QTEST_APPLESS_MAIN(TestCliLaunch)
#include "test_cli_launch.moc"
