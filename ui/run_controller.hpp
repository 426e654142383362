// Launches a run (or attaches to one still going) and follows it into the history on a worker thread:
// the agents' connections, receiving, deduplicating and writing all happen off the GUI thread; the
// GUI hears about phases, the started ranks and the end through queued signals. Destroying the
// controller detaches: the run goes on, and attach() picks it up again later with a backfill.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <QObject>
#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>

#include "launch/run_session.hpp"
#include "spec/run_spec.hpp"

namespace tessera::store {
class Writer;
}
namespace tessera::launch {
class HistorySink;
}

namespace tessera::ui {

struct LaunchRequest {
  spec::RunSpec spec;
  nlohmann::ordered_json spec_json;  ///< the spec as the user wrote it (stored with the run)
  std::vector<std::string> agents;   ///< one endpoint per node, in node order; empty = the local agent
  std::string name;                  ///< "" = the spec's name and the id's first 8 digits
  std::vector<std::string> tags;
  std::string notes;
  std::string db_path;  ///< the history file
};

/// The history writer of a file, shared by every run this process follows into it (one Writer per
/// file and process).
std::shared_ptr<store::Writer> sharedWriter(const std::string& db_path);

class RunController : public QObject {
  Q_OBJECT
 public:
  explicit RunController(QObject* parent = nullptr);
  /// Detaches (the run goes on) and waits for the worker.
  ~RunController() override;

  /// Records the run (`starting`), starts its ranks on the agents and follows it. Returns at once.
  void launch(LaunchRequest request);
  /// Follows a run of the history that is still running on its agents, backfilling what was missed.
  void attach(const QString& run_id, const QString& db_path);
  /// Whether this controller follows a run it did not launch (attach()).
  bool attaching() const { return attaching_; }
  /// Whether this process may follow run `run_id` into `db_path`: no process records it (a
  /// `tessera-cli launch --follow`, a `runs follow` or another workbench following it holds its lease).
  static bool canFollow(const QString& db_path, const QString& run_id);
  /// Asks the agents to stop the run; the follower records `stopped` once they did.
  void stop();
  /// Stops following; the run goes on on its agents.
  void detach();
  /// Waits for the worker to end (after the run ended, or detach()); false on timeout.
  bool wait(int timeout_ms);

  bool busy() const { return worker_.joinable() && !finished_; }
  QString runId() const;
  /// (rank, pid) of every started rank, from the agents' launch replies.
  std::vector<std::pair<int64_t, int64_t>> pids() const;
  launch::RunOutcome outcome() const;
  QString reason() const;
  std::optional<int64_t> failedRank() const;
  /// The node running `rank` (nullopt when unknown).
  std::optional<int64_t> nodeOf(int64_t rank) const;
  QStringList failureLog() const;

 signals:
  /// A step of the start-up ("starting the local agent", "node 0: 8 ranks started").
  void progress(const QString& message);
  /// The run is recorded in the history (its dashboard can open).
  void recorded(const QString& run_id);
  /// Every node started its ranks.
  void launched(const QString& run_id);
  /// Recording or starting the run failed (nothing runs).
  void launchFailed(const QString& message);
  /// The run ended (outcome: launch::RunOutcome), or following it stopped (running: detached).
  void finished(int outcome);

 private:
  void start(std::function<void()> body);
  void runLaunch(const LaunchRequest& request);
  void runAttach(const std::string& run_id, const std::string& db_path);
  void follow(store::Writer& writer, const std::string& run_id, launch::RunSession& session, launch::HistorySink& sink);
  void post(std::function<void()> fn);
  /// The launch or the attach failed before or while following: record why and tell the GUI.
  void fail(const std::string& reason);

  std::thread worker_;
  std::atomic<bool> interrupt_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> detach_requested_{false};
  std::atomic<bool> finished_{false};
  bool attaching_ = false;  ///< set on the GUI thread before the worker starts

  mutable std::mutex mutex_;  ///< guards what follows (written by the worker, read by the GUI)
  std::string run_id_;
  std::vector<std::pair<int64_t, int64_t>> pids_;
  std::vector<std::vector<int64_t>> node_ranks_;
  launch::RunOutcome outcome_ = launch::RunOutcome::running;
  std::string reason_;
  std::optional<int64_t> failed_rank_;
  std::vector<std::string> failure_log_;
};

}  // namespace tessera::ui
