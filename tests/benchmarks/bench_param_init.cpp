// Start-up cost of the weights' initialisation: ParamStore::normal (every element a function of its
// index in the full tensor, counter_rng.hpp: a rank draws only its block, on all its threads) against
// the previous way, the full tensor drawn with LibTorch's CPU generator (one thread) and narrowed to
// the block, for the weights of one Llama-3-8B layer (218 M parameters: q, k, v, projection, gate, up,
// down) as tp rank 0 of 1 and of 8. Prints both times and the ratio, measured in the same run; fails
// (exit 1) if the tp blocks joined differ from the single-process tensors.
//   bench_param_init [--scale S]   the layer's widths divided by S (the CTest run: 16)
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/model/param_store.hpp"

using tessera::runtime::ParamStore;
using tessera::runtime::Shard;

namespace {

struct Weight {
  std::string name;
  std::vector<int64_t> shape;
  int64_t dim;  // split along it by tp
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The previous initialisation: the whole tensor from a generator seeded per tensor, then the block.
at::Tensor full_then_narrow(const Weight& w, uint64_t seed, int64_t tp) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const at::Tensor full = at::normal(0.0, 0.02, w.shape, generator, at::TensorOptions().dtype(at::kFloat));
  const int64_t block = full.size(w.dim) / tp;
  return full.narrow(w.dim, 0, block).contiguous();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t scale = 1;
  if (argc == 3 && std::strcmp(argv[1], "--scale") == 0) scale = std::stoll(argv[2]);
  if (scale < 1 || 4096 % scale != 0 || (argc != 1 && argc != 3)) {
    std::fprintf(stderr, "usage: bench_param_init [--scale S]  (S divides 4096)\n");
    return 2;
  }
  const int64_t h = 4096 / scale, kv = 1024 / scale, f = 14336 / scale;
  const std::vector<Weight> layer{{"q", {h, h}, 0},     {"k", {kv, h}, 0},  {"v", {kv, h}, 0}, {"proj", {h, h}, 1},
                                  {"gate", {f, h}, 0}, {"up", {f, h}, 0}, {"down", {h, f}, 1}};
  int64_t params = 0;
  for (const auto& w : layer) params += w.shape[0] * w.shape[1];
  std::printf("one Llama-3-8B layer / %lld: %.1f M parameters, %d intra-op threads\n", static_cast<long long>(scale),
              params / 1e6, at::get_num_threads());
  std::printf("%-12s %14s %14s %8s\n", "tp rank 0 of", "full+narrow s", "counter s", "ratio");
  for (const int64_t tp : {int64_t{1}, int64_t{8}}) {
    auto start = std::chrono::steady_clock::now();
    for (const auto& w : layer) full_then_narrow(w, 7, tp);
    const double reference_s = seconds_since(start);
    start = std::chrono::steady_clock::now();
    const ParamStore store(7, 0, tp);
    for (const auto& w : layer) store.normal(w.name, w.shape, 0.02, Shard::along(w.dim));
    const double ours_s = seconds_since(start);
    std::printf("%-12lld %14.3f %14.3f %7.2fx\n", static_cast<long long>(tp), reference_s, ours_s, reference_s / ours_s);
  }
  // The blocks of all 8 ranks are the single-process tensors.
  for (const auto& w : layer) {
    std::vector<at::Tensor> blocks;
    for (int64_t rank = 0; rank < 8; ++rank) blocks.push_back(ParamStore(7, rank, 8).normal(w.name, w.shape, 0.02, Shard::along(w.dim)));
    if (!at::equal(at::cat(blocks, w.dim), ParamStore(7, 0, 1).normal(w.name, w.shape, 0.02))) {
      std::fprintf(stderr, "%s: the 8 tp blocks joined differ from the single-process tensor\n", w.name.c_str());
      return 1;
    }
  }
  return 0;
}
