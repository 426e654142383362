// The gradient reducer with threads as data-parallel ranks: no bucket starts before the last
// microbatch's backward, every bucket starts inside it, and the reduced gradients are the exact
// average over ranks and microbatches — for the all-reduce and for the distributed optimizer's
// reduce to each shard's owner; a gradient accumulated more often than the step has microbatches is
// an error, not a silent early reduction.
// LibTorch before Qt: Qt's `slots` macro would break LibTorch's headers.
// moc needs none of these (it reads the test class alone); LibTorch would cost it ~20 s.
#ifndef Q_MOC_RUN
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <QtTest/QtTest>

#include <functional>
#include <mutex>
#include <thread>

#include "runtime/comm/gloo_world.hpp"
#include "runtime/comm/solo_communicator.hpp"
#include "runtime/launch/local_launcher.hpp"
#include "runtime/model/param_store.hpp"
#include "runtime/parallel/parallel_state.hpp"
#include "runtime/train/gradient_reducer.hpp"
#include "thread_ranks.hpp"
#endif

using namespace tessera::runtime;

namespace {

// Sizes of the three parameters and the bucket size: 10,000 elements in 4 buckets (3 per shard
// under the distributed optimizer: 5,000 = 2,500 + 2,500).
const std::vector<int64_t> kSizes{3000, 5000, 2000};
constexpr int64_t kBucket = 2500;

std::vector<std::string> on_two_ranks(const std::function<void(int, GlooWorld&)>& body) {
  return tessera::test::run_ranks(2, [&](int rank, GlooWorld& world) {
    at::set_num_threads(1);
    body(rank, world);
  });
}

ParallelState dp_state(int rank, GlooWorld& world) {
  ParallelState s;
  s.dp = 2;
  s.coord.dp = rank;
  s.tp_group = std::make_unique<SoloCommunicator>("tp", rank);
  s.pp_group = std::make_unique<SoloCommunicator>("pp", rank);
  s.dp_group = world.make_group("dp", {0, 1});
  return s;
}

// Microbatch m of rank r: loss = Σ_i (r + 1 + m) · (i + 1) · p_i summed over elements, so the
// gradient of every element of p_i is (r + 1 + m)(i + 1); averaged over 2 ranks × 2 microbatches:
// ((1 + 2) + (2 + 3)) / 2 · (i + 1) = 4 (i + 1).
void run_step(int rank, GlooWorld& world, bool distributed, int64_t declared_microbatches) {
  ParallelState state = dp_state(rank, world);
  ParamStore store(7, 0, 1);
  std::vector<at::Tensor> params;
  for (size_t i = 0; i < kSizes.size(); ++i)
    params.push_back(store.add({"p" + std::to_string(i), at::zeros({kSizes[i]}), false, false, true, false}));
  store.finalise(distributed ? 2 : 1);
  GradientReducer reducer(store, state, distributed, kBucket);
  if (reducer.bucket_count() != 4) throw std::runtime_error("bucket count");
  reducer.begin_step(declared_microbatches);
  for (int m = 0; m < 2; ++m) {
    at::Tensor loss = at::zeros({});
    for (size_t i = 0; i < params.size(); ++i) loss = loss + params[i].sum() * static_cast<double>((rank + 1 + m) * (i + 1));
    loss.backward();
    if (m == 0 && reducer.overlapped_buckets() != 0)
      throw std::runtime_error("a bucket started before the last microbatch's backward");
  }
  if (reducer.overlapped_buckets() != reducer.bucket_count())
    throw std::runtime_error("only " + std::to_string(reducer.overlapped_buckets()) + " of " +
                             std::to_string(reducer.bucket_count()) + " buckets started inside the backward");
  const at::Tensor grads = reducer.finish();
  std::vector<at::Tensor> expected;
  for (size_t i = 0; i < kSizes.size(); ++i) expected.push_back(at::full({kSizes[i]}, 4.0 * (i + 1)));
  const at::Tensor all = at::cat(expected);
  const at::Tensor want = distributed ? all.narrow(0, rank * 5000, 5000) : all;
  if (!at::equal(grads, want)) throw std::runtime_error("reduced gradients differ from the exact average");
}

}  // namespace

class TestGradientReducer : public QObject {
  Q_OBJECT
 private slots:
  void allReduceBucketsStartInTheLastBackward() {
    const auto failures = on_two_ranks([](int rank, GlooWorld& world) { run_step(rank, world, false, 2); });
    QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
  }

  void distributedOptimizerReducesEachShardToItsOwner() {
    const auto failures = on_two_ranks([](int rank, GlooWorld& world) { run_step(rank, world, true, 2); });
    QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
  }

  void moreAccumulationsThanMicrobatchesIsAnError() {
    std::string message;
    at::set_num_threads(1);
    GlooWorld world(WorldOptions{0, 1, "127.0.0.1", free_local_port(), std::chrono::milliseconds(5000)});
    ParallelState state;
    state.dp = 2;  // hooks are installed only with data parallelism; the group itself is never reached
    state.tp_group = std::make_unique<SoloCommunicator>("tp", 0);
    state.pp_group = std::make_unique<SoloCommunicator>("pp", 0);
    state.dp_group = std::make_unique<SoloCommunicator>("dp", 0);
    ParamStore store(7, 0, 1);
    at::Tensor p = store.add({"p0", at::zeros({10}), false, false, true, false});
    store.finalise(1);
    GradientReducer reducer(store, state, false, kBucket);
    reducer.begin_step(1);
    p.sum().backward();
    try {
      p.sum().backward();
    } catch (const std::exception& e) {
      message = e.what();
    }
    QVERIFY2(message.find("gradient of p0 accumulated 2 times in a step of 1 microbatches") != std::string::npos,
             message.c_str());
    world.finish();
  }
};

QTEST_APPLESS_MAIN(TestGradientReducer)
#include "test_gradient_reducer.moc"
