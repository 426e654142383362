// Curve smoothing and x-axis choice shared by the live dashboard and the run comparison: TensorBoard's
// debiased exponential moving average, so the first points are not dragged towards zero.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::ui {

/// What the dashboard and compare plots put on the x axis.
enum class XAxis { step, tokens, wall_time_s };

/// TensorBoard-style smoothing: ema_i = w * ema_{i-1} + (1 - w) * y_i, divided by (1 - w^n) where n
/// counts the finite points so far. Non-finite points pass through unchanged and do not enter the
/// average. `weight` in [0, 1): 0 returns the input, larger is smoother. Throws std::invalid_argument
/// outside that range.
std::vector<double> debiased_ema(const std::vector<double>& values, double weight);

/// The same, continued: feeds new points into a running state so a live curve is smoothed by
/// appending, not by recomputing from the first point.
class DebiasedEma {
 public:
  explicit DebiasedEma(double weight);
  double add(double value);  ///< returns the smoothed value of `value`
  void reset();
  double weight() const { return weight_; }

 private:
  double weight_;
  double accumulator_ = 0;
  double weight_power_ = 1;  ///< weight^(finite points so far)
};

}  // namespace tessera::ui
