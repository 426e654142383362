// The gradient reduction of one step, overlapped with the backward pass: sequence-parallel norm
// gradients summed over tp, the tied word embedding over the embedding group, and the data-parallel
// sum — an all-reduce per bucket, or under the distributed optimizer (ZeRO-1) a reduce of each bucket
// to the data-parallel rank that owns it. A bucket's data-parallel reduction starts from a hook on the
// gradient accumulators as soon as every gradient in it is final (accumulated by the last
// microbatch's backward), so it runs while the backward of earlier layers still computes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/comm/communicator.hpp"
#include "runtime/model/param_store.hpp"
#include "runtime/parallel/parallel_state.hpp"

namespace torch::autograd {
struct Node;
}

namespace tessera::runtime {

class GradientReducer {
 public:
  /// `store` must be finalised. Buckets hold at most `bucket_elements` gradients and, under the
  /// distributed optimizer, never cross the boundary of a data-parallel rank's shard.
  GradientReducer(ParamStore& store, ParallelState& state, bool distributed_optimizer, int64_t bucket_elements);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// Before the step's first backward: every parameter's gradient is final after `microbatches`
  /// accumulations.
  void begin_step(int64_t microbatches);
  /// After the step's last backward: reduces what the hooks did not start, waits for everything and
  /// returns the averaged gradients this rank's optimizer updates from (the whole buffer, or this
  /// rank's shard under the distributed optimizer).
  at::Tensor finish();

  /// Buckets whose data-parallel reduction started inside the backward pass in the last step.
  int64_t overlapped_buckets() const { return overlapped_buckets_; }
  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }

 private:
  struct Bucket {
    int64_t offset = 0, numel = 0;
    int owner = -1;                  ///< data-parallel rank it is reduced to (distributed optimizer), else -1
    int64_t param_elements = 0;      ///< gradient elements of parameters in it (the rest is padding)
    bool early = false;              ///< may start inside the backward (no tied-embedding gradient in it)
    int64_t pending = 0;             ///< elements not yet final in this step
    bool started = false;
  };
  struct Slice {
    size_t bucket;
    int64_t elements;
  };

  void on_accumulated(size_t param);
  void start(size_t bucket);
  void reduce_sequence_parallel(const std::vector<size_t>& params);

  ParamStore& store_;
  ParallelState& state_;
  bool distributed_optimizer_;
  std::vector<Bucket> buckets_;
  std::vector<std::vector<Slice>> slices_;  ///< per parameter: the buckets it lies in
  std::vector<std::vector<size_t>> bucket_params_;
  std::vector<int64_t> accumulated_;        ///< per parameter: accumulations in this step
  std::vector<bool> sp_reduced_;            ///< per parameter: its SP gradient was summed over tp
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<std::unique_ptr<PendingWork>> pending_;
  int64_t microbatches_ = 0;
  int64_t overlapped_buckets_ = 0;
  bool in_step_ = false;
};

}  // namespace tessera::runtime
