// `tessera --spec FILE --view V --screenshot OUT.png` as the docs run it: exit 0 and a PNG of the
// requested size for each view; a bad spec or view exits non-zero with a message naming the problem.
#include <QtTest/QtTest>

namespace {
struct Run {
  int code;
  QString output;
};
Run tessera(const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(TESSERA_GUI), args);
  p.waitForFinished(60000);
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardError())};
}
const QString kSpec = QStringLiteral(TESSERA_SOURCE_DIR "/resources/examples/gpt3-175b-table1.json");
}  // namespace

class TestScreenshotCli : public QObject {
  Q_OBJECT
 private slots:
  void everyViewRendersToAPng_data() {
    QTest::addColumn<QString>("view");
    for (const char* v : {"designer", "grid", "memory", "timeline"}) QTest::newRow(v) << QString::fromLatin1(v);
  }
  void everyViewRendersToAPng() {
    QFETCH(QString, view);
    QTemporaryDir dir;
    const QString out = dir.filePath(view + ".png");
    const Run run = tessera({"--spec", kSpec, "--view", view, "--screenshot", out, "--size", "1200x760"});
    QVERIFY2(run.code == 0, qPrintable(run.output));
    const QImage image(out);
    QCOMPARE(image.size(), QSize(1200, 760));
  }

  void compareAndSelectRankChangeTheImage() {
    QTemporaryDir dir;
    const QString plain = dir.filePath("plain.png"), compared = dir.filePath("compared.png"), selected = dir.filePath("selected.png");
    QCOMPARE(tessera({"--spec", kSpec, "--view", "timeline", "--screenshot", plain, "--size", "1000x700"}).code, 0);
    QCOMPARE(tessera({"--spec", kSpec, "--view", "timeline", "--compare", "gpipe", "--time-range", "0:2.5", "--screenshot",
                      compared, "--size", "1000x700"}).code, 0);
    QVERIFY(QImage(plain) != QImage(compared));
    const QString grid = dir.filePath("grid.png");
    QCOMPARE(tessera({"--spec", kSpec, "--view", "grid", "--screenshot", grid, "--size", "1000x700"}).code, 0);
    QCOMPARE(tessera({"--spec", kSpec, "--view", "grid", "--select-rank", "100", "--screenshot", selected, "--size", "1000x700"}).code, 0);
    QVERIFY(QImage(grid) != QImage(selected));
    const Run bad = tessera({"--spec", kSpec, "--view", "grid", "--select-rank", "1536", "--screenshot", selected});
    QCOMPARE(bad.code, 2);
    QVERIFY(bad.output.contains("--select-rank must be a rank below 1536"));
    // What only the timeline draws, asked of another view, and a range past the step: refused.
    const Run elsewhere = tessera({"--spec", kSpec, "--view", "memory", "--compare", "zb-h1", "--screenshot", selected});
    QCOMPARE(elsewhere.code, 2);
    QVERIFY2(elsewhere.output.contains("--compare is for the timeline's picture: add --view timeline"), qPrintable(elsewhere.output));
    const Run past = tessera({"--spec", kSpec, "--view", "timeline", "--time-range", "100:200", "--screenshot", selected});
    QCOMPARE(past.code, 2);
    // The step's length is the planner's (28.9 s for GPT-3's example today): any figure below 100.
    QVERIFY2(past.output.contains(QRegularExpression("--time-range 100:200 shows nothing: the step spans 0 to [1-9][0-9]\\.[0-9]+ s")),
             qPrintable(past.output));
    // The launch dialog launches the file as it is: an edit it would not show is refused, not ignored.
    const Run launch_set = tessera({"--spec", kSpec, "--view", "launch", "--set", "parallel.tp=3", "--screenshot", selected});
    QCOMPARE(launch_set.code, 2);
    QVERIFY2(launch_set.output.contains("--set does not apply to --view launch"), qPrintable(launch_set.output));
    const Run missing = tessera({"--spec", dir.filePath("missing.json"), "--view", "grid", "--screenshot", selected});
    QCOMPARE(missing.code, 2);
    QCOMPARE(missing.output.count("missing.json"), 1);  // named once
  }

  void setEditsAFieldLikeTheDesigner() {
    QTemporaryDir dir;
    const QString valid = dir.filePath("valid.png"), invalid = dir.filePath("invalid.png");
    QCOMPARE(tessera({"--spec", kSpec, "--view", "designer", "--screenshot", valid, "--size", "1200x800"}).code, 0);
    // An invalid value is shown at its field (exit 0: the designer renders it), not refused.
    QCOMPARE(tessera({"--spec", kSpec, "--set", "parallel.tp=3", "--view", "designer", "--screenshot", invalid, "--size", "1200x800"}).code, 0);
    QVERIFY(QImage(valid) != QImage(invalid));
    const Run unknown = tessera({"--spec", kSpec, "--set", "parallel.tpp=3", "--view", "grid", "--screenshot", invalid});
    QCOMPARE(unknown.code, 2);
    QVERIFY2(unknown.output.contains("unknown field parallel.tpp (did you mean parallel.tp?)"), qPrintable(unknown.output));
    // The name is a field, and text even when it reads as a number; a field's section is suggested.
    const Run renamed = tessera({"--spec", kSpec, "--set", "name=2024", "--view", "grid", "--screenshot", invalid});
    QVERIFY2(renamed.code == 0, qPrintable(renamed.output));
    const Run bare = tessera({"--spec", kSpec, "--set", "tp=4", "--view", "grid", "--screenshot", invalid});
    QCOMPARE(bare.code, 2);
    QVERIFY2(bare.output.contains("unknown field tp (did you mean parallel.tp?)"), qPrintable(bare.output));
    const Run typed = tessera({"--spec", kSpec, "--set", "parallel.tp=abc", "--view", "grid", "--screenshot", invalid});
    QCOMPARE(typed.code, 2);
    QVERIFY2(typed.output.contains("parallel.tp must be an integer"), qPrintable(typed.output));
  }

  // The Search Layouts dialog after a search, over the spec as --set left it: a cluster its own
  // layout does not suit (TP8·PP8 on one node of 8) renders too; without --screenshot it is refused.
  void searchDialogRendersAfterItsSearch() {
    QTemporaryDir dir;
    const QString shot = dir.filePath("search.png"), moved = dir.filePath("moved.png");
    const Run run = tessera({"--spec", kSpec, "--view", "search", "--screenshot", shot, "--size", "1100x700"});
    QVERIFY2(run.code == 0, qPrintable(run.output));
    QCOMPARE(QImage(shot).size(), QSize(1100, 700));
    const Run other = tessera({"--spec", kSpec, "--set", "cluster.nodes=1", "--view", "search", "--screenshot", moved, "--size", "1100x700"});
    QVERIFY2(other.code == 0, qPrintable(other.output));
    QVERIFY(QImage(shot) != QImage(moved));
    const Run windowless = tessera({"--spec", kSpec, "--view", "search"});
    QCOMPARE(windowless.code, 2);
    QVERIFY2(windowless.output.contains("--view search needs --screenshot"), qPrintable(windowless.output));
  }

  // What a mode does not read is refused by name (exit 2, nothing written); each rendered as if it
  // were not there, with exit 0.
  void optionsOfAnotherModeAreRefused() {
    QTemporaryDir dir;
    const QString out = dir.filePath("o.png"), db = dir.filePath("none.sqlite");
    const struct {
      QStringList args;
      const char* message;
    } cases[] = {
        {{"--run", "some-run", "--db", db, "--set", "parallel.tp=2"}, "--set does not apply to --run"},
        {{"--run", "some-run", "--db", db, "--time-range", "0:1"}, "--time-range does not apply to --run"},
        {{"--run", "some-run", "--db", db, "--spec", kSpec}, "a spec file does not apply to --run"},
        {{"--history", "--db", db, "--select-rank", "3"}, "--select-rank does not apply to --history"},
        {{"--history", "--db", db, kSpec}, "a spec file does not apply to --history"},
        {{"--history", "--db", db, "--compare", "gpipe"}, "--compare gpipe is a schedule, for a spec's timeline"},
        {{"--compare", "a,b", "--db", db, "--view", "grid"}, "--view does not apply to --compare RUNS"},
        {{"--spec", kSpec, "--view", "memory", "--select-rank", "3"}, "--select-rank is for the rank grid's picture"},
        {{"--spec", kSpec, "--view", "grid", "--db", db}, "--db does not apply to a picture of a spec's grid view"},
        {{"--spec", kSpec, kSpec}, "one spec file at a time"},
    };
    for (const auto& c : cases) {
      const Run run = tessera(c.args + QStringList{"--screenshot", out});
      QVERIFY2(run.code == 2 && run.output.contains(QString::fromUtf8(c.message)), qPrintable(c.args.join(' ') + ": " + run.output));
      QVERIFY(!QFile::exists(out));
    }
  }

  // An edit that breaks a rule: the designer marks it at its field, the other views would draw the plan
  // from before it (greyed, exit 0); they exit 2 with the problem, as the same value in the file does.
  void aSetThatBreaksARuleIsRefusedOutsideTheDesigner() {
    QTemporaryDir dir;
    const QString out = dir.filePath("s.png");
    for (const char* view : {"grid", "memory", "timeline"}) {
      const Run run = tessera({"--spec", kSpec, "--set", "parallel.tp=0", "--view", view, "--screenshot", out});
      QVERIFY2(run.code == 2 && run.output.contains("after --set:\nparallel.tp=0 must be a positive integer"), qPrintable(run.output));
      QVERIFY(!QFile::exists(out));
    }
    const Run designer = tessera({"--spec", kSpec, "--set", "parallel.tp=0", "--view", "designer", "--screenshot", out});
    QVERIFY2(designer.code == 0 && QFile::exists(out), qPrintable(designer.output));
    const Run section = tessera({"--spec", kSpec, "--set", "parallel=4", "--view", "grid", "--screenshot", out});
    QVERIFY2(section.code == 2 && section.output.contains("parallel is a section, not a field: set one of its fields, as parallel.tp"),
             qPrintable(section.output));
  }

  // A --size below what the view can be drawn in gave a larger picture than asked (100x100 gave 715x457).
  void aSizeTooSmallForTheViewIsRefused() {
    QTemporaryDir dir;
    const QString out = dir.filePath("small.png");
    const Run run = tessera({"--spec", kSpec, "--view", "memory", "--size", "100x100", "--screenshot", out});
    QCOMPARE(run.code, 2);
    const auto least = QRegularExpression("--size 100x100 is smaller than this view can be drawn: it needs at least (\\d+)x(\\d+)").match(run.output);
    QVERIFY2(least.hasMatch(), qPrintable(run.output));
    QVERIFY(!QFile::exists(out));
    // The least it said is drawn at that size.
    const QSize needed(least.captured(1).toInt(), least.captured(2).toInt());
    QVERIFY(needed.width() > 100 && needed.height() > 100);
    const QString size = QStringLiteral("%1x%2").arg(needed.width()).arg(needed.height());
    const Run fits = tessera({"--spec", kSpec, "--view", "memory", "--size", size, "--screenshot", out});
    QVERIFY2(fits.code == 0, qPrintable(fits.output));
    QCOMPARE(QImage(out).size(), needed);
  }

  void badSpecExitsNonZeroWithTheProblem() {
    QTemporaryDir dir;
    QFile bad(dir.filePath("bad.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write(R"({"model": {"preset": "llama3-8b"}, "parallel": {"tp": 3}})");
    bad.close();
    const Run run = tessera({"--spec", bad.fileName(), "--view", "grid", "--screenshot", dir.filePath("x.png")});
    QCOMPARE(run.code, 2);
    QVERIFY2(run.output.contains("parallel.tp=3 must divide model.num_attention_heads=32"), qPrintable(run.output));
    QVERIFY(!QFile::exists(dir.filePath("x.png")));
  }

  // What the picture goes to and what a view reads are checked before anything is drawn, and no file
  // is touched by a refusal (a screenshot onto the spec emptied it; an empty --db became a history).
  void filesAreCheckedBeforeAnythingIsWritten() {
    QTemporaryDir dir;
    const QString spec = dir.filePath("v.json");
    QVERIFY(QFile::copy(kSpec, spec));
    const QByteArray before = [&] {
      QFile f(spec);
      return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }();
    Run run = tessera({"--spec", spec, "--screenshot", spec});
    QVERIFY2(run.code == 2 && run.output.contains("the picture is a PNG; give a file ending in .png"), qPrintable(run.output));
    QFile after(spec);
    QVERIFY(after.open(QIODevice::ReadOnly));
    QCOMPARE(after.readAll(), before);
    // /dev/zero was read for ever (4.7 GB in 10 s).
    run = tessera({"--spec", "/dev/zero", "--screenshot", dir.filePath("z.png")});
    QVERIFY2(run.code == 2 && run.output.contains("spec file /dev/zero is larger than 16 MiB"), qPrintable(run.output));
    run = tessera({"--spec", kSpec, "--view", "timeline", "--time-range", "nan:1", "--screenshot", dir.filePath("t.png")});
    QVERIFY2(run.code == 2 && run.output.contains("--time-range must be FROM:TO, finite seconds"), qPrintable(run.output));
    run = tessera({"--spec", kSpec, "--frobnicate", "--screenshot", dir.filePath("u.png")});
    QVERIFY2(run.code == 2 && run.output.contains("frobnicate"), qPrintable(run.output));  // Qt's process() gave 1
    const QString empty = dir.filePath("empty.sqlite");
    QVERIFY(QFile(empty).open(QIODevice::WriteOnly));
    for (const QStringList& mode : {QStringList{"--history"}, QStringList{"--run", "some-run"}}) {
      run = tessera(mode + QStringList{"--db", empty, "--screenshot", dir.filePath("e.png")});
      QVERIFY2(run.code == 2 && run.output.contains("is empty, not a run history"), qPrintable(run.output));
      QCOMPARE(QFileInfo(empty).size(), qint64{0});
    }
    QVERIFY(!QFile::exists(dir.filePath("z.png")) && !QFile::exists(dir.filePath("t.png")) && !QFile::exists(dir.filePath("e.png")));
  }

  void badViewOrSizeExitsNonZero() {
    QTemporaryDir dir;
    // --palette takes the same three names in every mode.
    for (const QStringList& mode : {QStringList{"--spec", kSpec, "--view", "grid"}, QStringList{"--history", "--db", dir.filePath("none.sqlite")},
                                    QStringList{"--run", "some-run", "--db", dir.filePath("none.sqlite")},
                                    QStringList{"--spec", kSpec, "--view", "launch"}}) {
      const Run bad = tessera(mode + QStringList{"--palette", "sepia", "--screenshot", dir.filePath("p.png")});
      QCOMPARE(bad.code, 2);
      QVERIFY2(bad.output.contains("--palette must be system, light or dark, got \"sepia\""), qPrintable(bad.output));
      QVERIFY(!QFile::exists(dir.filePath("p.png")));
    }
    Run run = tessera({"--spec", kSpec, "--view", "gird", "--screenshot", dir.filePath("x.png")});
    QCOMPARE(run.code, 2);
    QVERIFY(run.output.contains("--view must be designer, grid, memory, timeline, launch or search"));
    run = tessera({"--spec", kSpec, "--view", "grid", "--screenshot", dir.filePath("x.png"), "--size", "big"});
    QCOMPARE(run.code, 2);
    QVERIFY(run.output.contains("--size must be WIDTHxHEIGHT"));
    // Sizes no window takes are refused by name, for every view; nothing is written.
    for (const QStringList& view : {QStringList{"--spec", kSpec, "--view", "grid"}, QStringList{"--history", "--db", dir.filePath("none.sqlite")}})
      for (const char* size : {"0x0", "100000x100000", "99x500"}) {
        run = tessera(view + QStringList{"--screenshot", dir.filePath("y.png"), "--size", size});
        QCOMPARE(run.code, 2);
        QVERIFY2(run.output.contains(QStringLiteral("--size %1: each side must be 100 to 8192 pixels").arg(size)), qPrintable(run.output));
        QVERIFY(!QFile::exists(dir.filePath("y.png")));
      }
  }
};

QTEST_GUILESS_MAIN(TestScreenshotCli)
#include "test_screenshot_cli.moc"
