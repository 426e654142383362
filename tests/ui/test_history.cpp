// The run list against a temporary history written through the store's Writer: the model passes
// QAbstractItemModelTester through refresh, edits and deletes; its cells show what was stored;
// the filter by text, status and tag gives the right rows; tag and note edits reach the store; a
// refused edit keeps the typed value; delete asks first and removes the run from the store.
#include <filesystem>

#include <QAbstractItemModelTester>
#include <QPlainTextEdit>
#include <QtTest/QtTest>

#include "active_window.hpp"

#include "history_fixture.hpp"
#include "history_view.hpp"
#include "run_filter_proxy.hpp"
#include "run_list_model.hpp"
#include "single_click_style.hpp"
#include "store/errors.hpp"
#include "store/history.hpp"
#include "store/sqlite.hpp"
#include "theme.hpp"

using namespace tessera;
using namespace tessera::ui;

namespace {

QStringList names(const QAbstractItemModel& model) {
  QStringList out;
  for (int r = 0; r < model.rowCount(); ++r) out << model.index(r, RunListModel::Name).data().toString();
  return out;
}

}  // namespace

class TestHistory : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString path_;
  test::WrittenRun a_, b_, c_;

 private slots:
  void init() {
    path_ = dir_.filePath(QStringLiteral("h%1.sqlite").arg(QDateTime::currentMSecsSinceEpoch()));
    store::Writer writer(path_.toStdString());
    a_ = test::writeRun(writer, "tiny-a", test::tinySpec("tiny-a", 2, 2, 0.003), {"baseline"}, store::RunStatus::done, 5.0, 20000, 10,
                        1'700'000'000'000);
    b_ = test::writeRun(writer, "tiny-b", test::tinySpec("tiny-b", 1, 4, 0.001), {"sweep", "pp4"}, store::RunStatus::done, 5.5,
                        15000, 10, 1'700'000'100'000);
    c_ = test::writeRun(writer, "llama-crash", nlohmann::ordered_json::parse(R"({"model": {"preset": "llama3-8b"},
        "parallel": {"tp": 8}, "cluster": {"gpu": "h100-sxm", "nodes": 2, "gpus_per_node": 8}})"),
                        {"sweep"}, store::RunStatus::failed, 11.0, 50000, 3, 1'700'000'200'000);
    writer.close();
  }

  void cellsShowWhatWasStored() {
    store::History history(path_.toStdString());
    RunListModel model(&history);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(names(model), (QStringList{"llama-crash", "tiny-b", "tiny-a"}));  // newest first
    const int a = model.rowOfRun(QString::fromStdString(a_.id));
    QCOMPARE(model.index(a, RunListModel::Status).data().toString(), QStringLiteral("done"));
    QCOMPARE(model.index(a, RunListModel::Layout).data().toString(), QStringLiteral("TP2·PP2·DP2"));
    QCOMPARE(model.index(model.rowOfRun(QString::fromStdString(b_.id)), RunListModel::Layout).data().toString(),
             QStringLiteral("TP1·PP4·DP2"));
    // dp derived from the cluster: 16 GPUs / TP8 = DP2.
    QCOMPARE(model.index(0, RunListModel::Layout).data().toString(), QStringLiteral("TP8·PP1·DP2"));
    QCOMPARE(model.index(0, RunListModel::Model).data().toString(), QStringLiteral("llama3-8b"));
    QCOMPARE(model.index(a, RunListModel::Model).data().toString(), QStringLiteral("tiny-gpt"));
    // Final loss: the mean over the two ranks at the last step (5.0 - 2.5 and 5.0 - 2.5 + 0.2).
    const double final_loss = (a_.loss.back()[0] + a_.loss.back()[1]) / 2;
    QCOMPARE(model.index(a, RunListModel::FinalLoss).data().toString(), QString::number(final_loss, 'f', 4));
    QCOMPARE(model.index(a, RunListModel::FinalLoss).data(RunListModel::SortRole).toDouble(), final_loss);
    double mfu = 0;
    for (const auto& step : a_.mfu) mfu += (step[0] + step[1]) / 2;
    mfu /= static_cast<double>(a_.mfu.size());
    QCOMPARE(model.index(a, RunListModel::MeanMfu).data().toString(), QStringLiteral("%1 %").arg(mfu * 100, 0, 'f', 1));
    QCOMPARE(model.index(a, RunListModel::Tags).data().toString(), QStringLiteral("baseline"));
    QCOMPARE(model.index(model.rowOfRun(QString::fromStdString(b_.id)), RunListModel::Tags).data().toString(),
             QStringLiteral("pp4, sweep"));
    QCOMPARE(model.index(0, RunListModel::Status).data(Qt::ForegroundRole).value<QColor>(), colors::warning());
    QCOMPARE(model.index(0, RunListModel::Status).data(Qt::ToolTipRole).toString(), QStringLiteral("rank 1 exited with code 1"));
    QCOMPARE(RunListModel::durationText(3'723'000), QStringLiteral("1h 02m 03s"));
    QCOMPARE(RunListModel::durationText(125'000), QStringLiteral("2m 05s"));
    QCOMPARE(model.allTags(), (QStringList{"baseline", "pp4", "sweep"}));
    // Which peak the MFU is a share of: the runtime's, said on the column's header.
    QVERIFY(model.headerData(RunListModel::MeanMfu, Qt::Horizontal, Qt::ToolTipRole).toString().contains("runtime's peak"));
  }

  void filterByTextStatusAndTag() {
    store::History history(path_.toStdString());
    RunListModel model(&history);
    RunFilterProxy proxy;
    proxy.setSourceModel(&model);
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setText(QStringLiteral("TINY"));
    QCOMPARE(names(proxy), (QStringList{"tiny-b", "tiny-a"}));
    proxy.setText(QStringLiteral("pp4"));  // layout of b and its tag
    QCOMPARE(names(proxy), (QStringList{"tiny-b"}));
    proxy.setText(QStringLiteral("tiny tp2"));  // every word must match
    QCOMPARE(names(proxy), (QStringList{"tiny-a"}));
    proxy.setText(QString::fromStdString(c_.id.substr(0, 8)));  // id prefix
    QCOMPARE(names(proxy), (QStringList{"llama-crash"}));
    proxy.setText({});
    proxy.setStatus(QStringLiteral("failed"));
    QCOMPARE(names(proxy), (QStringList{"llama-crash"}));
    proxy.setStatus(QStringLiteral("done"));
    QCOMPARE(names(proxy), (QStringList{"tiny-b", "tiny-a"}));
    proxy.setTag(QStringLiteral("sweep"));
    QCOMPARE(names(proxy), (QStringList{"tiny-b"}));
    proxy.setStatus({});
    QCOMPARE(names(proxy), (QStringList{"llama-crash", "tiny-b"}));
    proxy.setTag(QStringLiteral("nope"));
    QCOMPARE(proxy.rowCount(), 0);
  }

  void editingTagsAndNotesWritesTheStore() {
    store::History history(path_.toStdString());
    RunListModel model(&history);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const int b = model.rowOfRun(QString::fromStdString(b_.id));
    QVERIFY(model.flags(model.index(b, RunListModel::Tags)) & Qt::ItemIsEditable);
    QVERIFY(!(model.flags(model.index(b, RunListModel::Name)) & Qt::ItemIsEditable));
    QVERIFY(model.setData(model.index(b, RunListModel::Tags), QStringLiteral(" sweep, best ,, lr-1e-3 ")));
    store::History other(path_.toStdString());  // another connection sees the store, not the model
    QCOMPARE(other.run(b_.id).tags, (std::vector<std::string>{"best", "lr-1e-3", "sweep"}));
    QCOMPARE(model.index(b, RunListModel::Tags).data().toString(), QStringLiteral("best, lr-1e-3, sweep"));
    QVERIFY(model.setData(model.index(b, RunListModel::Notes), QStringLiteral("pp4 is slower\nbubble 30 %")));
    QCOMPARE(other.run(b_.id).notes, std::string("pp4 is slower\nbubble 30 %"));
    QCOMPARE(model.index(b, RunListModel::Notes).data().toString(), QStringLiteral("pp4 is slower"));
    QVERIFY(model.lastError().isEmpty());
  }

  void aRefusedEditKeepsTheTypedValue() {
    store::History history(path_.toStdString());
    RunListModel model(&history);
    QSignalSpy errors(&model, &RunListModel::errorOccurred);
    const int a = model.rowOfRun(QString::fromStdString(a_.id));
    store::History(path_.toStdString()).delete_run(a_.id);  // gone behind the model's back
    QVERIFY(!model.setData(model.index(a, RunListModel::Notes), QStringLiteral("my long analysis")));
    QCOMPARE(errors.count(), 1);
    QVERIFY2(model.lastError().contains("cannot save the notes of run tiny-a") && model.lastError().contains(QString::fromStdString(a_.id)),
             qPrintable(model.lastError()));
    QCOMPARE(model.index(a, RunListModel::Notes).data().toString(), QStringLiteral("my long analysis"));
    QVERIFY(!model.index(a, RunListModel::Notes).data(RunListModel::UnsavedRole).toString().isEmpty());
    QCOMPARE(model.index(a, RunListModel::Notes).data(Qt::ForegroundRole).value<QColor>(), colors::warning());
  }

  // The history's file deleted (or replaced) while it is open: a refresh says so, and an edit keeps
  // its typed value in red instead of going into the deleted file, where it looked saved and was lost.
  void aDeletedHistoryFileIsSaidNotWrittenTo() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("gone.sqlite").toStdString();
    std::filesystem::copy_file(path_.toStdString(), path);
    store::History history(path);
    RunListModel model(&history);
    QVERIFY(model.refresh());
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    QVERIFY(!model.refresh());
    QVERIFY2(model.lastError().contains("was deleted or replaced since it was opened"), qPrintable(model.lastError()));
    const int a = model.rowOfRun(QString::fromStdString(a_.id));
    QVERIFY(!model.setData(model.index(a, RunListModel::Notes), QStringLiteral("my long analysis")));
    QCOMPARE(model.index(a, RunListModel::Notes).data().toString(), QStringLiteral("my long analysis"));
    QCOMPARE(model.index(a, RunListModel::Notes).data(Qt::ForegroundRole).value<QColor>(), colors::warning());
    // A new file of that name is not the one opened either.
    std::filesystem::copy_file(path_.toStdString(), path);
    QVERIFY(!model.refresh());
  }

  void refreshPicksUpNewAndDeletedRuns() {
    store::History history(path_.toStdString());
    RunListModel model(&history);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    {
      store::Writer writer(path_.toStdString());
      test::writeRun(writer, "tiny-c", test::tinySpec("tiny-c", 2, 2, 0.002), {}, store::RunStatus::done, 5.0, 20000, 4,
                     1'700'000'300'000);
      writer.close();
    }
    store::History(path_.toStdString()).delete_run(b_.id);
    QVERIFY(model.refresh());
    QCOMPARE(names(model), (QStringList{"tiny-c", "llama-crash", "tiny-a"}));
    QCOMPARE(inserted.count(), 1);  // in place, not a reset: selections survive
    QCOMPARE(reset.count(), 0);
  }

  void deleteAsksFirstThenRemovesFromTheStore() {
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    QAbstractItemModelTester tester(view.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QString asked;
    bool answer = false;
    view.setConfirmation([&](const QString& question) {
      asked = question;
      return answer;
    });
    view.selectRuns({QString::fromStdString(c_.id)});
    QCOMPARE(view.selectedRunIds(), QStringList{QString::fromStdString(c_.id)});
    QVERIFY(!view.deleteSelected());  // cancelled
    QVERIFY2(asked.contains("llama-crash"), qPrintable(asked));
    QCOMPARE(history.runs().size(), size_t{3});
    answer = true;
    QVERIFY(view.deleteSelected());
    QCOMPARE(names(*view.model()), (QStringList{"tiny-b", "tiny-a"}));
    QCOMPARE(history.runs().size(), size_t{2});
    QVERIFY_THROWS_EXCEPTION(store::StoreError, history.run(c_.id));
  }

  void notesEditorKeepsLineBreaks() {
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    view.resize(1200, 500);
    view.show();
    const QModelIndex notes = view.proxy()->mapFromSource(
        view.model()->index(view.model()->rowOfRun(QString::fromStdString(a_.id)), RunListModel::Notes));
    view.table()->edit(notes);
    auto* editor = view.table()->findChild<QPlainTextEdit*>();
    QVERIFY(editor);
    editor->setPlainText(QStringLiteral("first line\nsecond line"));
    view.table()->itemDelegateForColumn(RunListModel::Notes)->setModelData(editor, view.proxy(), notes);
    QCOMPARE(history.run(a_.id).notes, std::string("first line\nsecond line"));
  }

  // Notes and tags being typed for a running run survive the list's refresh (every 3 s a running
  // run's row changes in place, and the open editor was reloaded from the history, the typing lost);
  // an editor nothing was typed into still shows what another process wrote.
  void typingIsKeptThroughARefresh() {
    test::WrittenRun live;
    {
      store::Writer writer(path_.toStdString());
      live = test::writeRun(writer, "live", test::tinySpec("live", 2, 2, 0.003), {}, store::RunStatus::running, 5.0, 20000);
    }
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    view.resize(1200, 500);
    QVERIFY(test::shownActive(view));
    const auto cell = [&](int column) {
      return view.proxy()->mapFromSource(view.model()->index(view.model()->rowOfRun(QString::fromStdString(live.id)), column));
    };
    view.table()->edit(cell(RunListModel::Notes));
    auto* notes = view.table()->findChild<QPlainTextEdit*>();
    QVERIFY(notes);
    QTest::keyClicks(notes, QStringLiteral("loss spikes at step 40"));
    view.refresh();
    QCOMPARE(notes->toPlainText(), QStringLiteral("loss spikes at step 40"));
    QTest::keyClick(notes, Qt::Key_Tab);  // Tab saves
    QTRY_COMPARE(history.run(live.id).notes, std::string("loss spikes at step 40"));

    view.table()->edit(cell(RunListModel::Tags));
    QLineEdit* tags = nullptr;
    for (auto* line : view.table()->viewport()->findChildren<QLineEdit*>())
      if (line->isVisible()) tags = line;
    QVERIFY(tags);
    store::History(path_.toStdString()).add_tag(live.id, "from-cli");  // as `tessera-cli runs tag` would meanwhile
    view.refresh();
    QCOMPARE(tags->text(), QStringLiteral("from-cli"));  // nothing typed yet: what the history holds
    tags->end(false);
    QTest::keyClicks(tags, QStringLiteral(", spikes"));
    view.refresh();
    QCOMPARE(tags->text(), QStringLiteral("from-cli, spikes"));
    // Another process tags it again while the user types: saving adds "spikes" and keeps "oom" (the
    // save took "oom" for one the user removed).
    store::History(path_.toStdString()).add_tag(live.id, "oom");
    view.refresh();
    QTest::keyClick(tags, Qt::Key_Return);
    QTRY_COMPARE(history.run(live.id).tags, (std::vector<std::string>{"from-cli", "oom", "spikes"}));
  }

  // A tags edit is what the user added and removed, over what the history holds at the save.
  void aTagsEditMergesWithTagsAddedMeanwhile() {
    QCOMPARE(RunListModel::mergedTags("a, b", "a, c", "a, b, d"), QStringLiteral("a, d, c"));  // b removed, c added, d kept
    QCOMPARE(RunListModel::mergedTags("a", "", "a, d"), QStringLiteral("d"));
    QCOMPARE(RunListModel::mergedTags("", " x ,, x", ""), QStringLiteral("x"));
  }

  // Notes another process wrote while the user typed are not overwritten unseen: the save is held,
  // the typed text kept in red with the notes now held named; an edit from there saves over them.
  void notesChangedElsewhereAreNotOverwrittenUnseen() {
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    view.resize(1200, 500);
    QVERIFY(test::shownActive(view));
    const auto cell = [&] {
      return view.proxy()->mapFromSource(view.model()->index(view.model()->rowOfRun(QString::fromStdString(a_.id)), RunListModel::Notes));
    };
    view.table()->edit(cell());
    auto* notes = view.table()->findChild<QPlainTextEdit*>();
    QVERIFY(notes);
    QTest::keyClicks(notes, QStringLiteral("mine"));
    store::History(path_.toStdString()).set_notes(a_.id, "theirs");  // as `tessera-cli runs note` would meanwhile
    QTest::keyClick(notes, Qt::Key_Tab);
    QTRY_VERIFY(!view.table()->findChild<QPlainTextEdit*>() || !view.table()->findChild<QPlainTextEdit*>()->isVisible());
    QCOMPARE(history.run(a_.id).notes, std::string("theirs"));
    QCOMPARE(cell().data().toString(), QStringLiteral("mine"));
    QVERIFY2(cell().data(RunListModel::UnsavedRole).toString().contains(QStringLiteral("changed elsewhere while you typed (now: \"theirs\")")),
             qPrintable(cell().data(RunListModel::UnsavedRole).toString()));
    // Edited again (the editor shows "mine"), the save goes over "theirs".
    QTRY_VERIFY(!view.table()->findChild<QPlainTextEdit*>());
    view.table()->edit(cell());
    notes = view.table()->findChild<QPlainTextEdit*>();
    QVERIFY(notes);
    QCOMPARE(notes->toPlainText(), QStringLiteral("mine"));
    QTest::keyClick(notes, Qt::Key_Tab);
    QTRY_COMPARE(history.run(a_.id).notes, std::string("mine"));
  }

  // A tags edit refused (here: the history's file moved away) and made again removes what it removed:
  // the retry took the refused text, shown in red, for what the history held, and kept the tag.
  void aRetriedTagsEditRemovesWhatItRemoved() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("moved.sqlite").toStdString();
    std::filesystem::copy_file(path_.toStdString(), path);
    store::History(path).add_tag(a_.id, "second");  // a_ holds baseline, second
    store::History history(path);
    HistoryView view(&history);
    view.setPollInterval(0);
    view.resize(1200, 500);
    QVERIFY(test::shownActive(view));
    const auto cell = [&] {
      return view.proxy()->mapFromSource(view.model()->index(view.model()->rowOfRun(QString::fromStdString(a_.id)), RunListModel::Tags));
    };
    const auto typeTags = [&](const QString& text) {
      view.table()->edit(cell());
      QLineEdit* tags = nullptr;
      for (auto* line : view.table()->viewport()->findChildren<QLineEdit*>())
        if (line->isVisible()) tags = line;
      if (!tags) return false;
      tags->selectAll();
      QTest::keyClicks(tags, text);
      QTest::keyClick(tags, Qt::Key_Return);
      return QTest::qWaitFor([&] { return !tags->isVisible(); });
    };
    std::filesystem::rename(path, path + ".away");
    QVERIFY(typeTags(QStringLiteral("baseline")));  // refused: the file is not there
    QCOMPARE(cell().data().toString(), QStringLiteral("baseline"));
    QVERIFY(!cell().data(RunListModel::UnsavedRole).toString().isEmpty());
    std::filesystem::rename(path + ".away", path);
    QVERIFY(typeTags(QStringLiteral("baseline")));
    QCOMPARE(history.run(a_.id).tags, std::vector<std::string>{"baseline"});
  }

  void tagsColumnShowsItsTagsWhole() {
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    view.resize(1200, 500);
    view.show();
    const int row = view.model()->rowOfRun(QString::fromStdString(a_.id));
    QVERIFY(view.model()->setData(view.model()->index(row, RunListModel::Tags), QStringLiteral("baseline, tp-sweep, lr-3e-4")));
    const QString shown = view.model()->index(row, RunListModel::Tags).data().toString();
    QCOMPARE(shown, QStringLiteral("baseline, lr-3e-4, tp-sweep"));
    QVERIFY2(view.table()->columnWidth(RunListModel::Tags) > view.table()->fontMetrics().horizontalAdvance(shown),
             qPrintable(QString::number(view.table()->columnWidth(RunListModel::Tags))));
  }

  // The notes column takes the table's width that the others leave, also when the columns are fitted
  // to their contents once shown (as a screenshot does): it ended at its contents, the right part empty.
  void theNotesColumnFillsTheTable() {
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    view.resize(1600, 500);
    view.show();
    QCoreApplication::processEvents();
    view.fitColumns();
    QCoreApplication::processEvents();
    const QHeaderView* header = view.table()->horizontalHeader();
    QCOMPARE(header->sectionPosition(RunListModel::Notes) + header->sectionSize(RunListModel::Notes), view.table()->viewport()->width());
    QVERIFY(header->sectionSize(RunListModel::Notes) > 200);
  }

  // At 800 px the tags are in view beside a name of 26 characters (each column kept room for a sort
  // indicator that only the sorted one shows, and Tags began past the window's right edge).
  void aNarrowWindowShowsTheTags() {
    {
      store::Writer writer(path_.toStdString());
      test::writeRun(writer, "tiny-3d-tp2-pp1-dp4-lr1e-3", test::tinySpec("tiny-3d-tp2-pp1-dp4-lr1e-3", 2, 1, 0.001), {"layout-sweep"},
                     store::RunStatus::done, 5.0, 20000, 10, 1'700'000'300'000);
    }
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    view.resize(800, 500);
    view.show();
    QCoreApplication::processEvents();
    const QHeaderView* header = view.table()->horizontalHeader();
    const int tags_end = header->sectionViewportPosition(RunListModel::Tags) + view.table()->fontMetrics().horizontalAdvance("layout-sweep");
    QVERIFY2(tags_end <= view.table()->viewport()->width(),
             qPrintable(QString("the tags end at %1 px of %2").arg(tags_end).arg(view.table()->viewport()->width())));
  }

  void aLongNameEndsInAnEllipsisNotPastTheWindow() {
    // A 300-character name fits in about 48 characters, whole in its tooltip; every other column
    // stays in a 1600-pixel window.
    const std::string long_name(300, 'L');
    test::WrittenRun long_run;
    {
      store::Writer writer(path_.toStdString());
      long_run = test::writeRun(writer, long_name, test::tinySpec(long_name, 2, 2, 0.003), {}, store::RunStatus::done, 5.0, 20000, 10,
                     1'700'000'300'000);
    }
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    view.resize(1600, 500);
    view.show();
    const QFontMetrics metrics = view.table()->fontMetrics();
    QVERIFY2(view.table()->columnWidth(RunListModel::Name) <= metrics.averageCharWidth() * 48,
             qPrintable(QString::number(view.table()->columnWidth(RunListModel::Name))));
    int total = 0;
    for (int column = 0; column < RunListModel::ColumnCount; ++column) total += view.table()->columnWidth(column);
    QVERIFY2(total < 1600, qPrintable(QString::number(total)));
    const int row = view.model()->rowOfRun(QString::fromStdString(long_run.id));
    QVERIFY(view.model()->index(row, RunListModel::Name).data(Qt::ToolTipRole).toString().startsWith(QString::fromStdString(long_name)));
  }

  // A name with a newline and an escape sequence shows on one line, control characters as spaces
  // (the row grew to two lines and ESC drew as a box); the tooltip and the editor keep it as stored.
  // The history refuses such a name now; one an older version stored shows on one line.
  void aNameWithControlCharactersShowsOnOneLine() {
    const std::string name = "two\nlines\x1b[1m";
    {
      store::Writer writer(path_.toStdString());
      test::writeRun(writer, "control", test::tinySpec("control", 2, 2, 0.003), {}, store::RunStatus::done, 5.0, 20000, 10,
                     1'700'000'300'000);
    }
    {
      store::Connection connection(path_.toStdString(), false);
      store::Statement(connection, "UPDATE runs SET name = ? WHERE name = 'control'").bind_text(1, name).run("renaming the run");
    }
    store::History history(path_.toStdString());
    RunListModel model(&history);
    QCOMPARE(model.index(0, RunListModel::Name).data().toString(), QStringLiteral("two lines [1m"));
    QCOMPARE(model.index(0, RunListModel::Name).data(Qt::EditRole).toString(), QString::fromStdString(name));
    QVERIFY(model.index(0, RunListModel::Name).data(Qt::ToolTipRole).toString().startsWith(QString::fromStdString(name)));
  }

  // The keyboard reaches every run action: Enter on a run opens it (only a double-click did), Tab
  // leaves the table for the buttons (it walked the cells for ever), and Alt+M compares.
  void theKeyboardOpensAndComparesRuns() {
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    view.resize(1000, 400);
    QVERIFY(test::shownActive(view));
    QSignalSpy compare(&view, &HistoryView::compareRequested);
    QSignalSpy open(&view, &HistoryView::openRunRequested);
    QTableView* table = view.table();
    table->setFocus();
    view.selectRuns({QString::fromStdString(b_.id)});
    table->setCurrentIndex(table->model()->index(table->selectionModel()->selectedRows().front().row(), RunListModel::Status));
    QTest::keyClick(table, Qt::Key_Return);
    QCOMPARE(open.count(), 1);
    QCOMPARE(open.front().front().toString(), QString::fromStdString(b_.id));
    QTest::keyClick(table, Qt::Key_Tab);
    QVERIFY2(QApplication::focusWidget() != table, "Tab stayed in the table");
    view.selectRuns({QString::fromStdString(a_.id), QString::fromStdString(b_.id)});
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_M, Qt::AltModifier);
    QTRY_COMPARE(compare.count(), 1);  // a mnemonic animates the button's click
  }

  // Under a style that activates items on one click (KDE's default), a click or a Ctrl+click selects
  // a run and opens nothing (the dashboard opened); a double-click on a cell that is not editable
  // opens it.
  void aSingleClickSelectsWhateverTheStyle() {
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    view.resize(1000, 400);
    test::SingleClickStyle style;
    view.table()->setStyle(&style);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy open(&view, &HistoryView::openRunRequested);
    QTableView* table = view.table();
    const QPoint first = table->visualRect(table->model()->index(0, RunListModel::Status)).center();
    const QPoint second = table->visualRect(table->model()->index(1, RunListModel::Status)).center();
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, first);
    QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::ControlModifier, second);
    QCOMPARE(open.count(), 0);
    QCOMPARE(table->selectionModel()->selectedRows().size(), qsizetype{2});
    // A double-click as a window system sends it: press, release, double-click, release.
    for (const QEvent::Type type : {QEvent::MouseButtonPress, QEvent::MouseButtonRelease, QEvent::MouseButtonDblClick, QEvent::MouseButtonRelease}) {
      const bool down = type != QEvent::MouseButtonRelease;
      QMouseEvent event(type, first, table->viewport()->mapToGlobal(first), Qt::LeftButton, down ? Qt::LeftButton : Qt::NoButton, Qt::NoModifier);
      QApplication::sendEvent(table->viewport(), &event);
    }
    QCOMPARE(open.count(), 1);
    QCOMPARE(open.front().front().toString(), table->model()->index(0, RunListModel::Name).data(RunListModel::RunIdRole).toString());
  }

  void compareAndOpenAreSignalled() {
    store::History history(path_.toStdString());
    HistoryView view(&history);
    view.setPollInterval(0);
    QSignalSpy compare(&view, &HistoryView::compareRequested);
    QSignalSpy open(&view, &HistoryView::openRunRequested);
    view.selectRuns({QString::fromStdString(a_.id), QString::fromStdString(b_.id)});
    for (auto* button : view.findChildren<QPushButton*>()) {
      if (button->text().remove(QLatin1Char('&')) == QLatin1String("Compare")) button->click();
      if (button->text().remove(QLatin1Char('&')) == QLatin1String("Open")) QVERIFY(!button->isEnabled());
    }
    QCOMPARE(compare.count(), 1);
    QCOMPARE(compare.front().front().toStringList(), (QStringList{QString::fromStdString(b_.id), QString::fromStdString(a_.id)}));
    view.selectRuns({QString::fromStdString(a_.id)});
    for (auto* button : view.findChildren<QPushButton*>())
      if (button->text().remove(QLatin1Char('&')) == QLatin1String("Open")) button->click();
    QCOMPARE(open.count(), 1);
    QCOMPARE(open.front().front().toString(), QString::fromStdString(a_.id));
  }
};

QTEST_MAIN(TestHistory)
#include "test_history.moc"
