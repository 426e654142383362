// tessera-agent end to end on loopback: two agents (127.0.0.1 and 127.0.0.2, CURVE) act as two nodes of a
// TP2×DP2 run of the fake_rank TEST DOUBLE; completion with every step exactly once, a rank killed with
// SIGKILL, an agent killed with SIGKILL, an agent restarted without the run, a follower that crashes and
// resumes, a follower away at the start and resumed, a follower attaching after the end was stored, two
// followers of one run, an unknown client key, a
// non-loopback bind without keys, a node that cannot make the run's directory, and a few thousand malformed frames (and one above ZMQ_MAXMSGSIZE).
#include "agent_test_support.hpp"

#include <zmq.hpp>

#include <future>

using namespace tessera;
using namespace std::chrono_literals;
using test::AgentProcess;
using test::MemorySink;

namespace {

struct TwoNodes {
  explicit TwoNodes(const QString& dir, const QStringList& env = {}, const QStringList& args = {})
      : keys(dir),
        a("127.0.0.1", dir + "/work-a", keys.agent("a"), keys.authorized, env, args),
        b("127.0.0.2", dir + "/work-b", keys.agent("b"), keys.authorized, env, args) {
    keys.pin(a.endpoint(), "a");
    keys.pin(b.endpoint(), "b");
  }
  std::vector<std::string> endpoints() const { return {a.endpoint(), b.endpoint()}; }
  test::TestKeys keys;
  AgentProcess a, b;
};

std::vector<int64_t> all_pids(const launch::RunSession& session) {
  std::vector<int64_t> pids;
  for (const auto& node : session.nodes())
    for (const auto& [rank, pid] : node.pids) pids.push_back(pid);
  return pids;
}

std::string message(const std::string& type, nlohmann::json fields) {
  fields["v"] = 1;
  fields["type"] = type;
  return fields.dump();
}

bool none_alive(const std::vector<int64_t>& pids, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    bool any = false;
    for (auto pid : pids) any = any || test::process_alive(pid);
    if (!any) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

}  // namespace

class TestAgent : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void twoNodesFinishWithEveryStepExactlyOnce() {
    TwoNodes nodes(dir_.path() + "/complete", {"TESSERA_FAKE_STEP_MS=2"});
    QVERIFY(!nodes.a.endpoint().empty() && !nodes.b.endpoint().empty());
    const auto id = test::new_run_id();
    launch::RunSession session(id, nodes.endpoints(), nodes.keys.credentials);
    session.launch(test::tiny_spec(60));
    QCOMPARE(session.nodes()[0].pids.size(), size_t{2});
    QCOMPARE(session.nodes()[1].pids.size(), size_t{2});
    MemorySink sink;
    std::atomic<bool> stop{false};
    QCOMPARE(test::follow_for(session, sink, stop, 30s), launch::RunOutcome::done);
    QVERIFY(sink.complete_exactly_once(4, 60));
    QCOMPARE(sink.duplicate_frames, int64_t{0});
    QCOMPARE(sink.ends.size(), size_t{2});
    QCOMPARE(sink.exits.size(), size_t{4});
    for (const auto& e : sink.exits) QCOMPARE(e["exit_code"].get<int>(), 0);
    QVERIFY(sink.logs >= 4 * 6);  // "starting", every 10 steps, "done"
    // The run directory is the agent's: WORKDIR/runs/<run id>, with the spec it validated.
    QVERIFY(QFile::exists(dir_.path() + "/complete/work-a/runs/" + QString::fromStdString(id) + "/spec.json"));
    QVERIFY(none_alive(all_pids(session), 0ms));
  }

  void killedRankFailsTheRunNamingItWithinFiveSeconds() {
    TwoNodes nodes(dir_.path() + "/rank", {"TESSERA_FAKE_STEP_MS=20"});
    launch::RunSession session(test::new_run_id(), nodes.endpoints(), nodes.keys.credentials);
    session.launch(test::tiny_spec(100000));
    const int64_t victim = session.nodes()[1].pids[1].second;  // rank 3
    QCOMPARE(session.nodes()[1].pids[1].first, int64_t{3});
    MemorySink sink;
    std::atomic<bool> stop{false};
    std::chrono::steady_clock::time_point killed_at;
    std::thread killer([&] {
      std::this_thread::sleep_for(700ms);
      killed_at = std::chrono::steady_clock::now();
      ::kill(static_cast<pid_t>(victim), SIGKILL);
    });
    const auto outcome = test::follow_for(session, sink, stop, 20s);
    const auto took = std::chrono::steady_clock::now() - killed_at;
    killer.join();
    QCOMPARE(outcome, launch::RunOutcome::failed);
    QVERIFY2(took < 5s, std::to_string(std::chrono::duration<double>(took).count()).c_str());
    QCOMPARE(session.first_failed_rank().value_or(-1), int64_t{3});
    QVERIFY2(session.reason().find("rank 3 killed by signal 9") != std::string::npos, session.reason().c_str());
    QVERIFY(none_alive(all_pids(session), 0ms));
    // The failing rank's exit carries its last log lines.
    bool reported = false;
    for (const auto& e : sink.exits)
      if (e["rank"] == 3) reported = e["signal"] == 9 && !e["last_lines"].empty() && !e["stopped_by_agent"].get<bool>();
    QVERIFY(reported);
  }

  void failingRankStopsEveryNode() {
    TwoNodes nodes(dir_.path() + "/exit", {"TESSERA_FAKE_STEP_MS=20", "TESSERA_FAKE_FAIL_RANK=1", "TESSERA_FAKE_FAIL_STEP=15"});
    launch::RunSession session(test::new_run_id(), nodes.endpoints(), nodes.keys.credentials);
    session.launch(test::tiny_spec(100000));
    MemorySink sink;
    std::atomic<bool> stop{false};
    QCOMPARE(test::follow_for(session, sink, stop, 20s), launch::RunOutcome::failed);
    QCOMPARE(session.first_failed_rank().value_or(-1), int64_t{1});
    QVERIFY2(session.reason().find("rank 1 exited with code 3") != std::string::npos, session.reason().c_str());
    bool has_cause = false;
    for (const auto& e : sink.exits)
      if (e["rank"] == 1)
        for (const auto& line : e["last_lines"]) has_cause = has_cause || line.get<std::string>().find("injected failure") != std::string::npos;
    QVERIFY(has_cause);
    QVERIFY(!session.failure_log().empty());
    QVERIFY(session.failure_log().back().find("injected failure at step 15") != std::string::npos);
    QVERIFY(none_alive(all_pids(session), 0ms));
  }

  void killedAgentIsLostAndTheOtherNodeStops() {
    TwoNodes nodes(dir_.path() + "/agent", {"TESSERA_FAKE_STEP_MS=20"});
    launch::RunSession session(test::new_run_id(), nodes.endpoints(), nodes.keys.credentials);
    session.launch(test::tiny_spec(100000));
    MemorySink sink;
    std::atomic<bool> stop{false};
    std::chrono::steady_clock::time_point killed_at;
    std::thread killer([&] {
      std::this_thread::sleep_for(700ms);
      killed_at = std::chrono::steady_clock::now();
      nodes.b.kill9();
    });
    const auto outcome = test::follow_for(session, sink, stop, 20s);
    const auto took = std::chrono::steady_clock::now() - killed_at;
    killer.join();
    QCOMPARE(outcome, launch::RunOutcome::failed);
    QVERIFY2(took < 5s, std::to_string(std::chrono::duration<double>(took).count()).c_str());
    QVERIFY(session.nodes()[1].lost);
    QVERIFY2(session.reason().find("node 1") != std::string::npos && session.reason().find("lost") != std::string::npos,
             session.reason().c_str());
    QVERIFY(session.nodes()[0].ended);  // node 0 stopped its ranks on the workbench's request
    QCOMPARE(session.nodes()[0].end_state, std::string("stopped"));
    // Node 0's ranks were stopped; node 1's died with their agent (parent-death signal).
    QVERIFY(none_alive(all_pids(session), 2000ms));
  }

  // An agent silent past the liveness (stopped) is lost and the run fails; when it reads again it finds
  // the stop the follower sent it too, and stops its ranks instead of training on unrecorded.
  void silentAgentFindsTheStopWhenItWakes() {
    TwoNodes nodes(dir_.path() + "/silent", {"TESSERA_FAKE_STEP_MS=20"});
    launch::RunSession session(test::new_run_id(), nodes.endpoints(), nodes.keys.credentials);
    session.launch(test::tiny_spec(100000));
    MemorySink sink;
    std::atomic<bool> stop{false};
    std::thread pauser([&] {
      std::this_thread::sleep_for(700ms);
      nodes.b.signal(SIGSTOP);
    });
    const auto outcome = test::follow_for(session, sink, stop, 20s);
    pauser.join();
    QCOMPARE(outcome, launch::RunOutcome::failed);
    QVERIFY(session.nodes()[1].lost);
    const auto pids = all_pids(session);
    nodes.b.signal(SIGCONT);
    QVERIFY2(none_alive(pids, 10000ms), "node 1's ranks trained on after its agent woke");
  }

  // An agent killed and started again on the same address within the liveness: ZeroMQ reconnects and
  // its heartbeats arrive, but it does not hold the run (the ranks died with the old agent). The
  // follower's acks name the run; the new agent's unknown_run answer makes the node lost.
  void restartedAgentWithoutTheRunIsLost() {
    test::TestKeys keys(dir_.path() + "/restart");
    const QString agent_keys = keys.agent("a");
    auto first = std::make_unique<AgentProcess>("127.0.0.1", dir_.path() + "/restart/work-1", agent_keys, keys.authorized,
                                                QStringList{"TESSERA_FAKE_STEP_MS=20"});
    const std::string endpoint = first->endpoint();
    QVERIFY(!endpoint.empty());
    keys.pin(endpoint, "a");
    launch::RunSession session(test::new_run_id(), {endpoint}, keys.credentials);
    session.launch(test::tiny_spec(100000, 1));
    MemorySink sink;
    std::atomic<bool> stop{false};
    auto outcome = std::async(std::launch::async, [&] { return test::follow_for(session, sink, stop, 20s); });
    std::this_thread::sleep_for(700ms);
    first->kill9();
    AgentProcess second(QString::fromStdString(endpoint.substr(6)), dir_.path() + "/restart/work-2", agent_keys,
                        keys.authorized);
    const auto restarted_at = std::chrono::steady_clock::now();
    QCOMPARE(outcome.get(), launch::RunOutcome::failed);
    const auto took = std::chrono::steady_clock::now() - restarted_at;
    QCOMPARE(second.endpoint(), endpoint);
    QVERIFY2(took < 5s, std::to_string(std::chrono::duration<double>(took).count()).c_str());
    QVERIFY(session.nodes()[0].lost);
    QVERIFY2(session.reason().find("no longer holds the run") != std::string::npos, session.reason().c_str());
    QVERIFY(none_alive(all_pids(session), 2000ms));  // they died with the first agent
  }

  void crashedFollowerResumesWithoutGapsOrDuplicates() {
    // 2 KiB of outbox memory: what the agents hold while no follower acknowledges goes to disk.
    TwoNodes nodes(dir_.path() + "/follower", {"TESSERA_FAKE_STEP_MS=5"}, {"--outbox-memory-bytes", "2048"});
    const auto id = test::new_run_id();
    MemorySink sink;
    {
      launch::RunSession first(id, nodes.endpoints(), nodes.keys.credentials);
      first.launch(test::tiny_spec(300));
      std::atomic<bool> stop{false};
      sink.crash_after_steps = 200;  // mid-run: some frames committed, some received but never committed
      sink.on_crash = [&] { stop = true; };
      QCOMPARE(test::follow_for(first, sink, stop, 20s), launch::RunOutcome::running);
      QVERIFY(sink.crashed);
      QVERIFY(!sink.steps.empty());
    }  // the follower is gone; the agents keep the run and their outboxes
    std::this_thread::sleep_for(300ms);
    const QString run_dir = dir_.path() + "/follower/work-a/runs/" + QString::fromStdString(id);
    QVERIFY(QFile::exists(run_dir + "/outbox.spill"));
    sink.restart();
    sink.crash_after_steps = 0;
    launch::RunSession second(id, nodes.endpoints(), nodes.keys.credentials);
    second.attach(sink);
    std::atomic<bool> stop{false};
    QCOMPARE(test::follow_for(second, sink, stop, 30s), launch::RunOutcome::done);
    QVERIFY(sink.complete_exactly_once(4, 300));
    QCOMPARE(sink.duplicate_frames, int64_t{0});
    QCOMPARE(second.lost_frames(), int64_t{0});
    QCOMPARE(second.duplicate_frames(), int64_t{0});  // the agents resumed exactly after the stored position
    QCOMPARE(sink.ends.size(), size_t{2});
  }

  // A workbench that does not listen for longer than the liveness (a stalled follower, or one slow to
  // start following after the launch) is detached by the agents; while the ranks are still silent
  // (loading) nothing of the run waits to be acknowledged. Once it follows, its heartbeats name the run
  // and the agents resume sending: the run is followed to its end, every step once.
  void workbenchAwayAtTheStartIsResumed() {
    TwoNodes nodes(dir_.path() + "/away", {"TESSERA_FAKE_START_MS=4500", "TESSERA_FAKE_STEP_MS=5"});
    launch::RunSession session(test::new_run_id(), nodes.endpoints(), nodes.keys.credentials);
    session.launch(test::tiny_spec(40));
    std::this_thread::sleep_for(4000ms);  // the agents give up on this workbench after 3 s
    MemorySink sink;
    std::atomic<bool> stop{false};
    QCOMPARE(test::follow_for(session, sink, stop, 30s), launch::RunOutcome::done);
    QVERIFY(sink.complete_exactly_once(4, 40));
    QCOMPARE(session.lost_frames(), int64_t{0});
    QCOMPARE(sink.ends.size(), size_t{2});
  }

  // A follower that attaches after the run's end was stored (the previous follower acknowledged the
  // run_end, then stopped before recording the outcome) gets nothing more: the agent's attach reply
  // says the part ended, and the follow returns at once instead of waiting for ever.
  void attachAfterTheEndWasStoredReturnsAtOnce() {
    AgentProcess agent("127.0.0.1", dir_.path() + "/ended", {}, {}, {"TESSERA_FAKE_STEP_MS=2"});
    test::TestKeys keys(dir_.path() + "/ended-client");
    const auto id = test::new_run_id();
    MemorySink sink;
    {
      launch::RunSession first(id, {agent.endpoint()}, keys.credentials);
      first.launch(test::tiny_spec(20, 1));
      std::atomic<bool> stop{false};
      QCOMPARE(test::follow_for(first, sink, stop, 20s), launch::RunOutcome::done);
    }
    QCOMPARE(sink.ends.size(), size_t{1});
    launch::RunSession again(id, {agent.endpoint()}, keys.credentials);
    again.attach(sink);
    std::atomic<bool> stop{false};
    const auto started = std::chrono::steady_clock::now();
    QCOMPARE(test::follow_for(again, sink, stop, 10s), launch::RunOutcome::done);
    QVERIFY(std::chrono::steady_clock::now() - started < 2s);
    QVERIFY(again.nodes()[0].ended);
    QCOMPARE(again.nodes()[0].end_state, std::string("done"));
    QVERIFY(sink.complete_exactly_once(4, 20));
    QCOMPARE(sink.ends.size(), size_t{1});  // nothing delivered twice
  }

  // Two followers of one run (the GUI reattaching a run a CLI still follows): the second takes the
  // stream, the first only hears heartbeats. Once the second is done and gone, the agent gives up on it;
  // the first's next ack takes the run back and the agent's reply says its end was acknowledged, so
  // the first ends too (done, with the frames the second took counted as lost to it).
  void secondFollowerTakesTheRunAndTheFirstStillEnds() {
    AgentProcess agent("127.0.0.1", dir_.path() + "/two-followers", {}, {}, {"TESSERA_FAKE_STEP_MS=5"});
    test::TestKeys keys(dir_.path() + "/two-followers-client");
    const auto id = test::new_run_id();
    launch::RunSession first(id, {agent.endpoint()}, keys.credentials);
    first.launch(test::tiny_spec(200, 1));
    MemorySink first_sink;
    std::atomic<bool> first_stop{false};
    auto first_outcome =
        std::async(std::launch::async, [&] { return test::follow_for(first, first_sink, first_stop, 30s); });
    std::this_thread::sleep_for(300ms);
    {
      MemorySink second_sink;
      launch::RunSession second(id, {agent.endpoint()}, keys.credentials);
      second.attach(second_sink);
      std::atomic<bool> stop{false};
      QCOMPARE(test::follow_for(second, second_sink, stop, 20s), launch::RunOutcome::done);
      QCOMPARE(second_sink.ends.size(), size_t{1});
    }  // the second follower is gone
    QCOMPARE(first_outcome.get(), launch::RunOutcome::done);
    QVERIFY(first.nodes()[0].ended);
    QVERIFY(first.lost_frames() > 0);  // what the second one took
  }

  // No follower acknowledges: the agent fills its outbox to the caps (16 KiB in memory, 128 KiB on
  // disk), then stops reading the ranks, which block (alive, not dropped); a follower then gets
  // everything exactly once, and the run's end reports the pause.
  void fullOutboxPausesTheRanksAndLosesNothing() {
    constexpr int64_t kDiskCap = 128 << 10;
    AgentProcess agent("127.0.0.1", dir_.path() + "/full", {}, {}, {"TESSERA_FAKE_STEP_MS=0", "TESSERA_FAKE_METRICS_PER_STEP=10"},
                       {"--outbox-memory-bytes", "16384", "--outbox-disk-bytes", QString::number(kDiskCap)});
    test::TestKeys keys(dir_.path() + "/full-client");
    const auto id = test::new_run_id();
    launch::RunSession session(id, {agent.endpoint()}, keys.credentials);
    constexpr int64_t kSteps = 3000;  // 33,000 records per rank: more than the 20,000 queued in between
    session.launch(test::tiny_spec(kSteps, 1));
    zmq::context_t context;
    launch::AgentConnection probe(context, agent.endpoint(), keys.credentials);
    nlohmann::json held = test::first_run_when(probe, [](const nlohmann::json& run) { return run["outbox_full"].get<bool>(); }, 20s);
    QVERIFY2(held["outbox_full"].get<bool>(), held.dump().c_str());
    std::this_thread::sleep_for(1000ms);  // paused: nothing more is taken, the ranks wait
    held = probe.request("hello", {}, "inventory", 5000ms)["runs"][0];
    QVERIFY(held["outbox_full"].get<bool>());
    QVERIFY(held["outbox_spill_bytes"].get<int64_t>() <= kDiskCap);
    QVERIFY(QFileInfo(dir_.path() + "/full/runs/" + QString::fromStdString(id) + "/outbox.spill").size() <= kDiskCap);
    QCOMPARE(held["state"], "running");
    for (const auto& [rank, pid] : session.nodes()[0].pids) QVERIFY(test::process_alive(pid));

    MemorySink sink;
    std::atomic<bool> stop{false};
    QCOMPARE(test::follow_for(session, sink, stop, 60s), launch::RunOutcome::done);
    QVERIFY(sink.complete_exactly_once(4, kSteps));
    QCOMPARE(sink.duplicate_frames, int64_t{0});
    QCOMPARE(session.lost_frames(), int64_t{0});
    QCOMPARE(sink.ends.size(), size_t{1});
    QVERIFY(sink.ends[0]["outbox_pauses"].get<int64_t>() >= 1);
    QVERIFY(sink.ends[0]["outbox_paused_s"].get<double>() >= 1.0);
  }

  // A run's frames beyond the send window wait unsent until acks make room; an ack of the last of them
  // (queued, never sent) ended the agent itself, and every rank on it ("outbox holds sequence numbers
  // 157..156"). It is refused, and the run is followed to its end afterwards.
  void anAckOfAFrameNeverSentIsRefusedAndTheAgentStaysUp() {
    AgentProcess agent("127.0.0.1", dir_.path() + "/unsent", {}, {}, {"TESSERA_FAKE_STEP_MS=2"});
    test::TestKeys keys(dir_.path() + "/unsent-client");
    const auto id = test::new_run_id();
    launch::RunSession session(id, {agent.endpoint()}, keys.credentials);
    constexpr int64_t kSteps = 1500;  // ~3 s of 10 ms batches: well over the 64 frames sent unacked
    session.launch(test::tiny_spec(kSteps, 1));
    zmq::context_t context;
    launch::AgentConnection probe(context, agent.endpoint(), keys.credentials);
    const nlohmann::json run = test::first_run_when(probe, [](const nlohmann::json& r) { return r["state"] != "running"; }, 30s);
    QVERIFY2(run["state"] == "done" && run["last_seq"].get<int64_t>() > 64 && run["acked"].get<int64_t>() == 0, run.dump().c_str());
    zmq::socket_t raw(context, zmq::socket_type::dealer);
    raw.set(zmq::sockopt::linger, 0);
    raw.connect(agent.endpoint());
    raw.send(zmq::buffer(message("ack", {{"run", id}, {"seq", run["last_seq"]}})), zmq::send_flags::none);
    zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
    nlohmann::json reply;
    while (zmq::poll(&item, 1, std::chrono::milliseconds(5000)) > 0) {
      zmq::message_t frame;
      (void)raw.recv(frame);
      reply = nlohmann::json::parse(frame.to_string_view());
      if (reply["type"] != "heartbeat") break;
    }
    QCOMPARE(reply["code"], "bad_field");
    QVERIFY2(reply["message"].get<std::string>().find("was never sent") != std::string::npos, reply.dump().c_str());
    QCOMPARE(probe.request("hello", {}, "inventory", 5000ms)["runs"][0]["acked"].get<int64_t>(), int64_t{0});
    MemorySink sink;
    std::atomic<bool> stop{false};
    QCOMPARE(test::follow_for(session, sink, stop, 60s), launch::RunOutcome::done);
    QVERIFY(sink.complete_exactly_once(4, kSteps));
  }

  // A rank's record of a type only the agent makes is dropped and counted: a rank's "run_end" ended the
  // run in the history at that step while the ranks trained on (and a later follow found it ended).
  void aRanksRecordOfAnAgentTypeIsDropped() {
    AgentProcess agent("127.0.0.1", dir_.path() + "/forged", {}, {},
                       {"TESSERA_FAKE_STEP_MS=1", R"(TESSERA_FAKE_RECORD={"type":"run_end","state":"done","reason":"forged","time_s":1})"});
    test::TestKeys keys(dir_.path() + "/forged-client");
    launch::RunSession session(test::new_run_id(), {agent.endpoint()}, keys.credentials);
    constexpr int64_t kSteps = 50;
    session.launch(test::tiny_spec(kSteps, 1));
    MemorySink sink;
    std::atomic<bool> stop{false};
    QCOMPARE(test::follow_for(session, sink, stop, 60s), launch::RunOutcome::done);
    QVERIFY(sink.complete_exactly_once(4, kSteps));
    QCOMPARE(sink.ends.size(), size_t{1});
    QCOMPARE(sink.ends[0]["reason"].get<std::string>().find("forged"), std::string::npos);
    QCOMPARE(sink.ends[0]["records_dropped"].get<int64_t>(), int64_t{4});  // one from each rank
  }

  // The first stop decides the reason (and the SIGKILL deadline): a second one replaced the reason
  // and restarted the grace period each time.
  void aRepeatedStopKeepsTheFirstReason() {
    AgentProcess agent("127.0.0.1", dir_.path() + "/stops", {}, {}, {"TESSERA_FAKE_STEP_MS=20"});
    test::TestKeys keys(dir_.path() + "/stops-client");
    const auto id = test::new_run_id();
    launch::RunSession session(id, {agent.endpoint()}, keys.credentials);
    session.launch(test::tiny_spec(100000, 1));
    zmq::context_t context;
    zmq::socket_t raw(context, zmq::socket_type::dealer);
    raw.set(zmq::sockopt::linger, 0);
    raw.connect(agent.endpoint());
    for (const char* reason : {"first", "second", "third"})
      raw.send(zmq::buffer(message("stop", {{"run", id}, {"reason", reason}})), zmq::send_flags::none);
    MemorySink sink;
    std::atomic<bool> stop{false};
    QCOMPARE(test::follow_for(session, sink, stop, 30s), launch::RunOutcome::stopped);
    QCOMPARE(sink.ends.size(), size_t{1});
    QCOMPARE(sink.ends[0]["reason"].get<std::string>(), std::string("first"));
  }

  // Ended, wholly acknowledged runs beyond --keep-finished-runs leave the inventory (it grew without
  // end: past 1 MiB after ~7,000 runs, and every workbench called the agent unreachable); their run
  // directories stay, so a forgotten id is not launched again.
  void finishedRunsBeyondTheKeptNumberAreForgotten() {
    AgentProcess agent("127.0.0.1", dir_.path() + "/forget", {}, {}, {"TESSERA_FAKE_STEP_MS=0"}, {"--keep-finished-runs", "2"});
    test::TestKeys keys(dir_.path() + "/forget-client");
    std::vector<std::string> ids;
    for (int i = 0; i < 4; ++i) {
      ids.push_back(test::new_run_id());
      launch::RunSession session(ids.back(), {agent.endpoint()}, keys.credentials);
      session.launch(test::tiny_spec(20, 1));
      MemorySink sink;
      std::atomic<bool> stop{false};
      QCOMPARE(test::follow_for(session, sink, stop, 30s), launch::RunOutcome::done);
    }
    zmq::context_t context;
    launch::AgentConnection probe(context, agent.endpoint(), keys.credentials);
    // The last run's final ack and this hello come on different sockets: asked until it is counted.
    std::set<std::string> listed;
    for (const auto deadline = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < deadline;) {
      listed.clear();
      const auto inventory = probe.request("hello", {}, "inventory", 5000ms);
      for (const auto& run : inventory["runs"]) listed.insert(run["run"].get<std::string>());
      if (listed.size() <= 2) break;
      std::this_thread::sleep_for(50ms);
    }
    QCOMPARE(listed, (std::set<std::string>{ids[2], ids[3]}));  // the newest two
    // A workbench that died between its last ack and recording the end attaches: the run is found
    // ended, everything acknowledged (unknown_run made it "lost").
    const auto attached = probe.request("attach", {{"run", ids[0]}, {"acked", 0}}, "attached", 5000ms);
    QCOMPARE(attached["state"], "done");
    QVERIFY(attached["last_seq"].get<int64_t>() > 0);
    QCOMPARE(attached["acked"], attached["last_seq"]);
    launch::RunSession again(ids[0], {agent.endpoint()}, keys.credentials);
    try {
      again.launch(test::tiny_spec(20, 1));
      QFAIL("a forgotten run's id was launched again");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("exists already") != std::string::npos, e.what());
    }
  }

  // A reply over its type's limit is said as such: an inventory of more than 1 MiB was dropped without a
  // word and the agent called unreachable ("no reply ... within 5000 ms").
  void aReplyOverItsLimitIsNamedNotTimedOut() {
    zmq::context_t context;
    zmq::socket_t fake(context, zmq::socket_type::router);
    fake.set(zmq::sockopt::linger, 0);
    fake.bind("tcp://127.0.0.1:*");
    const std::string endpoint = fake.get(zmq::sockopt::last_endpoint);
    std::thread agent([&] {
      zmq::pollitem_t item{fake.handle(), 0, ZMQ_POLLIN, 0};
      zmq::message_t identity, hello;
      if (zmq::poll(&item, 1, std::chrono::milliseconds(5000)) <= 0 || !fake.recv(identity) || !fake.recv(hello)) return;
      const std::string inventory = message("inventory", {{"runs", nlohmann::json::array()}, {"pad", std::string(1100000, 'x')}});
      fake.send(identity, zmq::send_flags::sndmore);
      fake.send(zmq::buffer(inventory), zmq::send_flags::none);
    });
    test::TestKeys none(dir_.path() + "/large-client");
    launch::AgentConnection connection(context, endpoint, none.credentials);
    std::string said;
    const auto asked = std::chrono::steady_clock::now();
    try {
      connection.request("hello", {}, "inventory", 3000ms);
      said = "(taken)";
    } catch (const launch::AgentTimeout& e) {
      said = std::string("timeout: ") + e.what();
    } catch (const launch::AgentError& e) {
      said = e.what();
    }
    agent.join();
    QVERIFY2(said.find("answered hello, but the answer was refused as it arrived: inventory of ") != std::string::npos, said.c_str());
    QVERIFY(std::chrono::steady_clock::now() - asked < 2500ms);  // at once, not after the timeout
  }

  void unknownClientKeyIsRefused() {
    test::TestKeys keys(dir_.path() + "/refused");
    AgentProcess agent("127.0.0.1", dir_.path() + "/refused/work", keys.agent("a"), keys.authorized);
    keys.pin(agent.endpoint(), "a");
    launch::Credentials stranger = keys.credentials;
    stranger.client = protocol::generate_keypair();  // not in authorized_keys
    zmq::context_t context;
    launch::AgentConnection refused(context, agent.endpoint(), stranger);
    QVERIFY_THROWS_EXCEPTION(launch::AgentError, refused.request("hello", {}, "inventory", 1500ms));
    launch::AgentConnection admitted(context, agent.endpoint(), keys.credentials);
    const auto inventory = admitted.request("hello", {}, "inventory", 5000ms);
    QVERIFY(inventory["refused_clients"].get<int64_t>() >= 1);
    QCOMPARE(inventory["encrypted"].get<bool>(), true);
    QVERIFY(inventory["cpu_cores"].get<int64_t>() >= 1);
    QVERIFY(inventory["memory_bytes"].get<int64_t>() > 0);
    QVERIFY(inventory["gpus"].is_array());
    // A workbench without the agent's pinned key does not connect to a non-loopback agent at all.
    QVERIFY_THROWS_EXCEPTION(launch::AgentError, launch::AgentConnection(context, "tcp://10.1.2.3:7070", keys.credentials));
  }

  void nonLoopbackBindWithoutKeysIsRefused() {
    QProcess agent;
    agent.start(TESSERA_AGENT, {"--bind", "tcp://0.0.0.0:0", "--runtime", TESSERA_FAKE_RANK, "--workdir", dir_.path() + "/open"});
    QVERIFY(agent.waitForFinished(10000));
    QCOMPARE(agent.exitCode(), 2);
    QVERIFY(agent.readAllStandardError().contains("not a loopback address"));
  }

  // A port another process holds is named with the address, and the agent ends (exit 1).
  void aPortInUseIsNamed() {
    AgentProcess first("127.0.0.1:0", dir_.path() + "/busy-first");
    QProcess second;
    second.start(TESSERA_AGENT, {"--bind", QString::fromStdString(first.endpoint()), "--runtime", TESSERA_FAKE_RANK,
                                 "--workdir", dir_.path() + "/busy-second"});
    QVERIFY(second.waitForFinished(10000));
    QCOMPARE(second.exitCode(), 1);
    const QString err = QString::fromUtf8(second.readAllStandardError());
    QVERIFY2(err.contains(QString("cannot listen on %1: Address already in use").arg(QString::fromStdString(first.endpoint()))),
             qPrintable(err));
  }

  void anAgentOnIpv6LoopbackIsReached() {
    // tcp://[::1]:PORT is loopback (no keys needed): the agent binds it and a workbench gets through.
    AgentProcess agent("[::1]:0", dir_.path() + "/ipv6");
    QVERIFY2(agent.endpoint().rfind("tcp://[::1]:", 0) == 0, agent.endpoint().c_str());
    zmq::context_t context;
    test::TestKeys none(dir_.path() + "/ipv6-client");
    launch::AgentConnection connection(context, agent.endpoint(), none.credentials);
    const auto inventory = connection.request("hello", {}, "inventory", 5000ms);
    QCOMPARE(inventory["encrypted"].get<bool>(), false);
  }

  void aNodeThatCannotPrepareTheRunRefusesItAndStaysUp() {
    // A work directory so deep that a run's directory still fits PATH_MAX (4096 bytes with its NUL)
    // but its out/ does not: as root no permission stops a write, ENAMETOOLONG does. The launch threw
    // a filesystem_error out of the agent's loop (exit 1); now it is a launch_failed reply.
    QString workdir = dir_.path() + "/deep";
    const int run_dir_extra = 5 + 1 + 32;  // "/runs" "/" and the 32-digit run id
    while (workdir.size() + run_dir_extra < 4092) {
      const int left = 4092 - run_dir_extra - static_cast<int>(workdir.size()) - 1;
      workdir += "/" + QString(std::min(200, std::max(1, left)), QChar('d'));
    }
    QCOMPARE(workdir.size() + run_dir_extra, 4092);
    AgentProcess agent("127.0.0.1", workdir);
    QVERIFY(!agent.endpoint().empty());
    zmq::context_t context;
    test::TestKeys none(dir_.path() + "/deep-client");
    launch::AgentConnection connection(context, agent.endpoint(), none.credentials);
    const std::string run = "0123456789abcdef0123456789abcdee";
    const nlohmann::json launch{{"run", run},
                                {"spec", spec::to_json(test::tiny_spec(20, 1))},
                                {"node_rank", 0},
                                {"ranks", {0, 1, 2, 3}},
                                {"master_addr", "127.0.0.1"},
                                {"master_port", 0}};
    // Refused twice the same way: nothing is left behind (the second is not "exists already").
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        connection.request("launch", launch, "launched", 5000ms);
        QFAIL("a launch whose run directory cannot be made was accepted");
      } catch (const launch::AgentError& e) {
        QVERIFY2(std::string(e.what()).find("launch_failed: cannot prepare run " + run + " on this node") != std::string::npos, e.what());
      }
      QVERIFY(!std::filesystem::exists((workdir + "/runs/").toStdString() + run));
    }
    const auto inventory = connection.request("hello", {}, "inventory", 5000ms);
    QCOMPARE(inventory["errors_counted"].get<int64_t>(), int64_t{2});
  }

  void aGpuSpecNeedsAGpuPerRank() {
    // A spec on H100s is not run on CPU ranks of a node without GPUs (it ran there, measured against
    // the H100's peak); on a node with GPUs, not with more ranks than GPUs.
    AgentProcess agent("127.0.0.1", dir_.path() + "/gpu-spec");
    QVERIFY(!agent.endpoint().empty());
    zmq::context_t context;
    test::TestKeys none(dir_.path() + "/gpu-client");
    launch::AgentConnection connection(context, agent.endpoint(), none.credentials);
    const auto gpus = static_cast<int64_t>(connection.request("hello", {}, "inventory", 5000ms)["gpus"].size());
    auto spec = spec::to_json(test::tiny_spec(20, 1));
    spec["cluster"]["gpu"] = "h100-sxm";
    std::vector<int64_t> ranks;
    for (int64_t r = 0; r < std::min<int64_t>(gpus + 1, 4); ++r) ranks.push_back(r);
    const nlohmann::json launch{{"run", "0123456789abcdef0123456789abcd01"}, {"spec", spec}, {"node_rank", 0},
                                {"ranks", ranks}, {"master_addr", "127.0.0.1"}, {"master_port", 0}};
    try {
      connection.request("launch", launch, "launched", 5000ms);
      QFAIL("a GPU spec with more ranks than GPUs was launched");
    } catch (const launch::AgentError& e) {
      const std::string expected = gpus == 0 ? "bad_field: cluster.gpu=h100-sxm needs one GPU per rank, and this node reports none"
                                             : "ranks requested on a node of " + std::to_string(gpus) + " GPUs";
      QVERIFY2(std::string(e.what()).find(expected) != std::string::npos, e.what());
    }
    QCOMPARE(connection.request("hello", {}, "inventory", 5000ms)["ranks_in_use"].get<int64_t>(), int64_t{0});
  }

  void malformedFramesGetErrorRepliesAndTheAgentStaysUp() {
    AgentProcess agent("127.0.0.1", dir_.path() + "/fuzz");
    zmq::context_t context;
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::linger, 0);
    socket.connect(agent.endpoint());
    QRandomGenerator random(20261129);
    const std::string run = "0123456789abcdef0123456789abcdef";
    std::vector<std::vector<std::string>> messages;
    int64_t wrong_versions = 0;  // hellos without "v" 1: their replies name the hello they refuse
    for (int i = 0; i < 3000; ++i) {
      std::string text;
      switch (i % 13) {
        case 0: {  // random bytes
          text.resize(random.bounded(1, 300));
          for (auto& c : text) c = static_cast<char>(random.bounded(256));
          break;
        }
        case 1: text = "[1,2,3]"; break;
        case 2: text = R"({"type":"hello"})"; ++wrong_versions; break;
        case 3: text = R"({"v":99,"type":"hello"})"; ++wrong_versions; break;
        case 4: text = message("x" + std::to_string(random.generate()), {}); break;
        case 5: text = message("launch", {{"run", run}, {"spec", "rm -rf /"}, {"ranks", {0}}}); break;
        case 6: text = message("launch", {{"run", "../../etc"}, {"spec", nlohmann::json::object()}, {"ranks", {0}}}); break;
        case 7: text = message("ack", {{"run", run}, {"seq", -5}}); break;
        case 8: text = message("attach", {{"run", run}, {"acked", 0}}); break;  // unknown run
        case 9: text = message("hello", {{"pad", std::string(2 << 20, 'x')}}); break;  // too large
        case 10: text = message("stop", {{"run", random.generate64()}}); break;
        case 11: {
          messages.push_back({R"({"v":1,"type":"hello"})", "second frame"});  // two frames
          continue;
        }
        case 12: text = message("hello", {{"client", 5}}); break;  // an optional string, not a number
      }
      messages.push_back({text});
    }
    int64_t replies = 0, errors = 0, version_refusals = 0;
    auto drain = [&](std::chrono::milliseconds wait) {
      zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
      while (zmq::poll(&item, 1, wait) > 0) {
        zmq::message_t reply;
        while (socket.recv(reply, zmq::recv_flags::dontwait)) {
          const auto j = nlohmann::json::parse(reply.to_string_view(), nullptr, false);
          if (j.is_object() && j.value("type", "") == "heartbeat") continue;
          ++replies;
          if (j.is_object() && j.value("type", "") == "error" && j.contains("code")) ++errors;
          if (j.is_object() && j.value("code", "") == "bad_version" && j.value("in_reply_to", "") == "hello") ++version_refusals;
        }
      }
    };
    for (const auto& parts : messages) {
      for (size_t p = 0; p < parts.size(); ++p)
        socket.send(zmq::buffer(parts[p]), p + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
      drain(0ms);
    }
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (replies < static_cast<int64_t>(messages.size()) && std::chrono::steady_clock::now() < deadline) drain(100ms);
    QCOMPARE(replies, static_cast<int64_t>(messages.size()));
    QCOMPARE(errors, replies);
    QCOMPARE(version_refusals, wrong_versions);  // in_reply_to was "" for an envelope's refusal
    // Above ZMQ_MAXMSGSIZE (64 MiB) libzmq drops the sender's connection before the agent sees a byte.
    {
      zmq::socket_t huge(context, zmq::socket_type::dealer);
      huge.set(zmq::sockopt::linger, 0);
      huge.connect(agent.endpoint());
      const std::string frame((64 << 20) + 1024, 'x');
      huge.send(zmq::buffer(frame), zmq::send_flags::none);
      zmq::pollitem_t item{huge.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(1500));
      QVERIFY(!(item.revents & ZMQ_POLLIN));  // no reply: the connection was dropped
    }
    // Still up and serving, and it counted every one.
    test::TestKeys none(dir_.path() + "/fuzz-client");
    launch::AgentConnection connection(context, agent.endpoint(), none.credentials);
    const auto inventory = connection.request("hello", {}, "inventory", 5000ms);
    QCOMPARE(inventory["errors_counted"].get<int64_t>(), static_cast<int64_t>(messages.size()));
    QCOMPARE(inventory["encrypted"].get<bool>(), false);
  }
};

QTEST_APPLESS_MAIN(TestAgent)
#include "test_agent.moc"
