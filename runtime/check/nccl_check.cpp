// nccl_check: the NCCL communicator on a GPU, without Qt so that the GPU machine can build and run
// it (tests/gpu/check.sh; CTest runs it as test_nccl_communicator). One-rank group: every
// collective, point-to-point to itself grouped with the receive, an asynchronous all-reduce, fp32 and
// bf16 (a machine with one GPU cannot hold two NCCL ranks on it); two ranks on two GPUs when there
// are two. Prints one line per check; exits 0 when all pass, 1 on a failure, 77 (not run) where no
// GPU is present.
#include <ATen/ATen.h>

#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/comm/gloo_world.hpp"
#include "runtime/comm/nccl_communicator.hpp"
#include "runtime/launch/local_launcher.hpp"

using namespace tessera::runtime;

namespace {

at::TensorOptions on(int device) { return at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, device); }

int failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("%-52s %s\n", what.c_str(), ok ? "ok" : "FAILED");
  if (!ok) ++failures;
}
bool same(const at::Tensor& got, const at::Tensor& want) { return at::equal(got.cpu(), want.cpu()); }

void one_rank_group() {
  GlooWorld world(WorldOptions{0, 1, "127.0.0.1", free_local_port(), std::chrono::milliseconds(30000)});
  auto group = make_nccl_group(world, "solo", {0}, 0);
  at::Tensor x = at::arange(1000, on(0));
  group->all_reduce(x);
  expect(same(x, at::arange(1000, at::kFloat)), "all_reduce sum, fp32, 1 rank");
  at::Tensor bf = at::full({17}, 1.5, on(0).dtype(at::kBFloat16));
  group->all_reduce(bf, ReduceOp::max);
  expect(same(bf, at::full({17}, 1.5, at::kBFloat16)), "all_reduce max, bf16, 1 rank");
  at::Tensor block = at::empty({8}, on(0));
  group->reduce_scatter(block, at::arange(8, on(0)) * 2);
  expect(same(block, at::arange(8, at::kFloat) * 2), "reduce_scatter, 1 rank");
  at::Tensor gathered = at::empty({4}, on(0));
  group->all_gather(gathered, at::full({4}, 3.0, on(0)));
  expect(same(gathered, at::full({4}, 3.0)), "all_gather, 1 rank");
  group->send(at::full({5}, 7.0, on(0)), 0, 1);  // queued, then grouped with the receive
  at::Tensor r = at::zeros({5}, on(0));
  group->recv(r, 0, 1);
  group->wait_sends();
  expect(same(r, at::full({5}, 7.0)), "send/recv to itself, grouped");
  at::Tensor a = at::full({1 << 22}, 2.0, on(0));
  auto work = group->all_reduce_async(a);
  work->wait();
  expect(same(a, at::full({1 << 22}, 2.0)), "all_reduce_async 16 MiB, 1 rank");
  group->barrier();
  at::Tensor on_cpu = at::ones({2});
  bool refused = false;
  try {
    group->all_reduce(on_cpu);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  expect(refused, "a CPU tensor is refused");
  world.finish();
}

void two_gpus() {
  const int port = free_local_port();
  std::mutex mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        GlooWorld world(WorldOptions{rank, 2, "127.0.0.1", port, std::chrono::milliseconds(30000)});
        auto group = make_nccl_group(world, "pair", {0, 1}, rank);
        at::Tensor x = at::full({4096}, rank + 1.0, on(rank));
        group->all_reduce_async(x)->wait();
        if (!same(x, at::full({4096}, 3.0))) throw std::runtime_error("all_reduce_async gave wrong sums");
        group->send(at::full({64}, static_cast<double>(rank), on(rank)), 1 - rank, 0);
        at::Tensor r = at::empty({64}, on(rank));
        group->recv(r, 1 - rank, 0);
        group->wait_sends();
        if (!same(r, at::full({64}, static_cast<double>(1 - rank)))) throw std::runtime_error("send/recv");
        world.finish();
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        errors.push_back("rank " + std::to_string(rank) + ": " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) std::printf("%s\n", e.c_str());
  expect(errors.empty(), "two GPUs: all_reduce_async and exchange");
}

}  // namespace

int main() {
  std::string why;
  const int gpus = cuda_device_count(&why);
  if (gpus == 0) {
    std::printf("nccl_check: not run: no CUDA GPU (%s)\n", why.c_str());
    return 77;
  }
  try {
    one_rank_group();
    if (gpus >= 2) two_gpus();
    else std::printf("%-52s %s\n", "two GPUs: all_reduce_async and exchange", "not run (one GPU)");
  } catch (const std::exception& e) {
    std::printf("nccl_check: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
