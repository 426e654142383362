// tessera-cli runs …: list, show, tag, note, compare, export, import and delete run as a process on a
// temporary history, checking what they print and their exit codes (2 for the user's mistakes).
#include <QtTest/QtTest>

#include <fstream>

#include <nlohmann/json.hpp>

namespace {

struct Result {
  int code = -1;
  QString out;
  QString err;
};

/// Writes a tessera-train --out directory: spec.json and metrics.jsonl for `steps` of 20 steps.
QString write_train_output(const QTemporaryDir& dir, const QString& name, int tp, int steps) {
  const QString out = dir.filePath(name);
  QDir().mkpath(out);
  nlohmann::json spec = {{"name", name.toStdString()},
                         {"model", {{"preset", "tiny-gpt"}}},
                         {"parallel", {{"tp", tp}}},
                         {"training", {{"micro_batch_size", 2}, {"global_batch_size", 8}, {"train_steps", 20}}},
                         {"cluster", {{"gpu", "cpu"}, {"nodes", 1}, {"gpus_per_node", 2}}}};
  std::ofstream(out.toStdString() + "/spec.json") << spec.dump(2);
  std::ofstream metrics(out.toStdString() + "/metrics.jsonl");
  for (int step = 1; step <= steps; ++step)
    metrics << nlohmann::json{{"step", step}, {"rank", 0}, {"wall_time_s", 1.7e9 + step}, {"loss", 4.0 - 0.125 * step},
                              {"mfu", 0.25 * tp}, {"peak_tflops", 0.05 * tp}, {"tokens_per_s", 1000},
                              {"peak_memory_bytes", 1 << 30}}
                   .dump()
            << "\n";
  // The final checkpoint as tessera-train reports it.
  metrics << nlohmann::json{{"type", "artifact"}, {"kind", "checkpoint"}, {"path", out.toStdString() + "/checkpoints/last"},
                            {"step", steps}, {"rank", 0}, {"size_bytes", 10 << 20}, {"created_ms", int64_t{1'700'000'100'000}}}
                 .dump()
          << "\n";
  return out;
}

}  // namespace

class TestCliRuns : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString db_;

  Result cli(QStringList args, bool with_db = true, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    if (with_db) args << "--db" << db_;
    QProcess process;
    process.setProcessEnvironment(env);
    process.start(TESSERA_CLI, args);
    if (!process.waitForFinished(30000)) return {};
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1, QString::fromUtf8(process.readAllStandardOutput()),
            QString::fromUtf8(process.readAllStandardError())};
  }

  nlohmann::json list_json(const QStringList& extra = {}) {
    const auto r = cli(QStringList{"runs", "list", "--json"} + extra);
    return r.code == 0 ? nlohmann::json::parse(r.out.toStdString()) : nlohmann::json();
  }

  /// A directory as tessera-train --out writes it: typed "step" and "timeline" records whose
  /// wall_time_s counts from the start of training (docs/runtime.md), and a run_end record.
  QString write_typed_train_output(const QString& name, int steps) {
    const QString out = dir_.filePath(name);
    QDir().mkpath(out);
    nlohmann::json spec = {{"name", name.toStdString()},
                           {"model", {{"preset", "tiny-gpt"}}},
                           {"parallel", {{"pp", 2}}},
                           {"training", {{"micro_batch_size", 2}, {"global_batch_size", 8}, {"train_steps", steps}}},
                           {"cluster", {{"gpu", "cpu"}, {"nodes", 1}, {"gpus_per_node", 2}}}};
    std::ofstream(out.toStdString() + "/spec.json") << spec.dump(2);
    std::ofstream metrics(out.toStdString() + "/metrics.jsonl");
    for (int step = 1; step <= steps; ++step) {
      for (int rank = 0; rank < 2; ++rank) {
        for (int mb = 0; mb < 4; ++mb)
          for (const char* op : {"F", "B"})
            metrics << nlohmann::json{{"type", "timeline"}, {"step", step}, {"rank", rank}, {"stage", rank}, {"op", op},
                                      {"microbatch", mb}, {"chunk", 0}, {"start_s", 0.01 * mb}, {"end_s", 0.01 * mb + 0.005}}
                           .dump()
                    << "\n";
        metrics << nlohmann::json{{"type", "step"}, {"step", step}, {"rank", rank}, {"wall_time_s", 0.25 * step},
                                  {"loss", 5.0 - 0.1 * step}, {"mfu", 0.2}}
                       .dump()
                << "\n";
      }
    }
    metrics << nlohmann::json{{"type", "run_end"}, {"rank", 0}, {"state", "done"}}.dump() << "\n";
    return out;
  }

  QString id_of(const QString& name) {
    for (const auto& run : list_json())
      if (run["name"] == name.toStdString()) return QString::fromStdString(run["id"].get<std::string>());
    return {};
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath("history/history.sqlite");
  }

  void importTrainerOutputWithTimelineAndRelativeTimes() {
    const auto r = cli({"runs", "import", write_typed_train_output("typed-run", 5)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    // 5 steps x 2 ranks x (loss, mfu) points; 5 steps x 2 ranks x 4 microbatches x (F, B) events.
    QVERIFY2(r.out.contains("20 metric points") && r.out.contains("80 timeline events"), qPrintable(r.out));
    for (const auto& run : list_json()) {
      if (run["name"] != "typed-run") continue;
      QCOMPARE(run["status"].get<std::string>(), std::string("done"));
      // Relative wall times are anchored at the file's time, not at 1970.
      const auto started = QString::fromStdString(run["started"].get<std::string>());
      QVERIFY2(started.startsWith(QString::number(QDate::currentDate().year())) || started.startsWith(QString::number(QDate::currentDate().year() - 1)),
               qPrintable(started));
      QVERIFY(run["ended"].get<std::string>() >= run["started"].get<std::string>());
      QCOMPARE(cli({"runs", "delete", QString::fromStdString(run["id"].get<std::string>())}).code, 0);
      return;
    }
    QFAIL("typed-run not listed");
  }

  void importAndList() {
    const auto a = cli({"runs", "import", write_train_output(dir_, "run-a", 1, 20)});
    QCOMPARE(a.code, 0);
    QVERIFY2(a.out.contains("imported run") && a.out.contains("'run-a'") && a.out.contains("100 metric points"), qPrintable(a.out));
    QCOMPARE(cli({"runs", "import", write_train_output(dir_, "run-b", 2, 12)}).code, 0);
    QVERIFY(QFile::exists(db_));  // the parent directory was created

    const auto table = cli({"runs", "list"});
    QCOMPARE(table.code, 0);
    QVERIFY2(table.out.contains("run-a") && table.out.contains("run-b") && table.out.contains("done") && table.out.contains("lost"),
             qPrintable(table.out));

    const auto runs = list_json();
    QCOMPARE(runs.size(), size_t{2});
    for (const auto& run : runs) {
      for (const char* key : {"id", "name", "status", "created", "tags"}) QVERIFY2(run.contains(key), key);
      QCOMPARE(run["id"].get<std::string>().size(), size_t{32});
      QVERIFY(run["tags"].is_array());
    }
    QCOMPARE(list_json({"--status", "done"}).size(), size_t{1});
    QCOMPARE(list_json({"--status", "done"})[0]["name"].get<std::string>(), std::string("run-a"));
    QCOMPARE(list_json({"--where", "parallel.tp=2"})[0]["name"].get<std::string>(), std::string("run-b"));
    QCOMPARE(list_json({"--name", "RUN-"}).size(), size_t{2});
    QCOMPARE(list_json({"--since", "2030-01-01"}).size(), size_t{0});

    // TESSERA_DB is the default when --db is not given.
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("TESSERA_DB", db_);
    const auto from_env = cli({"runs", "list"}, false, env);
    QCOMPARE(from_env.code, 0);
    QVERIFY(from_env.out.contains("run-a"));
  }

  void tagNoteShow() {
    const QString id = id_of("run-a");
    const auto tagged = cli({"runs", "tag", id.left(6), "baseline"});
    QCOMPARE(tagged.code, 0);
    QVERIFY2(tagged.out.contains("tags: baseline"), qPrintable(tagged.out));
    QCOMPARE(list_json({"--tag", "baseline"}).size(), size_t{1});
    QCOMPARE(cli({"runs", "note", "run-a", "lr warmup too short\nrerun with 2000"}).code, 0);
    // An empty value is refused, as a value not given (--status '' listed every run), but a note's:
    // "" clears it.
    for (const QStringList& args : {QStringList{"runs", "list", "--status", ""}, QStringList{"runs", "show", ""},
                                    QStringList{"runs", "export", "run-a", "--json", ""}}) {
      const auto empty = cli(args);
      QVERIFY2(empty.code == 2 && empty.err.contains("must not be empty"), qPrintable(args.join(' ') + ": " + empty.err));
    }
    QCOMPARE(cli({"runs", "note", "run-a", ""}).code, 0);
    QVERIFY(!cli({"runs", "show", id}).out.contains("notes "));
    QCOMPARE(cli({"runs", "note", "run-a", "lr warmup too short\nrerun with 2000"}).code, 0);
    const auto show = cli({"runs", "show", id});
    QCOMPARE(show.code, 0);
    // A note's second line stays under the value column.
    for (const char* part : {"notes     lr warmup too short\n          rerun with 2000\n", "baseline", "done", "final loss", "1.5000", "100 metric points",
                             "MFU is a share of 50.0 GFLOP/s (the runtime's peak)", "tokens_per_s", "peak memory", "1.00 GiB"})
      QVERIFY2(show.out.contains(part), qPrintable(show.out + " lacks " + part));
    const auto untag = cli({"runs", "tag", "run-a", "nope", "--remove"});
    QCOMPARE(untag.code, 2);
    QVERIFY2(untag.err.contains("has no tag 'nope'"), qPrintable(untag.err));
  }

  void wideCharactersKeepTheColumnsAligned() {
    // Japanese and an emoji take two terminal columns each: the status column starts where its header
    // does (it was padded by code points, two columns short per wide character).
    const QString name = QString::fromUtf8("ラン-α 🚀");  // 2 + 2 + 1 + 1 + 1 + 2 = 9 columns
    QCOMPARE(cli({"runs", "import", write_train_output(dir_, "wide", 1, 3), "--name", name}).code, 0);
    const auto list = cli({"runs", "list"});
    QCOMPARE(list.code, 0);
    const QStringList lines = list.out.split('\n');
    const int status_column = lines[0].indexOf("status");  // ASCII: characters are columns
    const auto row = std::find_if(lines.begin(), lines.end(), [&](const QString& l) { return l.contains(name); });
    QVERIFY(row != lines.end());
    const int name_at = row->indexOf(name);
    QCOMPARE(name_at, lines[0].indexOf("name"));
    int spaces = 0;
    while (row->at(name_at + name.size() + spaces) == ' ') ++spaces;
    QCOMPARE(name_at + 9 + spaces, status_column);
    QVERIFY(cli({"runs", "delete", name}).code == 0);
    // A name of 300 characters: one row, its name cut to 48 columns with "…".
    const QString long_name = QStringLiteral("first line ") + QString(289, QChar('x'));
    QCOMPARE(cli({"runs", "import", write_train_output(dir_, "long", 1, 3), "--name", long_name}).code, 0);
    const auto capped = cli({"runs", "list"});
    QVERIFY2(capped.out.contains(QStringLiteral("first line ") + QString(36, QChar('x')) + QStringLiteral("…")), qPrintable(capped.out));
    QVERIFY(!capped.out.contains(QString(40, QChar('x')) + QStringLiteral("xxxxxxxxxx")));
    QVERIFY(cli({"runs", "delete", long_name}).code == 0);
    // A name or tag with a control character (a line break, ESC) is refused: one line each.
    const auto escaped = cli({"runs", "import", write_train_output(dir_, "escaped", 1, 3), "--name", QStringLiteral("red\x1b[31mtext")});
    QVERIFY2(escaped.code == 2 && escaped.err.contains("a run name is one line, without control characters (byte 0x1B at offset 3)"),
             qPrintable(escaped.err));
    // C1's CSI (U+009B) in a name is printed as a space, not sent to the terminal; ESC in what was typed too.
    const QString coloured = QStringLiteral("red\u009b31mtext\u009b1m");
    const auto clean = [](const QString& text) { return !text.contains(QChar(0x1b)) && !text.contains(QChar(0x9b)); };
    const auto imported = cli({"runs", "import", write_train_output(dir_, "coloured", 1, 3), "--name", coloured});
    QVERIFY2(imported.code == 0 && imported.out.contains("'red 31mtext 1m'") && clean(imported.out), qPrintable(imported.out));
    const auto tagged = cli({"runs", "tag", coloured, QStringLiteral("tag\u009b2J")});
    QVERIFY2(tagged.code == 0 && tagged.out.contains("'red 31mtext 1m' tags: tag 2J") && clean(tagged.out), qPrintable(tagged.out));
    const auto untagged = cli({"runs", "tag", coloured, QStringLiteral("other\u009b2J"), "--remove"});
    QVERIFY2(untagged.code == 2 && untagged.err.contains("has no tag 'other 2J'") && clean(untagged.err), qPrintable(untagged.err));
    const auto unknown = cli({"runs", "show", QStringLiteral("no such\x1b[2J")});  // an error naming what was typed
    QVERIFY2(unknown.code == 2 && unknown.err.contains("'no such [2J'") && clean(unknown.err), qPrintable(unknown.err));
    const auto plain = cli({"runs", "list"});
    QVERIFY2(plain.out.contains("red 31mtext 1m") && !plain.out.contains(QChar(0x1b)) && !plain.out.contains(QChar(0x9b)),
             qPrintable(plain.out));
    const auto shown = cli({"runs", "show", coloured});
    QVERIFY2(shown.code == 0 && shown.out.contains("name      red 31mtext 1m\n") && !shown.out.contains(QChar(0x1b)) &&
                 !shown.out.contains(QChar(0x9b)),
             qPrintable(shown.out));
    const auto deleted = cli({"runs", "delete", coloured});
    QVERIFY2(deleted.code == 0 && deleted.out.contains("'red 31mtext 1m'") && clean(deleted.out), qPrintable(deleted.out));
  }

  void compareShowsSummaryAndDiff() {
    const auto text = cli({"runs", "compare", "run-a", "run-b"});
    QCOMPARE(text.code, 0);
    QVERIFY2(text.out.contains("parallel.tp") && text.out.contains("final loss") && text.out.contains("2.5000"), qPrintable(text.out));
    // Each run's MFU is a share of its own measured peak (CPU ranks): the table says they differ.
    QVERIFY2(text.out.contains("note: MFU is a share of each run's own peak") && text.out.contains(" 50.0 GFLOP/s") &&
                 text.out.contains(" 100.0 GFLOP/s"),
             qPrintable(text.out));
    const auto json = cli({"runs", "compare", "run-a", "run-b", "--json"});
    QCOMPARE(json.code, 0);
    const auto doc = nlohmann::json::parse(json.out.toStdString());
    QCOMPARE(doc["runs"][0]["summary"]["final_loss"].get<double>(), 1.5);
    QCOMPARE(doc["runs"][1]["summary"]["final_loss"].get<double>(), 2.5);
    QCOMPARE(doc["runs"][1]["summary"]["mean_mfu"].get<double>(), 0.5);
    QCOMPARE(doc["runs"][1]["summary"]["mfu_peak_tflops"].get<double>(), 0.1);
    std::vector<std::string> paths;
    for (const auto& row : doc["config_diff"]) paths.push_back(row["path"]);
    QCOMPARE(paths, (std::vector<std::string>{"name", "parallel.tp"}));
    QCOMPARE(doc["config_diff"][1]["values"], nlohmann::json({1, 2}));
    QCOMPARE(cli({"runs", "compare", "run-a"}).code, 2);
  }

  void exportImportDelete() {
    const QString id = id_of("run-a");
    const QString file = dir_.filePath("run-a.json");
    QCOMPARE(cli({"runs", "export", "run-a", "--json", file}).code, 0);
    QCOMPARE(cli({"runs", "export", "run-a", "--json", file}).code, 2);  // never overwrites
    const QString csv = dir_.filePath("run-a-csv");
    QCOMPARE(cli({"runs", "export", "run-a", "--csv", csv}).code, 0);
    QVERIFY(QFile::exists(csv + "/run.json") && QFile::exists(csv + "/metrics.csv"));
    const auto stdout_bundle = cli({"runs", "export", "run-a"});
    QCOMPARE(nlohmann::json::parse(stdout_bundle.out.toStdString())["run"]["id"].get<std::string>(), id.toStdString());

    const auto again = cli({"runs", "import", file});
    QCOMPARE(again.code, 2);
    QVERIFY2(again.err.contains("already in history") && again.err.contains(id), qPrintable(again.err));

    const auto deleted = cli({"runs", "delete", id.left(8)});
    QCOMPARE(deleted.code, 0);
    QVERIFY2(deleted.out.contains("deleted run " + id) && deleted.out.contains("100 metric points"), qPrintable(deleted.out));
    QCOMPARE(list_json().size(), size_t{1});

    const auto from_json = cli({"runs", "import", file});
    QCOMPARE(from_json.code, 0);
    QCOMPARE(id_of("run-a"), id);  // the same run, same id, back from its bundle
    QCOMPARE(cli({"runs", "delete", id}).code, 0);
    QCOMPARE(cli({"runs", "import", csv}).code, 0);
    const auto show = cli({"runs", "show", "run-a"});
    QVERIFY2(show.out.contains("lr warmup too short") && show.out.contains("100 metric points"), qPrintable(show.out));
    // Its checkpoint, sized in MiB (a few MiB read "0.01" GiB).
    QVERIFY2(QRegularExpression("checkpoint +20 +10.00 MiB +\\S+/checkpoints/last").match(show.out).hasMatch(), qPrintable(show.out));
  }

  void errorsExitWithTwo() {
    const auto missing = cli({"runs", "show", "ffffffff"});
    QCOMPARE(missing.code, 2);
    QVERIFY2(missing.err.startsWith("error: no run with id or name 'ffffffff'"), qPrintable(missing.err));
    QVERIFY(missing.out.isEmpty());
    QCOMPARE(cli({"runs", "delete", "nothing-like-it"}).code, 2);
    QCOMPARE(cli({"runs", "list", "--status", "sleeping"}).code, 2);
    QCOMPARE(cli({"runs", "import", dir_.filePath("no-such-bundle.json")}).code, 2);
    QCOMPARE(cli({"runs", "list", "--where", "model.num_layers"}).code, 2);
    // A path no spec has would match nothing, silently: refused with the field meant.
    const auto where = cli({"runs", "list", "--where", "tp=2"});
    QCOMPARE(where.code, 2);
    QVERIFY2(where.err.contains("tp is not a spec field (did you mean parallel.tp?)"), qPrintable(where.err));
    // So would a value the field cannot hold, and an empty tag (which listed every run).
    const auto typed = cli({"runs", "list", "--where", "parallel.tp=02"});
    QCOMPARE(typed.code, 2);
    QVERIFY2(typed.err.contains("spec condition parallel.tp=02: parallel.tp must be"), qPrintable(typed.err));
    const auto reversed = cli({"runs", "list", "--since", "2027-01-01", "--until", "2026-01-01"});
    QVERIFY2(reversed.code == 2 && reversed.err.contains("--until 2026-01-01 is not after --since 2027-01-01: no run could match"),
             qPrintable(reversed.err));
    const auto empty_tag = cli({"runs", "list", "--tag", ""});
    QCOMPARE(empty_tag.code, 2);
    QVERIFY2(empty_tag.err.contains("--tag: must not be empty"), qPrintable(empty_tag.err));
    QVERIFY(empty_tag.out.isEmpty());
    // A run named twice, a tag with a comma, --csv onto a file.
    const auto twice = cli({"runs", "compare", "run-a", "run-a"});
    QCOMPARE(twice.code, 2);
    QVERIFY2(twice.err.contains("is named twice ('run-a')"), qPrintable(twice.err));
    const auto comma = cli({"runs", "tag", "run-a", "x,y"});
    QCOMPARE(comma.code, 2);
    QVERIFY2(comma.err.contains("tag 'x,y' has a comma"), qPrintable(comma.err));
    // A blank tag would show as nothing in the list and the workbench, a padded one as another tag.
    const auto blank = cli({"runs", "tag", "run-a", " "});
    QCOMPARE(blank.code, 2);
    QVERIFY2(blank.err.contains("a tag cannot be blank"), qPrintable(blank.err));
    const auto padded = cli({"runs", "tag", "run-a", "best "});
    QCOMPARE(padded.code, 2);
    QVERIFY2(padded.err.contains("tag 'best ' starts or ends with a space"), qPrintable(padded.err));
    const QString plain = dir_.filePath("plain-file.txt");
    QFile(plain).open(QIODevice::WriteOnly);
    const auto csv = cli({"runs", "export", "run-a", "--csv", plain});
    QCOMPARE(csv.code, 2);
    QVERIFY2(csv.err.contains("is a file; --csv names a directory"), qPrintable(csv.err));
    // A --db that does not exist, or is a directory, is not made into an empty history.
    const QString typo = dir_.filePath("histroy.sqlite");
    for (const QStringList& args : {QStringList{"runs", "list"}, QStringList{"runs", "show", "run-a"}, QStringList{"runs", "tag", "run-a", "t"}}) {
      const auto r = cli(args + QStringList{"--db", typo}, false);
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.contains("no run history at " + typo), qPrintable(r.err));
      QVERIFY(!QFile::exists(typo));
    }
    const auto directory = cli({"runs", "list", "--db", dir_.path()}, false);
    QCOMPARE(directory.code, 2);
    QVERIFY2(directory.err.contains("is a directory, not a history file"), qPrintable(directory.err));
    // The commands that write a history say the same with the same exit code (import, follow and stop
    // exited 1), launch before it asks any agent.
    const QString bundle = write_train_output(dir_, "into-a-directory", 1, 20);
    for (const QStringList& args : {QStringList{"runs", "import", bundle}, QStringList{"launch", bundle + "/spec.json"},
                                    QStringList{"runs", "follow", "run-a"}, QStringList{"runs", "stop", "run-a"}}) {
      const auto r = cli(args + QStringList{"--db", dir_.path()}, false);
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.contains(dir_.path() + " is a directory, not a history file (--db names another file)"), qPrintable(r.err));
    }
    // An empty file stays empty (runs list made a history of it), and /dev/null is no history.
    const QString empty_file = dir_.filePath("empty.sqlite");
    QVERIFY(QFile(empty_file).open(QIODevice::WriteOnly));
    for (const QStringList& args : {QStringList{"runs", "list"}, QStringList{"runs", "show", "run-a"}}) {
      const auto r = cli(args + QStringList{"--db", empty_file}, false);
      QVERIFY2(r.code == 2 && r.err.contains(empty_file + " is empty, not a run history"), qPrintable(r.err));
      QCOMPARE(QFileInfo(empty_file).size(), qint64{0});
    }
    const auto device = cli({"runs", "list", "--db", "/dev/null"}, false);
    QVERIFY2(device.code == 2 && device.err.contains("/dev/null is not a regular file, not a history"), qPrintable(device.err));
    // The default history before any run: nothing to list, and nothing created.
    QTemporaryDir empty;
    auto env = QProcessEnvironment::systemEnvironment();
    env.remove("TESSERA_DB");
    env.insert("XDG_DATA_HOME", empty.path());
    const auto fresh = cli({"runs", "list"}, false, env);
    QCOMPARE(fresh.code, 0);
    QVERIFY2(fresh.out.startsWith("no runs yet (no history at "), qPrintable(fresh.out));
    QVERIFY(!QFile::exists(empty.filePath("tessera/history.sqlite")));
    QCOMPARE(cli({"runs", "list", "--status", "sleeping"}, false, env).code, 2);  // its options are still checked
    env.insert("TESSERA_DB", typo);  // a history chosen by $TESSERA_DB must exist
    const auto chosen = cli({"runs", "list"}, false, env);
    QCOMPARE(chosen.code, 2);
    QVERIFY2(chosen.err.contains("no run history at " + typo) && chosen.err.contains("$TESSERA_DB names another file"),
             qPrintable(chosen.err));

    // An environment problem (not the user's argument) is exit code 1 with a clear message.
    const QString corrupt = dir_.filePath("corrupt.sqlite");
    QFile file(corrupt);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QByteArray(8192, 'x'));
    file.close();
    const auto bad = cli({"runs", "list", "--db", corrupt}, false);
    QCOMPARE(bad.code, 1);
    QVERIFY2(bad.err.contains("is corrupt or not a SQLite database"), qPrintable(bad.err));
  }
};

QTEST_APPLESS_MAIN(TestCliRuns)
#include "test_cli_runs.moc"
