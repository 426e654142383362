// The timeline's mapping between time (seconds) and pixels: a visible start time and a scale, with
// zoom about a pixel, pan by pixels and fit to a width. Small and separate so that it is tested.
#pragma once

namespace tessera::ui {

class TimeAxis {
 public:
  /// x pixel of time t.
  double toPixel(double t_s) const { return origin_px_ + (t_s - start_s_) / seconds_per_px_; }
  /// Time at x pixel.
  double toTime(double x_px) const { return start_s_ + (x_px - origin_px_) * seconds_per_px_; }

  /// Shows [begin_s, end_s] across `width_px` pixels starting at `origin_px`.
  void fit(double begin_s, double end_s, double origin_px, double width_px);
  /// Zooms by `factor` (> 1 zooms in) keeping the time under `x_px` in place.
  void zoomAt(double x_px, double factor);
  /// Moves the view so that content follows a drag of `dx_px` pixels.
  void pan(double dx_px) { start_s_ -= dx_px * seconds_per_px_; }

  double startTime() const { return start_s_; }
  double secondsPerPixel() const { return seconds_per_px_; }
  double originPixel() const { return origin_px_; }

  /// A tick spacing of 1, 2 or 5 times a power of ten giving ticks at least `min_px` apart.
  double tickStep(double min_px) const;

 private:
  double start_s_ = 0;
  double seconds_per_px_ = 1e-3;
  double origin_px_ = 0;
};

}  // namespace tessera::ui
