// AdamW on a flat fp32 buffer (or the slice of it this rank owns under the distributed optimizer),
// with Megatron's learning-rate schedule: linear warm-up, then cosine decay to min_lr.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "spec/run_spec.hpp"

namespace tessera::runtime {

/// Learning rate of step `step` (1-based): lr·step/warmup during warm-up, then cosine from lr to
/// min_lr at train_steps.
double learning_rate(const spec::TrainingSpec& training, int64_t step);

/// Elements [offset, offset + length) of a flat buffer: which ones a rule (weight decay, counting in
/// the gradient norm) applies to, one range per run of parameters instead of a mask per element.
struct ElementRange {
  int64_t offset = 0, length = 0;
};

/// The ranges of `ranges` that fall inside [start, start + numel), shifted to start at 0 and with
/// touching ones merged.
std::vector<ElementRange> clip_ranges(const std::vector<ElementRange>& ranges, int64_t start, int64_t numel);

class AdamW {
 public:
  /// A buffer of `numel` elements on `device`; weight decay applies to `decay_ranges` of it. With
  /// `tessera_kernel` the update runs Tessera's multi-tensor kernel (kernels/kernels.hpp: the CPU
  /// reference on the CPU, the CUDA kernel on a GPU), else LibTorch's fused AdamW.
  AdamW(const spec::TrainingSpec& training, int64_t numel, const std::vector<ElementRange>& decay_ranges,
        at::Device device = at::kCPU, bool tessera_kernel = false);
  /// One update of `values` (fp32) from `grads` (fp32, both `numel` long) times `grad_scale` (gradient
  /// clipping's factor: read so by Tessera's kernel; LibTorch's AdamW gets `grads` scaled in place first)
  /// at learning rate `lr`. `model` (optional, `numel` long, float or bfloat16) is the model's copy of
  /// the same weights: Tessera's kernel writes it in the same pass. Returns whether `model` was written.
  bool step(at::Tensor& values, const at::Tensor& grads, double lr, const at::Tensor& model = {}, float grad_scale = 1.0f);
  int64_t steps_taken() const { return steps_; }
  /// The state a checkpoint keeps: the moments and the number of updates.
  at::Tensor& exp_avg() { return exp_avg_; }
  at::Tensor& exp_avg_sq() { return exp_avg_sq_; }
  void set_steps_taken(int64_t steps) { steps_ = steps; }

 private:
  double beta1_ = 0.9, beta2_ = 0.95, eps_ = 1e-8, weight_decay_;
  bool tessera_kernel_ = false;
  std::vector<ElementRange> ranges_[2];  ///< [0]: no weight decay, [1]: weight decay; together the buffer
  at::Tensor exp_avg_, exp_avg_sq_;
  int64_t steps_ = 0;
};

}  // namespace tessera::runtime
