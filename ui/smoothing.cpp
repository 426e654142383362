// Debiased exponential moving average (the smoothing of TensorBoard's scalar dashboard).
#include "smoothing.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace tessera::ui {

DebiasedEma::DebiasedEma(double weight) : weight_(weight) {
  if (!(weight >= 0.0 && weight < 1.0))
    throw std::invalid_argument("smoothing weight=" + std::to_string(weight) + " must be in [0, 1)");
}

double DebiasedEma::add(double value) {
  if (!std::isfinite(value)) return value;
  accumulator_ = weight_ * accumulator_ + (1.0 - weight_) * value;
  weight_power_ *= weight_;
  return accumulator_ / (1.0 - weight_power_);
}

void DebiasedEma::reset() {
  accumulator_ = 0;
  weight_power_ = 1;
}

std::vector<double> debiased_ema(const std::vector<double>& values, double weight) {
  DebiasedEma ema(weight);
  std::vector<double> smoothed;
  smoothed.reserve(values.size());
  for (double value : values) smoothed.push_back(ema.add(value));
  return smoothed;
}

}  // namespace tessera::ui
