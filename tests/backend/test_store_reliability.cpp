// Reliability of backend/store: SIGKILL of a writer at random moments (20 times) leaves a sound
// history holding every committed batch whole; a second writer, a read-only directory, a full disk
// (a size limit) and a corrupt file each give a clear error and no crash.
#include <QtTest/QtTest>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/errors.hpp"
#include "store/history.hpp"
#include "store/run_lease.hpp"
#include "store/writer.hpp"
#include "store_test_support.hpp"

using namespace tessera::store;
using namespace store_test;

namespace {

constexpr int64_t kGroup = 1000;  // points per append: a batch holds whole groups only

template <class F>
std::optional<StoreError> error_of(F&& f) {
  try {
    f();
  } catch (const StoreError& e) {
    return e;
  }
  return std::nullopt;
}

// A child process that records run `name` (status starting) in `path`, says so through the pipe and
// holds it until the other pipe closes (or it is killed). Returns its pid and the run's id.
struct Recorder {
  pid_t pid = -1;
  std::string id;
  int release = -1;  ///< closing it lets the child close its writer and exit 0
};
Recorder start_recorder(const std::string& path, const std::string& name, std::vector<std::string> hosts = {}) {
  int ready[2], release[2];
  if (::pipe(ready) != 0 || ::pipe(release) != 0) return {};
  auto run = tiny_run(name);
  run.id = new_run_id();
  run.status = RunStatus::starting;
  run.hosts = std::move(hosts);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[0]);
    ::close(release[1]);
    try {
      Writer writer(path);
      const auto handle = writer.create_run(run);
      writer.append(handle, MetricPoint{"loss", 0, 0, 100.0, 5.0});
      writer.flush();
      char c = 1;
      if (::write(ready[1], &c, 1) != 1 || ::read(release[0], &c, 1) < 0) ::_exit(3);
      writer.append(handle, MetricPoint{"loss", 0, 1, 101.0, 4.0});
      writer.close();
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(release[0]);
  char c = 0;
  const bool started = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  if (!started) return {};
  return {child, run.id, release[1]};
}
int exit_status(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<MetricPoint> group_from(int64_t start) {
  std::vector<MetricPoint> group;
  group.reserve(kGroup);
  for (int64_t step = start; step < start + kGroup; ++step)
    group.push_back({"loss", 0, step, 1.7e9 + static_cast<double>(step), 1.0 / static_cast<double>(step + 1)});
  return group;
}

/// The child of the kill test: ingests at full speed, reporting each commit's point count on `fd`.
[[noreturn]] void ingest_until_killed(const std::string& path, const std::string& id, int fd) {
  try {
    WriterOptions options;
    options.batch_points = 2500;  // frequent commits of whole groups: kills land in and between them
    options.on_commit = [fd](const CommitStats& stats) {
      if (::write(fd, &stats.points, sizeof stats.points) != sizeof stats.points) ::_exit(4);
    };
    Writer writer(path, options);
    auto run = tiny_run("killed-" + id.substr(0, 8));
    run.id = id;
    const auto handle = writer.create_run(run);
    writer.set_status(handle, RunStatus::running);
    for (int64_t start = 0;; start += kGroup) writer.append(handle, group_from(start));
  } catch (...) {
    ::_exit(2);
  }
}

/// What `f` throws, run as an unprivileged user when the tests run as root (root ignores file
/// permissions). kind is empty when nothing was thrown.
struct Outcome {
  std::optional<ErrorKind> kind;
  std::string message;
};
template <class F>
Outcome outcome_without_privileges(F&& f) {
  if (::geteuid() != 0) {
    const auto error = error_of(f);
    return error ? Outcome{error->kind(), error->what()} : Outcome{};
  }
  int fds[2];
  if (::pipe(fds) != 0) return {ErrorKind::io, "pipe failed"};
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(100);
    const auto error = error_of(f);
    if (!error) ::_exit(101);
    const std::string message = error->what();
    if (::write(fds[1], message.data(), message.size()) < 0) ::_exit(102);
    ::_exit(static_cast<int>(error->kind()));
  }
  ::close(fds[1]);
  std::string message;
  char buffer[512];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) message.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 101) return {};
  if (code < 0 || code >= 100) return {ErrorKind::io, "child failed with " + std::to_string(code)};
  return {static_cast<ErrorKind>(code), message};
}

}  // namespace

class TestStoreReliability : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string db(const QString& name) const { return dir_.filePath(name).toStdString(); }

 private slots:
  void killedWriterLeavesASoundHistory() {
    const auto path = db("killed/history.sqlite");
    const auto seed = std::random_device{}();
    qInfo("kill moments seeded with %u", seed);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> delay_ms(0, 100);
    std::vector<std::string> ids;
    int rounds_with_data = 0;
    for (int round = 0; round < 20; ++round) {
      const std::string id = new_run_id();
      ids.push_back(id);
      int fds[2];
      QVERIFY(::pipe(fds) == 0);
      const pid_t child = ::fork();
      if (child == 0) {
        ::close(fds[0]);
        ingest_until_killed(path, id, fds[1]);
      }
      ::close(fds[1]);
      // Every fifth round kills the child while it starts (opening, recovering the WAL, creating
      // its run); the others once it has committed points, at a random moment of full-speed ingestion.
      int64_t reported = 0, value = 0;
      if (round % 5 != 0)
        while (reported == 0 && ::read(fds[0], &value, sizeof value) == sizeof value) reported = value;
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng) / (round % 5 == 0 ? 5 : 1)));
      ::kill(child, SIGKILL);
      int status = 0;
      ::waitpid(child, &status, 0);
      QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
               qPrintable(QString("round %1: the child ended by itself (status %2)").arg(round).arg(status)));
      while (::read(fds[0], &value, sizeof value) == sizeof value) reported = value;
      ::close(fds[0]);

      if (!QFile::exists(QString::fromStdString(path))) {  // killed before it created the file
        QCOMPARE(reported, int64_t{0});
        continue;
      }
      QCOMPARE(sql_text(path, "PRAGMA integrity_check"), std::string("ok"));
      if (sql_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'runs'") == 0) {  // killed before the schema committed
        QCOMPARE(reported, int64_t{0});
        continue;
      }
      const int64_t key = sql_int(path, "SELECT key FROM runs WHERE id = '" + id + "'");
      if (reported > 0) QVERIFY2(key > 0, "a run with committed points is missing");
      if (key <= 0) continue;
      const auto of_run = " WHERE series IN (SELECT id FROM series WHERE run = " + std::to_string(key) + ")";
      const auto where = " FROM metrics" + of_run;
      const int64_t points = sql_int(path, "SELECT count(*)" + where);
      QVERIFY2(points >= reported, qPrintable(QString("round %1: %2 points stored, %3 reported committed").arg(round).arg(points).arg(reported)));
      QCOMPARE(points % kGroup, int64_t{0});                                    // no partial batch
      QCOMPARE(sql_int(path, "SELECT coalesce(max(step) + 1, 0)" + where), points);  // a prefix of what was sent
      QCOMPARE(sql_int(path, "SELECT coalesce(sum(n), 0) FROM metric_blocks" + of_run), points);
      if (points > 0) ++rounds_with_data;
    }
    QVERIFY2(rounds_with_data >= 16, qPrintable(QString("only %1 rounds committed anything").arg(rounds_with_data)));
    // The next writer marks the runs the killed ones left running as lost (a run killed before
    // its status change committed stays planned; its points, if any, came after that change).
    Writer(path).close();
    History history(path);
    int lost = 0;
    for (const auto& run : history.runs()) {
      if (history.counts(run.id).points > 0) QCOMPARE(run.status, RunStatus::lost);
      QVERIFY(run.status == RunStatus::lost || run.status == RunStatus::planned);
      QCOMPARE(run.ended_ms.has_value(), run.status == RunStatus::lost);
      lost += run.status == RunStatus::lost;
    }
    QVERIFY(lost >= rounds_with_data);
  }

  // Two processes write one history at once, each its own runs; a run another process records is
  // refused with its pid, and is free once that process closed its writer.
  void twoProcessesWriteOneHistory() {
    const auto path = db("two-writers.sqlite");
    const auto other = start_recorder(path, "theirs");
    QVERIFY(other.pid > 0);
    Writer writer(path);
    const auto mine = writer.create_run(tiny_run("mine"));
    writer.append(mine, MetricPoint{"loss", 0, 0, 100.0, 2.0});
    writer.flush();
    QCOMPARE(RunLease::holder(path, other.id), std::optional<int64_t>(other.pid));
    QCOMPARE(RunLease::holder(path, mine.id), std::optional<int64_t>(::getpid()));
    const auto refused = error_of([&] { writer.open_run(other.id); });
    QVERIFY(refused);
    QCOMPARE(refused->kind(), ErrorKind::locked);
    const std::string expected = "run " + other.id.substr(0, 8) + " in history " + path +
                                 " is being recorded by another process (pid " + std::to_string(other.pid) + ")";
    QVERIFY2(contains(refused->what(), expected), refused->what());
    QCOMPARE(History(path).run(other.id).status, RunStatus::starting);  // a live writer's run is not lost
    const auto same_process = error_of([&] { Writer second(path); });
    QVERIFY(same_process);
    QCOMPARE(same_process->kind(), ErrorKind::locked);
    QVERIFY2(contains(same_process->what(), "is already being written by this process"), same_process->what());
    // The same file through a symlink is the same history: the same writer rule, the same leases.
    const std::string link = db("two-writers-link.sqlite");
    QVERIFY(::symlink(path.c_str(), link.c_str()) == 0);
    QVERIFY(error_of([&] { Writer through_link(link); }));
    QCOMPARE(RunLease::holder(link, other.id), std::optional<int64_t>(other.pid));

    ::close(other.release);
    QCOMPARE(exit_status(other.pid), 0);
    QCOMPARE(History(path).points(other.id, "loss", 0).size(), size_t{2});  // it went on writing meanwhile
    const std::string lease_file = path + ".runs/" + other.id;
    QVERIFY(!std::filesystem::exists(lease_file));  // its close gave the lease back
    QCOMPARE(RunLease::holder(path, other.id), std::optional<int64_t>());
    const auto taken = writer.open_run(other.id);  // free now
    writer.append(taken, MetricPoint{"loss", 0, 2, 102.0, 3.0});
    writer.append(mine, MetricPoint{"loss", 0, 1, 101.0, 1.0});
    QVERIFY(std::filesystem::exists(lease_file));
    writer.release_run(taken);
    QVERIFY(!std::filesystem::exists(lease_file));
    QCOMPARE(RunLease::holder(path, other.id), std::optional<int64_t>());
    writer.close();
    QCOMPARE(History(path).points(other.id, "loss", 0).size(), size_t{3});
    QCOMPARE(History(path).points(mine.id, "loss", 0).size(), size_t{2});
    QCOMPARE(RunLease::holder(path, mine.id), std::optional<int64_t>());
  }

  // A writer that opens marks lost the runs of a killed writer only, not those of one still alive.
  void onlyADeadWritersRunsAreMarkedLost() {
    const auto path = db("dead-and-alive.sqlite");
    const auto alive = start_recorder(path, "alive");
    const auto killed = start_recorder(path, "killed");
    // Killed once it had asked its agents: they may run it; it stays for a follower to take up.
    const auto launcher = start_recorder(path, "launched", {"tcp://127.0.0.1:7100"});
    QVERIFY(alive.pid > 0 && killed.pid > 0 && launcher.pid > 0);
    for (const auto& dead : {killed, launcher}) {
      ::kill(dead.pid, SIGKILL);
      QCOMPARE(exit_status(dead.pid), -SIGKILL);
      ::close(dead.release);
    }
    // A lease file whose process was killed before its run was recorded.
    const std::string orphan = path + ".runs/" + new_run_id();
    std::ofstream(orphan) << "999999\n";
    QVERIFY(std::filesystem::exists(path + ".runs/" + launcher.id));  // SIGKILL leaves the files
    Writer writer(path);
    QVERIFY(!std::filesystem::exists(orphan));
    QVERIFY(!std::filesystem::exists(path + ".runs/" + launcher.id));
    QVERIFY(std::filesystem::exists(path + ".runs/" + alive.id));
    History history(path);
    QCOMPARE(history.run(launcher.id).status, RunStatus::starting);
    QVERIFY(history.run(launcher.id).started_ms);  // from its creation: a follower taking it up keeps it
    QCOMPARE(history.run(killed.id).status, RunStatus::lost);
    QCOMPARE(history.run(killed.id).exit_reason, std::string("the process writing it ended without closing it"));
    QCOMPARE(history.run(alive.id).status, RunStatus::starting);
    QVERIFY(!history.run(alive.id).ended_ms);
    const auto followed = writer.open_run(killed.id);  // a lost run is nobody's: it may be followed again
    writer.release_run(followed);
    ::close(alive.release);
    QCOMPARE(exit_status(alive.pid), 0);
    writer.close();
  }

  // runs delete --force while a follower still records the run: what comes after is not written
  // (no rows without their run), its producer is told, and another run of the same writer goes on.
  void runDeletedWhileRecordedIsNotWrittenAgain() {
    const auto path = db("deleted-while-recorded.sqlite");
    Writer writer(path);
    const auto victim = writer.create_run(tiny_run("victim"));
    const auto other = writer.create_run(tiny_run("other"));
    writer.append(victim, MetricPoint{"loss", 0, 0, 100.0, 5.0});
    writer.flush();
    History(path).delete_run(victim.id, /*even_if_active=*/true);
    writer.append(victim, MetricPoint{"loss", 0, 1, 101.0, 4.0});
    writer.append(victim, TimelineEvent{1, 0, 0, "F", 0, 0, 0.0, 1.0});
    writer.append(other, MetricPoint{"loss", 0, 1, 101.0, 4.0});
    writer.flush();
    const auto error = error_of([&] { writer.append(victim, MetricPoint{"loss", 0, 2, 102.0, 3.0}); });
    QVERIFY(error);
    QCOMPARE(error->kind(), ErrorKind::not_found);
    QVERIFY2(contains(error->what(), "deleted from history " + path + " while it was being recorded"), error->what());
    writer.append(other, MetricPoint{"loss", 0, 2, 102.0, 3.0});
    writer.close();
    QCOMPARE(sql_int(path, "SELECT count(*) FROM series WHERE run NOT IN (SELECT key FROM runs)"), int64_t{0});
    QCOMPARE(sql_int(path, "SELECT count(*) FROM metrics WHERE series NOT IN (SELECT id FROM series)"), int64_t{0});
    QCOMPARE(sql_int(path, "SELECT count(*) FROM timeline WHERE run NOT IN (SELECT key FROM runs)"), int64_t{0});
    QCOMPARE(History(path).points(other.id, "loss", 0).size(), size_t{2});
  }

  void readOnlyDirectoryIsAClearError() {
    const auto directory = db("read-only");
    const auto existing = directory + "/history.sqlite";
    Writer(existing).close();
    ::chmod(dir_.path().toLocal8Bit().constData(), 0755);
    ::chmod(existing.c_str(), 0666);
    QCOMPARE(::chmod(directory.c_str(), 0555), 0);

    const auto fresh = outcome_without_privileges([&] { History history(directory + "/new.sqlite"); });
    QCOMPARE(fresh.kind, std::optional(ErrorKind::io));
    QVERIFY2(contains(fresh.message, "cannot create history " + directory + "/new.sqlite") && contains(fresh.message, "not writable"),
             fresh.message.c_str());

    const auto writer = outcome_without_privileges([&] { Writer w(existing); });
    QCOMPARE(writer.kind, std::optional(ErrorKind::io));
    QVERIFY2(contains(writer.message, "cannot open history " + existing) && contains(writer.message, "not writable"),
             writer.message.c_str());

    const auto reopen = outcome_without_privileges([&] { History history(existing); });
    QCOMPARE(reopen.kind, std::optional(ErrorKind::io));
    QVERIFY2(contains(reopen.message, "cannot open history " + existing) && contains(reopen.message, "not writable"),
             reopen.message.c_str());
    ::chmod(directory.c_str(), 0755);
  }

  // A read of a read-only history leaves a read-only -shm behind, which refuses every write after
  // the file is writable again: the error names it (it said "attempt to write a readonly database").
  void readOnlyShmLeftBehindIsNamed() {
    const auto directory = db("stale-shm");
    const auto path = directory + "/history.sqlite";
    std::string id;
    {
      Writer writer(path);
      id = writer.create_run(tiny_run("noted")).id;
      writer.close();
    }
    ::chmod(dir_.path().toLocal8Bit().constData(), 0755);
    QCOMPARE(::chmod(directory.c_str(), 0777), 0);
    QCOMPARE(::chmod(path.c_str(), 0666), 0);
    std::ofstream(path + "-shm").close();
    QCOMPARE(::chmod((path + "-shm").c_str(), 0444), 0);
    const auto noted = outcome_without_privileges([&] { History(path).set_notes(id, "later"); });
    QCOMPARE(noted.kind, std::optional(ErrorKind::io));
    QVERIFY2(contains(noted.message, path + "-shm is read-only") && contains(noted.message, "remove it"), noted.message.c_str());
    ::unlink((path + "-shm").c_str());
  }

  void fullDiskIsAClearErrorAndNothingPartial() {
    const auto path = db("full.sqlite");
    WriterOptions options;
    options.max_db_bytes = 1 << 20;  // the size limit stands in for a full disk (docs/store.md)
    options.batch_points = 5000;
    options.queue_points = 5000;  // back-pressure keeps batches small, so some commit before the limit
    std::optional<StoreError> error;
    int64_t appended = 0, committed = 0;
    std::string id;
    {
      Writer writer(path, options);
      const auto run = writer.create_run(tiny_run("fills-the-disk"));
      id = run.id;
      error = error_of([&] {
        for (int64_t start = 0; start < 100'000'000; start += kGroup) {
          writer.append(run, group_from(start));
          appended += kGroup;
        }
      });
      QVERIFY(error);
      QCOMPARE(error->kind(), ErrorKind::full);
      QVERIFY2(contains(error->what(), "history " + path + " is full") && contains(error->what(), "were not written"), error->what());
      QCOMPARE(error_of([&] { writer.flush(); })->kind(), ErrorKind::full);  // it stays failed, loudly
      QCOMPARE(error_of([&] { writer.close(); })->kind(), ErrorKind::full);
      committed = writer.committed().points;
    }
    QVERIFY(committed > 0 && committed < appended);
    QCOMPARE(sql_text(path, "PRAGMA integrity_check"), std::string("ok"));
    QCOMPARE(sql_int(path, "SELECT count(*) FROM metrics"), committed);  // every committed batch, nothing partial
    QCOMPARE(committed % kGroup, int64_t{0});
    // With room again (no limit) the same history takes more.
    Writer again(path);
    again.append(RunHandle{id, sql_int(path, "SELECT key FROM runs")}, group_from(committed));
    again.close();
    QCOMPARE(sql_int(path, "SELECT count(*) FROM metrics"), committed + kGroup);
  }

  void corruptFileIsAClearError() {
    const auto garbage = db("garbage.sqlite");
    {
      std::ofstream out(garbage, std::ios::binary);
      std::mt19937 rng(7);
      for (int i = 0; i < 64 * 1024; ++i) out.put(static_cast<char>(rng()));
    }
    for (const auto& error : {error_of([&] { History history(garbage); }), error_of([&] { Writer writer(garbage); })}) {
      QVERIFY(error);
      QCOMPARE(error->kind(), ErrorKind::corrupt);
      QVERIFY2(contains(error->what(), "history " + garbage + " is corrupt or not a SQLite database"), error->what());
    }

    // A real history whose pages after the first were overwritten.
    const auto damaged = db("damaged.sqlite");
    {
      Writer writer(damaged);
      const auto run = writer.create_run(tiny_run("damaged"));
      for (int64_t start = 0; start < 20 * kGroup; start += kGroup) writer.append(run, group_from(start));
      writer.close();
    }
    {
      const int fd = ::open(damaged.c_str(), O_WRONLY);
      QVERIFY(fd >= 0);
      const std::string junk(4096, '\xA5');
      struct stat info {};
      ::fstat(fd, &info);
      for (off_t offset = 4096; offset < info.st_size; offset += 4096) QVERIFY(::pwrite(fd, junk.data(), junk.size(), offset) > 0);
      ::close(fd);
    }
    const auto error = error_of([&] {
      History history(damaged);
      for (const auto& run : history.runs()) history.points(run.id, "loss", 0);
    });
    QVERIFY(error);
    QCOMPARE(error->kind(), ErrorKind::corrupt);
    QVERIFY2(contains(error->what(), damaged), error->what());
  }
};

QTEST_APPLESS_MAIN(TestStoreReliability)
#include "test_store_reliability.moc"
