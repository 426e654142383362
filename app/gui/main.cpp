// tessera: the workbench. With --screenshot it renders one view of a spec offscreen to a PNG and exits
// (for the user guide and tests): tessera --spec FILE --view grid --screenshot OUT.png [--size 1600x1000];
// tessera --run ID --view dashboard|timeline [--db FILE] [--screenshot OUT.png] shows a recorded run.
#include <cmath>
#include <cstdio>

#include <QApplication>
#include <QCommandLineParser>
#include <QEventLoop>
#include <QFileInfo>
#include <QMessageBox>
#include <QTimer>

#include "dashboard_widget.hpp"
#include "format.hpp"
#include "history_command.hpp"
#include "launch_dialog.hpp"
#include "layout_search_dialog.hpp"
#include "main_window.hpp"
#include "picture_file.hpp"
#include "rank_grid_view.hpp"
#include "run_windows.hpp"
#include "screen_size.hpp"
#include "spec/json_nesting.hpp"
#include "store/location.hpp"

namespace {

int fail(const QString& message) {
  std::fprintf(stderr, "tessera: %s\n", qPrintable(message));
  return 2;
}

// A spec file that did not open: its problems under its name, or the one line that names it already.
QString openProblem(const QString& spec, const QString& error) {
  return error.contains(spec) && !error.contains(QLatin1Char('\n')) ? error : QStringLiteral("%1:\n%2").arg(spec, error);
}

// tessera --run ID: the dashboard of a recorded run (live while it runs), or its screenshot.
int showRun(QApplication& app, const QString& run, const QString& db, const QString& view, const QString& shot, const QSize& size) {
  if (view != QLatin1String("dashboard") && view != QLatin1String("timeline"))
    return fail(QStringLiteral("--view with --run must be dashboard or timeline, got \"%1\"").arg(view));
  QString path;
  try {
    path = QString::fromStdString(tessera::store::resolve_history_path(db.toStdString()));
  } catch (const std::exception& e) {  // no --db, $TESSERA_DB, XDG_DATA_HOME or HOME
    return fail(QStringLiteral("--run: %1").arg(QString::fromUtf8(e.what())));
  }
  if (const QString problem = tessera::app::readOnlyHistoryProblem(path); !problem.isEmpty())
    return fail(QStringLiteral("--run: %1").arg(problem));
  QString error;
  const auto focus = view == QLatin1String("timeline") ? tessera::ui::DashboardWidget::Focus::timeline
                                                       : tessera::ui::DashboardWidget::Focus::all;
  if (shot.isEmpty()) {
    // In a window: a run still going on its agents is followed into the history, as the workbench does.
    tessera::ui::RunWindows runs(path);
    tessera::ui::DashboardWidget* dashboard = runs.open(run, &error);
    if (!dashboard) return fail(QStringLiteral("--run: %1").arg(error));
    dashboard->setFocus(focus);
    dashboard->resize(size);
    return app.exec();
  }
  tessera::ui::DashboardWidget dashboard;
  if (!dashboard.openRun(path, run, &error)) return fail(QStringLiteral("--run: %1").arg(error));
  dashboard.setFocus(focus);
  dashboard.resize(size);
  dashboard.show();
  QCoreApplication::processEvents();
  dashboard.showTimelineStep(std::nullopt);
  dashboard.flushReplots();
  QCoreApplication::processEvents();
  if (const QString problem = tessera::app::writePicture(dashboard.grab().toImage(), size, shot); !problem.isEmpty()) return fail(problem);
  return 0;
}

// The first of `options` given on the command line, as "--name", or "" when none is: what a mode that
// does not read them refuses, instead of ignoring it with exit 0.
QString givenOption(const QCommandLineParser& parser, std::initializer_list<const QCommandLineOption*> options) {
  for (const auto* option : options)
    if (parser.isSet(*option)) return QStringLiteral("--") + option->names().front();
  return {};
}

}  // namespace

int main(int argc, char* argv[]) {
  // Screenshots, --help and --version need no display: pick the offscreen platform unless the caller
  // chose one. Without a display and without those, say so instead of Qt's platform-plugin abort.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    bool headless = false;
    for (int i = 1; i < argc; ++i)
      for (const char* option : {"--screenshot", "--help", "-h", "--version", "-v"})
        headless = headless || QByteArray(argv[i]) == option;
    if (headless) qputenv("QT_QPA_PLATFORM", "offscreen");
    else if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
      return fail(QStringLiteral("no display (DISPLAY or WAYLAND_DISPLAY is unset); render views with --screenshot"));
  }

  QApplication app(argc, argv);
  tessera::ui::useOneNumberConvention();
  QApplication::setOrganizationName(QStringLiteral("Tessera"));
  QApplication::setApplicationName(QStringLiteral("tessera"));
  QApplication::setApplicationVersion(QStringLiteral(TESSERA_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Tessera: plan Megatron-style 3D-parallel training runs."));
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption specOption(QStringLiteral("spec"), QStringLiteral("Run spec to open."), QStringLiteral("FILE"));
  QCommandLineOption viewOption(QStringLiteral("view"), QStringLiteral("View to show: designer, grid, memory, timeline, launch or search (the launch or Search Layouts dialog, with --screenshot); with --run: dashboard or timeline."),
                                QStringLiteral("VIEW"), QStringLiteral("designer"));
  QCommandLineOption shotOption(QStringLiteral("screenshot"), QStringLiteral("Render the view offscreen to a PNG and exit."),
                                QStringLiteral("OUT.png"));
  QCommandLineOption sizeOption(QStringLiteral("size"), QStringLiteral("Window size for --screenshot."),
                                QStringLiteral("WxH"), QStringLiteral("1600x1000"));
  QCommandLineOption paletteOption(QStringLiteral("palette"), QStringLiteral("Palette: system, light or dark."),
                                   QStringLiteral("PALETTE"));
  QCommandLineOption compareOption(QStringLiteral("compare"),
                                   QStringLiteral("Timeline: also show this schedule (gpipe, 1f1b, interleaved, zb-h1). "
                                                  "Or ID,ID[,...]: compare these stored runs."),
                                   QStringLiteral("SCHEDULE|RUNS"));
  QCommandLineOption dbOption(QStringLiteral("db"), QStringLiteral("Run history for --run, --compare RUNS, --history, and the window's Run History "
                                                                   "and launches (default: $TESSERA_DB, else $XDG_DATA_HOME/tessera/history.sqlite)."),
                              QStringLiteral("FILE"));
  QCommandLineOption historyOption(QStringLiteral("history"), QStringLiteral("Open the run history (--db picks the file)."));
  QCommandLineOption rankOption(QStringLiteral("select-rank"), QStringLiteral("Rank grid: highlight the groups of this rank."),
                                QStringLiteral("RANK"));
  QCommandLineOption rangeOption(QStringLiteral("time-range"), QStringLiteral("Timeline screenshot: show FROM:TO seconds."),
                                 QStringLiteral("FROM:TO"));
  QCommandLineOption setOption(QStringLiteral("set"),
                               QStringLiteral("Edit a field after opening, as in the designer (repeatable): parallel.tp=4."),
                               QStringLiteral("FIELD=VALUE"));
  QCommandLineOption runOption(QStringLiteral("run"), QStringLiteral("Show the dashboard of this recorded run (id, id prefix or name)."),
                               QStringLiteral("ID"));
  parser.addOptions({specOption, viewOption, shotOption, sizeOption, paletteOption, compareOption, rankOption, rangeOption, setOption,
                     dbOption, historyOption, runOption});
  parser.addPositionalArgument(QStringLiteral("file"), QStringLiteral("Run spec to open (same as --spec)."));
  // Qt's process() ends a bad command line with 1; every refusal here is 2.
  if (!parser.parse(QCoreApplication::arguments())) return fail(parser.errorText());
  if (parser.isSet(QStringLiteral("help"))) parser.showHelp(0);
  if (parser.isSet(QStringLiteral("version"))) parser.showVersion();
  // Checked before anything is drawn, and so before any file is opened for it.
  if (parser.isSet(shotOption))
    if (const QString problem = tessera::app::picturePathProblem(parser.value(shotOption)); !problem.isEmpty()) return fail(problem);
  QString sizeProblem;
  const auto size = tessera::app::parseScreenSize(parser.value(sizeOption), &sizeProblem);
  // --palette, the same three names in every mode; a mode without it picks its own default.
  std::optional<tessera::ui::ThemeChoice> palette;
  if (parser.isSet(paletteOption)) {
    palette = tessera::ui::themeFromName(parser.value(paletteOption));
    if (!palette) return fail(QStringLiteral("--palette must be system, light or dark, got \"%1\"").arg(parser.value(paletteOption)));
  }

  // --history, or --compare with run ids (not a schedule name): the run history instead of a spec.
  const bool compareRuns = parser.isSet(compareOption) &&
                           !tessera::spec::enum_from_string<tessera::spec::Schedule>(parser.value(compareOption).toStdString());
  // What a mode does not read is refused by name: `--run ID --set …` or `--history --select-rank 3`
  // rendered as if the option were not there, with exit 0.
  const bool specGiven = parser.isSet(specOption) || !parser.positionalArguments().isEmpty();
  if (compareRuns || parser.isSet(historyOption)) {
    const QString mode = compareRuns ? QStringLiteral("--compare RUNS") : QStringLiteral("--history");
    if (specGiven) return fail(QStringLiteral("a spec file does not apply to %1, which shows the run history").arg(mode));
    if (const QString other = givenOption(parser, {&viewOption, &setOption, &rankOption, &rangeOption, &runOption}); !other.isEmpty())
      return fail(QStringLiteral("%1 does not apply to %2, which shows the run history").arg(other, mode));
    if (!compareRuns && parser.isSet(compareOption))
      return fail(QStringLiteral("--compare %1 is a schedule, for a spec's timeline; with --history, --compare takes run ids (ID,ID[,...])")
                      .arg(parser.value(compareOption)));
    if (!size) return fail(sizeProblem);
    return tessera::app::runHistoryCommand({compareRuns ? parser.value(compareOption) : QString(), parser.value(dbOption),
                                            parser.value(shotOption), *size, palette.value_or(tessera::ui::ThemeChoice::system)});
  }

  if (parser.isSet(runOption)) {
    if (specGiven) return fail(QStringLiteral("a spec file does not apply to --run, which shows a recorded run (its spec is in the history)"));
    if (const QString other = givenOption(parser, {&setOption, &compareOption, &rankOption, &rangeOption}); !other.isEmpty())
      return fail(QStringLiteral("%1 does not apply to --run, which shows a recorded run as it was").arg(other));
    if (!size) return fail(sizeProblem);
    tessera::ui::applyTheme(palette.value_or(tessera::ui::ThemeChoice::light));
    const QString view = parser.isSet(viewOption) ? parser.value(viewOption) : QStringLiteral("dashboard");
    return showRun(app, parser.value(runOption), parser.value(dbOption), view, parser.value(shotOption), *size);
  }

  QString spec = parser.value(specOption);
  if (parser.positionalArguments().size() + (parser.isSet(specOption) ? 1 : 0) > 1)
    return fail(QStringLiteral("one spec file at a time, got %1")
                    .arg(((parser.isSet(specOption) ? QStringList{spec} : QStringList{}) + parser.positionalArguments())
                             .join(QStringLiteral(", "))));
  if (spec.isEmpty() && !parser.positionalArguments().isEmpty()) spec = parser.positionalArguments().front();
  if (parser.value(viewOption) == QLatin1String("launch")) {
    // The launch dialog for the spec, after checking the local agent (for the user guide).
    if (!parser.isSet(shotOption)) return fail(QStringLiteral("--view launch needs --screenshot"));
    if (!size) return fail(sizeProblem);
    // The dialog launches the spec file as it is: an edit it would not show is refused, not ignored.
    for (const auto* option : {&setOption, &compareOption, &rankOption, &rangeOption})
      if (parser.isSet(*option))
        return fail(QStringLiteral("--%1 does not apply to --view launch, which shows the spec file as it is (edit the file)")
                        .arg(option->names().front()));
    tessera::ui::MainWindow window(/*persistent=*/false, parser.value(dbOption));
    QString error;
    if (!spec.isEmpty() && !window.openFile(spec, &error)) return fail(openProblem(spec, error));
    if (window.session()->stale()) return fail(openProblem(spec, window.session()->problemsText()));
    tessera::ui::applyTheme(palette.value_or(tessera::ui::ThemeChoice::light));
    if (window.historyPath().isEmpty()) return fail(window.historyPathProblem());
    tessera::ui::LaunchDialog dialog(window.session()->spec(), tessera::spec::to_json(window.session()->spec()), window.historyPath());
    QEventLoop loop;
    QObject::connect(&dialog, &tessera::ui::LaunchDialog::inventoriesChecked, &loop, &QEventLoop::quit);
    dialog.show();
    dialog.checkAgents();
    QTimer::singleShot(30000, &loop, &QEventLoop::quit);
    loop.exec();
    // The check's result may have grown the dialog's texts: lay them out, at --size when given, else
    // at least as large as they need.
    QCoreApplication::processEvents();
    dialog.resize(parser.isSet(sizeOption) ? *size : dialog.sizeHint().expandedTo(dialog.size()));
    QCoreApplication::processEvents();
    const QImage picture = dialog.grab().toImage();
    if (const QString problem = parser.isSet(sizeOption) ? tessera::app::writePicture(picture, *size, parser.value(shotOption))
                                                         : tessera::app::savePicture(picture, parser.value(shotOption));
        !problem.isEmpty())
      return fail(problem);
    return 0;
  }
  // --view search: the Search Layouts dialog over the window's spec (after --set), searched, rendered.
  const bool search = parser.value(viewOption) == QLatin1String("search");
  const auto view = search ? std::optional(tessera::ui::MainWindow::View::designer)
                           : tessera::ui::MainWindow::viewFromName(parser.value(viewOption));
  if (!view)
    return fail(QStringLiteral("--view must be designer, grid, memory, timeline, launch or search, got \"%1\"").arg(parser.value(viewOption)));
  const bool screenshot = parser.isSet(shotOption);
  if (search && !screenshot) return fail(QStringLiteral("--view search needs --screenshot"));
  // A window launches runs into --db and shows it as its Run History; a picture of a plan reads none.
  if (screenshot && parser.isSet(dbOption))
    return fail(QStringLiteral("--db does not apply to a picture of a spec's %1 view, which reads no history").arg(parser.value(viewOption)));
  tessera::ui::MainWindow window(/*persistent=*/!screenshot, parser.value(dbOption));
  if (palette) window.setTheme(*palette);
  // In a window a spec that breaks rules opens with them marked in the designer, and one that cannot be
  // read (not JSON, a field of the wrong type, no such file) is said in a dialog over a new document,
  // not on a terminal the user may not see. A screenshot of either ends with the problems (exit 2): its
  // views would show the plan of the document before.
  QString openError;
  if (!spec.isEmpty() && !window.openFile(spec, &openError)) {
    if (screenshot) return fail(openProblem(spec, openError));
    QTimer::singleShot(0, &window, [&window, spec, openError] {
      QMessageBox::critical(&window, QObject::tr("Cannot open %1").arg(QFileInfo(spec).fileName()), openProblem(spec, openError));
    });
  } else if (!spec.isEmpty() && screenshot && window.session()->stale()) {
    return fail(openProblem(spec, window.session()->problemsText()));
  }
  for (const QString& edit : parser.values(setOption)) {
    const auto eq = edit.indexOf('=');
    if (eq <= 0) return fail(QStringLiteral("--set must be FIELD=VALUE, got \"%1\"").arg(edit));
    // The value is JSON when it parses as JSON (4, true, 3e-4), else a string (selective).
    const std::string text = edit.mid(eq + 1).toStdString();
    nlohmann::json value = tessera::spec::json_too_deep_at(text) == std::string_view::npos
                               ? nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false)
                               : nlohmann::json(nlohmann::json::value_t::discarded);
    if (value.is_discarded()) value = text;
    QString error;
    // A text field given what reads as a number or a flag ("name=2024") takes the text.
    if (!window.session()->setField(edit.left(eq), value, &error) &&
        (value.is_string() || !window.session()->setField(edit.left(eq), nlohmann::json(text), nullptr)))
      return fail(error);
  }
  // The designer marks a field that breaks a rule and the search dialog looks for a layout that suits,
  // so both draw such an edit; the other views would show the plan from before it, greyed: refused with
  // the problems, as the same value in the file is.
  if (screenshot && !search && *view != tessera::ui::MainWindow::View::designer && window.session()->stale())
    return fail(QStringLiteral("after --set:\n%1").arg(window.session()->problemsText()));
  if (parser.isSet(compareOption)) {
    const auto schedule = tessera::spec::enum_from_string<tessera::spec::Schedule>(parser.value(compareOption).toStdString());
    if (!schedule) return fail(QStringLiteral("--compare must be gpipe, 1f1b, interleaved or zb-h1, got \"%1\"").arg(parser.value(compareOption)));
    window.setComparison(*schedule);
  }
  if (parser.isSet(rankOption)) {
    bool ok = false;
    const qlonglong rank = parser.value(rankOption).toLongLong(&ok);
    if (!ok || rank < 0 || rank >= window.session()->spec().world_size())
      return fail(QStringLiteral("--select-rank must be a rank below %1, got \"%2\"").arg(window.session()->spec().world_size()).arg(parser.value(rankOption)));
    window.rankGridView()->selectRank(rank);
  }
  std::optional<std::pair<double, double>> range;
  if (parser.isSet(rangeOption)) {
    const auto parts = parser.value(rangeOption).split(':');
    bool ok1 = false, ok2 = false;
    if (parts.size() == 2) range = std::pair{parts[0].toDouble(&ok1), parts[1].toDouble(&ok2)};
    if (!ok1 || !ok2 || !std::isfinite(range->first) || !std::isfinite(range->second) || range->second <= range->first)
      return fail(QStringLiteral("--time-range must be FROM:TO, finite seconds with FROM < TO, got \"%1\"").arg(parser.value(rangeOption)));
    // The timeline spans the step, from 0 to its end (the pipeline, exposed DP, the optimizer), or
    // the longer of the two steps with --compare.
    if (const auto plan = window.session()->plan()) {
      double step_s = plan->prediction.iteration_time_s;
      if (const auto other = tessera::spec::enum_from_string<tessera::spec::Schedule>(parser.value(compareOption).toStdString()))
        if (const auto compared = window.session()->planWithSchedule(*other).plan)
          step_s = std::max(step_s, compared->prediction.iteration_time_s);
      if (range->first >= step_s || range->second <= 0)
        return fail(QStringLiteral("--time-range %1 shows nothing: the step spans 0 to %2 s")
                        .arg(parser.value(rangeOption))
                        .arg(step_s, 0, 'g', 4));
    }
  }
  if (screenshot) {
    if (!size) return fail(sizeProblem);
    // What only the timeline draws, asked of another view's picture, would be left out silently.
    if (*view != tessera::ui::MainWindow::View::timeline || search)
      for (const auto* option : {&compareOption, &rangeOption})
        if (parser.isSet(*option))
          return fail(QStringLiteral("--%1 is for the timeline's picture: add --view timeline").arg(option->names().front()));
    const bool gridShown = !search && (*view == tessera::ui::MainWindow::View::grid || *view == tessera::ui::MainWindow::View::designer);
    if (parser.isSet(rankOption) && !gridShown)
      return fail(QStringLiteral("--select-rank is for the rank grid's picture: add --view grid (or designer)"));
    const QString out = parser.value(shotOption);
    if (search) {
      tessera::ui::LayoutSearchDialog dialog(window.session());
      dialog.resize(*size);
      QEventLoop loop;
      QObject::connect(&dialog, &tessera::ui::LayoutSearchDialog::searchFinished, &loop, &QEventLoop::quit);
      dialog.show();
      if (!dialog.startSearch()) return fail(dialog.problemText());
      loop.exec();
      QCoreApplication::processEvents();  // the layout's re-arrangement for the result's texts
      if (const QString problem = tessera::app::writePicture(dialog.grab().toImage(), *size, out); !problem.isEmpty()) return fail(problem);
      return 0;
    }
    if (const QString problem = tessera::app::writePicture(window.screenshot(*view, *size, range), *size, out); !problem.isEmpty())
      return fail(problem);
    return 0;
  }
  window.showView(*view);
  window.show();
  return app.exec();
}
