// tessera-cli launch, runs follow, runs stop: start a run on the agents, stream it into the history,
// resume following it, stop it. With no --agents, the embedded local agent (docs/protocol.md).
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/text_table.hpp"
#include "launch/history_sink.hpp"
#include "launch/local_agent.hpp"
#include "launch/run_session.hpp"
#include "store/csv.hpp"
#include "store/errors.hpp"
#include "store/history.hpp"
#include "store/location.hpp"
#include "store/writer.hpp"

namespace tessera::cli {

namespace {

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) { g_interrupted = true; }

// A run a follower saw end: nothing on the agents to follow or stop ("lost" ones may still run there).
bool has_ended(const store::RunRecord& record) { return store::has_ended(record.status); }

std::string ended_text(const store::RunRecord& record) {
  std::string text =
      "run " + record.id + " (" + printable(record.name) + ") already ended: " + std::string(store::to_string(record.status));
  if (!record.exit_reason.empty()) text += " (" + printable(record.exit_reason, true) + ")";
  return text;
}

// Ctrl-C detaches while a run starts or is followed (g_interrupted), and is the default again after it,
// however that ends.
struct InterruptDetaches {
  struct sigaction previous {};
  InterruptDetaches() {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigaction(SIGINT, &action, &previous);
  }
  ~InterruptDetaches() { sigaction(SIGINT, &previous, nullptr); }
  InterruptDetaches(const InterruptDetaches&) = delete;
  InterruptDetaches& operator=(const InterruptDetaches&) = delete;
};

// Follows `session` into the history until the run ends (or Ctrl-C detaches), records the final state,
// and returns the exit code: 0 done or stopped or detached, 1 failed.
int follow(store::Writer& writer, const store::RunHandle& run, launch::RunSession& session, launch::HistorySink& sink,
           bool print_steps) {
  int64_t last_printed = 0;
  sink.on_step = [&](const nlohmann::json& step) {
    const auto n = step.contains("step") && step["step"].is_number_integer() ? step["step"].get<int64_t>() : int64_t{0};
    const auto loss = step.contains("loss") ? store::metric_value(step["loss"]) : std::nullopt;
    if (!print_steps || n <= last_printed || !loss) return;
    last_printed = n;
    // A diverged step's loss arrives as null: "nan", as runs show gives it.
    std::cout << "step " << std::setw(5) << n << "  loss " << format_fixed(*loss, 4);
    if (const auto tps = step.contains("tokens_per_s") ? store::metric_value(step["tokens_per_s"]) : std::nullopt)
      std::cout << "  tokens/s " << format_fixed(*tps, 0);
    std::cout << std::endl;
  };
  const auto outcome = [&] {
    InterruptDetaches interrupt;
    return session.follow(sink, g_interrupted);
  }();
  if (sink.skipped() > 0) std::cerr << "warning: " << sink.skipped() << " malformed records skipped\n";
  switch (outcome) {
    case launch::RunOutcome::running:
      writer.flush();
      std::cout << "detached; the run goes on. Follow it again with: tessera-cli runs follow " << run.id << "\n";
      return 0;
    case launch::RunOutcome::done:
      writer.set_status(run, store::RunStatus::done, {}, session.ended_ms());
      writer.flush();
      std::cout << "run " << run.id << " done (" << sink.points() << " metric points stored)\n";
      return 0;
    case launch::RunOutcome::stopped:
      writer.set_status(run, store::RunStatus::stopped, session.reason(), session.ended_ms());
      writer.flush();
      std::cout << "run " << run.id << " stopped\n";
      return 0;
    case launch::RunOutcome::failed:
      writer.set_status(run, store::RunStatus::failed, session.reason(), session.ended_ms());
      writer.flush();
      std::cerr << "run " << run.id << " failed: " << printable(session.reason(), true) << "\n";
      if (!session.failure_log().empty()) {
        std::cerr << "last lines of rank " << session.first_failed_rank().value_or(-1) << ":\n";
        for (const auto& line : session.failure_log()) std::cerr << "  " << printable(line) << "\n";  // a rank's own output
      }
      return 1;
  }
  return 1;
}

// Commits at least every 25 ms: what a follower acknowledges to the agents is what is committed, so the
// interval bounds the latency from a rank to the history (and the agents' outboxes).
store::WriterOptions follower_writer_options() {
  store::WriterOptions options;
  options.flush_interval = std::chrono::milliseconds(25);
  return options;
}

void pin_agent_key(const launch::Credentials& credentials, const std::vector<std::string>& endpoints,
                   const std::string& key_file) {
  std::string key;
  try {
    key = protocol::read_public_key(key_file);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--agent-key: ") + e.what());
  }
  protocol::KnownAgents known(credentials.known_agents_path);
  for (const auto& endpoint : endpoints) known.pin(endpoint, key);
}

}  // namespace

void add_launch_commands(CLI::App& app) {
  {
    struct LaunchOptions {
      std::string spec, agents, agent_key, name, db;
      std::vector<std::string> tags;
      bool follow = false;
      double connect_timeout_s = 5;
    };
    auto o = std::make_shared<LaunchOptions>();
    auto* cmd = app.add_subcommand("launch", "Start a run on the agents (or a local agent) and record it in the history");
    cmd->add_option("spec", o->spec, "Run spec (JSON)")->required();
    cmd->add_option("--agents", o->agents, "tcp://HOST:PORT,... one agent per node, in node order (default: a local agent)")
        ->check(non_empty());
    cmd->add_option("--agent-key", o->agent_key, "pin this agent.pub for every agent given (all share it, as in a Slurm job)");
    cmd->add_option("--name", o->name, "run name (default: the spec's name and the id's first 8 digits)");
    cmd->add_option("--tag", o->tags, "tag the run (repeatable)");
    cmd->add_flag("--follow", o->follow, "stream the run into the history and print its progress until it ends");
    cmd->add_option("--connect-timeout-s", o->connect_timeout_s, "wait this long for each agent to answer")
        ->check(finite_range(0.1, 3600.0))
        ->capture_default_str();
    cmd->add_option("--db", o->db, "History file (default: $TESSERA_DB, else $XDG_DATA_HOME/tessera/history.sqlite)")
        ->check(non_empty());
    cmd->callback([o] {
      for (const auto& tag : o->tags)
        if (const auto problem = store::tag_problem(tag); !problem.empty()) throw UsageError("--tag: " + problem);
      if (!o->name.empty())
        if (const auto problem = store::run_name_problem(o->name); !problem.empty()) throw UsageError("--name: " + problem);
      std::string spec_text;  // the file as written, for the history: read once with the spec
      const auto spec = spec::load_spec_file(o->spec, spec_text);
      const std::string path = writable_history_path(o->db);  // before any agent is asked
      require_tessera_train_runs(spec);
      const auto credentials = launch::Credentials::from_config_dir();
      std::vector<std::string> endpoints;
      if (o->agents.empty()) {
        if (spec.cluster.nodes != 1)
          throw UsageError("the spec has cluster.nodes=" + std::to_string(spec.cluster.nodes) +
                           ": give --agents with one agent per node (the local agent is one node)");
        endpoints.push_back(launch::ensure_local_agent(credentials));
      } else {
        endpoints = split_agents(o->agents);
      }
      if (!o->agent_key.empty()) pin_agent_key(credentials, endpoints, o->agent_key);
      // An agent with no pinned key is the user's configuration to mend (exit 2), said before any is asked.
      for (const auto& endpoint : endpoints) {
        try {
          credentials.server_key(endpoint);
        } catch (const launch::AgentError& e) {
          throw UsageError(e.what());
        }
      }
      // The agents must answer before the run is recorded (a Slurm job's agents may still be starting),
      // and the layout must fit what they report, as in the Launch dialog.
      {
        zmq::context_t context;
        std::vector<nlohmann::json> inventories;
        const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::duration<double>(o->connect_timeout_s));
        for (const auto& endpoint : endpoints) {
          try {
            inventories.push_back(launch::hello_within(context, endpoint, credentials, "tessera-cli", timeout));
          } catch (const launch::AgentTimeout& e) {
            throw launch::AgentTimeout(std::string(e.what()) + "; --connect-timeout-s waits longer");
          }
        }
        if (const auto problems = launch::fit_problems(spec, inventories); !problems.empty()) {
          std::string text = "the layout does not fit the agents' nodes:";
          for (const auto& p : problems) text += "\n  " + p;
          throw UsageError(text);
        }
      }
      store::ensure_parent_directory(path);
      store::Writer writer(path, follower_writer_options());
      store::RunRecord record =
          launch::launch_record(spec, nlohmann::ordered_json::parse(spec_text), endpoints, o->name,
                                spec.name.empty() ? std::filesystem::path(o->spec).stem().string() : spec.name);
      record.tags = o->tags;
      store::RunHandle run;
      try {
        run = writer.create_run(record);
      } catch (const store::StoreError& e) {
        if (e.is_user_error()) throw UsageError(e.what());
        throw;
      }
      launch::RunSession session(run.id, endpoints, credentials);
      {
        // Ctrl-C while the agents start the ranks lets them finish (each request within its time) and
        // then detaches: killed here, the run would be left starting while its ranks train.
        InterruptDetaches interrupt;
        try {
          session.launch(spec);
        } catch (const std::exception& e) {
          writer.set_status(run, store::RunStatus::failed, e.what());
          writer.flush();
          throw;
        }
        writer.set_status(run, store::RunStatus::running);
        writer.flush();
      }
      std::cout << "run " << run.id << " (" << printable(record.name) << ") started: " << spec.world_size() << " ranks on "
                << endpoints.size() << (endpoints.size() == 1 ? " node" : " nodes") << std::endl;
      if (g_interrupted) {
        std::cout << "interrupted: detached; the run goes on. Follow it with: tessera-cli runs follow " << run.id << "\n";
        return;
      }
      if (!o->follow) {
        std::cout << "follow it with: tessera-cli runs follow " << run.id << "\n";
        return;
      }
      launch::HistorySink sink(writer, run);
      if (const int code = follow(writer, run, session, sink, true); code != 0) throw std::runtime_error("the run failed");
    });
  }

  auto* runs = app.get_subcommand("runs");
  {
    struct RunOptions {
      std::string db, id;
      bool quiet = false, agents_gone = false;
    };
    auto o = std::make_shared<RunOptions>();
    auto* cmd = runs->add_subcommand("follow", "Attach to a running run again and stream it into the history (backfills)");
    cmd->add_option("id", o->id, "Run id, unique id prefix, or name")->required();
    cmd->add_option("--db", o->db, "History file")->check(non_empty());
    cmd->add_flag("--quiet", o->quiet, "do not print the steps");
    cmd->add_flag("--agents-gone", o->agents_gone,
                  "record the nodes whose agents do not answer as lost, even when none answers (the run fails)");
    cmd->callback([o] {
      const std::string path = writable_history_path(o->db);
      store::RunRecord record;
      std::vector<store::StreamPosition> positions;
      std::map<int64_t, double> last_wall_s;
      try {
        store::History history(path);
        record = history.run(history.resolve(o->id));
        positions = history.stream_positions(record.id);
        last_wall_s = history.last_wall_times(record.id);
      } catch (const store::StoreError& e) {
        if (e.is_user_error()) throw UsageError(e.what());
        throw;
      }
      if (record.hosts.empty()) throw UsageError("run " + record.id + " was not launched through agents");
      if (has_ended(record)) {
        std::cout << ended_text(record) << "; its history is complete (tessera-cli runs show " << record.id.substr(0, 12) << ")\n";
        return;
      }
      store::Writer writer(path, follower_writer_options());  // leaves a detached agent run running
      store::RunHandle run;
      try {
        run = writer.open_run(record.id);
      } catch (const store::StoreError& e) {
        if (e.kind() != store::ErrorKind::locked) throw;
        throw std::runtime_error(std::string(e.what()) + ": it follows the run into the history already (tessera-cli runs show " +
                                 record.id.substr(0, 12) + " reads what it has recorded)");
      }
      // Its follower may have recorded the end and let the lease go since the run was read.
      if (const auto now = store::History(path).run(record.id); has_ended(now)) {
        writer.release_run(run);
        std::cout << ended_text(now) << "; its history is complete (tessera-cli runs show " << record.id.substr(0, 12) << ")\n";
        return;
      }
      launch::RunSession session(record.id, record.hosts, launch::Credentials::from_config_dir());
      writer.set_status(run, store::RunStatus::running);
      launch::HistorySink sink(writer, run, positions, last_wall_s);
      try {
        session.attach(sink, o->agents_gone);
      } catch (const launch::AgentTimeout& e) {
        throw std::runtime_error(std::string(e.what()) + "; the run stays running. If its agents are gone for good, "
                                 "tessera-cli runs follow " + record.id.substr(0, 12) +
                                 " --agents-gone records it failed with what the history holds");
      }
      std::cout << "following run " << record.id << " (" << printable(record.name) << ")" << std::endl;
      if (follow(writer, run, session, sink, !o->quiet) != 0) throw std::runtime_error("the run failed");
    });
  }
  {
    struct StopOptions {
      std::string db, id, reason;
    };
    auto o = std::make_shared<StopOptions>();
    auto* cmd = runs->add_subcommand("stop", "Stop a run on every agent running it");
    cmd->add_option("id", o->id, "Run id, unique id prefix, or name")->required();
    cmd->add_option("--reason", o->reason, "recorded as the run's exit reason")->default_val("stopped by the user");
    cmd->add_option("--db", o->db, "History file")->check(non_empty());
    cmd->callback([o] {
      store::RunRecord record;
      try {
        store::History history(writable_history_path(o->db));
        record = history.run(history.resolve(o->id));
      } catch (const store::StoreError& e) {
        if (e.is_user_error()) throw UsageError(e.what());
        throw;
      }
      if (record.hosts.empty()) throw UsageError("run " + record.id + " was not launched through agents");
      if (has_ended(record)) {
        std::cout << ended_text(record) << "; nothing to stop\n";
        return;
      }
      const auto credentials = launch::Credentials::from_config_dir();
      zmq::context_t context;
      int reached = 0;
      for (const auto& endpoint : record.hosts) {
        try {
          launch::AgentConnection connection(context, endpoint, credentials);
          const auto reply = connection.request("stop", {{"run", record.id}, {"reason", o->reason}}, "stopping",
                                                std::chrono::milliseconds(3000));
          std::cout << endpoint << ": " << reply.value("state", std::string("stopping")) << "\n";
          ++reached;
        } catch (const launch::AgentError& e) {
          std::cerr << "warning: " << printable(e.what(), true) << "\n";
        }
      }
      if (reached == 0) throw std::runtime_error("no agent of run " + record.id + " could be reached");
      std::cout << "stop sent to " << reached << " of " << record.hosts.size()
                << " agents; the follower records the final state (tessera-cli runs follow " << record.id.substr(0, 12)
                << " if none is running)\n";
    });
  }
}

}  // namespace tessera::cli
