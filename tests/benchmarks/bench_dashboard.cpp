// Frame time of a live dashboard plot under a synthetic stream of 100,000 points per second, redrawn 30
// times per second, growing each curve (a raw loss and its smoothed twin) to 1,000,000 points. Ours:
// the dashboard's path — each frame appends only its new points to a StreamingGraph (bounded min/max
// decimation) and replots once (ReplotCoalescer). References, in the same run: every point appended
// to the graph, drawn with QCustomPlot's own adaptive sampling; and the naive path, each frame setting
// the graph's whole data again (QCPGraph::setData with every point so far). Prints the median and
// 95th-percentile wall and the median CPU frame time of the last tenth of the frames (curves near
// full) and the ratios.
//   bench_dashboard [points_per_curve=1000000]   (QT_QPA_PLATFORM=offscreen)
#include <QApplication>
#include <QElapsedTimer>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "smoothing.hpp"
#include "streaming_graph.hpp"

using namespace tessera::ui;

namespace {

constexpr double kPointsPerSecond = 100000;
constexpr double kFramesPerSecond = 30;

struct Stream {  // a noisy falling loss
  double value(int64_t i) const { return 2.0 + 3.0 * std::exp(-i / 200000.0) + 0.2 * std::sin(i * 0.37) * std::cos(i * 0.011); }
};

struct Result {
  double median_ms = 0, p95_ms = 0;  ///< wall
  double median_cpu_ms = 0;          ///< this thread's CPU time (the machine may be shared)
  int64_t points = 0;
};

double threadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

enum class Mode { ours, append_all, naive };

Result run(Mode mode, int64_t total) {
  QCustomPlot plot;
  plot.resize(900, 400);
  plot.show();
  QCPGraph* raw = plot.addGraph();
  QCPGraph* smooth = plot.addGraph();
  raw->setPen(QPen(QColor(31, 119, 180, 70)));
  smooth->setPen(QPen(QColor(31, 119, 180), 2));
  StreamingGraph raw_stream(raw), smooth_stream(smooth);
  ReplotCoalescer coalescer;
  coalescer.beforeReplot = [](QCustomPlot* p) { p->rescaleAxes(); };
  const int64_t per_frame = static_cast<int64_t>(kPointsPerSecond / kFramesPerSecond);
  Stream stream;
  DebiasedEma ema(0.9);
  QVector<double> all_x, all_raw, all_smooth;  // the reference keeps every point to set them again
  std::vector<double> frame_ms, frame_cpu_ms;
  int64_t produced = 0;
  while (produced < total) {
    const int64_t n = std::min(per_frame, total - produced);
    std::vector<double> x(n), y(n), s(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<double>(produced + i + 1);
      y[i] = stream.value(produced + i);
      s[i] = ema.add(y[i]);
    }
    produced += n;
    QElapsedTimer timer;
    timer.start();
    const double cpu0 = threadCpuMs();
    if (mode == Mode::ours) {
      raw_stream.append(x, y);
      smooth_stream.append(x, s);
    } else if (mode == Mode::append_all) {
      appendPoints(raw, x, y);
      appendPoints(smooth, x, s);
    } else {
      all_x.append(QVector<double>(x.begin(), x.end()));
      all_raw.append(QVector<double>(y.begin(), y.end()));
      all_smooth.append(QVector<double>(s.begin(), s.end()));
      raw->setData(all_x, all_raw, /*alreadySorted=*/true);
      smooth->setData(all_x, all_smooth, /*alreadySorted=*/true);
    }
    coalescer.schedule(&plot);
    coalescer.flush();
    QCoreApplication::processEvents();  // the paint of the replotted buffer
    frame_ms.push_back(timer.nsecsElapsed() / 1e6);
    frame_cpu_ms.push_back(threadCpuMs() - cpu0);
  }
  const size_t tail_n = std::max<size_t>(1, frame_ms.size() / 10);
  std::vector<double> tail(frame_ms.end() - tail_n, frame_ms.end());
  std::vector<double> tail_cpu(frame_cpu_ms.end() - tail_n, frame_cpu_ms.end());
  std::sort(tail.begin(), tail.end());
  const int64_t held = mode == Mode::ours ? raw_stream.decimator().points() : raw->dataCount();
  std::printf("  (%s: the graph holds %d points per curve)\n",
              mode == Mode::ours ? "ours" : mode == Mode::append_all ? "append all" : "naive", raw->dataCount());
  return {tail[tail.size() / 2], tail[std::min(tail.size() - 1, tail.size() * 95 / 100)], median(tail_cpu), held};
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  const int64_t total = argc > 1 ? std::atoll(argv[1]) : 1000000;
  if (total < 1000) {
    std::fprintf(stderr, "bench_dashboard: points_per_curve must be at least 1000, got %lld\n", static_cast<long long>(total));
    return 2;
  }
  const Result ours = run(Mode::ours, total);
  const Result all = run(Mode::append_all, total);
  const Result naive = run(Mode::naive, total);
  std::printf("stream %.0f points/s, %.0f frames/s, 2 curves of %lld points each\n", kPointsPerSecond, kFramesPerSecond,
              static_cast<long long>(total));
  std::printf("frame time near the end: wall median / wall p95 / CPU median\n");
  std::printf("  ours  (decimated append, coalesced)  %8.2f / %8.2f / %8.2f ms\n", ours.median_ms, ours.p95_ms, ours.median_cpu_ms);
  std::printf("  append every point (QCP sampling)   %8.2f / %8.2f / %8.2f ms\n", all.median_ms, all.p95_ms, all.median_cpu_ms);
  std::printf("  naive (setData of every point)      %8.2f / %8.2f / %8.2f ms\n", naive.median_ms, naive.p95_ms, naive.median_cpu_ms);
  std::printf("  ratio append-all / ours             wall %.2fx, CPU %.2fx\n", all.median_ms / ours.median_ms,
              all.median_cpu_ms / ours.median_cpu_ms);
  std::printf("  ratio naive / ours                  wall %.2fx, CPU %.2fx\n", naive.median_ms / ours.median_ms,
              naive.median_cpu_ms / ours.median_cpu_ms);
  std::printf("  frame budget at 30/s: 33.3 ms; ours (CPU median) %s it\n",
              ours.median_cpu_ms < 1000.0 / kFramesPerSecond ? "fits" : "does NOT fit");
  // Both paths must hold every point (the benchmark checks results, never timings).
  if (ours.points != total || all.points != total || naive.points != total) {
    std::fprintf(stderr, "bench_dashboard: a curve took %lld / %lld / %lld points, expected %lld\n",
                 static_cast<long long>(ours.points), static_cast<long long>(all.points), static_cast<long long>(naive.points),
                 static_cast<long long>(total));
    return 1;
  }
  return 0;
}
