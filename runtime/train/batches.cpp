// Synthetic samples and the split of a global batch into microbatches.
#include "runtime/train/batches.hpp"

#include <algorithm>
#include <random>

#include <ATen/ATen.h>

#include "data/token_file.hpp"

namespace tessera::runtime {

namespace {

// splitmix64: a well-mixed 64-bit value from (seed, index).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

at::Tensor SyntheticTokens::sample(int64_t index) const {
  const uint64_t r = mix(mix(static_cast<uint64_t>(seed_)) ^ static_cast<uint64_t>(index));
  const int64_t start = static_cast<int64_t>(r % static_cast<uint64_t>(vocab_size_));
  const int64_t stride = 1 + static_cast<int64_t>((r >> 32) % 7);
  return (at::arange(seq_length_ + 1, at::kLong) * stride + start).remainder_(vocab_size_);
}

FileTokens::FileTokens(const std::string& path, int64_t seed, int64_t model_vocab_size, int64_t seq_length,
                       int64_t global_batch)
    : seed_(seed), window_(seq_length + 1) {
  auto file = data::read_token_file(path);
  if (file.vocab_size > model_vocab_size)
    throw data::DataError("data file " + path + " has a vocabulary of " + std::to_string(file.vocab_size) +
                          " tokens but model.vocab_size=" + std::to_string(model_vocab_size));
  windows_ = static_cast<int64_t>(file.tokens.size()) / window_;
  if (windows_ < global_batch)
    throw data::DataError("data file " + path + " holds " + std::to_string(file.tokens.size()) + " tokens, fewer than one global batch (" +
                          std::to_string(global_batch) + " sequences of " + std::to_string(window_) + " tokens)");
  tokens_ = std::move(file.tokens);
}

at::Tensor FileTokens::sample(int64_t index) const {
  const int64_t epoch = index / windows_;
  if (epoch != epoch_) {
    order_.resize(windows_);
    for (int64_t i = 0; i < windows_; ++i) order_[i] = i;
    std::mt19937_64 generator(mix(mix(static_cast<uint64_t>(seed_)) ^ static_cast<uint64_t>(epoch)));
    // Fisher-Yates with our own draws: std::shuffle's algorithm is implementation-defined.
    for (int64_t i = windows_ - 1; i > 0; --i) std::swap(order_[i], order_[generator() % static_cast<uint64_t>(i + 1)]);
    epoch_ = epoch;
  }
  at::Tensor window = at::empty({window_}, at::kLong);
  const uint32_t* first = tokens_.data() + order_[index % windows_] * window_;
  std::copy(first, first + window_, window.data_ptr<int64_t>());
  return window;
}

std::vector<Microbatch> make_microbatches(const TokenSource& source, const BatchLayout& layout, int64_t step) {
  const int64_t per_rank = layout.global_batch / layout.dp;
  const int64_t first = step * layout.global_batch + layout.dp_rank * per_rank;
  std::vector<Microbatch> out;
  for (int64_t m = 0; m < layout.microbatches(); ++m) {
    std::vector<at::Tensor> samples;
    for (int64_t j = 0; j < layout.micro_batch; ++j) samples.push_back(source.sample(first + m * layout.micro_batch + j));
    const at::Tensor batch = at::stack(samples, 1);  // [s + 1, b]
    const int64_t s = batch.size(0) - 1;
    out.push_back({batch.narrow(0, 0, s).contiguous(), batch.narrow(0, 1, s).contiguous()});
  }
  return out;
}

}  // namespace tessera::runtime
