// The --compare and --history modes of the tessera executable.
#include "history_command.hpp"

#include <cstdio>

#include <QApplication>
#include <QStringList>

#include "history_window.hpp"
#include "picture_file.hpp"
#include "theme.hpp"
#include "store/location.hpp"

namespace tessera::app {

namespace {

int fail(const QString& message, int code = 2) {
  std::fprintf(stderr, "tessera: %s\n", qPrintable(message));
  return code;
}

}  // namespace

int runHistoryCommand(const HistoryCommand& command) {
  QStringList ids;
  for (const QString& part : command.runs.split(QLatin1Char(',')))
    if (!part.trimmed().isEmpty()) ids << part.trimmed();
  if (!command.runs.isEmpty() && ids.size() < 2)
    return fail(QStringLiteral("--compare needs two or more run ids separated by commas (or, for the timeline, a schedule: "
                               "gpipe, 1f1b, interleaved, zb-h1), got \"%1\"")
                    .arg(command.runs));
  ui::applyTheme(command.palette);
  QString path;
  try {
    path = QString::fromStdString(store::resolve_history_path(command.db.toStdString()));
  } catch (const std::exception& e) {
    return fail(QString::fromUtf8(e.what()));
  }
  // A picture or a comparison only reads: an empty file (which opening makes a history) or one that is
  // no regular file is said to be so, and left as it is.
  if (!command.screenshot.isEmpty() || !ids.isEmpty())
    if (const QString problem = readOnlyHistoryProblem(path); !problem.isEmpty()) return fail(problem);
  QString error;
  auto window = ui::HistoryWindow::open(path, &error);
  if (!window) return fail(error);
  if (!ids.isEmpty() && !window->compare(ids, &error)) return fail(error);
  if (!command.screenshot.isEmpty()) {
    const QImage picture = window->screenshot(command.size);
    if (const QString problem = pictureSizeProblem(picture, command.size); !problem.isEmpty()) return fail(problem);
    if (const QString problem = savePicture(picture, command.screenshot); !problem.isEmpty()) return fail(problem, 1);
    return 0;
  }
  window->show();
  return QApplication::exec();
}

}  // namespace tessera::app
