// One run across its agents, from the workbench: splits the rank grid into node shares, launches node 0
// first (its agent picks the rendezvous port) then the others, and follows the run: data frames are
// deduplicated by (node, seq), handed to a sink, acknowledged once the sink has made them durable;
// heartbeats both ways; a silent node is lost, a failing rank or a lost node stops the run everywhere.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "launch/agent_connection.hpp"
#include "protocol/wire.hpp"
#include "spec/run_spec.hpp"

namespace tessera::launch {

/// The global ranks each node (agent) runs, in node order.
std::vector<std::vector<int64_t>> node_shares(const spec::RunSpec& spec);

/// Why `spec` cannot run on the nodes whose agents sent `inventories` (one per node, in node order):
/// what tessera-train does not train (planner::tessera_train_problems), node count, free ranks per
/// node, GPUs per node for a GPU run. Empty when it fits. The Launch dialog and tessera-cli launch
/// both refuse with these before a run is recorded.
std::vector<std::string> fit_problems(const spec::RunSpec& spec, const std::vector<nlohmann::json>& inventories);

/// Thrown by a sink whose run is no longer there to record into (deleted from the history, with
/// `runs delete --force`, while it was followed): the session stops the run's ranks, which would
/// otherwise train on for nobody, and rethrows it.
class RunGone : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where the records of a followed run go (the history, or a test's memory). The sink keeps, with the
/// records and in the same commit, the highest sequence number of each node it holds: that is what the
/// session acknowledges and where a restarted follower resumes, so a frame is stored exactly once.
class RunSink {
 public:
  virtual ~RunSink() = default;
  /// The highest sequence number of `node` whose records are durable (0 = none).
  virtual int64_t durable_seq(int64_t node) = 0;
  /// The records of data frame `seq` of `node` (seq = the previous one + 1), each a JSON object with a
  /// "type" (docs/protocol.md), as protocol::read_frame() read them.
  virtual void records(int64_t node, int64_t seq, const std::vector<protocol::Record>& records) = 0;
  /// Brings durable_seq() up to date with what the sink has made durable; with `wait`, first makes
  /// everything given so far durable (at the end of a follow).
  virtual void sync(bool wait) = 0;
};

enum class RunOutcome { running, done, failed, stopped };
const char* to_string(RunOutcome outcome);

struct NodeState {
  std::string endpoint;
  std::vector<int64_t> ranks;
  std::vector<std::pair<int64_t, int64_t>> pids;  ///< (rank, pid) from the launch reply
  int64_t received_seq = 0;                       ///< highest sequence number handed to the sink
  int64_t acked_seq = 0;
  bool ended = false;                             ///< its run_end record arrived
  bool lost = false;
  std::string end_state;
};

class RunSession {
 public:
  /// Connects to the agents (one per node, in node order).
  RunSession(std::string run_id, std::vector<std::string> endpoints, const Credentials& credentials);
  ~RunSession();

  /// Sends each node its share of `spec`; on any refusal the nodes already started are stopped and
  /// AgentError is thrown.
  void launch(const spec::RunSpec& spec);
  /// Attaches to a running (or finished, unacknowledged) run: each agent resends from the sink's
  /// durable sequence number of its node. A node whose agent no longer holds the run is lost (the
  /// run fails; the other nodes are followed, and stopped), and so is one whose agent does not
  /// answer while another does. When none answers (this machine offline, its key refused: no telling
  /// from agents that are gone) AgentTimeout is thrown and the run left as it is, unless
  /// `silent_agents_are_gone`.
  void attach(RunSink& sink, bool silent_agents_are_gone = false);
  /// Follows until the run ends on every node (or is failed by a lost node and the others ended or
  /// `drain` passed), or `stop` is set. Returns the outcome so far.
  RunOutcome follow(RunSink& sink, const std::atomic<bool>& stop,
                    std::chrono::milliseconds drain = std::chrono::milliseconds(10000));
  /// Asks every reachable node to stop the run.
  void stop(const std::string& reason);
  /// stop(), then waits up to `timeout` (for all nodes together) for each node to say it is stopping:
  /// for a session that ends at once, whose socket would drop a request still queued.
  void stop_and_confirm(const std::string& reason, std::chrono::milliseconds timeout);

  const std::string& run_id() const { return run_id_; }
  const std::vector<NodeState>& nodes() const { return nodes_; }
  RunOutcome outcome() const { return outcome_; }
  /// "rank 3 exited with code 1" / "node 1 (tcp://...) lost" — why the run failed or stopped.
  const std::string& reason() const { return reason_; }
  std::optional<int64_t> first_failed_rank() const { return first_failed_rank_; }
  /// When the run ended by its agents' clocks (the latest run_end's time_s, Unix ms): a follower that
  /// attached after the end records that, not the moment it learnt of it. Nullopt without a run_end
  /// record (a node whose end was acknowledged by an earlier follower, a lost node).
  std::optional<int64_t> ended_ms() const { return ended_ms_; }
  /// The last output lines of the first failing rank, as its agent reported them.
  const std::vector<std::string>& failure_log() const { return failure_log_; }
  /// Frames received again (sequence number already handed over) and dropped.
  int64_t duplicate_frames() const { return duplicates_; }
  /// Frames an agent no longer held when asked for them (never expected: counted, not hidden).
  int64_t lost_frames() const { return lost_frames_; }
  /// rank_exit or run_end records not acted on because a field had the wrong type.
  int64_t malformed_records() const { return malformed_records_; }

 private:
  void handle(size_t node, const protocol::Frame& frame, RunSink& sink);
  void note_record(size_t node, const nlohmann::json& record);  ///< a rank_exit or run_end record
  void acknowledge(RunSink& sink, bool wait);
  void resumed(size_t node, const nlohmann::json& attached);
  /// The node's part of the run ended (its run_end record, or an attach that found it ended).
  void node_ended(size_t node, const std::string& end_state, const std::string& reason);
  /// The node's agent is gone or no longer holds the run: the run fails with `cause`.
  void node_lost(size_t node, const std::string& cause);
  void fail(const std::string& reason);

  std::string run_id_;
  zmq::context_t context_{1};
  std::vector<std::unique_ptr<AgentConnection>> connections_;
  std::vector<NodeState> nodes_;
  RunOutcome outcome_ = RunOutcome::running;
  std::string reason_;
  std::string stop_reason_;  ///< the reason an agent gave for stopping
  std::optional<int64_t> first_failed_rank_;
  double first_failure_time_s_ = 0;
  std::optional<int64_t> ended_ms_;
  std::chrono::steady_clock::time_point first_failure_heard_;  ///< when the session learnt of it
  size_t first_failure_node_ = 0;                               ///< the node its report came from
  std::vector<std::string> failure_log_;
  bool stop_sent_ = false;
  int64_t duplicates_ = 0;
  int64_t lost_frames_ = 0;
  int64_t malformed_records_ = 0;
};

}  // namespace tessera::launch
