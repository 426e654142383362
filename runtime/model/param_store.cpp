// Layout-independent initialisation and the flat parameter/gradient buffers.
#include "runtime/model/param_store.hpp"

#include <algorithm>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "runtime/model/counter_rng.hpp"

namespace tessera::runtime {

namespace {

// FNV-1a over the seed and the name: the generator seed of one full tensor.
uint64_t tensor_seed(int64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](unsigned char byte) {
    h ^= byte;
    h *= 1099511628211ULL;
  };
  for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(static_cast<uint64_t>(seed) >> (8 * i)));
  for (char c : name) mix(static_cast<unsigned char>(c));
  return h;
}

}  // namespace

at::Tensor ParamStore::normal(const std::string& name, at::IntArrayRef full_shape, double std, Shard shard) const {
  // Split along D, the full tensor is [outer, D, inner] and the block [outer, D / tp, inner]: `outer`
  // runs of (D / tp)·inner consecutive elements of the full tensor. Unsplit, one run of all of them.
  std::vector<int64_t> shape = full_shape.vec();
  int64_t run = 1, extent = 1, inner = 1, first = 0;
  for (int64_t size : shape) run *= size;
  if (shard.dim >= 0 && tp_size_ > 1) {
    for (size_t d = shard.dim + 1; d < shape.size(); ++d) inner *= shape[d];
    extent = shape[shard.dim];
    shape[shard.dim] /= tp_size_;
    first = tp_rank_ * shape[shard.dim];
    run = shape[shard.dim] * inner;
  }
  at::Tensor block = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
  float* out = block.data_ptr<float>();
  const uint64_t key = tensor_seed(seed_, name);
  const auto scale = static_cast<float>(std);
  const auto fill = [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end;) {
      const int64_t o = j / run, within = j - o * run, n = std::min(end - j, run - within);
      normal_range(key, (o * extent + first) * inner + within, n, scale, out + j);
      j += n;
    }
  };
  // On the intra-op threads (--threads), in pieces of whole grains: a number depends on its index
  // alone, so any split draws the same tensor. Threads of our own: at::parallel_for is OpenMP inlined
  // into this file, which is built without -fopenmp, so it would run on one (a GPT-1.3B's 5 GB of
  // weights took seconds of start-up there).
  constexpr int64_t kGrain = int64_t{1} << 14;
  const int64_t numel = block.numel(), grains = (numel + kGrain - 1) / kGrain;
  const int64_t threads = std::clamp<int64_t>(at::get_num_threads(), 1, std::max<int64_t>(grains, 1));
  const int64_t per_thread = (grains + threads - 1) / threads * kGrain;
  std::vector<std::thread> workers;
  for (int64_t t = 1; t < threads; ++t)
    workers.emplace_back(fill, std::min(numel, t * per_thread), std::min(numel, (t + 1) * per_thread));
  fill(0, std::min(numel, per_thread));
  for (auto& worker : workers) worker.join();
  return block;
}

at::TensorOptions ParamStore::model_options() const {
  return at::TensorOptions().dtype(placement_.model_dtype).device(placement_.device);
}

at::Tensor ParamStore::add(Param param) {
  const bool moved = param.value.device() != placement_.device || param.value.scalar_type() != placement_.model_dtype;
  initial_.push_back(moved ? param.value : at::Tensor());
  if (moved) param.value = param.value.to(model_options());
  params_.push_back(std::move(param));
  return params_.back().value;
}

void ParamStore::refresh_model_values() {
  if (!placement_.mixed()) return;
  at::NoGradGuard no_grad;
  model_values_.narrow(0, master_offset_, master_.numel()).copy_(master_);
}

void ParamStore::finalise(int64_t shards, int64_t shard) {
  int64_t total = 0;
  offsets_.clear();
  for (const auto& p : params_) {
    offsets_.push_back(total);
    total += p.value.numel();
  }
  const int64_t padded = (total + shards - 1) / shards * shards;
  const int64_t shard_numel = padded / shards;
  master_offset_ = shard * shard_numel;
  const auto fp32 = at::TensorOptions().dtype(at::kFloat).device(placement_.device);
  grads_ = at::zeros({padded}, fp32);
  model_values_ = at::zeros({padded}, model_options());
  master_ = placement_.mixed() ? at::zeros({shard_numel}, fp32) : model_values_.narrow(0, master_offset_, shard_numel);
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    const int64_t n = p.value.numel();
    const auto sizes = p.value.sizes().vec();
    const at::Tensor initial = (initial_[i].defined() ? initial_[i] : p.value).reshape({n});
    model_values_.narrow(0, offsets_[i], n).copy_(initial);
    if (placement_.mixed()) {
      // The masters from the fp32 initial values (not from their bf16 rounding), where they overlap the shard.
      const int64_t begin = std::max(offsets_[i], master_offset_), end = std::min(offsets_[i] + n, master_offset_ + shard_numel);
      if (begin < end) master_.narrow(0, begin - master_offset_, end - begin).copy_(initial.narrow(0, begin - offsets_[i], end - begin));
    }
    // set_ re-points the tensor itself, so every copy the model holds now reads the flat buffer.
    p.value.set_(model_values_.storage(), offsets_[i], sizes, at::detail::defaultStrides(sizes));
    p.value.requires_grad_(true);
    p.value.mutable_grad() = grads_.narrow(0, offsets_[i], n).view(sizes);
  }
  initial_.clear();
}

}  // namespace tessera::runtime
