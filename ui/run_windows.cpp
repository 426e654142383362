// RunWindows: the launch flow and one dashboard window per run.
#include "run_windows.hpp"

#include <QMessageBox>
#include <QTimer>

#include "dashboard_widget.hpp"
#include "launch_dialog.hpp"
#include "run_controller.hpp"
#include "run_feed.hpp"
#include "store/history.hpp"

namespace tessera::ui {

namespace {

// A top-level window around a dashboard; owns the run's controller, which detaches when the window
// closes (the run goes on).
DashboardWidget* dashboardWindow(RunController* controller) {
  auto* dashboard = new DashboardWidget;
  dashboard->setAttribute(Qt::WA_DeleteOnClose);
  dashboard->setWindowTitle(QObject::tr("Run dashboard"));
  dashboard->resize(1500, 950);
  if (controller) {
    controller->setParent(dashboard);
    dashboard->setController(controller);
  }
  return dashboard;
}

}  // namespace

RunWindows::RunWindows(QString db_path, QObject* parent) : QObject(parent), db_path_(std::move(db_path)) {}

void RunWindows::launch(QWidget* parent, const spec::RunSpec& spec) {
  LaunchDialog dialog(spec, spec::to_json(spec), db_path_, parent);
  if (dialog.exec() != QDialog::Accepted) return;
  auto* controller = new RunController;
  auto* dashboard = dashboardWindow(controller);
  connect(controller, &RunController::recorded, dashboard, [this, dashboard](const QString& id) {
    QString error;
    if (!dashboard->openRun(db_path_, id, &error)) QMessageBox::warning(dashboard, tr("Dashboard"), error);
  });
  connect(controller, &RunController::launchFailed, dashboard, [dashboard](const QString& message) {
    QMessageBox::warning(dashboard, tr("Launch failed"), message);
  });
  following_.append(dashboard);
  dashboard->show();
  controller->launch(dialog.request());
}

DashboardWidget* RunWindows::open(const QString& run_id, QString* error) {
  auto* dashboard = dashboardWindow(nullptr);
  if (!dashboard->openRun(db_path_, run_id, error)) {
    delete dashboard;
    return nullptr;
  }
  for (const auto& window : following_) {
    if (window && window->runId() == dashboard->runId()) {
      delete dashboard;
      window->show();
      window->raise();
      window->activateWindow();
      return window;
    }
  }
  // Followed here unless another process follows it into the history already (it holds the run's
  // lease): then this window watches what that one records.
  const store::RunRecord& run = dashboard->feed()->run();
  if (run.status == store::RunStatus::running && !run.hosts.empty()) {
    if (RunController::canFollow(db_path_, dashboard->runId()))
      follow(dashboard, dashboard->runId());
    else
      takeOverWhenLetGo(dashboard);
  }
  dashboard->show();
  return dashboard;
}

void RunWindows::takeOverWhenLetGo(DashboardWidget* dashboard) {
  auto* timer = new QTimer(dashboard);
  timer->setInterval(kTakeOverCheckMs);
  connect(timer, &QTimer::timeout, dashboard, [this, dashboard, timer] {
    const store::RunRecord& run = dashboard->feed()->run();  // refreshed by the dashboard's polls
    if (run.status != store::RunStatus::running) return timer->deleteLater();
    if (!RunController::canFollow(db_path_, dashboard->runId())) return;
    timer->deleteLater();
    follow(dashboard, dashboard->runId());
  });
  timer->start();
}

void RunWindows::follow(DashboardWidget* dashboard, const QString& run_id) {
  auto* controller = new RunController;
  controller->setParent(dashboard);
  dashboard->setController(controller);
  controller->attach(run_id, db_path_);
  following_.append(dashboard);
}

int RunWindows::reattach() {
  std::vector<store::RunRecord> running;
  try {
    store::History history(db_path_.toStdString());
    store::RunFilter filter;
    filter.status = store::RunStatus::running;
    running = history.runs(filter);
  } catch (const std::exception&) {
    return 0;  // no history yet
  }
  int count = 0;
  for (const auto& run : running) {
    // Only runs nobody follows: one another process records is not left behind.
    if (run.hosts.empty() || !RunController::canFollow(db_path_, QString::fromStdString(run.id))) continue;
    auto* dashboard = dashboardWindow(nullptr);
    follow(dashboard, QString::fromStdString(run.id));
    dashboard->openRun(db_path_, QString::fromStdString(run.id));
    dashboard->show();
    ++count;
  }
  return count;
}

}  // namespace tessera::ui
