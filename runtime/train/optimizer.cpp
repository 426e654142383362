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

std::vector<ElementRange> clip_ranges(const std::vector<ElementRange>& ranges, int64_t start, int64_t numel) {
  std::vector<ElementRange> out;
  for (const auto& r : ranges) {
    const int64_t begin = std::max(r.offset, start), end = std::min(r.offset + r.length, start + numel);
    if (begin >= end) continue;
    if (!out.empty() && out.back().offset + out.back().length == begin - start)
      out.back().length += end - begin;
    else
      out.push_back({begin - start, end - begin});
  }
  return out;
}

AdamW::AdamW(const spec::TrainingSpec& training, int64_t numel, std::vector<ElementRange> decay_ranges)
    : weight_decay_(training.weight_decay), decay_ranges_(std::move(decay_ranges)),
      exp_avg_(at::zeros({numel}, at::kFloat)), exp_avg_sq_(at::zeros({numel}, at::kFloat)) {}

void AdamW::step(at::Tensor& values, const at::Tensor& grads, double lr) {
  ++steps_;
  const double bias1 = 1.0 - std::pow(beta1_, static_cast<double>(steps_));
  const double bias2 = 1.0 - std::pow(beta2_, static_cast<double>(steps_));
  // Decoupled weight decay reads the weights before this update: applied first, it is the same.
  for (const auto& r : decay_ranges_) {
    at::Tensor decayed = values.narrow(0, r.offset, r.length);
    decayed.add_(decayed, -lr * weight_decay_);
  }
  // In chunks, so that the denominator's temporary is kChunkElements long, not the buffer's length.
  constexpr int64_t kChunkElements = int64_t{1} << 22;
  const int64_t numel = values.numel();
  for (int64_t begin = 0; begin < numel; begin += kChunkElements) {
    const int64_t n = std::min(kChunkElements, numel - begin);
    const at::Tensor g = grads.narrow(0, begin, n);
    at::Tensor m = exp_avg_.narrow(0, begin, n), v = exp_avg_sq_.narrow(0, begin, n), w = values.narrow(0, begin, n);
    m.mul_(beta1_).add_(g, 1.0 - beta1_);
    v.mul_(beta2_).addcmul_(g, g, 1.0 - beta2_);
    w.addcdiv_(m, (v / bias2).sqrt_().add_(eps_), -lr / bias1);
  }
}

}  // namespace tessera::runtime
