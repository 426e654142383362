// The main window: assembling the views, menus and shortcuts, files, export and settings.
#include "main_window.hpp"

#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QMenuBar>
#include <QMessageBox>
#include <QPainter>
#include <QPdfWriter>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>

#include "designer_panel.hpp"
#include "elided_label.hpp"
#include "history_view.hpp"
#include "history_window.hpp"
#include "layout_search_dialog.hpp"
#include "memory_view.hpp"
#include "rank_grid_view.hpp"
#include "run_windows.hpp"
#include "shortcuts.hpp"
#include "store/location.hpp"
#include "summary_strip.hpp"
#include "timeline_view.hpp"

namespace tessera::ui {

namespace {

constexpr int kMaxRecentFiles = 8;
const QString kSpecFilter = QObject::tr("Run specs (*.json);;All files (*)");

// A view with a row of controls above it.
QWidget* panel(QWidget* controls, QWidget* view) {
  auto* w = new QWidget;
  auto* layout = new QVBoxLayout(w);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  controls->setContentsMargins(10, 6, 10, 6);
  layout->addWidget(controls);
  layout->addWidget(view, 1);
  return w;
}

QLabel* hint(const QString& text) {
  auto* label = new ElidedLabel(text);  // "…" on a narrow window ("click: its gr" read as complete)
  label->setMinimumWidth(1);
  label->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  label->setForegroundRole(QPalette::PlaceholderText);
  return label;
}

}  // namespace

std::optional<MainWindow::View> MainWindow::viewFromName(const QString& name) {
  if (name == QLatin1String("designer")) return View::designer;
  if (name == QLatin1String("grid")) return View::grid;
  if (name == QLatin1String("memory")) return View::memory;
  if (name == QLatin1String("timeline")) return View::timeline;
  return std::nullopt;
}

MainWindow::MainWindow(bool persistent, const QString& historyPath, QWidget* parent)
    : QMainWindow(parent), persistent_(persistent), spec_model_(&session_), history_path_(historyPath) {
  setObjectName(QStringLiteral("MainWindow"));
  resize(1600, 1000);
  buildViews();
  // Without $TESSERA_DB, XDG_DATA_HOME and HOME there is no default: said when a run or the history is
  // asked for, not thrown out of the constructor.
  if (history_path_.isEmpty()) try {
      history_path_ = QString::fromStdString(store::default_history_path());
    } catch (const std::exception& e) {
      history_path_problem_ = QString::fromUtf8(e.what());
    }
  runs_ = new RunWindows(history_path_, this);
  buildMenus();
  connect(&session_, &PlanSession::changed, this, &MainWindow::onSessionChanged);
  connect(&session_, &PlanSession::fileChanged, this, &MainWindow::updateTitle);
  connect(&spec_model_, &SpecFieldModel::editRejected, this, [this](const QString& message) {
    statusBar()->showMessage(message, 8000);
  });
  if (persistent_) {
    QSettings settings;
    theme_ = static_cast<ThemeChoice>(settings.value("theme", int(ThemeChoice::system)).toInt());
    recent_files_ = settings.value("recentFiles").toStringList();
    restoreGeometry(settings.value("window/geometry").toByteArray());
    restoreState(settings.value("window/state").toByteArray());
    tabs_->setCurrentIndex(settings.value("window/tab", 0).toInt());
    color_by_->setCurrentIndex(settings.value("grid/colorBy", 0).toInt());
    // Runs followed when the workbench was last closed go on on their agents: follow them again.
    QTimer::singleShot(0, runs_, [this] { runs_->reattach(); });
  }
  setTheme(theme_);
  rebuildRecentMenu();
  onSessionChanged();
  updateTitle();
}

void MainWindow::buildViews() {
  summary_ = new SummaryStrip(&session_, this);
  // On a narrow window the strip's last cells are cut off rather than widening the window.
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);

  grid_view_ = new RankGridView(&grid_model_);
  color_by_ = new QComboBox;
  for (auto c : {RankGridModel::TP, RankGridModel::PP, RankGridModel::DP, RankGridModel::CP, RankGridModel::EP, RankGridModel::Node})
    color_by_->addItem(RankGridModel::columnName(c), int(c));
  connect(color_by_, &QComboBox::currentIndexChanged, this,
          [this] { grid_view_->setColorBy(static_cast<RankGridModel::Column>(color_by_->currentData().toInt())); });
  auto* gridControls = new QWidget;
  auto* gl = new QHBoxLayout(gridControls);
  gl->addWidget(new QLabel(tr("Colour by")));
  gl->addWidget(color_by_);
  gl->addStretch(1);
  gl->addWidget(hint(tr("hover: rank and coordinates · click: its groups · arrows: move · Esc: clear")));
  connect(grid_view_, &RankGridView::rankSelected, this, [this](qint64 rank) {
    if (rank >= 0) statusBar()->showMessage(grid_view_->describeRank(rank));
    else statusBar()->clearMessage();
  });

  memory_view_ = new MemoryView(&memory_model_);
  profile_ = new QButtonGroup(this);
  auto* memoryControls = new QWidget;
  auto* ml = new QHBoxLayout(memoryControls);
  ml->addWidget(new QLabel(tr("Memory model")));
  for (auto p : {planner::MemoryProfile::tessera, planner::MemoryProfile::megatron}) {
    auto* button = new QRadioButton(QString::fromLatin1(planner::memory_profile_name(p).data()));
    button->setToolTip(p == planner::MemoryProfile::tessera
                           ? tr("Full breakdown of Tessera's runtime (docs/formulas.md §2)")
                           : tr("Megatron-LM's theoretical_memory_usage.py"));
    profile_->addButton(button, int(p));
    ml->addWidget(button);
  }
  profile_->button(int(planner::MemoryProfile::tessera))->setChecked(true);
  connect(profile_, &QButtonGroup::idClicked, this,
          [this](int id) { session_.setMemoryProfile(static_cast<planner::MemoryProfile>(id)); });
  ml->addStretch(1);
  ml->addWidget(hint(tr("hover a bar for its parts")));

  timeline_view_ = new TimelineView(&timeline_model_, &comparison_model_);
  compare_ = new QComboBox;
  compare_->addItem(tr("nothing"), -1);
  for (auto s : {spec::Schedule::gpipe, spec::Schedule::one_f_one_b, spec::Schedule::interleaved, spec::Schedule::zb_h1})
    compare_->addItem(QString::fromLatin1(spec::to_string(s).data()), int(s));
  connect(compare_, &QComboBox::currentIndexChanged, this, &MainWindow::updateComparison);
  compare_note_ = hint({});
  auto* fit = new QPushButton(tr("Fit"));
  fit->setToolTip(tr("Show the whole iteration (F, or double-click)"));
  connect(fit, &QPushButton::clicked, this, [this] {
    timeline_view_->fitToView();
    timeline_view_->update();
  });
  auto* timelineControls = new QWidget;
  auto* tl = new QHBoxLayout(timelineControls);
  tl->addWidget(new QLabel(tr("Compare with")));
  tl->addWidget(compare_);
  tl->addWidget(compare_note_);
  tl->addStretch(1);
  tl->addWidget(hint(tr("wheel: zoom · drag: pan · +/−, ←/→ · F: fit")));
  tl->addWidget(fit);

  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  tabs_->addTab(panel(gridControls, grid_view_), tr("Rank grid"));
  tabs_->addTab(panel(memoryControls, memory_view_), tr("Memory"));
  tabs_->addTab(panel(timelineControls, timeline_view_), tr("Timeline"));

  auto* central = new QWidget;
  auto* cl = new QVBoxLayout(central);
  cl->setContentsMargins(0, 0, 0, 0);
  cl->setSpacing(0);
  cl->addWidget(summary_);
  cl->addWidget(tabs_, 1);
  setCentralWidget(central);

  designer_ = new DesignerPanel(&session_, &spec_model_);
  connect(designer_, &DesignerPanel::importHuggingFaceRequested, this, &MainWindow::importHuggingFace);
  connect(designer_, &DesignerPanel::searchLayoutsRequested, this, &MainWindow::searchLayouts);
  connect(summary_, &SummaryStrip::fieldRequested, this, [this](const QString& field) {
    dock_->show();
    designer_->focusField(field);
  });
  dock_ = new QDockWidget(tr("Designer"), this);
  dock_->setObjectName(QStringLiteral("DesignerDock"));
  dock_->setWidget(designer_);
  dock_->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::LeftDockWidgetArea, dock_);
  resizeDocks({dock_}, {470}, Qt::Horizontal);
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&New"), QKeySequence::New, this, [this] {
    if (maybeSave()) session_.newDocument();
  });
  file->addAction(tr("&Open…"), QKeySequence::Open, this, &MainWindow::open);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  connect(recent_menu_, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);  // files come and go
  file->addAction(tr("&Save"), QKeySequence::Save, this, &MainWindow::save);
  QAction* save_as = file->addAction(tr("Save &As…"), this, &MainWindow::saveAs);
  save_as->setShortcuts(keysWith(QKeySequence::SaveAs, QKeySequence(tr("Ctrl+Shift+S"))));  // the guide's keys
  file->addSeparator();
  file->addAction(tr("&Import Hugging Face config.json…"), QKeySequence(tr("Ctrl+I")), this, &MainWindow::importHuggingFace);
  file->addAction(tr("&Export View…"), QKeySequence(tr("Ctrl+E")), this, &MainWindow::exportView);
  file->addSeparator();
  // Quit closes every window, the dashboards and the history included (they kept the process on
  // after the main window closed), once the main window has closed (unsaved changes asked about).
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, [this] {
    if (close()) QApplication::closeAllWindows();
  });

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  QAction* undo = session_.undoStack()->createUndoAction(this, tr("&Undo"));
  undo->setShortcuts(QKeySequence::Undo);
  QAction* redo = session_.undoStack()->createRedoAction(this, tr("&Redo"));
  redo->setShortcuts({QKeySequence(tr("Ctrl+Shift+Z")), QKeySequence(tr("Ctrl+Y"))});
  edit->addAction(undo);
  edit->addAction(redo);
  edit->addSeparator();
  edit->addAction(tr("Edit &Fields"), QKeySequence(tr("Ctrl+L")), this, [this] {
    dock_->show();
    designer_->fieldView()->setFocus();
  });
  edit->addAction(tr("Search &Layouts…"), QKeySequence(tr("Ctrl+Shift+L")), this, &MainWindow::searchLayouts);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(tr("&Launch…"), QKeySequence(tr("Ctrl+R")), this, [this] {
    if (session_.stale()) {
      QMessageBox::warning(this, tr("Launch"), tr("The spec has a problem; fix it in the designer first."));
      return;
    }
    if (history_path_.isEmpty()) {  // no --db and no default place for the history
      QMessageBox::warning(this, tr("Launch"), history_path_problem_);
      return;
    }
    runs_->launch(this, session_.spec());
  });

  QMenu* view = menuBar()->addMenu(tr("&View"));
  const std::pair<QString, View> views[] = {{tr("&Rank Grid"), View::grid}, {tr("&Memory"), View::memory}, {tr("&Timeline"), View::timeline}};
  int n = 1;
  for (const auto& [name, v] : views) {
    const View target = v;
    view->addAction(name, QKeySequence(tr("Ctrl+%1").arg(n++)), this, [this, target] { showView(target); });
  }
  QAction* toggle = dock_->toggleViewAction();
  toggle->setShortcut(QKeySequence(tr("Ctrl+D")));
  toggle->setText(tr("&Designer"));
  view->addAction(toggle);
  view->addSeparator();
  QMenu* theme = view->addMenu(tr("&Palette"));
  theme_actions_ = new QActionGroup(this);
  const std::pair<QString, ThemeChoice> themes[] = {{tr("Follow the &system"), ThemeChoice::system},
                                                    {tr("&Light"), ThemeChoice::light},
                                                    {tr("&Dark"), ThemeChoice::dark}};
  for (const auto& [name, choice] : themes) {
    QAction* a = theme->addAction(name);
    a->setCheckable(true);
    a->setChecked(choice == theme_);
    a->setData(int(choice));
    theme_actions_->addAction(a);
    const ThemeChoice c = choice;
    connect(a, &QAction::triggered, this, [this, c] { setTheme(c); });
  }

  QMenu* runs = menuBar()->addMenu(tr("R&uns"));  // Alt+R is the Run menu's
  runs->addAction(tr("Run &History…"), QKeySequence(tr("Ctrl+H")), this, &MainWindow::showHistory);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About Tessera"), this, [this] {
    QMessageBox::about(this, tr("About Tessera"),
                       tr("<b>Tessera %1</b><p>A workbench for Megatron-style 3D-parallel training: design a run, "
                          "see its rank grid, memory and pipeline before spending a GPU-hour.</p>"
                          "<p>The user guide is docs/user-guide.md.</p>").arg(QCoreApplication::applicationVersion()));
  });
}

void MainWindow::onSessionChanged() {
  const PlanPtr plan = session_.plan();
  if (plan != shown_plan_) {
    shown_plan_ = plan;
    grid_model_.setPlan(plan, session_.grid());
    memory_model_.setPlan(plan);
    timeline_model_.setPlan(plan);
    updateComparison();
  }
  const bool stale = session_.stale();
  grid_view_->setStale(stale);
  memory_view_->setStale(stale);
  timeline_view_->setStale(stale);
  updateTitle();
}

void MainWindow::updateComparison() {
  const int id = compare_->currentData().toInt();
  compare_note_->clear();
  if (id < 0 || !shown_plan_) {
    comparison_model_.setPlan(nullptr);
    return;
  }
  const auto result = session_.planWithSchedule(static_cast<spec::Schedule>(id));
  comparison_model_.setPlan(result.plan);
  if (!result.plan) compare_note_->setText(tr("cannot plan: %1").arg(result.error));
}

void MainWindow::setComparison(std::optional<spec::Schedule> schedule) {
  compare_->setCurrentIndex(compare_->findData(schedule ? int(*schedule) : -1));
}

void MainWindow::updateTitle() {
  const QString name = session_.spec().name.empty() ? tr("Untitled") : QString::fromStdString(session_.spec().name);
  const QString file = session_.filePath().isEmpty() ? QString() : QStringLiteral(" — %1").arg(QFileInfo(session_.filePath()).fileName());
  setWindowTitle(QStringLiteral("%1[*]%2 — Tessera").arg(name, file));
  setWindowModified(session_.isModified());
}

MainWindow::View MainWindow::currentView() const {
  const View tabs[] = {View::grid, View::memory, View::timeline};
  return tabs[std::max(0, tabs_->currentIndex())];
}

void MainWindow::showView(View view) {
  if (view == View::designer) {
    dock_->show();
    tabs_->setCurrentIndex(0);
    designer_->fieldView()->setFocus();
    return;
  }
  tabs_->setCurrentIndex(view == View::grid ? 0 : view == View::memory ? 1 : 2);
  tabs_->currentWidget()->setFocus();
  if (view == View::grid) grid_view_->setFocus();
  if (view == View::timeline) timeline_view_->setFocus();
}

QImage MainWindow::screenshot(View view, const QSize& size, std::optional<std::pair<double, double>> range) {
  dock_->setVisible(view == View::designer);
  showView(view);
  resize(size);
  show();
  QCoreApplication::processEvents();
  // The designer a third of a wide window (up to 640 px): at 470 its Derived column cut most notes.
  if (view == View::designer) resizeDocks({dock_}, {std::clamp(size.width() / 3, 380, 640)}, Qt::Horizontal);
  QCoreApplication::processEvents();
  if (range) timeline_view_->showRange(range->first, range->second);
  else timeline_view_->fitToView();
  const FocusFrame::Hidden picture;
  return grab().toImage();
}

bool MainWindow::openFile(const QString& path, QString* error) {
  if (!session_.open(path, error)) return false;
  addRecentFile(session_.filePath());
  return true;
}

bool MainWindow::maybeSave() {
  if (!session_.isModified()) return true;
  const auto answer = QMessageBox::warning(this, tr("Unsaved changes"),
                                           tr("The run spec has unsaved changes. Save them?"),
                                           QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
  if (answer == QMessageBox::Save) return save();
  return answer == QMessageBox::Discard;
}

bool MainWindow::save() {
  if (session_.filePath().isEmpty()) return saveAs();
  QString error;
  if (!session_.save(session_.filePath(), &error)) {
    QMessageBox::critical(this, tr("Save"), error);
    return false;
  }
  statusBar()->showMessage(tr("Saved %1").arg(session_.filePath()), 4000);
  return true;
}

bool MainWindow::saveAs() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save run spec"), session_.filePath(), kSpecFilter);
  if (path.isEmpty()) return false;
  QString error;
  if (!session_.save(path, &error)) {
    QMessageBox::critical(this, tr("Save"), error);
    return false;
  }
  addRecentFile(session_.filePath());
  return true;
}

void MainWindow::open() {
  if (!maybeSave()) return;
  const QString path = QFileDialog::getOpenFileName(this, tr("Open run spec"), QFileInfo(session_.filePath()).path(), kSpecFilter);
  if (path.isEmpty()) return;
  QString error;
  if (!openFile(path, &error)) QMessageBox::critical(this, tr("Cannot open %1").arg(QFileInfo(path).fileName()), error);
}

void MainWindow::importHuggingFace() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Import Hugging Face config.json"), {}, tr("config.json (*.json)"));
  if (path.isEmpty()) return;
  QString error;
  QStringList notes;
  if (!session_.importHuggingFace(path, &error, &notes)) QMessageBox::critical(this, tr("Cannot import"), error);
  else if (!notes.isEmpty()) QMessageBox::information(this, tr("Imported with changes"), notes.join(QLatin1Char('\n')));
}

void MainWindow::searchLayouts() {
  LayoutSearchDialog dialog(&session_, this);
  dialog.exec();
}

bool MainWindow::exportCurrentView(const QString& path) {
  QWidget* view = tabs_->currentWidget();
  const FocusFrame::Hidden picture;
  if (path.endsWith(QLatin1String(".pdf"), Qt::CaseInsensitive)) {
    QPdfWriter writer(path);
    writer.setResolution(72);  // one widget pixel per point
    writer.setPageSize(QPageSize(QSizeF(view->size()), QPageSize::Point));
    writer.setPageMargins(QMarginsF(0, 0, 0, 0));
    QPainter painter;
    if (!painter.begin(&writer)) return false;
    view->render(&painter);
    return painter.end();
  }
  return view->grab().save(path);
}

void MainWindow::exportView() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Export view"), {}, tr("PNG image (*.png);;PDF document (*.pdf)"));
  if (path.isEmpty()) return;
  if (exportCurrentView(path)) statusBar()->showMessage(tr("Exported %1").arg(path), 4000);
  else QMessageBox::critical(this, tr("Export"), tr("Cannot write %1").arg(path));
}

void MainWindow::addRecentFile(const QString& path) {
  recent_files_.removeAll(path);
  recent_files_.prepend(path);
  while (recent_files_.size() > kMaxRecentFiles) recent_files_.removeLast();
  rebuildRecentMenu();
  if (persistent_) QSettings().setValue("recentFiles", recent_files_);
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  for (const QString& path : recent_files_) {
    QAction* action = recent_menu_->addAction(QFileInfo(path).fileName(), this, [this, path] {
      if (!maybeSave()) return;
      QString error;
      if (!openFile(path, &error)) QMessageBox::critical(this, tr("Cannot open %1").arg(QFileInfo(path).fileName()), error);
    });
    action->setToolTip(path);
    // A file deleted or moved since stays listed (on a drive not mounted now, say), greyed and said.
    if (!QFileInfo::exists(path)) {
      action->setText(tr("%1 (missing)").arg(QFileInfo(path).fileName()));
      action->setEnabled(false);
    }
  }
  recent_menu_->setEnabled(!recent_files_.isEmpty());
}

void MainWindow::setTheme(ThemeChoice choice) {
  theme_ = choice;
  for (QAction* a : theme_actions_->actions()) a->setChecked(a->data().toInt() == int(choice));
  applyTheme(choice);
  if (persistent_) QSettings().setValue("theme", int(choice));
}

void MainWindow::changeEvent(QEvent* event) {
  QMainWindow::changeEvent(event);
  if (event->type() == QEvent::ThemeChange && theme_ == ThemeChoice::system) applyTheme(theme_);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!maybeSave()) {
    event->ignore();
    return;
  }
  if (persistent_) {
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    settings.setValue("window/tab", tabs_->currentIndex());
    settings.setValue("grid/colorBy", color_by_->currentIndex());
  }
  event->accept();
}

void MainWindow::showHistory() {
  // A window on a history file deleted or replaced since is closed, and the file now there opened.
  if (history_window_ && history_window_->historyView()->model()->openedFileIsGone()) {
    history_window_->close();
    history_window_->deleteLater();
    history_window_ = nullptr;
  }
  if (!history_window_) {
    QString error = history_path_problem_;
    std::unique_ptr<HistoryWindow> window;
    if (!history_path_.isEmpty()) window = HistoryWindow::open(history_path_, &error, this);
    if (!window) return (void)QMessageBox::warning(this, tr("Run history"), error);
    history_window_ = window.release();
    connect(history_window_, &HistoryWindow::openRunRequested, this, &MainWindow::openRunRequested);
    connect(history_window_, &HistoryWindow::openRunRequested, this, [this](const QString& run_id) {
      QString error;
      if (!runs_->open(run_id, &error)) QMessageBox::warning(this, tr("Open run"), error);
    });
  }
  history_window_->show();
  history_window_->raise();
}

}  // namespace tessera::ui
