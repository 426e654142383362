// The views on a screen scaled by 1.25 (QT_SCALE_FACTOR, set before the application starts): the
// timeline's ticks are lines of whole device pixels, all alike (1 or 2 device pixels by turn before),
// and the comparison's plots export at the screen's scale (a 2× screen got a 1× picture).
#include <QtTest/QtTest>

#include <set>

#include "compare_view.hpp"
#include "history_fixture.hpp"
#include "store/history.hpp"
#include "timeline_fixture.hpp"

using namespace tessera;
using namespace tessera::ui;

namespace {
constexpr double kScale = 1.25;
}  // namespace

class TestHiDpi : public QObject {
  Q_OBJECT
 private slots:
  void theTimelinesTicksAreAlikeInDevicePixels() {
    test::TimelineOf timeline("llama3-70b-64xh100.json");
    QVERIFY(timeline.plan());
    ui::TimelineView& view = timeline.view;
    view.resize(1000, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.fitToView();
    QCOMPARE(view.devicePixelRatioF(), kScale);
    const QImage image = view.grab().toImage();
    QCOMPARE(image.width(), qRound(1000 * kScale));
    // Just above the ruler's bottom edge (22 px) only its ticks are drawn: runs of the Mid colour.
    const int y = qRound(20 * kScale);
    const QRgb mid = view.palette().color(QPalette::Mid).rgb();
    std::set<int> widths;
    int run = 0, ticks = 0;
    for (int x = 0; x < image.width(); ++x) {
      if (image.pixel(x, y) == mid) {
        ++run;
      } else if (run > 0) {
        widths.insert(run);
        ++ticks;
        run = 0;
      }
    }
    QVERIFY2(ticks >= 5, qPrintable(QString::number(ticks)));
    QVERIFY2(widths.size() == 1, qPrintable(QString("%1 ticks of %2 widths").arg(ticks).arg(widths.size())));
    QCOMPARE(*widths.begin(), 1);  // round(1.25) device pixels
  }

  void comparedPlotsExportAtTheScreensScale() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("h.sqlite").toStdString();
    {
      store::Writer writer(path);
      test::writeRun(writer, "a", test::tinySpec("a", 2, 2, 0.003), {}, store::RunStatus::done, 5.0, 20000);
      test::writeRun(writer, "b", test::tinySpec("b", 1, 4, 0.001), {}, store::RunStatus::done, 5.5, 15000);
    }
    store::History history(path);
    CompareView view(&history);
    view.resize(1200, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QString error;
    QVERIFY2(view.setRuns({"a", "b"}, &error), qPrintable(error));
    const QString png = dir.filePath("plots.png");
    QVERIFY2(view.exportPlots(png, &error), qPrintable(error));
    const QImage image(png);
    QVERIFY2(image.width() >= qRound(1200 * kScale), qPrintable(QString::number(image.width())));
  }
};

int main(int argc, char** argv) {
  qputenv("QT_SCALE_FACTOR", QByteArray::number(kScale));
  QApplication app(argc, argv);
  TestHiDpi test;
  return QTest::qExec(&test, argc, argv);
}

#include "test_hidpi.moc"
