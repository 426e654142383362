// tessera: the workbench. With --screenshot it renders one view of a spec offscreen to a PNG and exits
// (for the user guide and tests): tessera --spec FILE --view grid --screenshot OUT.png [--size 1600x1000].
#include <cstdio>

#include <QApplication>
#include <QCommandLineParser>
#include <QRegularExpression>

#include "main_window.hpp"

namespace {

int fail(const QString& message) {
  std::fprintf(stderr, "tessera: %s\n", qPrintable(message));
  return 2;
}

}  // namespace

int main(int argc, char* argv[]) {
  // Screenshots need no display: pick the offscreen platform unless the caller chose one.
  for (int i = 1; i < argc; ++i)
    if (QByteArray(argv[i]) == "--screenshot" && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
      qputenv("QT_QPA_PLATFORM", "offscreen");

  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("Tessera"));
  QApplication::setApplicationName(QStringLiteral("tessera"));
  QApplication::setApplicationVersion(QStringLiteral(TESSERA_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Tessera: plan Megatron-style 3D-parallel training runs."));
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption specOption(QStringLiteral("spec"), QStringLiteral("Run spec to open."), QStringLiteral("FILE"));
  QCommandLineOption viewOption(QStringLiteral("view"), QStringLiteral("View to show: designer, grid, memory or timeline."),
                                QStringLiteral("VIEW"), QStringLiteral("designer"));
  QCommandLineOption shotOption(QStringLiteral("screenshot"), QStringLiteral("Render the view offscreen to a PNG and exit."),
                                QStringLiteral("OUT.png"));
  QCommandLineOption sizeOption(QStringLiteral("size"), QStringLiteral("Window size for --screenshot."),
                                QStringLiteral("WxH"), QStringLiteral("1600x1000"));
  parser.addOptions({specOption, viewOption, shotOption, sizeOption});
  parser.addPositionalArgument(QStringLiteral("file"), QStringLiteral("Run spec to open (same as --spec)."));
  parser.process(app);

  QString spec = parser.value(specOption);
  if (spec.isEmpty() && !parser.positionalArguments().isEmpty()) spec = parser.positionalArguments().front();
  const auto view = tessera::ui::MainWindow::viewFromName(parser.value(viewOption));
  if (!view) return fail(QStringLiteral("--view must be designer, grid, memory or timeline, got \"%1\"").arg(parser.value(viewOption)));

  const bool screenshot = parser.isSet(shotOption);
  tessera::ui::MainWindow window(/*persistent=*/!screenshot);
  if (!spec.isEmpty()) {
    QString error;
    if (!window.openFile(spec, &error)) return fail(QStringLiteral("%1:\n%2").arg(spec, error));
  }
  if (screenshot) {
    const auto match = QRegularExpression(QStringLiteral("^(\\d+)x(\\d+)$")).match(parser.value(sizeOption));
    if (!match.hasMatch()) return fail(QStringLiteral("--size must be WIDTHxHEIGHT, got \"%1\"").arg(parser.value(sizeOption)));
    const QSize size(match.captured(1).toInt(), match.captured(2).toInt());
    const QString out = parser.value(shotOption);
    if (!window.screenshot(*view, size).save(out)) return fail(QStringLiteral("cannot write %1").arg(out));
    return 0;
  }
  window.showView(*view);
  window.show();
  return app.exec();
}
