// RunSession: launch across nodes, follow with dedupe/acks/heartbeats, failure propagation.
#include "launch/run_session.hpp"

#include "planner/grid.hpp"
#include "planner/runtime_support.hpp"

namespace tessera::launch {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr auto kHelloTimeout = milliseconds(5000);
constexpr auto kLaunchTimeout = milliseconds(15000);
constexpr auto kAckInterval = milliseconds(10);
constexpr int64_t kAckEveryFrames = 16;  // the agent sends at most 64 unacknowledged frames

}  // namespace

std::vector<std::vector<int64_t>> node_shares(const spec::RunSpec& spec) {
  std::vector<std::vector<int64_t>> shares(static_cast<size_t>(spec.cluster.nodes));
  for (int64_t rank = 0; rank < spec.world_size(); ++rank) {
    const auto coord = planner::rank_coord(rank, spec.parallel.tp, spec.parallel.cp, spec.parallel.ep,
                                           spec.data_parallel(), spec.parallel.pp, spec.cluster.gpus_per_node);
    shares.at(static_cast<size_t>(coord.node)).push_back(rank);
  }
  return shares;
}

std::vector<std::string> fit_problems(const spec::RunSpec& spec, const std::vector<nlohmann::json>& inventories) {
  std::vector<std::string> problems;
  for (const auto& e : planner::tessera_train_problems(spec)) problems.push_back(e.message);
  const auto shares = node_shares(spec);
  if (inventories.size() != shares.size()) {
    problems.push_back("cluster.nodes=" + std::to_string(shares.size()) + " needs " + std::to_string(shares.size()) +
                       (shares.size() == 1 ? " agent" : " agents") + " (one per node), " + std::to_string(inventories.size()) +
                       " chosen");
    return problems;
  }
  const bool gpu_run = spec.cluster.gpu != "cpu";
  for (size_t node = 0; node < shares.size(); ++node) {
    const auto& inv = inventories[node];
    const int64_t ranks = static_cast<int64_t>(shares[node].size());
    const int64_t free_ranks = inv.value("max_ranks", int64_t{0}) - inv.value("ranks_in_use", int64_t{0});
    const std::string where = "node " + std::to_string(node) + " (" + inv.value("hostname", std::string("?")) + ")";
    if (ranks > free_ranks)
      problems.push_back(where + " runs " + std::to_string(ranks) + " ranks but its agent has " + std::to_string(free_ranks) +
                         " free (max_ranks " + std::to_string(inv.value("max_ranks", int64_t{0})) + ")");
    const int64_t gpus = inv.contains("gpus") && inv["gpus"].is_array() ? static_cast<int64_t>(inv["gpus"].size()) : 0;
    if (gpu_run && ranks > gpus)
      problems.push_back(where + " runs " + std::to_string(ranks) + " ranks on GPU " + spec.cluster.gpu + " but has " +
                         std::to_string(gpus) + " GPUs");
  }
  return problems;
}

const char* to_string(RunOutcome outcome) {
  switch (outcome) {
    case RunOutcome::running: return "running";
    case RunOutcome::done: return "done";
    case RunOutcome::failed: return "failed";
    case RunOutcome::stopped: return "stopped";
  }
  return "unknown";
}

RunSession::RunSession(std::string run_id, std::vector<std::string> endpoints, const Credentials& credentials)
    : run_id_(std::move(run_id)) {
  if (!protocol::is_run_id(run_id_)) throw std::invalid_argument("run id " + run_id_ + " is not 32 lowercase hex digits");
  if (endpoints.empty()) throw std::invalid_argument("a run needs at least one agent");
  for (auto& endpoint : endpoints) {
    connections_.push_back(std::make_unique<AgentConnection>(context_, endpoint, credentials));
    nodes_.push_back({endpoint, {}, {}, 0, 0, false, false, ""});
  }
}

RunSession::~RunSession() = default;

void RunSession::launch(const spec::RunSpec& spec) {
  const auto shares = node_shares(spec);
  if (shares.size() != nodes_.size())
    throw AgentError("the spec has cluster.nodes=" + std::to_string(shares.size()) + " but " +
                     std::to_string(nodes_.size()) + " agents were given (one per node)");
  for (auto& connection : connections_) {
    const auto inventory = connection->request("hello", {{"client", "tessera-launch"}}, "inventory", kHelloTimeout);
    if (inventory.value("protocol", 0) != protocol::kProtocolVersion)
      throw AgentError("agent " + connection->endpoint() + " speaks protocol " +
                       std::to_string(inventory.value("protocol", 0)) + ", this workbench " +
                       std::to_string(protocol::kProtocolVersion));
  }
  const std::string master_addr = endpoint_host(nodes_[0].endpoint);
  int64_t master_port = 0;
  const auto spec_json = spec::to_json(spec, spec::JsonFields::for_agents);
  for (size_t node = 0; node < nodes_.size(); ++node) {
    nodes_[node].ranks = shares[node];
    try {
      const auto reply = connections_[node]->request("launch",
                                                     {{"run", run_id_},
                                                      {"spec", spec_json},
                                                      {"node_rank", node},
                                                      {"ranks", shares[node]},
                                                      {"master_addr", master_addr},
                                                      {"master_port", master_port}},
                                                     "launched", kLaunchTimeout);
      if (node == 0) master_port = protocol::get_int(reply, "master_port", 1, 65535);
      for (const auto& p : protocol::get_array(reply, "pids", 4096))
        nodes_[node].pids.emplace_back(p.at("rank").get<int64_t>(), p.at("pid").get<int64_t>());
    } catch (const std::exception& e) {
      stop(std::string("launch failed on node ") + std::to_string(node) + ": " + e.what());
      throw AgentError(std::string("node ") + std::to_string(node) + " (" + nodes_[node].endpoint + "): " + e.what());
    }
  }
}

void RunSession::attach(RunSink& sink, bool silent_agents_are_gone) {
  std::vector<nlohmann::json> replies(nodes_.size());
  std::vector<std::string> silent(nodes_.size()), refused(nodes_.size());
  bool any_answered = false;
  // Every agent asked at once and awaited together: N silent agents cost one timeout, not N.
  for (size_t node = 0; node < nodes_.size(); ++node) {
    const int64_t durable = sink.durable_seq(static_cast<int64_t>(node));
    nodes_[node].acked_seq = nodes_[node].received_seq = durable;
    try {
      connections_[node]->send("attach", {{"run", run_id_}, {"acked", durable}});
    } catch (const AgentError& e) {  // its send queue is full: it takes nothing, as a silent agent
      silent[node] = e.what();
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + kHelloTimeout;
  for (size_t node = 0; node < nodes_.size(); ++node) {
    if (!silent[node].empty()) continue;
    try {
      replies[node] = connections_[node]->await_reply("attach", "attached", deadline, kHelloTimeout);
      any_answered = true;
    } catch (const AgentTimeout& e) {
      silent[node] = e.what();
    } catch (const AgentError& e) {  // it answered, without the run (restarted)
      refused[node] = e.what();
      any_answered = true;
    }
  }
  if (!any_answered && !silent_agents_are_gone) {
    std::string text = silent.front();
    if (nodes_.size() > 1) text += " (none of the run's " + std::to_string(nodes_.size()) + " agents answered)";
    throw AgentTimeout(text);
  }
  // An agent that is gone, or answers without the run, cannot give its part back: the run fails with
  // that node lost, and the nodes that answered are still followed and backfilled.
  for (size_t node = 0; node < nodes_.size(); ++node) {
    if (!refused[node].empty()) node_lost(node, refused[node]);
    else if (!silent[node].empty()) node_lost(node, silent[node]);
    else resumed(node, replies[node]);
  }
}

void RunSession::resumed(size_t node, const nlohmann::json& attached) {
  // The agent resends from its acknowledged sequence number + 1; anything between ours and its is gone.
  const int64_t agent_acked = protocol::get_int(attached, "acked", 0, int64_t{1} << 53);
  const int64_t last_seq = protocol::get_int(attached, "last_seq", 0, int64_t{1} << 53);
  const std::string agent_state = protocol::get_string(attached, "state", 64);
  NodeState& state = nodes_[node];
  if (agent_acked > state.received_seq) {
    lost_frames_ += agent_acked - state.received_seq;
    state.received_seq = state.acked_seq = agent_acked;
  }
  // Its part ended and the run_end was acknowledged already (by an earlier follower, or by another
  // one of two): nothing more will come, so the node ends here instead of being waited on for ever.
  const bool finished = agent_state == "done" || agent_state == "failed" || agent_state == "stopped";
  if (finished && agent_acked >= last_seq && !state.ended)
    node_ended(node, agent_state, attached.contains("reason") ? protocol::get_string(attached, "reason", 4096) : "");
}

void RunSession::node_ended(size_t node, const std::string& end_state, const std::string& reason) {
  NodeState& state = nodes_[node];
  state.ended = true;
  state.end_state = end_state;
  if (end_state == "stopped" && stop_reason_.empty()) stop_reason_ = reason;
  if (end_state == "failed" && !stop_sent_) {
    if (outcome_ == RunOutcome::running) {
      outcome_ = RunOutcome::failed;
      reason_ = reason.empty() ? "node " + std::to_string(node) + " failed" : reason;
    }
    stop(reason_);
  }
}

void RunSession::node_lost(size_t node, const std::string& cause) {
  NodeState& state = nodes_[node];
  state.lost = true;
  const std::string lost = "node " + std::to_string(node) + " (" + state.endpoint + ") lost: " + cause;
  // A rank on another node whose failure was heard after this node's agent fell silent most likely
  // failed because of it: its peers went with the agent, as in "peer rank 3 died". The lost node is
  // the cause; the rank's failure is said after it.
  if (outcome_ == RunOutcome::failed && first_failed_rank_ && reason_.rfind("rank ", 0) == 0 &&
      first_failure_node_ != node && first_failure_heard_ >= connections_[node]->last_heard()) {
    reason_ = lost + "; then " + reason_;
    return;
  }
  fail(lost);
}

void RunSession::stop(const std::string& reason) {
  stop_sent_ = true;
  for (size_t node = 0; node < nodes_.size(); ++node) {
    // A lost node is asked too: an agent that was only silent (stopped, starved) finds the stop when it
    // reads again and stops its ranks, rather than training on for a run recorded failed.
    if (nodes_[node].ended) continue;
    try {
      connections_[node]->send("stop", {{"run", run_id_}, {"reason", reason.substr(0, 1000)}});
    } catch (const AgentError&) {
      // An unreachable node is found lost by its heartbeats.
    }
  }
}

void RunSession::stop_and_confirm(const std::string& reason, milliseconds timeout) {
  stop(reason);
  const auto deadline = Clock::now() + timeout;
  for (size_t node = 0; node < nodes_.size(); ++node) {
    if (nodes_[node].lost || nodes_[node].ended) continue;
    try {
      connections_[node]->await_reply("stop", "stopping", deadline, timeout);
    } catch (const AgentError&) {
      // Unconfirmed (the node is slow or gone): the request stays sent, nothing more can be done here.
    }
  }
}

void RunSession::fail(const std::string& reason) {
  if (outcome_ == RunOutcome::running) {
    outcome_ = RunOutcome::failed;
    reason_ = reason;
  }
  if (!stop_sent_) stop(reason);
}

void RunSession::note_record(size_t node, const nlohmann::json& record) {
  const auto& type = record.at("type");  // a rank_exit or run_end record
  if (type == "rank_exit") {
    // Every field is read before anything changes: one of the wrong type throws (the caller skips the
    // record) with the session as it was.
    const bool failed = record.value("exit_code", 0) != 0 || record.value("signal", 0) != 0;
    const bool stopped_by_agent = record.value("stopped_by_agent", false);
    const double time_s = record.value("time_s", 0.0);
    const int64_t rank = record.value("rank", int64_t{-1});
    const std::string description = record.value("description", std::string("failed"));
    std::vector<std::string> last_lines;
    if (const auto lines = record.find("last_lines"); lines != record.end() && lines->is_array())
      for (const auto& line : *lines)
        if (line.is_string()) last_lines.push_back(line.get<std::string>());
    if (!failed || stopped_by_agent) return;
    // The earliest failure across nodes is the cause; later ones are its consequences.
    if (!first_failed_rank_ || time_s < first_failure_time_s_) {
      first_failed_rank_ = rank;
      first_failure_time_s_ = time_s;
      first_failure_heard_ = Clock::now();
      first_failure_node_ = node;
      failure_log_ = std::move(last_lines);
      if (outcome_ == RunOutcome::running || (outcome_ == RunOutcome::failed && reason_.rfind("rank ", 0) == 0)) {
        outcome_ = RunOutcome::failed;
        reason_ = "rank " + std::to_string(rank) + " " + description;
      }
    }
    if (!stop_sent_) stop(reason_);
  } else if (type == "run_end") {
    const std::string state = record.value("state", std::string()), reason = record.value("reason", std::string());
    if (const auto time = record.find("time_s"); time != record.end() && time->is_number() && time->get<double>() > 0) {
      const auto ms = static_cast<int64_t>(time->get<double>() * 1000);
      ended_ms_ = ended_ms_ ? std::max(*ended_ms_, ms) : ms;
    }
    node_ended(node, state, reason);
  }
}

void RunSession::handle(size_t node, const protocol::Frame& frame, RunSink& sink) {
  const nlohmann::json& message = frame.message;
  const auto& type = message["type"].get_ref<const std::string&>();
  try {
    if (type == "attached" && protocol::get_run_id(message) == run_id_) resumed(node, message);
    if (type == "error" && protocol::get_string(message, "in_reply_to", 64) == "ack" &&
        protocol::get_string(message, "code", 64) == "unknown_run") {
      // Our acks name this run only: an agent that answers, but without the run, was restarted (its
      // ranks died with the old one). Its heartbeats would keep the node alive for ever.
      if (!nodes_[node].lost && !nodes_[node].ended) node_lost(node, "its agent answers but no longer holds the run (restarted)");
      return;
    }
    if (type != "data") return;  // heartbeats only refresh last_heard; late replies are ignored
    if (protocol::get_run_id(message) != run_id_) return;
    const int64_t seq = protocol::get_int(message, "seq", 1, int64_t{1} << 53);
    const auto& records = protocol::get_records(frame, 1 << 20);
    NodeState& state = nodes_[node];
    if (seq <= state.received_seq) {
      ++duplicates_;
      return;
    }
    if (seq > state.received_seq + 1) {
      // A gap (frames dropped by a reconnect in transit): the agent resends from its acknowledged
      // sequence number; what we hold already is dropped as duplicates.
      try {
        connections_[node]->send("attach", {{"run", run_id_}, {"acked", state.acked_seq}});
      } catch (const AgentError&) {
        // Asked again at the next out-of-order frame; a silent agent is found lost.
      }
      return;
    }
    try {
      sink.records(static_cast<int64_t>(node), seq, records);
    } catch (const RunGone& e) {
      stop_and_confirm("the run was deleted from the history", milliseconds(3000));
      throw RunGone(std::string(e.what()) + "; its ranks were asked to stop");
    }
    for (const auto& record : records)  // the records the session acts on are rare: read as DOMs
      if (const auto t = record.type(); t == "rank_exit" || t == "run_end") {
        // A field of the wrong type ("exit_code": "x") ended the follower with nlohmann's type_error
        // and left the run detached: such a record is not acted on (the sink stored what it could).
        try {
          note_record(node, record.to_json());
        } catch (const nlohmann::json::exception&) {
          ++malformed_records_;
        }
      }
    state.received_seq = seq;
  } catch (const protocol::ProtocolError&) {
    // A malformed frame from an agent is skipped; the sequence check asks for it again.
  }
}

void RunSession::acknowledge(RunSink& sink, bool wait) {
  bool any = false;
  for (const auto& node : nodes_) any = any || (!node.lost && node.received_seq > node.acked_seq);
  if (!any) return;
  sink.sync(wait);
  for (size_t node = 0; node < nodes_.size(); ++node) {
    NodeState& state = nodes_[node];
    // Only what the sink holds durably is acknowledged: the agent keeps the rest.
    const int64_t durable = std::min(state.received_seq, sink.durable_seq(static_cast<int64_t>(node)));
    if (state.lost || durable <= state.acked_seq) continue;
    try {
      connections_[node]->send("ack", {{"run", run_id_}, {"seq", durable}});
      state.acked_seq = durable;
    } catch (const AgentError&) {
      // Acknowledged again with the next one.
    }
  }
}

RunOutcome RunSession::follow(RunSink& sink, const std::atomic<bool>& stop_flag, milliseconds drain) {
  const auto interval = milliseconds(protocol::kHeartbeatInterval_ms);
  auto last_ack = Clock::now(), last_heartbeat = Clock::now() - interval;
  std::optional<Clock::time_point> failed_at;
  while (!stop_flag) {
    std::vector<zmq::pollitem_t> items;
    std::vector<size_t> item_node;
    for (size_t node = 0; node < nodes_.size(); ++node) {
      if (nodes_[node].lost) continue;
      items.push_back({connections_[node]->socket().handle(), 0, ZMQ_POLLIN, 0});
      item_node.push_back(node);
    }
    poll_sockets(items.data(), items.size(), milliseconds(10));
    // Draining is bounded in time, so that acknowledgements and heartbeats go out under any load.
    const auto drain_until = Clock::now() + milliseconds(50);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!(items[i].revents & ZMQ_POLLIN)) continue;
      for (int n = 0; n < 1000 && Clock::now() < drain_until; ++n) {
        auto frame = connections_[item_node[i]]->receive(milliseconds(0));
        if (!frame) break;
        handle(item_node[i], *frame, sink);
      }
    }
    const auto now = Clock::now();
    int64_t unacked = 0;
    for (const auto& node : nodes_) unacked = std::max(unacked, node.received_seq - node.acked_seq);
    if (now - last_ack >= kAckInterval || unacked >= kAckEveryFrames) {
      acknowledge(sink, false);
      last_ack = now;
    }
    if (now - last_heartbeat >= interval) {
      for (size_t node = 0; node < nodes_.size(); ++node) {
        const NodeState& state = nodes_[node];
        if (state.lost) continue;
        try {
          // While its part of the run goes on, the heartbeat is an ack naming the run: an agent that
          // gave up on this workbench (3 s unheard: a stall, a late start of following) resumes
          // sending from the acknowledged number, even when nothing new waits to be acknowledged.
          if (state.ended) connections_[node]->send("heartbeat");
          else connections_[node]->send("ack", {{"run", run_id_}, {"seq", state.acked_seq}});
        } catch (const AgentError&) {
          // Found lost below once it stays silent.
        }
      }
      last_heartbeat = now;
    }
    for (size_t node = 0; node < nodes_.size(); ++node) {
      NodeState& state = nodes_[node];
      if (state.lost || state.ended) continue;
      if (now - connections_[node]->last_heard() > interval * protocol::kHeartbeatLiveness)
        node_lost(node, "no heartbeat for " + std::to_string(protocol::kHeartbeatLiveness) + " s");
    }
    if (outcome_ == RunOutcome::failed && !failed_at) failed_at = now;
    bool all_over = true;
    for (const auto& node : nodes_) all_over = all_over && (node.ended || node.lost);
    if (all_over || (failed_at && now - *failed_at > drain)) break;
  }
  acknowledge(sink, true);
  bool all_ended = true;
  for (const auto& node : nodes_) all_ended = all_ended && node.ended;
  if (outcome_ == RunOutcome::running && all_ended) {
    bool stopped = false;
    for (const auto& node : nodes_) stopped = stopped || node.end_state == "stopped";
    outcome_ = stopped ? RunOutcome::stopped : RunOutcome::done;
    if (stopped) reason_ = stop_reason_.empty() ? "stopped" : stop_reason_;
  }
  return outcome_;
}

}  // namespace tessera::launch
