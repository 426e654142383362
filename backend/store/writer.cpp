// The writer thread: a bounded queue of records, drained in one transaction per batch.
#include "store/writer.hpp"

#include <algorithm>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <variant>

#include "store/errors.hpp"
#include "store/ingest.hpp"
#include "store/location.hpp"
#include "store/run_lease.hpp"
#include "store/schema.hpp"
#include "store/sqlite.hpp"

namespace tessera::store {

namespace {

struct CreateRequest {
  RunRecord run;
  std::promise<RunHandle> done;
  std::optional<RunHandle> result;
  std::optional<StoreError> error;  ///< a refusal of this run only (duplicate, invalid)
};

struct MetricRecord {
  int64_t run;
  MetricPoint point;
};
struct GroupRecord {
  int64_t run;
  std::vector<MetricPoint> points;
};
struct EventRecord {
  int64_t run;
  TimelineEvent event;
};
struct LogRecord {
  int64_t run;
  LogLine line;
};
struct ArtifactRecord {
  int64_t run;
  Artifact artifact;
};
struct PositionRecord {
  int64_t run;
  StreamPosition position;
};
struct StatusRecord {
  int64_t run;
  RunStatus status;
  std::string exit_reason;
  int64_t time_ms;
};
struct CreateRecord {
  std::unique_ptr<CreateRequest> request;
};
using Record = std::variant<MetricRecord, GroupRecord, EventRecord, LogRecord, ArtifactRecord, PositionRecord, StatusRecord,
                            CreateRecord>;

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

void check_point(const MetricPoint& p) {
  if (const auto problem = metric_name_problem(p.name); !problem.empty())
    throw StoreError(ErrorKind::invalid, "a metric point's name: " + problem);
  if (p.step < 0 || p.rank < 0)
    throw StoreError(ErrorKind::invalid, "metric point '" + p.name + "' has a negative step or rank (step " +
                                             std::to_string(p.step) + ", rank " + std::to_string(p.rank) + ")");
  if (const auto problem = wall_time_problem(p.wall_time_s); !problem.empty())
    throw StoreError(ErrorKind::invalid, "metric point '" + p.name + "' (step " + std::to_string(p.step) + ", rank " +
                                             std::to_string(p.rank) + "): " + problem);
}

// The run a record belongs to; nullopt for a run being created.
std::optional<int64_t> run_of(const Record& record) {
  return std::visit(Overloaded{[](const CreateRecord&) -> std::optional<int64_t> { return std::nullopt; },
                               [](const auto& r) -> std::optional<int64_t> { return r.run; }},
                    record);
}

int64_t count_points(const Record& record) {
  if (std::holds_alternative<MetricRecord>(record)) return 1;
  if (const auto* g = std::get_if<GroupRecord>(&record)) return static_cast<int64_t>(g->points.size());
  return 0;
}

// One writer per history file in a process: the histories this process writes (canonical paths).
class ProcessWriters {
 public:
  explicit ProcessWriters(const std::string& history_path) : path_(canonical_history_path(history_path)) {
    std::lock_guard lock(mutex());
    if (!paths().insert(path_).second)
      throw StoreError(ErrorKind::locked, "history " + history_path + " is already being written by this process");
  }
  ~ProcessWriters() {
    std::lock_guard lock(mutex());
    paths().erase(path_);
  }
  ProcessWriters(const ProcessWriters&) = delete;
  ProcessWriters& operator=(const ProcessWriters&) = delete;

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::set<std::string>& paths() {
    static std::set<std::string> s;
    return s;
  }
  std::string path_;
};

}  // namespace

struct Writer::Impl {
  std::string path;
  WriterOptions options;
  ProcessWriters one_per_process;
  Connection connection;
  Ingest ingest;
  Statement update_status;
  Statement run_exists;

  mutable std::mutex mutex;
  std::condition_variable work_cv, space_cv, done_cv;
  std::vector<Record> queue;
  int64_t queued_weight = 0;
  int64_t enqueued = 0;   ///< records ever queued (their sequence numbers)
  int64_t committed = 0;  ///< sequence number of the last committed record
  bool flush_requested = false;
  bool stopping = false;
  bool closed = false;
  std::optional<StoreError> error;
  /// Runs deleted (runs delete --force) while records of theirs were being written: nothing more is
  /// written for them, and their producers are told so; the writer goes on for the others.
  std::set<int64_t> deleted_runs;
  std::chrono::steady_clock::time_point oldest;
  CommitStats stats;
  std::thread thread;
  std::vector<Ingest::Point> points;  ///< the metric points of the batch being written (writer thread)
  std::mutex leases_mutex;
  std::map<std::string, std::unique_ptr<RunLease>> leases;  ///< the runs this writer records, by id

  Impl(const std::string& p, WriterOptions o)
      : path(p),
        options(std::move(o)),
        one_per_process(p),
        connection(open_history(p)),
        ingest(connection, Ingest::OnDuplicate::replace),
        update_status(connection, R"sql(
          UPDATE runs SET status = ?2, exit_reason = ?3,
            started_ms = CASE WHEN ?2 IN ('starting', 'running') THEN coalesce(started_ms, ?4) ELSE started_ms END,
            ended_ms = CASE WHEN ?2 IN ('starting', 'running') AND status = 'lost' THEN NULL
                            WHEN ?2 IN ('done', 'failed', 'stopped', 'lost') THEN coalesce(ended_ms, max(?4, coalesce(started_ms, ?4)))
                            ELSE ended_ms END
          WHERE key = ?1)sql"),
        run_exists(connection, "SELECT 1 FROM runs WHERE key = ?") {
    connection.exec("PRAGMA busy_timeout = 60000; PRAGMA cache_size = -32768", "setting up the writer connection");
    if (options.max_db_bytes > 0) {
      Statement page_size(connection, "PRAGMA page_size");
      page_size.step("reading the page size");
      const int64_t pages = std::max<int64_t>(1, options.max_db_bytes / page_size.column_int(0));
      connection.exec("PRAGMA max_page_count = " + std::to_string(pages), "setting the size limit");
    }
    mark_abandoned_runs_lost();
    thread = std::thread([this] { run(); });
  }

  // Runs left starting or running by a writer that ended without closing them (nobody holds their lease)
  // are marked lost. A run held by agents (hosts given) may go on without a follower (the launcher was
  // interrupted or killed once it had asked them, or the follower detached): it stays starting or
  // running (detached) until a follower attaches again and records how it ended (failed, naming the
  // nodes, when its agents do not hold it). Lease files nobody holds any more (a process killed between
  // taking a lease and recording its run) are removed.
  void mark_abandoned_runs_lost() {
    const char* const abandoned = "(status IN ('starting', 'running') AND hosts_json = '[]')";
    std::vector<std::pair<std::string, int64_t>> candidates;
    {
      Statement select(connection, std::string("SELECT id, key FROM runs WHERE ") + abandoned);
      while (select.step("finding runs left unfinished")) candidates.emplace_back(select.column_text(0), select.column_int(1));
    }
    std::vector<std::unique_ptr<RunLease>> taken;  // held while they are marked: nobody attaches meanwhile
    for (const auto& [id, key] : candidates) {
      // Not taken: recorded by a live process, or a lease this process cannot take (a file of another
      // user's): left as it is rather than refusing to write the history at all.
      auto lease = RunLease::try_take(path, id);
      if (!lease) continue;
      taken.push_back(std::move(lease));
      Statement mark(connection, std::string("UPDATE runs SET status = 'lost', ended_ms = ?, exit_reason = "
                                             "'the process writing it ended without closing it' WHERE key = ? AND ") +
                                     abandoned);
      mark.bind_int(1, now_ms()).bind_int(2, key).run("marking a run of a writer that ended as lost");
    }
    for (const auto& id : RunLease::files(path))
      RunLease::try_take(path, id);  // taken and given back at once, the file goes; held ones stay
  }

  // The lease of run `id` for this writer (taken once; a second open of a run it records is a no-op).
  // True when it was taken now.
  bool take_lease(const std::string& id) {
    std::lock_guard lock(leases_mutex);
    if (leases.count(id)) return false;
    leases.emplace(id, std::make_unique<RunLease>(path, id));
    return true;
  }
  void drop_lease(const std::string& id) {
    std::lock_guard lock(leases_mutex);
    leases.erase(id);
  }

  int64_t push(Record&& record, int64_t weight) {
    std::unique_lock lk(mutex);
    space_cv.wait(lk, [&] { return error || closed || queued_weight == 0 || queued_weight + weight <= options.queue_points; });
    if (error) throw *error;
    if (closed) throw StoreError(ErrorKind::invalid, "the writer of history " + path + " is closed");
    if (const auto run = run_of(record); run && deleted_runs.count(*run))
      throw StoreError(ErrorKind::not_found, "the run was deleted from history " + path +
                                                 " while it was being recorded (runs delete --force): nothing more is written for it");
    const bool was_empty = queue.empty();
    if (was_empty) oldest = std::chrono::steady_clock::now();
    const bool reaches_batch = queued_weight < options.batch_points && queued_weight + weight >= options.batch_points;
    queue.push_back(std::move(record));
    queued_weight += weight;
    const int64_t sequence = ++enqueued;
    lk.unlock();
    if (was_empty || reaches_batch) work_cv.notify_one();
    return sequence;
  }

  void wait_committed(int64_t sequence) {
    std::unique_lock lk(mutex);
    if (committed >= sequence) return;
    flush_requested = true;
    work_cv.notify_one();
    done_cv.wait(lk, [&] { return error || committed >= sequence; });
    if (committed < sequence) throw *error;
  }

  // The batch's metric points are inserted after its other records, ordered by (series, step), so that
  // consecutive inserts land on the same B-tree pages instead of hopping between the batch's series.
  // The sort is stable: a point repeated within the batch still ends with its last value.
  void write_points(CommitStats& delta) {
    std::stable_sort(points.begin(), points.end(), [](const Ingest::Point& a, const Ingest::Point& b) {
      return a.series < b.series || (a.series == b.series && a.step < b.step);
    });
    ingest.metrics(points);
    delta.points += static_cast<int64_t>(points.size());
    points.clear();
  }

  // Runs of the batch that are no longer in the history (deleted by another process meanwhile).
  std::set<int64_t> gone_runs(const std::vector<Record>& batch) {
    std::set<int64_t> checked, gone;
    for (const auto& record : batch) {
      const auto run = run_of(record);
      if (!run || !checked.insert(*run).second) continue;
      if (!run_exists.bind_int(1, *run).step("checking that a run is still there")) gone.insert(*run);
      run_exists.reset();
    }
    return gone;
  }

  void write(std::vector<Record>& batch, CommitStats& delta, std::set<int64_t>& gone) {
    Transaction transaction(connection);
    points.clear();
    // Records of a deleted run would be orphans (rows whose run is no longer there): dropped.
    gone = gone_runs(batch);
    if (!gone.empty())
      std::erase_if(batch, [&](const Record& record) {
        const auto run = run_of(record);
        return run && gone.count(*run);
      });
    const auto add_point = [&](int64_t run, const MetricPoint& p) {
      points.push_back({ingest.series_id(run, ingest.metric_id(p.name), p.rank), p.step, p.wall_time_s, p.value});
    };
    for (auto& record : batch) {
      std::visit(Overloaded{
                     [&](MetricRecord& r) { add_point(r.run, r.point); },
                     [&](GroupRecord& r) {
                       for (const auto& p : r.points) add_point(r.run, p);
                     },
                     [&](EventRecord& r) { ingest.event(r.run, r.event); },
                     [&](LogRecord& r) { ingest.log(r.run, r.line); },
                     [&](ArtifactRecord& r) { ingest.artifact(r.run, r.artifact); },
                     [&](PositionRecord& r) { ingest.stream_position(r.run, r.position); },
                     [&](StatusRecord& r) {
                       update_status.bind_int(1, r.run)
                           .bind_text(2, to_string(r.status))
                           .bind_text(3, r.exit_reason)
                           .bind_int(4, r.time_ms)
                           .run("updating a run's status");
                     },
                     [&](CreateRecord& r) {
                       auto& request = *r.request;
                       try {
                         request.result = RunHandle{request.run.id, insert_run(connection, request.run)};
                       } catch (const StoreError& e) {
                         if (e.kind() != ErrorKind::duplicate && e.kind() != ErrorKind::invalid) throw;
                         request.error = e;  // refused before anything was written
                       }
                     },
                 },
                 record);
    }
    write_points(delta);
    for (const auto& record : batch) delta.records += std::max<int64_t>(1, count_points(record));
    ingest.finish();
    transaction.commit();
    delta.batches = 1;
  }

  void run() {
    std::vector<Record> batch;
    std::unique_lock lk(mutex);
    for (;;) {
      work_cv.wait(lk, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;  // stopping, everything written
      work_cv.wait_until(lk, oldest + options.flush_interval,
                         [&] { return stopping || flush_requested || queued_weight >= options.batch_points; });
      batch.swap(queue);
      const int64_t last = enqueued;
      queued_weight = 0;
      flush_requested = false;
      lk.unlock();
      space_cv.notify_all();

      CommitStats delta;
      std::set<int64_t> gone;
      std::optional<StoreError> failure;
      try {
        write(batch, delta, gone);
      } catch (const StoreError& e) {
        failure = e;
      } catch (const std::exception& e) {
        failure = StoreError(ErrorKind::io, "history " + path + ": writing a batch failed: " + e.what());
      }
      if (failure) {
        ingest.discard();
        lk.lock();
        int64_t lost = 0;
        for (const auto& record : batch) lost += std::max<int64_t>(1, count_points(record));
        for (const auto& record : queue) lost += std::max<int64_t>(1, count_points(record));
        error = StoreError(failure->kind(), std::string(failure->what()) + "; " + std::to_string(lost) +
                                                " queued records were not written");
        for (auto* records : {&batch, &queue})
          for (auto& record : *records)
            if (auto* create = std::get_if<CreateRecord>(&record))
              create->request->done.set_exception(std::make_exception_ptr(*error));
        queue.clear();
        queued_weight = 0;
        lk.unlock();
        done_cv.notify_all();
        space_cv.notify_all();
        return;
      }
      lk.lock();
      deleted_runs.insert(gone.begin(), gone.end());
      stats.batches += delta.batches;
      stats.points += delta.points;
      stats.records += delta.records;
      committed = last;
      const CommitStats snapshot = stats;
      lk.unlock();
      done_cv.notify_all();
      for (auto& record : batch)
        if (auto* create = std::get_if<CreateRecord>(&record)) {
          auto& request = *create->request;
          if (request.result)
            request.done.set_value(*request.result);
          else
            request.done.set_exception(std::make_exception_ptr(*request.error));
        }
      batch.clear();
      if (options.on_commit) options.on_commit(snapshot);
      lk.lock();
    }
  }

  void stop() {
    {
      std::lock_guard lk(mutex);
      stopping = true;
      closed = true;
    }
    work_cv.notify_one();
    space_cv.notify_all();
    if (thread.joinable()) thread.join();
    std::lock_guard lock(leases_mutex);
    leases.clear();  // after the last commit
  }
};

Writer::Writer(const std::string& path, WriterOptions options) {
  if (options.batch_points < 1 || options.queue_points < 1 || options.flush_interval.count() < 1 || options.max_db_bytes < 0)
    throw StoreError(ErrorKind::invalid, "writer options: batch_points, queue_points and flush_interval must be positive");
  impl_ = std::make_unique<Impl>(path, std::move(options));
}

Writer::~Writer() {
  if (impl_) impl_->stop();
}

RunHandle Writer::create_run(RunRecord run) {
  if (run.id.empty()) run.id = new_run_id();
  if (run.created_ms == 0) run.created_ms = now_ms();
  if (run.tessera_version.empty()) run.tessera_version = tessera_version();
  if (!run.started_ms && (run.status == RunStatus::starting || run.status == RunStatus::running))
    run.started_ms = run.created_ms;  // as set_status does: a run taken up again keeps its start
  const std::string id = run.id;
  const bool taken = impl_->take_lease(id);  // before the row exists: no other writer sees it unheld (refuses a bad id)
  try {
    auto request = std::make_unique<CreateRequest>();
    request->run = std::move(run);
    auto done = request->done.get_future();
    const int64_t sequence = impl_->push(CreateRecord{std::move(request)}, 1);
    impl_->wait_committed(sequence);
    return done.get();
  } catch (...) {
    if (taken) impl_->drop_lease(id);
    throw;
  }
}

RunHandle Writer::open_run(const std::string& id) {
  Connection connection = open_history(impl_->path);  // a reader's connection: keys are never reused
  Statement select(connection, "SELECT key FROM runs WHERE id = ?");
  select.bind_text(1, id);
  if (!select.step("finding a run")) throw StoreError(ErrorKind::not_found, "no run " + id + " in history " + impl_->path);
  RunHandle handle{id, select.column_int(0)};
  impl_->take_lease(id);
  return handle;
}

void Writer::release_run(const RunHandle& run) {
  try {
    flush();
  } catch (...) {
    impl_->drop_lease(run.id);
    throw;
  }
  impl_->drop_lease(run.id);
}

void Writer::append(const RunHandle& run, MetricPoint point) {
  check_point(point);
  impl_->push(MetricRecord{run.key, std::move(point)}, 1);
}

void Writer::append(const RunHandle& run, std::vector<MetricPoint> points) {
  if (points.empty()) return;
  for (const auto& p : points) check_point(p);
  const auto weight = static_cast<int64_t>(points.size());
  impl_->push(GroupRecord{run.key, std::move(points)}, weight);
}

void Writer::append(const RunHandle& run, TimelineEvent event) {
  if (const auto problem = timeline_event_problem(event); !problem.empty())
    throw StoreError(ErrorKind::invalid, "timeline event " + event.op + " (step " + std::to_string(event.step) + ", rank " +
                                             std::to_string(event.rank) + "): " + problem);
  impl_->push(EventRecord{run.key, std::move(event)}, 1);
}

void Writer::append(const RunHandle& run, LogLine line) {
  if (const auto problem = log_line_problem(line); !problem.empty())
    throw StoreError(ErrorKind::invalid, "log line of rank " + std::to_string(line.rank) + ": " + problem);
  impl_->push(LogRecord{run.key, std::move(line)}, 1);
}

void Writer::append(const RunHandle& run, Artifact artifact) {
  if (const auto problem = artifact_problem(artifact); !problem.empty())
    throw StoreError(ErrorKind::invalid, "artifact " + artifact.path + ": " + problem);
  impl_->push(ArtifactRecord{run.key, std::move(artifact)}, 1);
}
int64_t Writer::append(const RunHandle& run, StreamPosition position) { return impl_->push(PositionRecord{run.key, position}, 1); }

void Writer::set_status(const RunHandle& run, RunStatus status, std::string exit_reason, std::optional<int64_t> at_ms) {
  const int64_t now = now_ms();
  impl_->push(StatusRecord{run.key, status, std::move(exit_reason), at_ms && *at_ms > 0 ? std::min(*at_ms, now) : now}, 1);
}

void Writer::flush() {
  int64_t sequence;
  {
    std::lock_guard lk(impl_->mutex);
    if (impl_->error) throw *impl_->error;
    sequence = impl_->enqueued;
  }
  impl_->wait_committed(sequence);
}

void Writer::close() {
  impl_->stop();
  std::lock_guard lk(impl_->mutex);
  if (impl_->error) throw *impl_->error;
}

CommitStats Writer::committed() const {
  std::lock_guard lk(impl_->mutex);
  return impl_->stats;
}

int64_t Writer::committed_sequence() const {
  std::lock_guard lk(impl_->mutex);
  return impl_->committed;
}

}  // namespace tessera::store
