// `tessera --compare ID,ID --db FILE --screenshot OUT.png` as the docs run it, against a history
// written here through the store's Writer: a PNG of the requested size; fewer than two runs, an
// unknown id and a missing history exit 2 with a message naming the problem and write nothing.
#include <QtTest/QtTest>

#include "history_fixture.hpp"

using namespace tessera;

namespace {
struct Run {
  int code;
  QString output;
};
Run runTessera(const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  env.remove("TESSERA_DB");
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(TESSERA_GUI), args);
  p.waitForFinished(60000);
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardError())};
}
}  // namespace

class TestCompareCli : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString db_;
  test::WrittenRun a_, b_;

 private slots:
  void initTestCase() {
    db_ = dir_.filePath("history.sqlite");
    store::Writer writer(db_.toStdString());
    a_ = test::writeRun(writer, "tiny-a", test::tinySpec("tiny-a", 2, 2, 0.003), {}, store::RunStatus::done, 5.0, 20000);
    b_ = test::writeRun(writer, "tiny-b", test::tinySpec("tiny-b", 1, 4, 0.001), {}, store::RunStatus::done, 5.5, 15000);
    writer.close();
  }

  void comparesToAPng() {
    const QString out = dir_.filePath("compare.png");
    const Run run = runTessera({"--compare", QString::fromStdString(a_.id) + "," + QString::fromStdString(b_.id.substr(0, 8)), "--db", db_,
                             "--screenshot", out, "--size", "1200x800"});
    QVERIFY2(run.code == 0, qPrintable(run.output));
    const QImage image(out);
    QCOMPARE(image.size(), QSize(1200, 800));
    // Not a blank window: the curves and tables put many colours in it.
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 7)
      for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
    QVERIFY2(colours.size() > 20, qPrintable(QString::number(colours.size())));
  }

  void historyRendersTheRunList() {
    const QString out = dir_.filePath("history.png");
    const Run run = runTessera({"--history", "--db", db_, "--screenshot", out, "--size", "1400x700"});
    QVERIFY2(run.code == 0, qPrintable(run.output));
    QCOMPARE(QImage(out).size(), QSize(1400, 700));
  }

  void rejectsBadRequests() {
    const QString out = dir_.filePath("bad.png");
    Run run = runTessera({"--compare", "tiny-a", "--db", db_, "--screenshot", out});
    QCOMPARE(run.code, 2);
    QVERIFY2(run.output.contains("--compare needs two or more run ids"), qPrintable(run.output));
    run = runTessera({"--compare", "tiny-a,nosuchrun", "--db", db_, "--screenshot", out});
    QCOMPARE(run.code, 2);
    QVERIFY2(run.output.contains("no run with id or name 'nosuchrun'"), qPrintable(run.output));
    run = runTessera({"--compare", "tiny-a,tiny-b", "--db", dir_.filePath("missing.sqlite"), "--screenshot", out});
    QCOMPARE(run.code, 2);
    QVERIFY2(run.output.contains("no run history at") && run.output.contains("missing.sqlite"), qPrintable(run.output));
    QVERIFY(!QFile::exists(dir_.filePath("missing.sqlite")));  // not created by asking
    QVERIFY(!QFile::exists(out));
  }
};

QTEST_GUILESS_MAIN(TestCompareCli)
#include "test_compare_cli.moc"
