// The history's writer: one per process and per file, a thread that commits what producers append in
// batched transactions (every 100 ms or every N points) through prepared statements, in WAL mode with
// synchronous=NORMAL. The queue is bounded: producers block while it is full. Several processes write
// one history at once, each recording its own runs (a run's lease, store/run_lease.hpp, says which
// process records it). Readers (History) work meanwhile on their own connections.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/types.hpp"

namespace tessera::store {

/// What has been committed so far (cumulative).
struct CommitStats {
  int64_t batches = 0;  ///< transactions committed
  int64_t points = 0;   ///< metric points committed
  int64_t records = 0;  ///< everything committed: points, events, log lines, artifacts, runs, statuses
};

struct WriterOptions {
  int64_t batch_points = 20000;                       ///< commit as soon as this many records wait...
  std::chrono::milliseconds flush_interval{100};      ///< ...or when the oldest waiting one is this old
  int64_t queue_points = 200000;                      ///< producers block while this many records wait
  int64_t max_db_bytes = 0;                           ///< size limit of the file (0 = none); see docs/store.md
  std::function<void(const CommitStats&)> on_commit;  ///< called on the writer thread after each commit
};

/// A run the writer appends to (from create_run).
struct RunHandle {
  std::string id;
  int64_t key = 0;  ///< the run's key in this history file
};

class Writer {
 public:
  /// Opens (creating, migrating) the history, marks runs left starting or running by a writer that
  /// ended without closing them (nobody holds their lease) as lost (except runs held by agents: hosts
  /// not empty, they are detached), removes lease files nobody holds, starts the writer thread. Throws StoreError(locked) when this
  /// process already has a writer on the file.
  explicit Writer(const std::string& path, WriterOptions options = {});
  /// Commits what is queued and stops; errors are swallowed here (call close() to see them).
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Adds a run, takes its lease and waits until it is committed. An empty id gets a new random one,
  /// created_ms 0 becomes now, an empty tessera_version becomes this build's. Throws
  /// StoreError(duplicate) when the id or name is taken; that does not stop the writer.
  RunHandle create_run(RunRecord run);
  /// The handle of a run already in the history (a follower resuming it), whose lease this writer
  /// takes (again a no-op). Throws StoreError(not_found) for an unknown id, StoreError(locked) "run …
  /// is being recorded by another process (pid N)".
  RunHandle open_run(const std::string& id);
  /// flush(), then gives the run's lease back: another process may record it now (a follower that
  /// detaches). close() gives every lease back.
  void release_run(const RunHandle& run);

  /// Queue one record (blocks while the queue is full). Throw the writer's error once it has one.
  void append(const RunHandle& run, MetricPoint point);
  /// A group of points committed in one transaction, never split (a step's metrics of one rank).
  void append(const RunHandle& run, std::vector<MetricPoint> points);
  void append(const RunHandle& run, TimelineEvent event);
  void append(const RunHandle& run, LogLine line);
  void append(const RunHandle& run, Artifact artifact);
  /// Committed in queue order with what was appended before it (a follower's resume point). Returns
  /// its queue sequence number: it is committed, and all this thread appended before it, once
  /// committed_sequence() reaches it.
  int64_t append(const RunHandle& run, StreamPosition position);
  /// Queued in order with the data: starting/running set started_ms (once), final states ended_ms once
  /// (following a run that had ended again does not move its end; a lost run followed again, running
  /// once more, gets the end its follower sees).
  /// `at_ms` (Unix ms) is when it happened, if not now (a run end the agents timed before a later
  /// follower learnt of it); one in the future is taken as now, an end before the run's start (an
  /// agent's clock behind this machine's) as the start.
  void set_status(const RunHandle& run, RunStatus status, std::string exit_reason = {},
                  std::optional<int64_t> at_ms = std::nullopt);

  /// Waits until everything appended before is committed; throws the writer's error.
  void flush();
  /// flush(), then stops the thread; later appends throw.
  void close();
  CommitStats committed() const;
  /// The queue sequence number of the last committed record (records are committed in queue order,
  /// whichever run or thread appended them).
  int64_t committed_sequence() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::store
