// The agent's loop: requests from workbenches, records from ranks, rank processes, outboxes, heartbeats.
#include "agent/agent.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include <zmq.hpp>

#include "agent/inventory.hpp"
#include "agent/outbox.hpp"
#include "agent/rank_process.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/json_scan.hpp"
#include "protocol/wire.hpp"
#include "spec/json_nesting.hpp"
#include "spec/run_spec.hpp"

namespace tessera::agent {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using protocol::ErrorCode;
using protocol::ProtocolError;

namespace {

constexpr int64_t kBatchRecords = 4000;           // a data frame holds at most this many records...
constexpr int64_t kBatchBytes = 4LL << 20;        // ...and this many bytes...
constexpr auto kBatchAge = std::chrono::milliseconds(10);  // ...and waits at most this long
constexpr int64_t kSendWindow = 64;               // unacknowledged frames in flight per run
constexpr size_t kLastLines = 20;                 // log lines kept per rank for failure reports
constexpr size_t kMaxLogLineBytes = 4096;
constexpr auto kPipeDrain = std::chrono::milliseconds(1000);  // after a rank exits, wait this long for its pipes
constexpr auto kRecordsQuiet = std::chrono::milliseconds(200);  // the run ends once no record came for this long

double wall_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free TCP port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

struct Rank {
  int64_t rank = 0, local = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // stdout, stderr
  std::string partial[2];
  std::deque<std::string> last_lines;
  bool exited = false;
  int wait_status = 0;
  bool stopped_by_agent = false;
  Clock::time_point exited_at{};
  double exited_wall_s = 0;  // when the agent reaped it: the time the workbench orders failures by
};

enum class RunState { running, stopping, done, failed, stopped };
const char* state_name(RunState state) {
  switch (state) {
    case RunState::running: return "running";
    case RunState::stopping: return "stopping";
    case RunState::done: return "done";
    case RunState::failed: return "failed";
    case RunState::stopped: return "stopped";
  }
  return "unknown";
}

struct Run {
  Run(std::string id_, std::string dir_, zmq::context_t& context, int64_t memory_bytes, int64_t disk_bytes)
      : id(std::move(id_)), dir(std::move(dir_)), pull(context, zmq::socket_type::pull),
        outbox(dir + "/outbox.spill", memory_bytes, disk_bytes) {}
  std::string id, dir, report_endpoint;
  std::vector<Rank> ranks;
  zmq::socket_t pull;
  RunState state = RunState::running;
  bool failing = false;  // a rank failed: stopping the others, final state failed
  std::optional<int64_t> first_failed_rank;
  std::string reason;
  Clock::time_point kill_at{};
  bool killed = false;
  bool ended = false;  // run_end record queued
  Clock::time_point ended_at{};
  Outbox outbox;
  std::string batch;  // records joined by ','
  int64_t batch_records = 0;
  Clock::time_point batch_started{};
  std::string client;  // attached workbench identity ("" = none)
  int64_t next_send = 1;
  int64_t highest_sent = 0;  // the newest frame ever sent to a workbench: what an ack may name
  int64_t records_dropped = 0;
  Clock::time_point last_record_at{};
  bool paused = false;     // the outbox is full: its ranks are not read until acknowledgements make room
  int64_t pauses = 0;
  double paused_s = 0;     // in all
  Clock::time_point paused_at{};
  bool active() const { return state == RunState::running || state == RunState::stopping; }
};

// What an agent keeps of a run it forgot (ended, every frame acknowledged): how it ended.
struct ForgottenRun {
  std::string state;
  int64_t last_seq = 0;
  std::string reason;
};
constexpr size_t kForgottenRunsKept = 1000000;

struct Client {
  Clock::time_point last_heard{};
  Clock::time_point last_sent{};
};

}  // namespace

std::string zmq_bind_address(const std::string& bind) {
  const auto endpoint = protocol::parse_tcp_endpoint(bind, protocol::PortRule::bind);
  // Older libzmq read a bind's host as an interface name or an address ("localhost" is neither) and
  // asked for a free port with '*' only: the forms every version takes.
  std::string host = bind.substr(6, bind.rfind(':') - 6);  // IPv6 brackets kept
  if (endpoint.host == "localhost") host = "127.0.0.1";
  const bool any_port = endpoint.port.find_first_not_of('0') == std::string::npos;
  return "tcp://" + host + ":" + (any_port ? std::string("*") : endpoint.port);
}

void check_options(const AgentOptions& options) {
  try {
    // ZeroMQ would take 99999 as some free port, and "abc" with an "Invalid argument".
    protocol::parse_tcp_endpoint(options.bind, protocol::PortRule::bind);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--bind " + std::string(e.what()));
  }
  if (!options.keys && !protocol::is_loopback_endpoint(options.bind))
    throw std::invalid_argument("--bind " + options.bind +
                                " is not a loopback address: give --keys DIR (from `tessera-agent keygen DIR`) and "
                                "--authorized-keys FILE so that connections are encrypted and authenticated");
  if (options.keys && options.authorized_keys.empty())
    throw std::invalid_argument("--keys needs --authorized-keys FILE listing at least one client public key");
  struct stat st {};
  if (options.runtime.empty() || ::stat(options.runtime.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      ::access(options.runtime.c_str(), X_OK) != 0)
    throw std::invalid_argument("--runtime " + options.runtime + " is not an executable file");
  if (options.workdir.empty()) throw std::invalid_argument("--workdir must not be empty");
  // Its runs/ folder is made here, so that a --workdir that is a file, or not writable, is a bad
  // argument named as such (it was a bare "filesystem error: cannot create directories", exit 1).
  std::error_code ec;
  if (fs::exists(options.workdir, ec) && !fs::is_directory(options.workdir, ec))
    throw std::invalid_argument("--workdir " + options.workdir + " is not a directory");
  if (fs::create_directories(fs::path(options.workdir) / "runs", ec); ec)
    throw std::invalid_argument("--workdir " + options.workdir + ": cannot create " +
                                (fs::path(options.workdir) / "runs").string() + ": " + ec.message());
  if (options.max_ranks < 0) throw std::invalid_argument("--max-ranks must not be negative");
}

struct Agent::Impl {
  explicit Impl(AgentOptions opts) : options(std::move(opts)), router(context, zmq::socket_type::router) {
    check_options(options);  // makes the workdir's runs/ folder
    options.workdir = fs::canonical(options.workdir).string();
    node = probe_node();
    if (options.max_ranks == 0) options.max_ranks = node.gpus.empty() ? kCpuMaxRanks : static_cast<int64_t>(node.gpus.size());
    if (options.keys) {
      zap_socket.emplace(context, zmq::socket_type::rep);
      zap_socket->bind("inproc://zeromq.zap.01");
      zap_thread = std::thread([this] { serve_zap(); });
      router.set(zmq::sockopt::zap_domain, "tessera");
      router.set(zmq::sockopt::curve_server, true);
      router.set(zmq::sockopt::curve_secretkey, options.keys->secret_key);
    }
    router.set(zmq::sockopt::maxmsgsize, protocol::kMaxTransportFrameBytes);
    router.set(zmq::sockopt::router_mandatory, true);
    router.set(zmq::sockopt::linger, 0);
    router.set(zmq::sockopt::sndhwm, 10000);
    if (protocol::is_ipv6_host(protocol::parse_tcp_endpoint(options.bind, protocol::PortRule::bind)))
      router.set(zmq::sockopt::ipv6, true);  // only then: it would show IPv4 binds as [::ffff:a.b.c.d]
    try {
      router.bind(zmq_bind_address(options.bind));
    } catch (const zmq::error_t& e) {
      throw std::runtime_error("cannot listen on " + options.bind + ": " + e.what() +
                               (e.num() == EADDRINUSE ? " (another process listens there: another agent, or pick another port)" : ""));
    }
    endpoint = router.get(zmq::sockopt::last_endpoint);
  }

  ~Impl() {
    zap_stop = true;
    if (zap_thread.joinable()) zap_thread.join();
  }

  // ZAP (RFC 27): admit CURVE clients whose public key is authorized; count the others.
  void serve_zap() {
    while (!zap_stop) {
      zmq::pollitem_t item{zap_socket->handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(100));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> parts;
      while (true) {
        zmq::message_t part;
        if (!zap_socket->recv(part)) break;
        const bool more = part.more();
        parts.push_back(std::move(part));
        if (!more) break;
      }
      const std::string version = parts.size() > 0 ? parts[0].to_string() : "";
      const std::string request_id = parts.size() > 1 ? parts[1].to_string() : "";
      const std::string mechanism = parts.size() > 5 ? parts[5].to_string() : "";
      bool allowed = false;
      if (version == "1.0" && mechanism == "CURVE" && parts.size() > 6 && parts[6].size() == 32) {
        std::array<char, 41> z85{};
        zmq_z85_encode(z85.data(), static_cast<const uint8_t*>(parts[6].data()), 32);
        allowed = options.authorized_keys.count(z85.data()) > 0;
      }
      if (!allowed) ++refused_clients;
      const std::array<std::string, 6> reply{"1.0", request_id, allowed ? "200" : "400",
                                             allowed ? "OK" : "client key not authorized", "", ""};
      for (size_t i = 0; i < reply.size(); ++i)
        zap_socket->send(zmq::buffer(reply[i]), i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }

  void reply(const std::string& identity, const std::string& frame) {
    try {
      if (!router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return;
      router.send(zmq::buffer(frame), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
      // The peer is gone or not reading: a reply is not kept (data frames are, in the outbox).
    }
  }

  void error(const std::string& identity, ErrorCode code, const std::string& message, std::string_view in_reply_to) {
    ++errors_counted;
    reply(identity, protocol::make_error(code, message, in_reply_to));
  }

  // ---- requests from workbenches ----

  void receive_requests() {
    for (int i = 0; i < 1000; ++i) {
      zmq::message_t identity;
      if (!router.recv(identity, zmq::recv_flags::dontwait)) return;
      std::vector<zmq::message_t> parts;
      bool more = identity.more();
      while (more) {
        zmq::message_t part;
        (void)router.recv(part);
        more = part.more();
        parts.push_back(std::move(part));
      }
      const std::string id = identity.to_string();
      clients[id].last_heard = Clock::now();
      if (parts.size() != 1) {
        error(id, ErrorCode::bad_frame, "a message is exactly one frame (got " + std::to_string(parts.size()) + ")", "");
        continue;
      }
      std::string type;
      try {
        const nlohmann::json message = protocol::parse_frame(parts[0].to_string_view(), protocol::Side::agent);
        type = message["type"].get<std::string>();
        handle(id, type, message);
      } catch (const ProtocolError& e) {
        error(id, e.code(), e.what(), type.empty() ? e.in_reply_to() : type);
      } catch (const spec::SpecError& e) {
        std::string text;
        for (const auto& fe : e.errors()) text += (text.empty() ? "" : "; ") + fe.message;
        error(id, ErrorCode::bad_field, "spec: " + text, type);
      } catch (const nlohmann::json::exception& e) {
        error(id, ErrorCode::bad_field, spec::json_error_reason(e.what()), type);
      } catch (const std::exception& e) {
        // This node failed to carry out a valid request: said to the workbench; nothing in a message
        // stops the agent.
        error(id, ErrorCode::internal, e.what(), type);
      }
    }
  }

  static std::string attached_frame(const Run& run) {
    return protocol::make_frame("attached", {{"run", run.id},
                                             {"acked", run.outbox.acked()},
                                             {"last_seq", run.outbox.last_seq()},
                                             {"state", state_name(run.state)},
                                             {"reason", run.reason.substr(0, 1024)}});
  }

  void handle(const std::string& client, const std::string& type, const nlohmann::json& message) {
    if (type == "hello") {
      if (message.contains("client")) protocol::get_string(message, "client", 256);  // optional; who asks
      return hello(client);
    }
    if (type == "heartbeat") return;
    if (type == "launch") return launch(client, message);
    const std::string id = protocol::get_run_id(message);
    const auto it = runs.find(id);
    if (it == runs.end()) {
      if (const auto gone = forgotten.find(id); gone != forgotten.end()) return answer_forgotten(client, type, id, gone->second);
      throw ProtocolError(ErrorCode::unknown_run, "no run " + id + " on this agent");
    }
    Run& run = *it->second;
    if (type == "attach") {
      const int64_t acked = protocol::get_int(message, "acked", -1, int64_t{1} << 53);
      if (acked > run.highest_sent)
        throw ProtocolError(ErrorCode::bad_field, "acked=" + std::to_string(acked) + " is beyond the newest frame sent, " +
                                                      std::to_string(run.highest_sent));
      if (acked >= 0) run.outbox.acknowledge(acked);
      run.client = client;
      run.next_send = run.outbox.acked() + 1;
      reply(client, attached_frame(run));
    } else if (type == "ack") {
      const int64_t seq = protocol::get_int(message, "seq", 0, int64_t{1} << 53);
      // Only what was sent: an ack of the last frame queued but not yet sent (the window was full)
      // ended the agent itself ("outbox holds sequence numbers 157..156"), with every rank on it.
      if (seq > run.highest_sent)
        throw ProtocolError(ErrorCode::bad_field, "seq=" + std::to_string(seq) + " was never sent (the newest frame sent is " +
                                                      std::to_string(run.highest_sent) + ")");
      run.outbox.acknowledge(seq);
      if (run.client.empty()) {  // a workbench it had given up on is following again: resume sending
        run.client = client;
        run.next_send = run.outbox.acked() + 1;
        // As for an attach: where the stream resumes, and whether the run's end was acknowledged
        // already (by another follower), in which case nothing more comes.
        reply(client, attached_frame(run));
      }
    } else if (type == "stop") {
      const std::string reason = protocol::get_string(message, "reason", 1024);
      // The first stop decides: a repeated one (a workbench asking again) restarted the grace period
      // before SIGKILL each time and replaced the reason.
      if (run.state == RunState::running && !run.failing) {
        run.reason = reason.empty() ? "stopped by the workbench" : reason;
        stop_ranks(run, nullptr);
      }
      reply(client, protocol::make_frame("stopping", {{"run", run.id}, {"state", state_name(run.state)}}));
    }
  }

  // A run that ended and whose every frame (its run_end too) the workbench acknowledged is in the
  // history: the newest --keep-finished-runs of them stay listed, older ones are forgotten (their run
  // directories stay, so their ids are not launched again). An agent never forgot one: after ~7,000
  // runs its inventory passed the workbench's 1 MiB limit and every workbench called it unreachable.
  void forget_finished_runs() {
    std::vector<std::pair<Clock::time_point, std::string>> finished;
    for (const auto& [id, run] : runs) {
      bool quiet = run->ended && !run->active() && run->outbox.pending() == 0 && run->batch_records == 0;
      for (const auto& rank : run->ranks) quiet = quiet && rank.exited && rank.fds[0] < 0 && rank.fds[1] < 0;
      if (quiet) finished.emplace_back(run->ended_at, id);
    }
    const auto kept = static_cast<size_t>(options.kept_finished_runs);
    if (finished.size() <= kept) return;
    std::sort(finished.begin(), finished.end());
    for (size_t i = 0; i + kept < finished.size(); ++i) {
      const Run& run = *runs.at(finished[i].second);
      forgotten[run.id] = {state_name(run.state), run.outbox.last_seq(), run.reason.substr(0, 1024)};
      forgotten_order.push_back(run.id);
      runs.erase(finished[i].second);
    }
    // What is kept of a forgotten run is some 100 bytes; the oldest million ids are forgotten for good.
    while (forgotten_order.size() > kForgottenRunsKept) {
      forgotten.erase(forgotten_order.front());
      forgotten_order.pop_front();
    }
  }

  // A forgotten run is answered as it ended, every frame acknowledged: a workbench that died between its
  // last ack and recording the end attaches and finds it ended (unknown_run would make it "lost").
  void answer_forgotten(const std::string& client, const std::string& type, const std::string& id, const ForgottenRun& run) {
    if (type == "attach")
      reply(client, protocol::make_frame("attached", {{"run", id}, {"acked", run.last_seq}, {"last_seq", run.last_seq},
                                                      {"state", run.state}, {"reason", run.reason}}));
    else if (type == "stop")
      reply(client, protocol::make_frame("stopping", {{"run", id}, {"state", run.state}}));
    // An ack: all of it was acknowledged already.
  }

  void hello(const std::string& client) {
    forget_finished_runs();
    nlohmann::json held = nlohmann::json::array();
    for (const auto& [id, run] : runs)
      held.push_back({{"run", id},
                      {"state", state_name(run->state)},
                      {"ranks", run->ranks.size()},
                      {"last_seq", run->outbox.last_seq()},
                      {"acked", run->outbox.acked()},
                      {"outbox_full", run->paused},
                      {"outbox_pauses", run->pauses},
                      {"outbox_spill_bytes", run->outbox.spill_file_bytes()}});
    nlohmann::json body = to_json(node);
    body["version"] = kAgentVersion;
    body["protocol"] = protocol::kProtocolVersion;
    body["max_ranks"] = options.max_ranks;
    body["ranks_in_use"] = ranks_in_use();
    body["runs"] = held;
    body["errors_counted"] = errors_counted;
    body["refused_clients"] = refused_clients.load();
    body["encrypted"] = options.keys.has_value();
    reply(client, protocol::make_frame("inventory", body));
  }

  int64_t ranks_in_use() const {
    int64_t n = 0;
    for (const auto& [id, run] : runs)
      for (const auto& rank : run->ranks) n += rank.exited ? 0 : 1;
    return n;
  }

  void launch(const std::string& client, const nlohmann::json& message) {
    const std::string id = protocol::get_run_id(message);
    const spec::RunSpec spec = spec::parse_spec(protocol::get_object(message, "spec"));
    const int64_t world = spec.world_size();
    const int64_t node_rank = protocol::get_int(message, "node_rank", 0, spec.cluster.nodes - 1);
    const auto& ranks_json = protocol::get_array(message, "ranks", 4096);
    std::vector<int64_t> ranks;
    for (const auto& r : ranks_json) {
      if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() >= world)
        throw ProtocolError(ErrorCode::bad_field, "ranks must be integers in [0, " + std::to_string(world) + ")");
      if (std::find(ranks.begin(), ranks.end(), r.get<int64_t>()) != ranks.end())
        throw ProtocolError(ErrorCode::bad_field, "ranks must not repeat");
      ranks.push_back(r.get<int64_t>());
    }
    if (ranks.empty()) throw ProtocolError(ErrorCode::bad_field, "ranks must not be empty");
    const std::string master_addr = protocol::get_string(message, "master_addr", 253);
    if (const auto problem = protocol::host_syntax_problem(master_addr); !problem.empty())
      throw ProtocolError(ErrorCode::bad_field, "master_addr must be a host name or address: " + problem);
    int64_t master_port = protocol::get_int(message, "master_port", 0, 65535);
    const bool holds_rank0 = std::find(ranks.begin(), ranks.end(), 0) != ranks.end();
    if (master_port == 0 && !holds_rank0)
      throw ProtocolError(ErrorCode::bad_field, "master_port 0 (agent picks) needs rank 0 on this node");
    if (runs.count(id)) throw ProtocolError(ErrorCode::busy, "run " + id + " exists on this agent");
    // One GPU per rank: more ranks than GPUs would put two on one GPU (NCCL then fails unclearly).
    // A GPU spec runs on GPUs or not at all: on the CPU it would be another run than the one planned.
    const bool use_gpus = spec.cluster.gpu != "cpu";
    if (use_gpus && node.gpus.empty())
      throw ProtocolError(ErrorCode::bad_field, "cluster.gpu=" + spec.cluster.gpu +
                                                    " needs one GPU per rank, and this node reports none (a run on "
                                                    "CPU ranks has cluster.gpu=cpu)");
    if (use_gpus && ranks.size() > node.gpus.size())
      throw ProtocolError(ErrorCode::bad_field, std::to_string(ranks.size()) + " ranks requested on a node of " +
                                                    std::to_string(node.gpus.size()) + " GPUs: one GPU per rank");
    if (ranks_in_use() + static_cast<int64_t>(ranks.size()) > options.max_ranks)
      throw ProtocolError(ErrorCode::busy, std::to_string(ranks.size()) + " ranks requested, " +
                                               std::to_string(options.max_ranks - ranks_in_use()) + " of " +
                                               std::to_string(options.max_ranks) + " free");
    const fs::path dir = fs::path(options.workdir) / "runs" / id;
    std::error_code ec;
    if (!fs::create_directory(dir, ec)) {
      if (ec) throw ProtocolError(ErrorCode::launch_failed, "cannot create run directory " + dir.string() + ": " + ec.message());
      throw ProtocolError(ErrorCode::busy, "run directory " + dir.string() + " exists already");
    }
    // A node that cannot hold the run (disk full, no permission, no free port) refuses it and keeps
    // serving; the directory goes, so that the same run can be launched again once that is fixed.
    std::unique_ptr<Run> run;
    try {
      fs::create_directories(dir / "out");
      {
        std::ofstream out(dir / "spec.json");
        out << spec::to_json(spec).dump(2) << "\n";
        if (!out.flush()) throw std::runtime_error("cannot write " + (dir / "spec.json").string());
      }
      if (master_port == 0) master_port = free_tcp_port();
      run = std::make_unique<Run>(id, dir.string(), context, options.outbox_memory_bytes, options.outbox_disk_bytes);
      run->pull.set(zmq::sockopt::maxmsgsize, protocol::kMaxRecordBytes);
      run->pull.set(zmq::sockopt::rcvhwm, 10000);  // per rank; with the rank's own 10,000 its bound when paused
      run->pull.set(zmq::sockopt::linger, 0);
      const std::string ipc = "ipc://" + (dir / "report.sock").string();
      run->report_endpoint = ipc.size() < 100 ? ipc : "tcp://127.0.0.1:*";  // ipc paths are limited to 107 bytes
      run->pull.bind(run->report_endpoint);
      run->report_endpoint = run->pull.get(zmq::sockopt::last_endpoint);
    } catch (const std::exception& e) {
      run.reset();
      fs::remove_all(dir, ec);
      throw ProtocolError(ErrorCode::launch_failed, "cannot prepare run " + id + " on this node: " + e.what());
    }
    run->client = client;
    run->batch_started = Clock::now();

    nlohmann::json pids = nlohmann::json::array();
    for (size_t local = 0; local < ranks.size(); ++local) {
      Rank rank;
      rank.rank = ranks[local];
      rank.local = static_cast<int64_t>(local);
      std::vector<std::string> env{"RANK=" + std::to_string(rank.rank),
                                   "WORLD_SIZE=" + std::to_string(world),
                                   "LOCAL_RANK=" + std::to_string(local),
                                   "LOCAL_WORLD_SIZE=" + std::to_string(ranks.size()),
                                   "NODE_RANK=" + std::to_string(node_rank),
                                   "MASTER_ADDR=" + master_addr,
                                   "MASTER_PORT=" + std::to_string(master_port),
                                   "TESSERA_RUN_ID=" + id,
                                   std::string(protocol::kReportEndpointEnv) + "=" + run->report_endpoint};
      if (use_gpus) env.push_back("CUDA_VISIBLE_DEVICES=" + std::to_string(local));
      std::vector<std::string> args{"--spec", (dir / "spec.json").string(), "--out", (dir / "out").string()};
      if (use_gpus) {  // a GPU run on a node with GPUs: the CUDA path, one GPU per rank
        args.push_back("--device");
        args.push_back("cuda");
      }
      try {
        const SpawnedProcess p = spawn_process(options.runtime, args, env, dir.string());
        rank.pid = p.pid;
        rank.fds[0] = p.stdout_fd;
        rank.fds[1] = p.stderr_fd;
      } catch (const std::exception& e) {
        // Ranks started before this one are stopped; the run ends failed and is reported as such.
        run->ranks.push_back(std::move(rank));
        run->ranks.back().exited = true;
        run->ranks.back().wait_status = 127 << 8;
        const std::string reason = std::string("rank ") + std::to_string(ranks[local]) + ": " + e.what();
        run->first_failed_rank = ranks[local];
        run->reason = reason;
        run->failing = true;
        stop_ranks(*run, nullptr);
        runs.emplace(id, std::move(run));
        throw ProtocolError(ErrorCode::launch_failed, reason);
      }
      pids.push_back({{"rank", rank.rank}, {"pid", rank.pid}});
      run->ranks.push_back(std::move(rank));
    }
    reply(client, protocol::make_frame("launched", {{"run", id},
                                                    {"master_addr", master_addr},
                                                    {"master_port", master_port},
                                                    {"pids", pids},
                                                    {"run_dir", dir.string()}}));
    runs.emplace(id, std::move(run));
  }

  // ---- ranks ----

  // SIGTERM to every running rank's process group; SIGKILL follows after the grace period.
  void stop_ranks(Run& run, const Rank* except) {
    if (run.state == RunState::running) run.state = RunState::stopping;
    for (auto& rank : run.ranks) {
      if (rank.exited || &rank == except) continue;
      rank.stopped_by_agent = true;
      ::kill(-rank.pid, SIGTERM);
    }
    run.kill_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options.grace_s * 1000));
  }

  void add_record(Run& run, std::string_view json) {
    if (run.batch_records > 0) run.batch += ',';
    else run.batch_started = Clock::now();
    run.batch.append(json);
    ++run.batch_records;
    if (run.batch_records >= kBatchRecords || static_cast<int64_t>(run.batch.size()) >= kBatchBytes) flush_batch(run);
  }

  void flush_batch(Run& run) {
    if (run.batch_records == 0) return;
    std::string frame = "{\"v\":1,\"type\":\"data\",\"run\":\"" + run.id + "\",\"seq\":" +
                        std::to_string(run.outbox.last_seq() + 1) + ",\"records\":[";
    frame += run.batch;
    frame += "]}";
    run.outbox.push(std::move(frame));
    run.batch.clear();
    run.batch_records = 0;
  }

  // Takes up to 20,000 waiting records; returns how many it took.
  int receive_records(Run& run) {
    int taken = 0;
    for (; taken < 20000; ++taken) {
      zmq::message_t message;
      if (!run.pull.recv(message, zmq::recv_flags::dontwait)) break;
      const std::string_view text = message.to_string_view();
      // A record is a JSON object; anything else from a rank is dropped and counted. Checked without a
      // DOM: the workbench parses it (the frame holding it) in any case. Nested within the frame's
      // limit, the frame's own levels (frame, records, record) left over. The types only the agent
      // makes are dropped too: a rank's "run_end" ended the run in the history while it trained on.
      std::string type;
      if (message.more() || text.empty() || text.front() != '{' || !protocol::is_json(text, &type) ||
          type == "log" || type == "rank_exit" || type == "run_end" ||
          spec::json_too_deep_at(text, spec::kMaxJsonNesting - 3) != std::string_view::npos) {
        ++run.records_dropped;
        continue;
      }
      add_record(run, text);
    }
    if (taken > 0) run.last_record_at = Clock::now();
    return taken;
  }

  void read_pipe(Run& run, Rank& rank, int stream) {
    char buffer[65536];
    for (int i = 0; i < 16; ++i) {
      const ssize_t n = ::read(rank.fds[stream], buffer, sizeof buffer);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (n <= 0) {
        if (!rank.partial[stream].empty()) log_line(run, rank, stream, rank.partial[stream]);
        rank.partial[stream].clear();
        ::close(rank.fds[stream]);
        rank.fds[stream] = -1;
        return;
      }
      std::string& partial = rank.partial[stream];
      partial.append(buffer, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1)
        log_line(run, rank, stream, partial.substr(start, nl - start));
      partial.erase(0, start);
      if (partial.size() > kMaxLogLineBytes) {  // a line without end: cut it
        log_line(run, rank, stream, partial);
        partial.clear();
      }
    }
  }

  void log_line(Run& run, Rank& rank, int stream, const std::string& text) {
    const std::string line = text.substr(0, kMaxLogLineBytes);
    rank.last_lines.push_back(line);
    if (rank.last_lines.size() > kLastLines) rank.last_lines.pop_front();
    add_record(run, dump({{"type", "log"},
                          {"rank", rank.rank},
                          {"stream", stream == 0 ? "stdout" : "stderr"},
                          {"time_s", wall_s()},
                          {"line", line}}));
  }

  void reap(Run& run) {
    for (auto& rank : run.ranks) {
      if (rank.exited) continue;
      int status = 0;
      const pid_t r = ::waitpid(rank.pid, &status, WNOHANG);
      if (r != rank.pid) continue;
      rank.exited = true;
      rank.wait_status = status;
      rank.exited_at = Clock::now();
      rank.exited_wall_s = wall_s();
      ::kill(-rank.pid, SIGKILL);  // whatever the rank left in its process group
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && !rank.stopped_by_agent && !run.failing && run.state == RunState::running) {
        run.failing = true;
        run.first_failed_rank = rank.rank;
        run.reason = "rank " + std::to_string(rank.rank) + " " + describe_exit(status);
        stop_ranks(run, &rank);
      }
    }
    const auto now = Clock::now();
    bool all_exited = true;
    for (auto& rank : run.ranks) {
      if (!rank.exited) {
        all_exited = false;
        if (run.state == RunState::stopping && !run.killed && now >= run.kill_at) ::kill(-rank.pid, SIGKILL);
      }
    }
    if (run.state == RunState::stopping && now >= run.kill_at) run.killed = true;
    if (!all_exited || run.ended || run.paused) return;
    // Every rank has exited: wait for their pipes (bounded), take the last records, then end the run.
    for (auto& rank : run.ranks) {
      const bool pipes_open = rank.fds[0] >= 0 || rank.fds[1] >= 0;
      if (pipes_open && now - rank.exited_at < kPipeDrain) return;
      // A rank delivers its queued records before it exits; they may still be on their way in.
      if (now - rank.exited_at < kRecordsQuiet || now - run.last_record_at < kRecordsQuiet) return;
    }
    for (auto& rank : run.ranks)
      for (int s = 0; s < 2; ++s)
        if (rank.fds[s] >= 0) {
          read_pipe(run, rank, s);  // what is left in the pipe (a paused run did not read it)
          if (rank.fds[s] < 0) continue;
          ::close(rank.fds[s]);
          rank.fds[s] = -1;
        }
    while (receive_records(run) > 0) {
    }
    for (const auto& rank : run.ranks) {
      const bool failed = !(WIFEXITED(rank.wait_status) && WEXITSTATUS(rank.wait_status) == 0);
      nlohmann::json lines = nlohmann::json::array();
      if (failed)
        for (const auto& l : rank.last_lines) lines.push_back(l);
      add_record(run, dump({{"type", "rank_exit"},
                            {"rank", rank.rank},
                            {"exit_code", WIFEXITED(rank.wait_status) ? WEXITSTATUS(rank.wait_status) : -1},
                            {"signal", WIFSIGNALED(rank.wait_status) ? WTERMSIG(rank.wait_status) : 0},
                            {"description", describe_exit(rank.wait_status)},
                            {"stopped_by_agent", rank.stopped_by_agent},
                            {"time_s", rank.exited_wall_s},
                            {"last_lines", lines}}));
    }
    run.state = run.failing ? RunState::failed : run.state == RunState::stopping ? RunState::stopped : RunState::done;
    nlohmann::json end{{"type", "run_end"}, {"state", state_name(run.state)}, {"reason", run.reason}, {"time_s", wall_s()}};
    if (run.first_failed_rank) end["first_failed_rank"] = *run.first_failed_rank;
    if (run.records_dropped > 0) end["records_dropped"] = run.records_dropped;
    if (run.pauses > 0) {
      end["outbox_pauses"] = run.pauses;
      end["outbox_paused_s"] = run.paused_s;
    }
    add_record(run, dump(end));
    flush_batch(run);
    run.ended = true;
    run.ended_at = Clock::now();
    run.pull.close();  // a long-lived agent keeps no socket per finished run
    std::error_code ec;
    fs::remove(fs::path(run.dir) / "report.sock", ec);
  }

  // ---- sending ----

  void send_data(Run& run) {
    if (run.client.empty()) return;
    const auto client = clients.find(run.client);
    if (client == clients.end()) {
      run.client.clear();
      return;
    }
    // Past what was acknowledged (an ack may name frames sent before a re-attach moved next_send back),
    // before the loop's test: inside it, it could move past the last frame queued.
    if (run.next_send <= run.outbox.acked()) run.next_send = run.outbox.acked() + 1;
    while (run.next_send <= run.outbox.last_seq() && run.next_send - run.outbox.acked() <= kSendWindow) {
      const std::string frame = run.outbox.frame(run.next_send);
      try {
        if (!router.send(zmq::buffer(run.client), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return;
        router.send(zmq::buffer(frame), zmq::send_flags::dontwait);
      } catch (const zmq::error_t&) {
        run.client.clear();  // unreachable: the outbox keeps the frames for the next attach
        return;
      }
      client->second.last_sent = Clock::now();
      run.highest_sent = std::max(run.highest_sent, run.next_send);
      ++run.next_send;
    }
  }

  void heartbeats() {
    const auto now = Clock::now();
    const auto interval = std::chrono::milliseconds(protocol::kHeartbeatInterval_ms);
    for (auto it = clients.begin(); it != clients.end();) {
      if (now - it->second.last_heard > interval * protocol::kHeartbeatLiveness) {
        for (auto& [id, run] : runs)
          if (run->client == it->first) run->client.clear();  // keeps running, keeps its outbox
        it = clients.erase(it);
        continue;
      }
      if (now - it->second.last_sent >= interval) {
        reply(it->first, protocol::make_frame("heartbeat"));
        it->second.last_sent = now;
      }
      ++it;
    }
  }

  // Pauses a run whose outbox is full (said once on stderr, counted in the inventory) and resumes it
  // once acknowledgements made room.
  void update_pause(Run& run) {
    const bool full = run.outbox.full();
    if (full == run.paused) return;
    run.paused = full;
    if (full) {
      run.paused_at = Clock::now();
      ++run.pauses;
      std::cerr << "tessera-agent: run " << run.id << ": outbox full (" << run.outbox.memory_bytes()
                << " bytes in memory, " << run.outbox.spill_file_bytes() << " spilled, cap " << options.outbox_disk_bytes
                << (run.outbox.spill_error().empty() ? std::string() : "; " + run.outbox.spill_error())
                << "): its ranks are paused until the workbench acknowledges" << std::endl;
    } else {
      const double paused_s = std::chrono::duration<double>(Clock::now() - run.paused_at).count();
      run.paused_s += paused_s;
      std::cerr << "tessera-agent: run " << run.id << ": outbox has room again after " << paused_s
                << " s: its ranks resume" << std::endl;
    }
  }

  bool idle() const {
    for (const auto& [id, run] : runs)
      if (run->active() || !run->ended || run->outbox.pending() > 0) return false;
    return clients.empty();
  }

  void serve(const std::atomic<bool>& stop) {
    auto idle_since = Clock::now();
    bool stopping_all = false;
    auto stop_deadline = Clock::now();
    while (true) {
      if (stop && !stopping_all) {
        stopping_all = true;
        for (auto& [id, run] : runs)
          if (run->active() && !run->failing) {
            run->reason = "the agent was stopped";
            stop_ranks(*run, nullptr);
          }
        stop_deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options.grace_s * 1000) + 2000);
      }
      if (stopping_all) {
        bool active = false;
        for (const auto& [id, run] : runs) active = active || !run->ended;
        if (!active || Clock::now() > stop_deadline) break;
      }
      std::vector<zmq::pollitem_t> items{{router.handle(), 0, ZMQ_POLLIN, 0}};
      for (auto& [id, run] : runs) {
        update_pause(*run);
        if (run->paused) continue;  // back-pressure: its ranks block on their full queues and pipes
        if (!run->ended) items.push_back({run->pull.handle(), 0, ZMQ_POLLIN, 0});
        for (auto& rank : run->ranks)
          for (int s = 0; s < 2; ++s)
            if (rank.fds[s] >= 0) items.push_back({nullptr, rank.fds[s], ZMQ_POLLIN, 0});
      }
      bool batching = false;
      for (const auto& [id, run] : runs) batching = batching || run->batch_records > 0;
      try {
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds(batching ? 5 : 50));
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;
        continue;  // a signal: the stop flag is checked at the top
      }
      receive_requests();
      for (auto& [id, run] : runs) {
        if (!run->paused) {
          if (!run->ended) receive_records(*run);
          for (auto& rank : run->ranks)
            for (int s = 0; s < 2; ++s)
              if (rank.fds[s] >= 0) read_pipe(*run, rank, s);
        }
        reap(*run);
        if (Clock::now() - run->batch_started >= kBatchAge) flush_batch(*run);
        send_data(*run);
      }
      heartbeats();
      if (options.exit_when_idle_s > 0) {
        if (!idle()) idle_since = Clock::now();
        else if (Clock::now() - idle_since > std::chrono::duration<double>(options.exit_when_idle_s)) break;
      }
    }
  }

  AgentOptions options;
  zmq::context_t context{1};
  zmq::socket_t router;
  std::optional<zmq::socket_t> zap_socket;
  std::thread zap_thread;
  std::atomic<bool> zap_stop{false};
  std::atomic<int64_t> refused_clients{0};
  int64_t errors_counted = 0;
  std::string endpoint;
  NodeInfo node;
  std::map<std::string, std::unique_ptr<Run>> runs;
  std::map<std::string, ForgottenRun> forgotten;  // runs forget_finished_runs() took from `runs`
  std::deque<std::string> forgotten_order;        // their ids, oldest first
  std::map<std::string, Client> clients;
};

Agent::Agent(AgentOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Agent::~Agent() = default;
std::string Agent::endpoint() const { return impl_->endpoint; }
void Agent::serve(const std::atomic<bool>& stop) { impl_->serve(stop); }

}  // namespace tessera::agent
