// RunController: launch / attach / follow on a worker thread, results posted to the GUI thread.
#include "run_controller.hpp"

#include <algorithm>
#include <map>

#include <QMetaObject>
#include <QPointer>

#include "launch/history_sink.hpp"
#include "launch/local_agent.hpp"
#include "store/history.hpp"
#include "store/location.hpp"
#include "store/run_lease.hpp"
#include "store/writer.hpp"

namespace tessera::ui {

namespace {

// The follower's writer commits at least every 25 ms: what it acknowledges to the agents is what is
// committed, so this bounds the latency from a rank to the history (as tessera-cli launch --follow).
store::WriterOptions followerOptions() {
  store::WriterOptions options;
  options.flush_interval = std::chrono::milliseconds(25);
  return options;
}

// Gives the run's lease back (another process may follow it now); the writer's errors are left to
// what reports the run.
void release(store::Writer* writer, const store::RunHandle& run) {
  if (!writer || run.id.empty()) return;
  try {
    writer->release_run(run);
  } catch (const std::exception&) {
    // the run's end is reported already (finished) or the error that brought us here is
  }
}

}  // namespace

std::mutex& writersMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, std::weak_ptr<store::Writer>>& writers() {
  static std::map<std::string, std::weak_ptr<store::Writer>> map;
  return map;
}

std::shared_ptr<store::Writer> sharedWriter(const std::string& db_path) {
  std::lock_guard lock(writersMutex());
  auto& slot = writers()[db_path];
  if (auto writer = slot.lock()) return writer;
  store::ensure_parent_directory(db_path);
  auto writer = std::make_shared<store::Writer>(db_path, followerOptions());
  slot = writer;
  return writer;
}

bool RunController::canFollow(const QString& db_path, const QString& run_id) {
  try {
    return !store::RunLease::holder(db_path.toStdString(), run_id.toStdString());
  } catch (const std::exception&) {
    return false;
  }
}

RunController::RunController(QObject* parent) : QObject(parent) {}

RunController::~RunController() {
  detach();
  if (worker_.joinable()) worker_.join();
}

void RunController::post(std::function<void()> fn) {
  QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection);
}

void RunController::start(std::function<void()> body) {
  if (worker_.joinable()) {
    if (!wait(2000)) throw std::logic_error("this controller already follows a run");
    worker_.join();
  }
  finished_ = false;
  interrupt_ = stop_requested_ = detach_requested_ = false;
  {
    std::lock_guard lock(mutex_);
    run_id_.clear();
    pids_.clear();
    node_ranks_.clear();
    outcome_ = launch::RunOutcome::running;
    reason_.clear();
    failed_rank_.reset();
    failure_log_.clear();
  }
  worker_ = std::thread([this, body = std::move(body)] {
    body();
    finished_ = true;
  });
}

void RunController::launch(LaunchRequest request) {
  start([this, request = std::move(request)] { runLaunch(request); });
}

void RunController::attach(const QString& run_id, const QString& db_path) {
  attaching_ = true;
  start([this, id = run_id.toStdString(), path = db_path.toStdString()] { runAttach(id, path); });
}

void RunController::stop() {
  stop_requested_ = true;
  interrupt_ = true;
}

void RunController::detach() {
  detach_requested_ = true;
  interrupt_ = true;
}

bool RunController::wait(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!finished_ && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return finished_;
}

void RunController::runLaunch(const LaunchRequest& request) {
  std::shared_ptr<store::Writer> writer;
  store::RunHandle run;
  auto say = [this](const std::string& text) { post([this, t = QString::fromStdString(text)] { emit progress(t); }); };
  try {
    const auto credentials = launch::Credentials::from_config_dir();
    std::vector<std::string> endpoints = request.agents;
    if (endpoints.empty()) {
      if (request.spec.cluster.nodes != 1)
        throw std::invalid_argument("cluster.nodes=" + std::to_string(request.spec.cluster.nodes) +
                                    " needs one agent per node; the local agent is one node");
      say("starting the local agent");
      endpoints.push_back(launch::ensure_local_agent(credentials));
    }
    say("recording the run");
    writer = sharedWriter(request.db_path);
    store::RunRecord record = launch::launch_record(request.spec, request.spec_json, endpoints, request.name,
                                                    request.spec.name.empty() ? std::string("run") : request.spec.name);
    record.tags = request.tags;
    record.notes = request.notes;
    run = writer->create_run(record);
    {
      std::lock_guard lock(mutex_);
      run_id_ = run.id;
      node_ranks_ = launch::node_shares(request.spec);
    }
    post([this, id = QString::fromStdString(run.id)] { emit recorded(id); });
    launch::RunSession session(run.id, endpoints, credentials);
    say("starting " + std::to_string(request.spec.world_size()) + " ranks on " + std::to_string(endpoints.size()) +
        (endpoints.size() == 1 ? " node" : " nodes"));
    try {
      session.launch(request.spec);
    } catch (const std::exception& e) {
      writer->set_status(run, store::RunStatus::failed, e.what());
      writer->flush();
      throw;
    }
    writer->set_status(run, store::RunStatus::running);
    {
      std::lock_guard lock(mutex_);
      for (const auto& node : session.nodes()) pids_.insert(pids_.end(), node.pids.begin(), node.pids.end());
    }
    for (size_t node = 0; node < session.nodes().size(); ++node)
      say("node " + std::to_string(node) + " (" + session.nodes()[node].endpoint + "): " +
          std::to_string(session.nodes()[node].pids.size()) + " ranks started");
    post([this, id = QString::fromStdString(run.id)] { emit launched(id); });
    launch::HistorySink sink(*writer, run);
    follow(*writer, run.id, session, sink);
    release(writer.get(), run);
  } catch (const std::exception& e) {
    release(writer.get(), run);
    fail(e.what());
  }
}

void RunController::fail(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    outcome_ = launch::RunOutcome::failed;
    reason_ = reason;
  }
  post([this, m = QString::fromStdString(reason)] {
    emit launchFailed(m);
    emit finished(static_cast<int>(launch::RunOutcome::failed));
  });
}

void RunController::runAttach(const std::string& run_id, const std::string& db_path) {
  std::shared_ptr<store::Writer> writer;
  store::RunHandle run;
  try {
    store::RunRecord record;
    std::vector<store::StreamPosition> positions;
    std::map<int64_t, double> last_wall_s;
    {
      store::History history(db_path);
      record = history.run(history.resolve(run_id));
      positions = history.stream_positions(record.id);
      last_wall_s = history.last_wall_times(record.id);
    }
    if (record.hosts.empty()) throw std::invalid_argument("run " + record.id + " was not launched through agents");
    writer = sharedWriter(db_path);
    run = writer->open_run(record.id);
    // Its follower may have recorded the end and let the lease go since the run was read.
    if (const auto status = store::History(db_path).run(record.id).status; store::has_ended(status))
      throw std::runtime_error("run " + record.id.substr(0, 8) + " ended (" + std::string(store::to_string(status)) +
                               ") while it was being opened; its history is complete");
    {
      std::lock_guard lock(mutex_);
      run_id_ = record.id;
      try {
        node_ranks_ = launch::node_shares(spec::parse_stored_spec(nlohmann::json::parse(record.spec.dump())));
      } catch (const std::exception&) {
        node_ranks_.clear();
      }
    }
    post([this] { emit progress(tr("reattaching to the agents")); });
    launch::RunSession session(record.id, record.hosts, launch::Credentials::from_config_dir());
    writer->set_status(run, store::RunStatus::running);
    launch::HistorySink sink(*writer, run, positions, last_wall_s);
    session.attach(sink);
    post([this, id = QString::fromStdString(record.id)] {
      emit progress(tr("following again; what was missed is backfilled"));
      emit launched(id);
    });
    follow(*writer, record.id, session, sink);
    release(writer.get(), run);
  } catch (const std::exception& e) {
    release(writer.get(), run);
    fail(e.what());
  }
}

void RunController::follow(store::Writer& writer, const std::string& run_id, launch::RunSession& session,
                           launch::HistorySink& sink) {
  store::RunHandle run = writer.open_run(run_id);
  bool stop_sent = false;
  auto outcome = launch::RunOutcome::running;
  try {
    while (true) {
      outcome = session.follow(sink, interrupt_);
      if (outcome != launch::RunOutcome::running || detach_requested_) break;
      interrupt_ = false;
      if (stop_requested_ && !stop_sent) {
        session.stop("stopped by the user");
        stop_sent = true;
      }
    }
  } catch (const launch::RunGone& e) {
    // Deleted from the history while followed (runs delete --force): its ranks were asked to stop,
    // and there is no run left to record the end in. It did start: not a launch failure.
    {
      std::lock_guard lock(mutex_);
      outcome_ = launch::RunOutcome::stopped;
      reason_ = e.what();
    }
    post([this] { emit finished(static_cast<int>(launch::RunOutcome::stopped)); });
    return;
  }
  switch (outcome) {
    case launch::RunOutcome::running: break;  // detached: the run goes on, its status stays running
    case launch::RunOutcome::done: writer.set_status(run, store::RunStatus::done, {}, session.ended_ms()); break;
    case launch::RunOutcome::stopped: writer.set_status(run, store::RunStatus::stopped, session.reason(), session.ended_ms()); break;
    case launch::RunOutcome::failed: writer.set_status(run, store::RunStatus::failed, session.reason(), session.ended_ms()); break;
  }
  writer.flush();
  {
    std::lock_guard lock(mutex_);
    outcome_ = outcome;
    reason_ = session.reason();
    failed_rank_ = session.first_failed_rank();
    failure_log_ = session.failure_log();
  }
  post([this, outcome] { emit finished(static_cast<int>(outcome)); });
}

QString RunController::runId() const {
  std::lock_guard lock(mutex_);
  return QString::fromStdString(run_id_);
}

std::vector<std::pair<int64_t, int64_t>> RunController::pids() const {
  std::lock_guard lock(mutex_);
  return pids_;
}

launch::RunOutcome RunController::outcome() const {
  std::lock_guard lock(mutex_);
  return outcome_;
}

QString RunController::reason() const {
  std::lock_guard lock(mutex_);
  return QString::fromStdString(reason_);
}

std::optional<int64_t> RunController::failedRank() const {
  std::lock_guard lock(mutex_);
  return failed_rank_;
}

std::optional<int64_t> RunController::nodeOf(int64_t rank) const {
  std::lock_guard lock(mutex_);
  for (size_t node = 0; node < node_ranks_.size(); ++node)
    if (std::find(node_ranks_[node].begin(), node_ranks_[node].end(), rank) != node_ranks_[node].end())
      return static_cast<int64_t>(node);
  return std::nullopt;
}

QStringList RunController::failureLog() const {
  std::lock_guard lock(mutex_);
  QStringList out;
  for (const auto& line : failure_log_) out << QString::fromStdString(line);
  return out;
}

}  // namespace tessera::ui
