// Token batches: the global batch of a step split into this data-parallel rank's microbatches.
// Sample i of the run is a pure function of (seed, i), so every layout sees the same global batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace tessera::runtime {

/// Where samples come from: sample(i) is sequence i of the run, seq_length + 1 tokens (int64).
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual at::Tensor sample(int64_t index) const = 0;
};

/// Learnable synthetic sequences: token k of sample i is (a + k·b) mod V with a and b drawn from
/// (seed, i), so a model can learn to continue them (loss falls) and benchmarks need no file.
class SyntheticTokens final : public TokenSource {
 public:
  SyntheticTokens(int64_t seed, int64_t vocab_size, int64_t seq_length)
      : seed_(seed), vocab_size_(vocab_size), seq_length_(seq_length) {}
  at::Tensor sample(int64_t index) const override;

 private:
  int64_t seed_, vocab_size_, seq_length_;
};

/// Samples from a token file (docs/data.md): the file is cut into non-overlapping windows of
/// seq_length + 1 tokens, visited in an order shuffled per epoch from (seed, epoch); sample i is
/// window perm_epoch(i mod windows). Distinct samples of an epoch never overlap, so the data-parallel
/// ranks of a step read disjoint text.
class FileTokens final : public TokenSource {
 public:
  /// Reads and checks the file against the model: tokens below model.vocab_size, at least one
  /// global batch of windows. Throws data::DataError naming the file and the problem.
  FileTokens(const std::string& path, int64_t seed, int64_t model_vocab_size, int64_t seq_length, int64_t global_batch);
  at::Tensor sample(int64_t index) const override;

 private:
  // The whole file, as read: host data outside the tensor allocator (a GPU run keeps it on the host
  // too), so the measured peak is the model's; each sample becomes an int64 window.
  std::vector<uint32_t> tokens_;
  int64_t seed_, window_, windows_;
  mutable int64_t epoch_ = -1;
  mutable std::vector<int64_t> order_;
};

struct Microbatch {
  at::Tensor tokens;   ///< [s, b] int64
  at::Tensor targets;  ///< [s, b] int64, tokens shifted by one
};

struct BatchLayout {
  int64_t global_batch = 1, micro_batch = 1, dp = 1, dp_rank = 0;
  int64_t microbatches() const { return global_batch / (micro_batch * dp); }
};

/// Step `step` (0-based) for this dp rank: samples [step·G + dp_rank·G/dp, +G/dp) in microbatches.
std::vector<Microbatch> make_microbatches(const TokenSource& source, const BatchLayout& layout, int64_t step);

}  // namespace tessera::runtime
