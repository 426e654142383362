// Benchmark of the workbench's what-if loop: edit a field -> re-plan -> repaint the summary and the
// current view, at 1,024 and 4,096 GPUs, against the 50 ms budget (printed as ours / budget), and a
// repaint of a 100,000-op timeline. Each edit must really change the plan shown.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <QApplication>
#include <QTemporaryDir>

#include "main_window.hpp"
#include "rank_grid_view.hpp"
#include "summary_strip.hpp"
#include "timeline_view.hpp"

using namespace tessera;
using namespace tessera::ui;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kBudgetMs = 50.0;

bool writeSpec(const QString& path, const nlohmann::json& doc) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return false;
  f.write(QByteArray::fromStdString(doc.dump()));
  return true;
}

nlohmann::json llama70b(int64_t nodes, int64_t pp, int64_t gbs) {
  return {{"name", "bench"},
          {"model", {{"preset", "llama3-70b"}}},
          {"parallel", {{"tp", 8}, {"pp", pp}, {"sequence_parallel", true}, {"distributed_optimizer", true}}},
          {"training", {{"micro_batch_size", 1}, {"global_batch_size", gbs}, {"recompute", "selective"}}},
          {"cluster", {{"gpu", "h100-sxm"}, {"nodes", nodes}, {"gpus_per_node", 8}}}};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median ms of edit -> re-plan -> repaint on one view; false when an edit did not reach the screen.
bool measure(MainWindow& window, MainWindow::View view, int rounds, double* ms) {
  window.showView(view);
  QCoreApplication::processEvents();
  std::vector<double> times;
  for (int i = 0; i < rounds; ++i) {
    const char* recompute = window.session()->spec().training.recompute == spec::Recompute::full ? "selective" : "full";
    const QString before = window.summary()->value(SummaryStrip::Memory);
    const auto t0 = Clock::now();
    if (!window.session()->setField("training.recompute", recompute)) return false;
    window.repaint();  // synchronous paint of the summary and the visible view
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (window.summary()->value(SummaryStrip::Memory) == before || window.session()->stale()) return false;
  }
  *ms = median(times);
  return true;
}

}  // namespace

int main(int argc, char* argv[]) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QTemporaryDir dir;
  const int rounds = argc > 1 ? std::max(3, atoi(argv[1])) : 11;
  int failures = 0;

  std::printf("edit -> re-plan -> repaint (median of %d edits of training.recompute), budget %.0f ms\n", rounds, kBudgetMs);
  std::printf("%-8s %-10s %10s %14s\n", "GPUs", "view", "ours ms", "ours / budget");
  for (int64_t nodes : {128, 512}) {
    const QString path = dir.filePath(QStringLiteral("bench-%1.json").arg(nodes));
    writeSpec(path, llama70b(nodes, 4, 1024));
    MainWindow window(false);
    QString error;
    if (!window.openFile(path, &error)) {
      std::fprintf(stderr, "%s\n", qPrintable(error));
      return 1;
    }
    window.resize(1600, 1000);
    window.show();
    for (auto [view, name] : {std::pair{MainWindow::View::grid, "grid"}, {MainWindow::View::memory, "memory"},
                              {MainWindow::View::timeline, "timeline"}}) {
      double ms = 0;
      if (!measure(window, view, rounds, &ms)) {
        std::printf("%-8lld %-10s edit did not change the plan shown\n", static_cast<long long>(nodes * 8), name);
        ++failures;
        continue;
      }
      std::printf("%-8lld %-10s %10.1f %14.2f\n", static_cast<long long>(nodes * 8), name, ms, ms / kBudgetMs);
    }
  }

  // A 100,000-op timeline: TP8·PP8·DP1 with 6,250 microbatches (8 stages x 6,250 x F and B).
  const QString path = dir.filePath(QStringLiteral("ops.json"));
  writeSpec(path, llama70b(8, 8, 6250));
  MainWindow window(false);
  QString error;
  if (!window.openFile(path, &error)) {
    std::fprintf(stderr, "%s\n", qPrintable(error));
    return 1;
  }
  window.resize(1600, 1000);
  window.show();
  window.showView(MainWindow::View::timeline);
  QCoreApplication::processEvents();
  const size_t ops = window.session()->plan()->prediction.simulation.events.size();
  std::vector<double> times;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = Clock::now();
    window.timelineView()->repaint();
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::printf("timeline repaint, %zu ops, whole iteration in view: %.1f ms (ours / 16.7 ms frame = %.2f)\n", ops,
              median(times), median(times) / 16.7);
  if (ops != 100000) ++failures;
  return failures == 0 ? 0 : 1;
}
