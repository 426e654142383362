// AdamW on a flat fp32 buffer (or the slice of it this rank owns under the distributed optimizer),
// with Megatron's learning-rate schedule: linear warm-up, then cosine decay to min_lr.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "spec/run_spec.hpp"

namespace tessera::runtime {

/// Learning rate of step `step` (1-based): lr·step/warmup during warm-up, then cosine from lr to
/// min_lr at train_steps.
double learning_rate(const spec::TrainingSpec& training, int64_t step);

class AdamW {
 public:
  /// `decay_mask` (bool) holds true where weight decay applies, shaped like the buffer.
  AdamW(const spec::TrainingSpec& training, at::Tensor decay_mask);
  /// One update of `values` from `grads` (same shape as the mask) at learning rate `lr`.
  void step(at::Tensor& values, const at::Tensor& grads, double lr);
  int64_t steps_taken() const { return steps_; }
  /// The state a checkpoint keeps: the moments and the number of updates.
  at::Tensor& exp_avg() { return exp_avg_; }
  at::Tensor& exp_avg_sq() { return exp_avg_sq_; }
  void set_steps_taken(int64_t steps) { steps_ = steps; }

 private:
  double beta1_ = 0.9, beta2_ = 0.95, eps_ = 1e-8, weight_decay_;
  at::Tensor decay_mask_, exp_avg_, exp_avg_sq_;
  int64_t steps_ = 0;
};

}  // namespace tessera::runtime
