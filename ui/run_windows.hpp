// The workbench's runs: Launch (dialog → RunController → a dashboard window per run), the dashboard
// of a stored run, and, when the workbench starts, reattaching to the runs it was following when it
// was closed (closing it detaches; the runs go on on their agents).
#pragma once

#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QWidget>

#include "spec/run_spec.hpp"

namespace tessera::ui {

class DashboardWidget;
class RunController;

class RunWindows : public QObject {
  Q_OBJECT
 public:
  /// How often a window watching a run another process follows checks whether it may follow it.
  static constexpr int kTakeOverCheckMs = 1000;
  /// `db_path`: the history the runs are recorded in.
  explicit RunWindows(QString db_path, QObject* parent = nullptr);
  const QString& dbPath() const { return db_path_; }

  /// Shows the Launch dialog for `spec`; on Launch, starts the run and opens its dashboard.
  void launch(QWidget* parent, const spec::RunSpec& spec);
  /// Opens the dashboard of a run of the history (id, id prefix or name): replayed, or, while it runs
  /// on its agents, followed into the history (attached, as `tessera-cli runs follow` does) unless
  /// another process follows it there already (then watched as that one records it, and followed
  /// once that one lets it go). A run this workbench follows already raises its window. Nullptr with
  /// the reason in *error.
  DashboardWidget* open(const QString& run_id, QString* error = nullptr);
  /// Follows again every run of the history still marked running on its agents that no other process
  /// follows, each in its own dashboard. Returns how many.
  int reattach();

 private:
  /// Attaches a controller of its own to `dashboard`'s run and remembers the window as following it.
  void follow(DashboardWidget* dashboard, const QString& run_id);
  /// For a window watching a run another process follows: follows it once that process lets it go (a
  /// `launch --follow` detached with Ctrl-C or killed) while it still runs, so that nothing is left
  /// unrecorded; checked every kTakeOverCheckMs.
  void takeOverWhenLetGo(DashboardWidget* dashboard);

  QString db_path_;
  QList<QPointer<DashboardWidget>> following_;  ///< windows whose controller follows their run
};

}  // namespace tessera::ui
