// The workbench's main window: the designer dock, the summary strip and the three views (rank grid,
// memory, timeline) over one PlanSession; files, recent files, undo/redo, export, palettes, settings.
#pragma once

#include <QActionGroup>
#include <QButtonGroup>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QMainWindow>
#include <QMenu>
#include <QPointer>
#include <QTabWidget>

#include "plan_session.hpp"
#include "rank_grid_model.hpp"
#include "spec_field_model.hpp"
#include "stage_memory_model.hpp"
#include "theme.hpp"
#include "timeline_model.hpp"

namespace tessera::ui {

class DesignerPanel;
class HistoryWindow;
class MemoryView;
class RunWindows;
class RankGridView;
class SummaryStrip;
class TimelineView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  enum class View { designer, grid, memory, timeline };
  /// View from its command-line name ("designer", "grid", "memory", "timeline").
  static std::optional<View> viewFromName(const QString& name);

  /// `persistent`: restore and save window state, theme and recent files in QSettings. `historyPath`:
  /// the history runs are launched into and the Run History window shows (`tessera --db FILE`); empty:
  /// $TESSERA_DB, else the default path (store::default_history_path()).
  explicit MainWindow(bool persistent = true, const QString& historyPath = {}, QWidget* parent = nullptr);

  PlanSession* session() { return &session_; }
  SummaryStrip* summary() const { return summary_; }
  DesignerPanel* designer() const { return designer_; }
  RankGridView* rankGridView() const { return grid_view_; }
  MemoryView* memoryView() const { return memory_view_; }
  TimelineView* timelineView() const { return timeline_view_; }
  SpecFieldModel* specModel() { return &spec_model_; }
  /// Launching runs and their dashboards (into historyPath()).
  RunWindows* runs() const { return runs_; }
  /// The run history of this window: the one given, else the default ("" when there is no default).
  QString historyPath() const { return history_path_; }
  /// Why historyPath() is empty: no --db, $TESSERA_DB, XDG_DATA_HOME or HOME.
  QString historyPathProblem() const { return history_path_problem_; }

  /// The view in front (View::grid, memory or timeline).
  View currentView() const;
  /// Brings a view to the front (designer: the dock, with the rank grid beside it).
  void showView(View view);
  /// The window as `view` shows it at `size` (the designer dock only for View::designer); the
  /// timeline shows [range.first, range.second] seconds when given, else the whole iteration.
  QImage screenshot(View view, const QSize& size, std::optional<std::pair<double, double>> range = std::nullopt);
  /// Opens a spec file; false with the problems in *error (no dialog).
  bool openFile(const QString& path, QString* error);
  /// Writes the current view to a .png or .pdf file.
  bool exportCurrentView(const QString& path);
  /// Draws the plan with another schedule under the timeline (nullopt: none).
  void setComparison(std::optional<spec::Schedule> schedule);
  /// Light, dark, or following the system (saved in QSettings when persistent).
  void setTheme(ThemeChoice choice);
  ThemeChoice theme() const { return theme_; }

 signals:
  /// The run history asked to open a finished run (its dashboard, replayed from the store).
  void openRunRequested(const QString& run_id);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void buildViews();
  void buildMenus();
  /// Opens (once) the run-history window on historyPath().
  void showHistory();
  void onSessionChanged();
  void updateComparison();
  void updateTitle();
  bool maybeSave();
  bool saveAs();
  bool save();
  void open();
  void importHuggingFace();
  void searchLayouts();
  void exportView();
  void addRecentFile(const QString& path);
  void rebuildRecentMenu();

  bool persistent_;
  PlanSession session_;
  SpecFieldModel spec_model_;
  StageMemoryModel memory_model_;
  RankGridModel grid_model_;
  TimelineModel timeline_model_, comparison_model_;
  PlanPtr shown_plan_;

  SummaryStrip* summary_ = nullptr;
  DesignerPanel* designer_ = nullptr;
  QDockWidget* dock_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  RankGridView* grid_view_ = nullptr;
  MemoryView* memory_view_ = nullptr;
  TimelineView* timeline_view_ = nullptr;
  QComboBox* color_by_ = nullptr;
  QButtonGroup* profile_ = nullptr;
  QComboBox* compare_ = nullptr;
  QLabel* compare_note_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QStringList recent_files_;
  QActionGroup* theme_actions_ = nullptr;
  ThemeChoice theme_ = ThemeChoice::system;
  QPointer<HistoryWindow> history_window_;
  RunWindows* runs_ = nullptr;
  QString history_path_;
  QString history_path_problem_;  ///< why there is no default history, when history_path_ is empty
};

}  // namespace tessera::ui
