// AdamW (Loshchilov & Hutter 2019, decoupled weight decay) and the warm-up + cosine schedule.
#include "runtime/train/optimizer.hpp"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

namespace tessera::runtime {

double learning_rate(const spec::TrainingSpec& t, int64_t step) {
  if (t.warmup_steps > 0 && step <= t.warmup_steps)
    return t.lr * static_cast<double>(step) / static_cast<double>(t.warmup_steps);
  const double span = static_cast<double>(std::max<int64_t>(1, t.train_steps - t.warmup_steps));
  const double progress = std::clamp(static_cast<double>(step - t.warmup_steps) / span, 0.0, 1.0);
  return t.min_lr + 0.5 * (t.lr - t.min_lr) * (1.0 + std::cos(M_PI * progress));
}

AdamW::AdamW(const spec::TrainingSpec& training, at::Tensor decay_mask)
    : weight_decay_(training.weight_decay), decay_mask_(std::move(decay_mask)),
      exp_avg_(at::zeros(decay_mask_.sizes(), at::kFloat)), exp_avg_sq_(at::zeros(decay_mask_.sizes(), at::kFloat)) {}

void AdamW::step(at::Tensor& values, const at::Tensor& grads, double lr) {
  ++steps_;
  const double bias1 = 1.0 - std::pow(beta1_, static_cast<double>(steps_));
  const double bias2 = 1.0 - std::pow(beta2_, static_cast<double>(steps_));
  exp_avg_.mul_(beta1_).add_(grads, 1.0 - beta1_);
  exp_avg_sq_.mul_(beta2_).addcmul_(grads, grads, 1.0 - beta2_);
  const at::Tensor denom = (exp_avg_sq_ / bias2).sqrt_().add_(eps_);
  values.addcmul_(decay_mask_, values, -lr * weight_decay_);
  values.addcdiv_(exp_avg_, denom, -lr / bias1);
}

}  // namespace tessera::runtime
