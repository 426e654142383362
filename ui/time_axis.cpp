// Time <-> pixel mapping of the timeline view.
#include "time_axis.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::ui {

namespace {
constexpr double kMinSecondsPerPixel = 1e-9;
}

void TimeAxis::fit(double begin_s, double end_s, double origin_px, double width_px) {
  origin_px_ = origin_px;
  start_s_ = begin_s;
  const double span = std::max(end_s - begin_s, 1e-9);
  seconds_per_px_ = std::max(span / std::max(width_px, 1.0), kMinSecondsPerPixel);
}

void TimeAxis::zoomAt(double x_px, double factor) {
  const double anchor = toTime(x_px);
  seconds_per_px_ = std::max(seconds_per_px_ / factor, kMinSecondsPerPixel);
  start_s_ = anchor - (x_px - origin_px_) * seconds_per_px_;
}

double TimeAxis::tickStep(double min_px) const {
  const double min_s = min_px * seconds_per_px_;
  const double power = std::pow(10.0, std::floor(std::log10(min_s)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= min_s) return m * power;
  return 10.0 * power;
}

}  // namespace tessera::ui
