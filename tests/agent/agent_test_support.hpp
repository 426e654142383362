// Shared by the agent tests: agent processes on loopback (plain or CURVE), a sink that counts what a
// followed run delivered, the tiny-gpt TP2×DP2 spec on two nodes, and process checks.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <QtCore/QElapsedTimer>
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <atomic>
#include <fstream>
#include <functional>
#include <thread>
#include <map>
#include <optional>
#include <set>

#include "launch/run_session.hpp"
#include "protocol/keys.hpp"
#include "spec/run_spec.hpp"

namespace tessera::test {

/// A tessera-agent process running `runtime`: the test double fake_rank unless told otherwise.
class AgentProcess {
 public:
  /// host: "127.0.0.1" or "127.0.0.2" (a free port), or HOST:PORT; keys_dir/authorized: CURVE when given.
  AgentProcess(const QString& host, const QString& workdir, const QString& keys_dir = {},
               const QString& authorized = {}, const QStringList& extra_env = {}, const QStringList& extra_args = {},
               const QString& runtime = TESSERA_FAKE_RANK) {
    QStringList args{"--bind", "tcp://" + host + (host.contains(':') ? "" : ":0"), "--runtime", runtime, "--workdir", workdir,
                     "--max-ranks", "8", "--grace-s", "1"};
    args << extra_args;
    if (!keys_dir.isEmpty()) args << "--keys" << keys_dir << "--authorized-keys" << authorized;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const auto& e : extra_env) env.insert(e.section('=', 0, 0), e.section('=', 1));
    process_.setProcessEnvironment(env);
    process_.start(TESSERA_AGENT, args);
    QElapsedTimer timer;
    timer.start();
    while (timer.elapsed() < 10000 && endpoint_.empty() && process_.state() != QProcess::NotRunning) {
      process_.waitForReadyRead(100);
      output_ += process_.readAllStandardOutput().toStdString();
      const auto at = output_.find("listening on ");
      const auto end = output_.find(' ', at + 13);
      if (at != std::string::npos && end != std::string::npos) endpoint_ = output_.substr(at + 13, end - at - 13);
    }
    if (endpoint_.empty()) qWarning("tessera-agent did not start: %s", process_.readAllStandardError().constData());
  }
  ~AgentProcess() { stop(); }
  const std::string& endpoint() const { return endpoint_; }
  void kill9() {
    ::kill(static_cast<pid_t>(process_.processId()), SIGKILL);
    process_.waitForFinished(5000);
  }
  /// SIGSTOP or SIGCONT: an agent silent for a while (stopped, starved), not gone.
  void signal(int number) { ::kill(static_cast<pid_t>(process_.processId()), number); }
  void stop() {
    if (process_.state() == QProcess::NotRunning) return;
    process_.terminate();
    if (!process_.waitForFinished(10000)) {
      process_.kill();
      process_.waitForFinished(5000);
    }
  }

 private:
  QProcess process_;
  std::string output_, endpoint_;
};

/// What a followed run delivered, with a durable part (synced) and a pending part, like a database:
/// crash() drops the pending part, as a killed follower loses what it had not committed.
class MemorySink : public launch::RunSink {
 public:
  int64_t durable_seq(int64_t node) override { return durable_[node]; }
  void records(int64_t node, int64_t seq, const std::vector<protocol::Record>& records) override {
    if (crashed) return;
    if (seq <= std::max(durable_[node], pending_seq_[node])) ++duplicate_frames;
    pending_seq_[node] = seq;
    for (const auto& r : records) pending_.push_back(r.to_json());
    if (crash_after_steps > 0 && count_steps() >= crash_after_steps) {
      crash();
      if (on_crash) on_crash();
    }
  }
  void sync(bool) override {
    if (crashed) return;
    for (const auto& r : pending_) take(r);
    pending_.clear();
    for (const auto& [node, seq] : pending_seq_) durable_[node] = seq;
  }
  void crash() {
    crashed = true;
    pending_.clear();
    pending_seq_.clear();
  }
  void restart() { crashed = false; }

  /// Every (rank, step) for ranks [0, world) and steps [1, steps] exactly once.
  bool complete_exactly_once(int64_t world, int64_t steps_per_rank) const {
    if (static_cast<int64_t>(steps.size()) != world * steps_per_rank) return false;
    for (const auto& [key, count] : steps)
      if (count != 1 || key.first < 0 || key.first >= world || key.second < 1 || key.second > steps_per_rank) return false;
    return true;
  }
  int64_t count_steps() const {
    int64_t n = static_cast<int64_t>(steps.size());
    for (const auto& r : pending_) n += r.value("type", "") == "step" ? 1 : 0;
    return n;
  }

  std::map<std::pair<int64_t, int64_t>, int> steps;  ///< durable step records per (rank, step)
  std::vector<nlohmann::json> exits, ends;
  int64_t logs = 0, duplicate_frames = 0;
  int64_t crash_after_steps = 0;
  std::function<void()> on_crash;
  bool crashed = false;

 private:
  void take(const nlohmann::json& r) {
    const std::string type = r.value("type", "");
    if (type == "step") ++steps[{r.at("rank").get<int64_t>(), r.at("step").get<int64_t>()}];
    else if (type == "log") ++logs;
    else if (type == "rank_exit") exits.push_back(r);
    else if (type == "run_end") ends.push_back(r);
  }
  std::map<int64_t, int64_t> durable_, pending_seq_;
  std::vector<nlohmann::json> pending_;
};

/// The first run the agent's inventory lists, asked again every 50 ms until `done` holds of it or
/// `wait` has passed (then the last one asked).
inline nlohmann::json first_run_when(launch::AgentConnection& probe, const std::function<bool(const nlohmann::json&)>& done,
                                     std::chrono::milliseconds wait) {
  nlohmann::json run;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    run = probe.request("hello", {}, "inventory", std::chrono::milliseconds(5000))["runs"][0];
    if (done(run)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return run;
}

/// Follows `session` into `sink` for at most `limit` (a watchdog sets the stop flag).
inline launch::RunOutcome follow_for(launch::RunSession& session, launch::RunSink& sink, std::atomic<bool>& stop,
                                     std::chrono::milliseconds limit) {
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!finished && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!finished) stop = true;
  });
  const auto outcome = session.follow(sink, stop);
  finished = true;
  watchdog.join();
  return outcome;
}

/// tiny-gpt, TP2×DP2 on `nodes` nodes (4 ranks in all), CPU.
inline spec::RunSpec tiny_spec(int64_t steps, int64_t nodes = 2) {
  return spec::parse_spec(nlohmann::json{
      {"name", "agent test"},
      {"model", {{"preset", "tiny-gpt"}}},
      {"parallel", {{"tp", 2}, {"pp", 1}, {"dp", 2}}},
      {"training", {{"micro_batch_size", 1}, {"global_batch_size", 4}, {"precision", "fp32"}, {"train_steps", steps},
                    {"flash_attention", false}}},
      {"cluster", {{"gpu", "cpu"}, {"nodes", nodes}, {"gpus_per_node", 4 / nodes}}}});
}

/// A random run id (32 hex digits).
inline std::string new_run_id() {
  std::string id;
  for (int i = 0; i < 32; ++i) id += "0123456789abcdef"[QRandomGenerator::global()->bounded(16)];
  return id;
}

/// A live (not zombie) process.
inline bool process_alive(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

/// One authorized client (the test's workbench) and agent key pairs in DIR/NAME/agent.key.
struct TestKeys {
  explicit TestKeys(const QString& dir) : dir(dir), authorized(dir + "/authorized_keys") {
    QDir().mkpath(dir);
    credentials.client = protocol::generate_keypair();
    credentials.known_agents_path = (dir + "/known_agents").toStdString();
    std::ofstream(authorized.toStdString()) << "# test client\n" << credentials.client.public_key << " workbench\n";
  }
  /// Creates the key pair of agent `name`; returns its --keys directory.
  QString agent(const QString& name) const {
    protocol::write_keypair((dir + "/" + name).toStdString(), "agent", protocol::generate_keypair());
    return dir + "/" + name;
  }
  void pin(const std::string& endpoint, const QString& name) const {
    protocol::KnownAgents(credentials.known_agents_path)
        .pin(endpoint, protocol::read_public_key((dir + "/" + name + "/agent.pub").toStdString()));
  }
  QString dir, authorized;
  launch::Credentials credentials;
};

}  // namespace tessera::test
