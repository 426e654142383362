// Benchmark of the workbench's what-if loop: edit a field -> re-plan -> repaint the summary and the
// current view, at 1,024 and 4,096 GPUs, against the 50 ms budget (printed as ours / budget), and a
// repaint of a 100,000-op timeline. Each edit must really change the plan shown. Wall time is what a
// user waits; the thread's CPU time is printed next to it because build machines are shared.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
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

double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median wall and CPU ms of edit -> re-plan -> repaint on one view; false when an edit did not
// reach the screen.
// The edit alternates `field` between two values: training.recompute keeps the rank grid, parallel.pp
// makes the planner build it again.
struct Edit {
  const char* field;
  nlohmann::json a, b;
};

nlohmann::json fieldValue(const spec::RunSpec& spec, const std::string& dotted) {
  const auto dot = dotted.find('.');
  return spec::to_json(spec)[dotted.substr(0, dot)][dotted.substr(dot + 1)];
}

bool measure(MainWindow& window, MainWindow::View view, const Edit& edit, int rounds, double* ms, double* cpu_ms) {
  window.showView(view);
  QCoreApplication::processEvents();
  std::vector<double> times, cpu;
  for (int i = 0; i < rounds; ++i) {
    const PlanPtr before = window.session()->plan();
    const QString memory = window.summary()->value(SummaryStrip::Memory);
    const nlohmann::json current = fieldValue(window.session()->spec(), edit.field);
    const auto t0 = Clock::now();
    const double c0 = threadCpuMs();
    if (!window.session()->setField(edit.field, current == edit.a ? edit.b : edit.a)) return false;
    window.repaint();  // synchronous paint of the summary and the visible view
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    cpu.push_back(threadCpuMs() - c0);
    if (window.session()->plan() == before || window.summary()->value(SummaryStrip::Memory) == memory ||
        window.session()->stale())
      return false;
  }
  *ms = median(times);
  *cpu_ms = median(cpu);
  return true;
}

}  // namespace

int main(int argc, char* argv[]) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QTemporaryDir dir;
  const int rounds = argc > 1 ? std::max(3, atoi(argv[1])) : 11;
  int failures = 0;

  std::printf("edit -> re-plan -> repaint, median of %d edits, budget %.0f ms\n", rounds, kBudgetMs);
  std::printf("%-8s %-10s %-20s %10s %10s %14s\n", "GPUs", "view", "edit", "wall ms", "CPU ms", "wall / budget");
  const Edit edits[] = {{"training.recompute", "full", "selective"}, {"parallel.pp", 4, 8}};
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
    for (const Edit& edit : edits)
      for (auto [view, name] : {std::pair{MainWindow::View::grid, "grid"}, {MainWindow::View::memory, "memory"},
                                {MainWindow::View::timeline, "timeline"}}) {
        double ms = 0, cpu_ms = 0;
        if (!measure(window, view, edit, rounds, &ms, &cpu_ms)) {
          std::printf("%-8lld %-10s %-20s edit did not change the plan shown\n", static_cast<long long>(nodes * 8), name, edit.field);
          ++failures;
          continue;
        }
        std::printf("%-8lld %-10s %-20s %10.1f %10.1f %14.2f\n", static_cast<long long>(nodes * 8), name, edit.field, ms,
                    cpu_ms, ms / kBudgetMs);
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
