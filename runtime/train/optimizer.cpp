// AdamW (Loshchilov & Hutter 2019, decoupled weight decay) and the warm-up + cosine schedule.
#include "runtime/train/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <ATen/ATen.h>

#include "runtime/model/kernel_dispatch.hpp"

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

namespace {

// One call of Tessera's multi-tensor AdamW over `ranges` of the flat fp32 buffers, writing the
// weights also into `model` (float or bf16, possibly `master` itself).
void tessera_adamw(const std::vector<ElementRange>& ranges, at::Tensor& master, const at::Tensor& model,
                   const at::Tensor& grads, at::Tensor& exp_avg, at::Tensor& exp_avg_sq,
                   const kernels::AdamWConfig& config) {
  using namespace kernel_dispatch;
  Launch l;
  launch_for(l, master, "AdamW");
  with_dtype(model, "AdamW", [&](auto tag) {
    using T = decltype(tag);
    std::vector<kernels::AdamWTensor<T>> tensors;
    for (const auto& r : ranges)
      tensors.push_back({f32(master) + r.offset, ptr<T>(model) + r.offset, f32(grads) + r.offset,
                         f32(exp_avg) + r.offset, f32(exp_avg_sq) + r.offset, r.length});
    TESSERA_RUN(l, adamw_step<T>, tensors.data(), static_cast<int64_t>(tensors.size()), config);
  });
}

}  // namespace

AdamW::AdamW(const spec::TrainingSpec& training, int64_t numel, const std::vector<ElementRange>& decay_ranges,
             at::Device device, bool tessera_kernel)
    : weight_decay_(training.weight_decay), tessera_kernel_(tessera_kernel),
      exp_avg_(at::zeros({numel}, at::TensorOptions().dtype(at::kFloat).device(device))),
      exp_avg_sq_(at::zeros({numel}, at::TensorOptions().dtype(at::kFloat).device(device))) {
  // The ranges between the decaying ones (and after the last) take no decay.
  int64_t covered = 0;
  auto add = [&](bool with_decay, int64_t offset, int64_t length) {
    if (length > 0) ranges_[with_decay].push_back({offset, length});
  };
  for (const auto& r : decay_ranges) {
    add(false, covered, r.offset - covered);
    add(true, r.offset, r.length);
    covered = r.offset + r.length;
  }
  add(false, covered, numel - covered);
}

bool AdamW::step(at::Tensor& values, const at::Tensor& grads, double lr, const at::Tensor& model, float grad_scale) {
  ++steps_;
  if (tessera_kernel_) {
    if (!values.is_contiguous() || !grads.is_contiguous() || (model.defined() && !model.is_contiguous()))
      throw std::invalid_argument("AdamW: Tessera's kernel needs contiguous weights, gradients and model copy");
    for (int with_decay = 0; with_decay < 2; ++with_decay) {
      if (ranges_[with_decay].empty()) continue;
      const kernels::AdamWConfig config{static_cast<float>(lr),
                                        static_cast<float>(beta1_),
                                        static_cast<float>(beta2_),
                                        static_cast<float>(eps_),
                                        static_cast<float>(with_decay ? weight_decay_ : 0.0),
                                        steps_,
                                        grad_scale};
      // fp32 without a model copy: the weights are written in place.
      tessera_adamw(ranges_[with_decay], values, model.defined() ? model : values, grads, exp_avg_, exp_avg_sq_, config);
    }
    return model.defined();
  }
  // LibTorch's fused AdamW: one vectorised pass over weights, gradients and moments instead of eight
  // elementwise ones, no temporary. Two calls: the ranges that decay, and the rest with no decay.
  if (grad_scale != 1.0f) grads.mul_(grad_scale);
  const at::Tensor step = at::full({}, static_cast<double>(steps_), exp_avg_.options());
  for (int with_decay = 0; with_decay < 2; ++with_decay) {
    const auto& ranges = ranges_[with_decay];
    if (ranges.empty()) continue;
    std::vector<at::Tensor> w, g, m, v;
    for (const auto& r : ranges) {
      w.push_back(values.narrow(0, r.offset, r.length));
      g.push_back(grads.narrow(0, r.offset, r.length));
      m.push_back(exp_avg_.narrow(0, r.offset, r.length));
      v.push_back(exp_avg_sq_.narrow(0, r.offset, r.length));
    }
    const std::vector<at::Tensor> steps(ranges.size(), step);
    at::_fused_adamw_(w, g, m, v, {}, steps, lr, beta1_, beta2_, with_decay ? weight_decay_ : 0.0, eps_,
                      /*amsgrad=*/false, /*maximize=*/false);
  }
  return false;
}

}  // namespace tessera::runtime
