// Benchmark of metric streaming: records from ranks (the fake_rank TEST DOUBLE, 4 ranks) through a
// tessera-agent process and the workbench's RunSession into the SQLite history.
//  1. Throughput: the ranks report as fast as they can; points/s into SQLite, against the reference
//     measured in the same run: the same points appended straight to a history Writer in-process (no
//     ranks, no agent, no network).
//  2. Latency at a steady offered load below saturation: rank emits → row committed, p50/p99.
// Quick sizes by default (CTest), `--full` for the figures in the report. Exits 1 when a point is
// missing or duplicated.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "launch/history_sink.hpp"
#include "store/history.hpp"
#include "store/writer.hpp"

using namespace tessera;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double wall_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The HistorySink, timing sampled metric records from their emit_s to the moment the frame holding
// them is known to be committed.
class TimedSink : public launch::RunSink {
 public:
  explicit TimedSink(launch::HistorySink& inner) : inner_(inner) {}
  int64_t durable_seq(int64_t node) override { return inner_.durable_seq(node); }
  void records(int64_t node, int64_t seq, const std::vector<protocol::Record>& records) override {
    for (const auto& r : records)
      if (const auto* emit_s = r.find("emit_s"); emit_s && (++counted_ % 16 == 0))
        pending_.push_back({node, seq, emit_s->get<double>()});
    inner_.records(node, seq, records);
  }
  void sync(bool wait) override {
    inner_.sync(wait);
    const double now = wall_s();
    while (!pending_.empty() && pending_.front().seq <= inner_.durable_seq(pending_.front().node)) {
      latencies_ms.push_back((now - pending_.front().emit_s) * 1000.0);
      pending_.pop_front();
    }
  }
  std::vector<double> latencies_ms;

 private:
  struct Sample {
    int64_t node, seq;
    double emit_s;
  };
  launch::HistorySink& inner_;
  std::deque<Sample> pending_;
  int64_t counted_ = 0;
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())))];
}

pid_t start_agent(const std::string& workdir, const std::string& log, int64_t metrics_per_step, int64_t step_ms) {
  std::fflush(stdout);  // or the child's freopen writes our buffered lines a second time
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("TESSERA_FAKE_STEP_MS", std::to_string(step_ms).c_str(), 1);
    setenv("TESSERA_FAKE_METRICS_PER_STEP", std::to_string(metrics_per_step).c_str(), 1);
    if (!freopen(log.c_str(), "w", stdout)) _exit(127);
    execl(TESSERA_AGENT, TESSERA_AGENT, "--bind", "tcp://127.0.0.1:0", "--runtime", TESSERA_FAKE_RANK, "--workdir",
          workdir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

std::string wait_endpoint(const std::string& log) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream in(log);
    std::string word, last;
    while (in >> word) {
      if (last == "on") return word;
      last = word;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

struct Phase {
  double seconds = 0;
  int64_t stored = 0;
  bool exact = true;
  std::vector<double> latencies_ms;
};

// One run of `steps` steps on 4 ranks through a fresh agent into a fresh history file.
Phase stream(const fs::path& dir, const std::string& name, int64_t steps, int64_t metrics_per_step, int64_t step_ms) {
  const int64_t ranks = 4;
  const std::string log = (dir / (name + ".log")).string();
  const pid_t agent = start_agent((dir / (name + "-work")).string(), log, metrics_per_step, step_ms);
  Phase phase;
  try {
    const std::string endpoint = wait_endpoint(log);
    if (endpoint.empty()) throw std::runtime_error("the agent did not start");
    const auto spec = spec::parse_spec(nlohmann::json{
        {"name", name},
        {"model", {{"preset", "tiny-gpt"}}},
        {"parallel", {{"tp", 2}, {"dp", 2}}},
        {"training", {{"micro_batch_size", 1}, {"global_batch_size", 4}, {"precision", "fp32"}, {"train_steps", steps}}},
        {"cluster", {{"gpu", "cpu"}, {"nodes", 1}, {"gpus_per_node", ranks}}}});
    const std::string db = (dir / (name + ".sqlite")).string();
    std::string run_id;
    {
      store::WriterOptions options;
      options.flush_interval = std::chrono::milliseconds(25);  // as tessera-cli's follower
      store::Writer writer(db, options);
      store::RunRecord record;
      record.name = name;
      const auto run = writer.create_run(record);
      run_id = run.id;
      launch::Credentials credentials{protocol::generate_keypair(), (dir / "known_agents").string()};
      launch::RunSession session(run.id, {endpoint}, credentials);
      launch::HistorySink history_sink(writer, run);
      TimedSink sink(history_sink);
      const auto start = Clock::now();
      session.launch(spec);
      std::atomic<bool> stop{false};
      const auto outcome = session.follow(sink, stop);
      phase.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (outcome != launch::RunOutcome::done) throw std::runtime_error("the run did not finish: " + session.reason());
      writer.close();
      phase.latencies_ms = sink.latencies_ms;
    }
    store::History history(db);
    for (int64_t rank = 0; rank < ranks; ++rank) {
      for (int m = 0; m < 8; ++m) {
        const auto points = history.points(run_id, "bench_" + std::to_string(m), rank);
        phase.stored += static_cast<int64_t>(points.size());
        for (size_t i = 1; i < points.size(); ++i) phase.exact = phase.exact && points[i].step > points[i - 1].step;
      }
      for (const char* metric : {"loss", "grad_norm", "lr"})
        phase.stored += static_cast<int64_t>(history.points(run_id, metric, rank).size());
    }
  } catch (...) {
    kill(agent, SIGTERM);
    waitpid(agent, nullptr, 0);
    throw;
  }
  kill(agent, SIGTERM);
  waitpid(agent, nullptr, 0);
  return phase;
}

// The reference: the same points appended straight to a Writer in this process.
double direct_seconds(const fs::path& dir, int64_t steps, int64_t metrics_per_step) {
  store::Writer writer((dir / "direct.sqlite").string());
  store::RunRecord record;
  record.name = "direct";
  const auto run = writer.create_run(record);
  const auto start = Clock::now();
  for (int64_t rank = 0; rank < 4; ++rank)
    for (int64_t step = 1; step <= steps; ++step) {
      writer.append(run, std::vector<store::MetricPoint>{{"loss", rank, step, 0, 1.0}, {"grad_norm", rank, step, 0, 1.0},
                                                         {"lr", rank, step, 0, 1e-3}});
      for (int64_t m = 0; m < metrics_per_step; ++m)
        writer.append(run, store::MetricPoint{"bench_" + std::to_string(m % 8), rank, step * metrics_per_step + m, wall_s(),
                                              static_cast<double>(m)});
    }
  writer.close();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const bool full = argc > 1 && std::string(argv[1]) == "--full";
  const fs::path dir = fs::temp_directory_path() / ("tessera-bench-agent-" + std::to_string(getpid()));
  fs::create_directories(dir);
  int status = 1;
  try {
    // 1. Throughput at saturation.
    const int64_t steps = full ? 250 : 25, per_step = 1000;
    const int64_t expected = 4 * steps * (per_step + 3);  // + loss, grad_norm, lr of each step record
    const Phase saturated = stream(dir, "throughput", steps, per_step, 0);
    const double direct_s = direct_seconds(dir, steps, per_step);
    const double agent_rate = static_cast<double>(expected) / saturated.seconds;
    const double direct_rate = static_cast<double>(expected) / direct_s;
    std::printf("metric streaming on loopback, 4 ranks x %lld steps x %lld records (%lld points):\n",
                static_cast<long long>(steps), static_cast<long long>(per_step + 1), static_cast<long long>(expected));
    std::printf("  ranks -> agent -> workbench -> SQLite   %10.0f points/s  (%.2f s, launch included)\n", agent_rate,
                saturated.seconds);
    std::printf("  reference: Writer.append in-process     %10.0f points/s  (%.2f s)\n", direct_rate, direct_s);
    std::printf("  ratio agent path / direct writer        %10.2f\n", agent_rate / direct_rate);

    // 2. Latency at a steady load: 4 ranks x 100 records every 8 ms = 50,000 records/s offered.
    const int64_t latency_steps = full ? 500 : 60, latency_per_step = 100, step_ms = 8;
    const Phase steady = stream(dir, "latency", latency_steps, latency_per_step, step_ms);
    const int64_t latency_expected = 4 * latency_steps * (latency_per_step + 3);
    std::printf("  latency emit -> committed at %.0f records/s offered (%zu samples): p50 %.1f ms, p99 %.1f ms\n",
                4.0 * static_cast<double>(latency_per_step + 1) * 1000.0 / static_cast<double>(step_ms),
                steady.latencies_ms.size(), percentile(steady.latencies_ms, 0.50), percentile(steady.latencies_ms, 0.99));
    const bool right = saturated.stored == expected && saturated.exact && steady.stored == latency_expected && steady.exact;
    std::printf("  stored %lld of %lld and %lld of %lld points%s\n", static_cast<long long>(saturated.stored),
                static_cast<long long>(expected), static_cast<long long>(steady.stored),
                static_cast<long long>(latency_expected), right ? "" : "  WRONG");
    status = right ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_agent: %s\n", e.what());
  }
  fs::remove_all(dir);
  return status;
}
