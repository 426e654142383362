// The Gloo communicator with threads as ranks: every collective and point-to-point operation gives
// the expected values on every member, sub-groups are independent, and an operation a peer never
// joins fails at the timeout with a message naming the operation and the group.
// LibTorch before Qt: Qt's `slots` macro would break LibTorch's headers.
// moc needs none of these (it reads the test class alone); LibTorch would cost it ~20 s.
#ifndef Q_MOC_RUN
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <QtTest/QtTest>

#include <functional>
#include <mutex>
#include <thread>

#include "runtime/comm/comm_error.hpp"
#include "runtime/comm/gloo_world.hpp"
#include "runtime/launch/local_launcher.hpp"
#include "thread_ranks.hpp"
#endif

using namespace tessera::runtime;

namespace {

std::vector<std::string> run_ranks(int n, std::chrono::milliseconds timeout,
                                   const std::function<void(int, GlooWorld&)>& body, bool keep_worlds = true) {
  return tessera::test::run_ranks(n, body, timeout, keep_worlds);
}

void expect_equal(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  if (!at::equal(got, want))
    throw std::runtime_error(what + ": got " + std::to_string(got.sum().item<double>()) + ", want sum " +
                             std::to_string(want.sum().item<double>()));
}

}  // namespace

class TestCommunicator : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { at::set_num_threads(1); }

  void collectivesGiveTheExpectedValues() {
    const auto failures = run_ranks(4, std::chrono::milliseconds(20000), [](int rank, GlooWorld& world) {
      auto all = world.make_group("all", {0, 1, 2, 3});
      if (all->rank() != rank || all->size() != 4) throw std::runtime_error("group rank/size");
      at::Tensor x = at::full({3}, rank + 1.0);
      all->all_reduce(x);
      expect_equal(x, at::full({3}, 10.0), "all_reduce sum");
      at::Tensor m = at::full({2}, static_cast<double>(rank));
      all->all_reduce(m, ReduceOp::max);
      expect_equal(m, at::full({2}, 3.0), "all_reduce max");
      // reduce_scatter: member r contributes arange(8) + r; block i (2 elements) goes to member i.
      at::Tensor in = at::arange(8, at::kFloat) + rank;
      at::Tensor block = at::empty({2});
      all->reduce_scatter(block, in);
      expect_equal(block, (at::arange(8, at::kFloat) * 4 + 6).narrow(0, 2 * rank, 2), "reduce_scatter");
      at::Tensor gathered = at::empty({4, 2});
      all->all_gather(gathered, at::full({1, 2}, static_cast<double>(rank)));
      expect_equal(gathered, at::arange(4, at::kFloat).unsqueeze(1).expand({4, 2}), "all_gather");
      at::Tensor b = at::full({5}, rank == 2 ? 7.0 : 0.0);
      all->broadcast(b, 2);
      expect_equal(b, at::full({5}, 7.0), "broadcast");
      // A ring of sends: each member sends its rank to the next and receives from the previous.
      all->send(at::full({4}, static_cast<double>(rank)), (rank + 1) % 4, 5);
      at::Tensor r = at::empty({4});
      all->recv(r, (rank + 3) % 4, 5);
      all->wait_sends();
      expect_equal(r, at::full({4}, static_cast<double>((rank + 3) % 4)), "send/recv");
      all->barrier();
      // Two disjoint sub-groups reduce independently.
      const std::vector<int64_t> members = rank % 2 == 0 ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{1, 3};
      auto pair = world.make_group(rank % 2 == 0 ? "even" : "odd", members);
      at::Tensor y = at::full({1}, static_cast<double>(rank));
      pair->all_reduce(y);
      expect_equal(y, at::full({1}, rank % 2 == 0 ? 2.0 : 4.0), "sub-group all_reduce");
      if (all->busy_s() <= 0) throw std::runtime_error("busy_s not counted");
    });
    QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
  }

  void asynchronousCollectivesCompleteAtWait() {
    const auto failures = run_ranks(4, std::chrono::milliseconds(20000), [](int rank, GlooWorld& world) {
      auto all = world.make_group("all", {0, 1, 2, 3});
      // Several operations in flight at once, waited for in reverse order.
      at::Tensor x = at::full({1000}, rank + 1.0);
      at::Tensor m = at::full({3}, static_cast<double>(rank));
      at::Tensor in = at::arange(8, at::kFloat) + rank;
      at::Tensor block = at::empty({2});
      at::Tensor r = at::arange(12, at::kFloat) * (rank + 1);
      auto sum = all->all_reduce_async(x);
      auto max = all->all_reduce_async(m, ReduceOp::max);
      auto scatter = all->reduce_scatter_async(block, in);
      auto reduce = all->reduce_async(r, 2);
      reduce->wait();
      scatter->wait();
      max->wait();
      sum->wait();
      sum->wait();  // a second wait is a no-op
      expect_equal(x, at::full({1000}, 10.0), "all_reduce_async sum");
      expect_equal(m, at::full({3}, 3.0), "all_reduce_async max");
      expect_equal(block, (at::arange(8, at::kFloat) * 4 + 6).narrow(0, 2 * rank, 2), "reduce_scatter_async");
      if (rank == 2) expect_equal(r, at::arange(12, at::kFloat) * 10, "reduce_async at the root");
    });
    QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
  }

  // Every in-process rank starts the first operation of many groups at once. LibTorch's flight
  // recorder, one per process, registered each group outside its lock: concurrent first operations
  // of different groups corrupted its map (a segfault in one CI run). GlooWorld turns it off.
  void manyGroupsStartTheirFirstOperationsAtOnce() {
    const auto failures = run_ranks(4, std::chrono::milliseconds(20000), [](int rank, GlooWorld& world) {
      // Making a group is a rendezvous of its members, so their first operations start together.
      std::vector<std::unique_ptr<Communicator>> groups;
      std::vector<at::Tensor> values;
      std::vector<std::unique_ptr<PendingWork>> works;
      for (int g = 0; g < 32; ++g) {
        groups.push_back(world.make_group("g" + std::to_string(g), {0, 1, 2, 3}));
        values.push_back(at::full({8}, rank + 1.0));
        works.push_back(groups.back()->all_reduce_async(values.back()));
      }
      for (auto& work : works) work->wait();
      for (const auto& value : values) expect_equal(value, at::full({8}, 10.0), "all_reduce of a fresh group");
    });
    QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
  }

  // A MASTER_ADDR that does not resolve is looked up again within the connect timeout (a pod's DNS
  // record may come late) and then named: c10d's own retries took 85 s and ended in a socket error.
  void aMasterAddressThatDoesNotResolveIsNamedAtTheConnectTimeout() {
    const auto start = std::chrono::steady_clock::now();
    std::string message;
    try {
      GlooWorld world(WorldOptions{0, 1, "no-such-host.invalid", free_local_port(), std::chrono::milliseconds(500),
                                   std::chrono::milliseconds(2000)});
    } catch (const CommError& e) {
      message = e.what();
    }
    const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    QVERIFY2(message.find("rank 0: rendezvous at no-such-host.invalid:") != std::string::npos &&
                 message.find("failed: MASTER_ADDR no-such-host.invalid does not resolve (") != std::string::npos &&
                 message.find(") after 2 s of lookups") != std::string::npos,
             message.c_str());
    QVERIFY2(waited_s >= 1.9 && waited_s < 30, std::to_string(waited_s).c_str());  // the lookups, not c10d's retries
  }

  // A rank that starts 2 s after the other joins: connecting is bounded by the connect timeout
  // (10 s), not by the 0.5 s operation timeout, which still bounds the operations after.
  void aRankThatStartsLateJoinsWithinTheConnectTimeout() {
    const int port = free_local_port();
    std::vector<std::string> failures(2);
    auto rank_body = [&](int rank) {
      try {
        if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
        GlooWorld world(WorldOptions{rank, 2, "127.0.0.1", port, std::chrono::milliseconds(500),
                                     std::chrono::milliseconds(10000)});
        auto group = world.make_group("pair", {0, 1});
        at::Tensor x = at::full({3}, rank + 1.0);
        group->all_reduce(x);
        expect_equal(x, at::full({3}, 3.0), "all_reduce after a late start");
        if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(2));  // rank 0 waits at finish
        world.finish();
      } catch (const std::exception& e) {
        failures[rank] = e.what();
      }
    };
    std::thread late(rank_body, 1);
    rank_body(0);
    late.join();
    QVERIFY2(failures[0].empty(), failures[0].c_str());
    QVERIFY2(failures[1].empty(), failures[1].c_str());
  }

  void anAsynchronousOperationThePeerNeverJoinsFailsAtWait() {
    std::string message;
    const auto failures = run_ranks(
        2, std::chrono::milliseconds(1500),
        [&](int rank, GlooWorld& world) {
          auto group = world.make_group("pair", {0, 1});
          if (rank == 1) {
            std::this_thread::sleep_for(std::chrono::seconds(4));
            return;
          }
          at::Tensor x = at::ones({4});
          auto work = group->all_reduce_async(x);  // returns at once
          try {
            work->wait();
          } catch (const CommError& e) {
            message = e.what();
          }
        },
        /*keep_worlds=*/false);
    QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
    QVERIFY2(message.find("all_reduce in group pair [ranks 0,1] failed") != std::string::npos, message.c_str());
  }

  void anOperationThePeerNeverJoinsTimesOut() {
    std::string message;
    const auto failures = run_ranks(
        2, std::chrono::milliseconds(1500),
        [&](int rank, GlooWorld& world) {
          auto group = world.make_group("pair", {0, 1});
          if (rank == 1) {
            std::this_thread::sleep_for(std::chrono::seconds(4));  // alive (heartbeat) but never joins
            return;
          }
          at::Tensor x = at::ones({4});
          try {
            group->all_reduce(x);
          } catch (const CommError& e) {
            message = e.what();
          }
        },
        /*keep_worlds=*/false);
    QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
    QVERIFY2(message.find("all_reduce in group pair [ranks 0,1] failed") != std::string::npos, message.c_str());
    // The peer still beats, so it is not called dead: the cause is the timeout.
    QVERIFY2(message.find("died") == std::string::npos, message.c_str());
  }
};

QTEST_APPLESS_MAIN(TestCommunicator)
#include "test_communicator.moc"
