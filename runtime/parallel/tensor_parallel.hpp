// Tensor and sequence parallelism as autograd functions (Megatron's conjugate operators) and the
// layers built from them: column/row-parallel linear, vocab-parallel embedding and cross-entropy.
// Activations are [sequence, batch, hidden]; sequence parallelism splits dim 0 across the tp group.
// With a tp group of one every operator is the identity.
#pragma once

#include <ATen/core/Tensor.h>

#include "runtime/comm/communicator.hpp"

namespace tessera::runtime {

/// The tp group and whether sequence parallelism is on: what every parallel layer needs.
struct TensorParallel {
  Communicator* group = nullptr;
  bool sequence_parallel = false;
  int64_t size() const { return group->size(); }
  int64_t rank() const { return group->rank(); }
};

// Megatron's conjugate pairs. f: identity forward, all-reduce backward; g: the reverse.
at::Tensor copy_to_tp(const at::Tensor& x, Communicator& tp);             // f
at::Tensor reduce_from_tp(const at::Tensor& x, Communicator& tp);         // g
// Sequence parallel: all-gather along dim 0 forward / reduce-scatter backward, and the reverse;
// scatter keeps this rank's slice forward and all-gathers the gradient.
at::Tensor gather_from_sequence(const at::Tensor& x, Communicator& tp);
at::Tensor reduce_scatter_to_sequence(const at::Tensor& x, Communicator& tp);
at::Tensor scatter_to_sequence(const at::Tensor& x, Communicator& tp);

/// y = x W^T + b with W split by output rows; x is whole, or sequence-sharded under SP: gathered for
/// the product, and only the shard kept for the backward (which gathers it again).
at::Tensor column_parallel_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                  const TensorParallel& tp);
/// y = x W^T + b with W split by input columns and x split the same way; partial sums are reduced
/// (all-reduce, or reduce-scatter along the sequence under SP); the replicated bias added after.
at::Tensor row_parallel_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                               const TensorParallel& tp);

/// Rows [rank*V/t, (rank+1)*V/t) of the word embedding on each rank; tokens outside give zeros and
/// the all-reduce assembles the full lookup. Result is whole along the sequence.
at::Tensor vocab_parallel_embedding(const at::Tensor& tokens, const at::Tensor& weight_shard, const TensorParallel& tp);

/// Per-token cross-entropy from logits split by vocabulary ([tokens, V/t], fp32) without gathering
/// the vocabulary: max, target logit and sum of exponentials are reduced across the tp group.
at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits_shard, const at::Tensor& targets,
                                        const TensorParallel& tp);

}  // namespace tessera::runtime
