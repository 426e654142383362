// Unit tests of the wire protocol's checks, the JSON scanner (against nlohmann::json::accept), the
// workbench's reading of data frames (against the DOM) and HistorySink's handling of records, the key
// files, the loopback rule, the agent's option checks, its outbox (memory window, spill to disk,
// acknowledgement) and the split of ranks into node shares.
#include <algorithm>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>

#include "agent/agent.hpp"
#include "agent/outbox.hpp"
#include "launch/history_sink.hpp"
#include "launch/run_session.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/json_scan.hpp"
#include "protocol/keys.hpp"
#include "protocol/wire.hpp"
#include "store/history.hpp"

using namespace tessera;
using protocol::ErrorCode;

namespace {

ErrorCode code_of(std::string_view frame, protocol::Side side = protocol::Side::agent) {
  try {
    protocol::parse_frame(frame, side);
  } catch (const protocol::ProtocolError& e) {
    return e.code();
  }
  throw std::logic_error("accepted");
}

// Writes the tokens scan_json() reports, one word each.
class TokenLog : public protocol::JsonHandler {
 public:
  void begin_object() override { out += "{ "; }
  void key(std::string_view raw, bool escaped) override { out += "key:" + text(raw, escaped) + " "; }
  void end_object() override { out += "} "; }
  void begin_array() override { out += "[ "; }
  void end_array() override { out += "] "; }
  void string(std::string_view raw, bool escaped) override { out += "str:" + text(raw, escaped) + " "; }
  void number(std::string_view text, bool integer) override { out += (integer ? "int:" : "num:") + std::string(text) + " "; }
  void boolean(bool value) override { out += value ? "true " : "false "; }
  void null() override { out += "null "; }
  std::string out;

 private:
  static std::string text(std::string_view raw, bool escaped) { return escaped ? protocol::unescape(raw) : std::string(raw); }
};

// One data frame through a HistorySink into a new run of history `db`, as a follower stores it: the
// run's id, what the sink counted and the step records it handed on.
struct SunkFrame {
  std::string run_id;
  int64_t durable_seq = 0, points = 0, skipped = 0;
  std::vector<nlohmann::json> steps;
};
SunkFrame sink_frame(const std::string& db, const std::string& run_name, const std::string& frame) {
  SunkFrame out;
  store::Writer writer(db);
  store::RunRecord record;
  record.name = run_name;
  const auto run = writer.create_run(record);
  out.run_id = run.id;
  launch::HistorySink sink(writer, run);
  sink.on_step = [&](const nlohmann::json& step) { out.steps.push_back(step); };
  sink.records(0, 1, protocol::get_records(protocol::read_frame(frame), 100));
  sink.sync(true);
  out.durable_seq = sink.durable_seq(0);
  out.points = sink.points();
  out.skipped = sink.skipped();
  writer.close();
  return out;
}

}  // namespace

class TestWire : public QObject {
  Q_OBJECT
 private slots:
  void framesAreCheckedBeforeUse() {
    QCOMPARE(protocol::parse_frame(R"({"v":1,"type":"hello"})", protocol::Side::agent)["type"], "hello");
    QCOMPARE(code_of(""), ErrorCode::bad_json);
    QCOMPARE(code_of("[1,2]"), ErrorCode::bad_json);
    QCOMPARE(code_of("{\"v\":1,"), ErrorCode::bad_json);
    // nlohmann's parser stops at a NUL byte: what follows one was never looked at.
    QCOMPARE(code_of(std::string("{\"v\":1,\"type\":\"hello\"}\0junk", 27)), ErrorCode::bad_json);
    QCOMPARE(code_of(std::string("{\"v\":1,\"type\":\"hello\"}\0", 23), protocol::Side::workbench), ErrorCode::bad_json);
    QCOMPARE(code_of(R"({"type":"hello"})"), ErrorCode::bad_version);
    QCOMPARE(code_of(R"({"v":2,"type":"hello"})"), ErrorCode::bad_version);
    QCOMPARE(code_of(R"({"v":"1","type":"hello"})"), ErrorCode::bad_version);
    QCOMPARE(code_of(R"({"v":1,"type":"format_disk"})"), ErrorCode::unknown_type);
    QCOMPARE(code_of(R"({"v":1,"type":7})"), ErrorCode::unknown_type);
    // A key given twice, at the top or inside the spec, is refused by the agent, which would act on one
    // of them; the workbench reads the last, as read_frame() does.
    try {
      protocol::parse_frame(R"({"v":1,"type":"stop","run":"a","reason":"x","run":"b"})", protocol::Side::agent);
      QFAIL("accepted a frame giving run twice");
    } catch (const protocol::ProtocolError& e) {
      QCOMPARE(e.code(), ErrorCode::bad_json);
      QCOMPARE(std::string(e.what()), std::string("the frame gives \"run\" twice (which one is meant?)"));
    }
    QCOMPARE(code_of(R"({"v":1,"type":"launch","spec":{"parallel":{"tp":2,"tp":1}}})"), ErrorCode::bad_json);
    // Text that is no JSON says where it broke (it said only "frame is not a JSON object"), by each reader.
    const std::string junk_after = "{\"v\":1,\"type\":\"hello\"} x";
    const std::string bad_utf8 = std::string("{\"v\":1,\"type\":\"hello\",\"x\":\"\xFF") + "\"}";
    for (const auto& [bytes, expected] : {std::pair{junk_after, std::string("column 24: syntax error while parsing value - invalid literal; expected end of input")},
                                          std::pair{bad_utf8, std::string("ill-formed UTF-8 byte")}}) {
      for (int reader = 0; reader < 3; ++reader) {
        try {
          if (reader == 0) protocol::parse_frame(bytes, protocol::Side::agent);
          else if (reader == 1) protocol::parse_frame(bytes, protocol::Side::workbench);
          else protocol::read_frame(bytes);
          QFAIL("accepted a frame that is no JSON");
        } catch (const protocol::ProtocolError& e) {
          QCOMPARE(e.code(), ErrorCode::bad_json);
          const std::string what = e.what();
          QVERIFY2(what.rfind("frame is not valid JSON: parse error at line 1, ", 0) == 0 && what.find(expected) != std::string::npos &&
                       what.find("last read") == std::string::npos &&
                       std::none_of(what.begin(), what.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }),
                   what.c_str());
        }
      }
    }
    QCOMPARE(protocol::parse_frame(R"({"v":1,"type":"data","seq":1,"seq":2})", protocol::Side::workbench)["seq"], 2);
    QCOMPARE(protocol::parse_frame(R"({"v":1,"type":"hello","a":{"k":1},"b":{"k":2}})", protocol::Side::agent)["b"]["k"], 2);
    // A workbench-bound type sent to an agent is unknown there.
    QCOMPARE(code_of(R"({"v":1,"type":"data"})"), ErrorCode::unknown_type);
    QCOMPARE(protocol::parse_frame(R"({"v":1,"type":"data"})", protocol::Side::workbench)["type"], "data");
    // Size limits per type: a control message is small.
    const std::string padded = nlohmann::json{{"v", 1}, {"type", "ack"}, {"pad", std::string(5000, 'x')}}.dump();
    QCOMPARE(code_of(padded), ErrorCode::too_large);
    QCOMPARE(code_of(std::string((2 << 20), '{')), ErrorCode::too_large);  // never parsed
    // A known type's envelope refused: the error names the message it refuses ("" was sent).
    const auto refused_type = [](const std::string& frame) {
      try {
        protocol::parse_frame(frame, protocol::Side::agent);
      } catch (const protocol::ProtocolError& e) {
        return e.in_reply_to();
      }
      return std::string("(accepted)");
    };
    QCOMPARE(refused_type(padded), std::string("ack"));
    QCOMPARE(refused_type(R"({"v":2,"type":"hello"})"), std::string("hello"));
    QCOMPARE(refused_type(R"({"v":2,"type":"format_disk"})"), std::string());
    QCOMPARE(refused_type(std::string((2 << 20), '{')), std::string());
    // Nested deeper than a dump of it could recurse (it used to end the agent with SIGSEGV): refused.
    const std::string deep = "{\"v\":1,\"type\":\"launch\",\"spec\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    QCOMPARE(code_of(deep), ErrorCode::bad_json);
    QCOMPARE(code_of(deep, protocol::Side::workbench), ErrorCode::bad_json);
    try {
      protocol::read_frame(deep);
      QFAIL("read");
    } catch (const protocol::ProtocolError& e) {
      QVERIFY2(std::string(e.what()).find("the frame nests arrays and objects more than 64 deep") != std::string::npos, e.what());
    }
  }

  void jsonScannerAcceptsWhatNlohmannAccepts() {
    const std::vector<std::string> cases{
        "{}", "[]", " {\"a\" : [1, 2.5, -0, 1e5, 1E-5, 0.5e+3, true, false, null, \"\"]} \n", "1", "\"s\"",
        "", " ", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "[,1]", "{a:1}", "{'a':1}", "[01]", "[-]", "[1.]",
        "[.5]", "[1e]", "[1e+]", "[+1]", "[-01]", "[1.5e3.2]", "[tru]", "[nul]", "[True]", "{} {}", "{}x", "[1 2]",
        "[\"\\x\"]", "[\"\\u12\"]", "[\"\\u00e9\\u20AC\"]", "[\"\\ud83d\\ude00\"]", "[\"\\ud83d\"]", "[\"\\ud83d\\u0041\"]",
        "[\"\\ude00\"]", "[\"a\tb\"]", std::string("[\"a\0b\"]", 7), "[\"\x7f\"]", "[\"\xc3\xa9\"]", "[\"\xc3\"]",
        "[\"\xc0\x80\"]", "[\"\xe0\x80\x80\"]", "[\"\xed\xa0\x80\"]", "[\"\xef\xbf\xbf\"]", "[\"\xf0\x9f\x98\x80\"]",
        "[\"\xf4\x90\x80\x80\"]", "[\"\xf5\x80\x80\x80\"]", "[\"\xff\"]", "[1e308]", "[1e309]", "[-1e400]", "[1e-400]",
        "[" + std::string(308, '9') + "]", "[" + std::string(309, '9') + "]", "[18446744073709551616]", "/* c */ {}",
        "[[[[[[[[[[]]]]]]]]]]", std::string(5000, '[') + std::string(5000, ']'), std::string(5000, '[') + std::string(4999, ']')};
    for (const auto& text : cases)
      QVERIFY2(protocol::is_json(text) == nlohmann::json::accept(text), text.substr(0, 80).c_str());

    // Random edits of real records: both answers agree on every one, and both kinds occur often.
    const std::vector<std::string> seeds{
        R"({"type":"metric","name":"bench_3","rank":2,"step":4003,"value":3,"emit_s":1764459000.123456})",
        "{\"type\":\"log\",\"rank\":0,\"stream\":\"stderr\",\"time_s\":1.5e9,\"line\":\"caf\\u00e9 \\\"q\\\" \\\\ \\ud83d\\ude00 ok\"}",
        R"({"type":"rank_exit","rank":1,"last_lines":["a","b"],"nested":{"x":[null,true,false,-0.0,1E+2]}})"};
    const std::string alphabet = "{}[],:\"\\/ 0123456789-+.eEtrufalsn\x01\x1f\x7f\xc3\xa9\xed\xa0\x80\xf4\x90\xbf";
    std::mt19937 random(20261129);
    int accepted = 0, refused = 0;
    for (int i = 0; i < 30000; ++i) {
      std::string text = seeds[random() % seeds.size()];
      for (int edits = 1 + static_cast<int>(random() % 3); edits > 0; --edits) {
        const size_t at = random() % (text.size() + 1);
        const char c = alphabet[random() % alphabet.size()];
        switch (random() % 3) {
          case 0: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c); break;
          case 1: if (at < text.size()) text[at] = c; break;
          default: if (at < text.size()) text.erase(at, 1);
        }
      }
      const bool expected = nlohmann::json::accept(text);
      QVERIFY2(protocol::is_json(text) == expected, text.c_str());
      ++(expected ? accepted : refused);
    }
    QVERIFY2(accepted > 1000 && refused > 1000, (std::to_string(accepted) + " accepted").c_str());
  }

  void jsonScannerReportsTokensInOrder() {
    TokenLog log;
    QVERIFY(protocol::scan_json("{\"a\":[1,-2.5e3,\"x\\n\\u00e9\"],\"b\\\"\":{},\"c\":true,\"d\":null,\"e\":false}", log));
    QCOMPARE(log.out, std::string("{ key:a [ int:1 num:-2.5e3 str:x\n\xc3\xa9 ] key:b\" { } key:c true key:d null key:e false } "));
    for (const std::string raw : {"plain", "tab\\tquote\\\"slash\\/back\\\\", "\\ud83d\\ude00 \\u20ac \\u0041", "\\b\\f\\r"}) {
      TokenLog one;
      QVERIFY(protocol::scan_json("\"" + raw + "\"", one));
      QCOMPARE(one.out, "str:" + nlohmann::json::parse("\"" + raw + "\"").get<std::string>() + " ");
    }
    TokenLog broken;
    QVERIFY(!protocol::scan_json(R"({"a":[1,2})", broken));
  }

  void dataFramesAreReadAsTheirDomHasThem() {
    const std::string text =
        "{\"v\":1,\"type\":\"data\",\"run\":\"0123456789abcdef0123456789abcdef\",\"seq\":7,\"records\":["
        "{\"type\":\"metric\",\"name\":\"lo\\u00e9ss\",\"rank\":0,\"step\":3,\"value\":2.5,\"emit_s\":1.0},"
        "{\"type\":\"rank_exit\",\"rank\":1,\"last_lines\":[\"a\",\"b\\n\"],\"nested\":{\"x\":[1,{\"y\":null}]},\"rank\":2},"
        "{\"type\":\"step\",\"step\":18446744073709551615,\"loss\":-0,\"n\":-9223372036854775808,"
        "\"big\":-9223372036854775809,\"tiny\":1e-400,\"f\":-0.0,\"ok\":true},"
        "7,[1,[2]],\"s\",{}],\"extra\":{\"records\":[1]}}";
    const auto dom = nlohmann::json::parse(text);
    const auto frame = protocol::read_frame(text);
    auto envelope = dom;
    envelope.erase("records");
    QCOMPARE(frame.message, envelope);
    const auto& records = protocol::get_records(frame, 100);
    QCOMPARE(records.size(), dom["records"].size());
    for (size_t i = 0; i < records.size(); ++i) {
      const auto& expected = dom["records"][i];
      QCOMPARE(records[i].object, expected.is_object());
      QCOMPARE(records[i].to_json(), expected.is_object() ? expected : nlohmann::json());
      for (const auto& field : records[i].fields) QCOMPARE(field.value.type(), expected[field.key].type());
    }
    QCOMPARE(records[0].type(), std::string_view("metric"));
    QCOMPARE(records[0].find("name")->get<std::string>(), std::string("lo\xc3\xa9ss"));
    QCOMPARE(records[1].find("rank")->get<int64_t>(), int64_t{2});  // a repeated key: the last value
    QVERIFY(records[1].find("absent") == nullptr);
    QVERIFY(records[2].find("step")->is_number_unsigned());
    QVERIFY(records[2].find("n")->is_number_integer() && !records[2].find("n")->is_number_unsigned());
    QVERIFY(records[2].find("big")->is_number_float());
    QCOMPARE(records[3].type(), std::string_view());

    // Wrong frames fail as parse_frame fails them; a frame without a records array names the field.
    const auto code = [](std::string_view bytes) {
      try {
        protocol::read_frame(bytes);
      } catch (const protocol::ProtocolError& e) {
        return e.code();
      }
      throw std::logic_error("accepted");
    };
    for (const std::string bad : {"", "[1]", "{\"v\":1,", "{\"v\":2,\"type\":\"data\"}", "{\"v\":1,\"type\":\"hello\"}",
                                  "{\"v\":1,\"type\":\"data\",\"records\":[1,]}", "{\"v\":1,\"type\":\"data\"} x"})
      QCOMPARE(code(bad), code_of(bad, protocol::Side::workbench));
    QCOMPARE(code(std::string(17 << 20, '{')), ErrorCode::too_large);
    for (const std::string no_array : {"{\"v\":1,\"type\":\"data\",\"records\":{}}", "{\"v\":1,\"type\":\"data\"}",
                                       "{\"v\":1,\"type\":\"data\",\"records\":[],\"records\":5}"}) {
      try {
        protocol::get_records(protocol::read_frame(no_array), 100);
        QFAIL(no_array.c_str());
      } catch (const protocol::ProtocolError& e) {
        QCOMPARE(e.code(), ErrorCode::bad_field);
        QCOMPARE(std::string(e.what()), std::string("records must be an array"));
      }
    }
    QVERIFY_THROWS_EXCEPTION(protocol::ProtocolError, protocol::get_records(frame, 3));
    // Records first, and a repeated "records": the last array counts, as in the DOM.
    const auto twice = protocol::read_frame(
        "{\"records\":[{\"a\":1},{\"b\":2}],\"v\":1,\"records\":[{\"c\":3},5,{\"d\":[4],\"e\":5}],\"type\":\"data\"}");
    const auto& last = protocol::get_records(twice, 100);
    QCOMPARE(last.size(), size_t{3});
    QCOMPARE(last[0].to_json(), nlohmann::json({{"c", 3}}));
    QVERIFY(!last[1].object && last[1].fields.empty());
    QCOMPARE(last[2].to_json(), nlohmann::json({{"d", {4}}, {"e", 5}}));
    QCOMPARE(twice.fields.size(), size_t{3});

    // Random edits of the frame: read_frame accepts exactly what parse_frame accepts, and reads the same.
    std::mt19937 random(30112026);
    const std::string alphabet = "{}[],:\"\\ 0123456789-.eE";
    int read = 0;
    for (int i = 0; i < 5000; ++i) {
      std::string edited = text;
      const size_t at = random() % edited.size();
      edited[at] = alphabet[random() % alphabet.size()];
      std::optional<nlohmann::json> expected;
      try {
        expected = protocol::parse_frame(edited, protocol::Side::workbench);
      } catch (const protocol::ProtocolError&) {
      }
      std::optional<protocol::Frame> got;
      try {
        got = protocol::read_frame(edited);
      } catch (const protocol::ProtocolError&) {
      }
      QVERIFY2(expected.has_value() == got.has_value(), edited.c_str());
      if (!expected) continue;
      ++read;
      const auto* array = expected->contains("records") && (*expected)["records"].is_array() ? &(*expected)["records"] : nullptr;
      QVERIFY2(got->records.has_value() == (array != nullptr), edited.c_str());
      if (array) {
        nlohmann::json records = nlohmann::json::array();
        for (const auto& r : *got->records) records.push_back(r.object ? r.to_json() : (*array)[records.size()]);
        QVERIFY2(records == *array, edited.c_str());
        expected->erase("records");
      }
      QVERIFY2(got->message == *expected, edited.c_str());
    }
    QVERIFY(read > 1000);
  }

  void historySinkStoresGoodRecordsAndSkipsMalformedOnes() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("history.sqlite").toStdString();
    const std::string frame =
        "{\"v\":1,\"type\":\"data\",\"run\":\"0123456789abcdef0123456789abcdef\",\"seq\":1,\"records\":["
        "{\"type\":\"step\",\"step\":1,\"rank\":0,\"wall_time_s\":0.5,\"loss\":2.0,\"loss\":3.0,\"lr\":1e-3,\"note\":\"x\"},"
        "{\"type\":\"metric\",\"name\":\"bench\",\"rank\":1,\"step\":4,\"value\":7,\"wall_time_s\":2.0},"
        "{\"type\":\"step\",\"step\":2,\"rank\":0,\"wall_time_s\":-1,\"loss\":2.5},"
        "{\"type\":\"timeline\",\"step\":1,\"rank\":0,\"stage\":1,\"op\":\"F\",\"microbatch\":2,\"start_s\":0.1,\"end_s\":0.2},"
        "{\"type\":\"log\",\"rank\":1,\"stream\":\"stderr\",\"time_s\":5.0,\"line\":\"hello\"},"
        "{\"type\":\"rank_exit\",\"rank\":1,\"description\":\"exited with code 1\",\"time_s\":6.0},"
        "{\"type\":\"run_end\",\"state\":\"done\"},"
        "{\"type\":\"artifact\",\"kind\":\"checkpoint\",\"path\":\"/w/c/step-1\",\"step\":1,\"rank\":0,\"size_bytes\":99,\"created_ms\":1700000000000},"
        "{\"type\":\"artifact\",\"kind\":\"checkpoint\",\"path\":\"\",\"step\":1},"
        "{\"type\":\"metric\",\"name\":\"\",\"rank\":1,\"step\":5,\"value\":1},"
        "{\"type\":\"metric\",\"name\":\"bench\",\"rank\":-1,\"step\":5,\"value\":1},"
        "{\"type\":\"metric\",\"name\":\"bench\",\"rank\":1,\"step\":5,\"value\":\"1\"},"
        "{\"type\":\"step\",\"step\":1.5,\"rank\":0,\"loss\":1},"
        "{\"type\":\"timeline\",\"step\":2,\"rank\":0,\"stage\":\"one\",\"op\":\"F\"},"
        "{\"type\":\"log\",\"rank\":0},"
        "{\"type\":\"nonsense\"},{\"type\":7},[1],{}]}";
    const SunkFrame sunk = sink_frame(db, "sink", frame);
    const std::string& run_id = sunk.run_id;
    QCOMPARE(sunk.durable_seq, int64_t{1});
    QCOMPARE(sunk.points, int64_t{4});
    QCOMPARE(sunk.skipped, int64_t{11});
    QCOMPARE(sunk.steps.size(), size_t{2});
    QCOMPARE(sunk.steps[0]["loss"], nlohmann::json(3.0));
    store::History history(db);
    const auto loss = history.points(run_id, "loss", 0);
    QCOMPARE(loss.size(), size_t{2});
    QCOMPARE(loss[0].value, 3.0);
    // A wall time the store refuses (negative) keeps the step's metrics, at the rank's last good time.
    QCOMPARE(loss[1].value, 2.5);
    QCOMPARE(loss[1].wall_time_s, 0.5);
    QCOMPARE(history.points(run_id, "lr", 0).size(), size_t{1});
    const auto bench = history.points(run_id, "bench", 1);
    QCOMPARE(bench.size(), size_t{1});
    QCOMPARE(bench[0].step, int64_t{4});
    QCOMPARE(bench[0].value, 7.0);
    const auto timeline = history.timeline(run_id);
    QCOMPARE(timeline.size(), size_t{1});
    QCOMPARE(timeline[0], (store::TimelineEvent{1, 0, 1, "F", 2, 0, 0.1, 0.2}));
    const auto logs = history.logs(run_id);
    QCOMPARE(logs.size(), size_t{2});
    QCOMPARE(logs[0], (store::LogLine{1, "stderr", 5.0, "hello"}));
    QCOMPARE(logs[1], (store::LogLine{1, "stderr", 6.0, "tessera-agent: rank 1 exited with code 1"}));
    QCOMPARE(history.artifacts(run_id), (std::vector<store::Artifact>{{"checkpoint", "/w/c/step-1", 1, 99, 1'700'000'000'000}}));
    QCOMPARE(history.stream_positions(run_id).size(), size_t{1});
    // A follower that attaches again takes up each rank's clock from the history: rank 0's loss at
    // 0.5 s, rank 1's bench at 2.0 s; its first glitched wall time is then rank 1's, not 0 (1970).
    QCOMPARE(history.last_wall_times(run_id), (std::map<int64_t, double>{{0, 0.5}, {1, 2.0}}));
    {
      store::Writer writer(db);
      launch::HistorySink sink(writer, writer.open_run(run_id), history.stream_positions(run_id), history.last_wall_times(run_id));
      sink.records(0, 2, protocol::get_records(protocol::read_frame(
                             "{\"v\":1,\"type\":\"data\",\"run\":\"" + run_id + "\",\"seq\":2,\"records\":["
                             "{\"type\":\"step\",\"step\":6,\"rank\":1,\"wall_time_s\":1e300,\"loss\":1.5}]}"),
                         100));
      sink.sync(true);
      writer.close();
    }
    const auto resumed = store::History(db).points(run_id, "loss", 1);
    QCOMPARE(resumed.size(), size_t{1});
    QCOMPARE(resumed[0].wall_time_s, 2.0);
  }

  // A diverged run (tessera-train writes a NaN loss as null) is stored as diverged when followed live,
  // as runs import stores it: null and "nan"/"inf" are points, every step's metrics are kept, the
  // final loss is NaN, nothing is counted as malformed.
  // Two runs followed into one writer (the workbench): one run's commits do not make the other's frames
  // durable; a frame is acknowledged only once its own stream position is committed.
  void framesOfTwoRunsInOneWriterAreDurableEachOnItsOwnCommit() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("history.sqlite").toStdString();
    store::WriterOptions options;
    options.flush_interval = std::chrono::hours(1);  // nothing commits but at flush()
    store::Writer writer(db, options);
    store::RunRecord first, second;
    first.name = "first";
    second.name = "second";
    const auto run_a = writer.create_run(first);
    const auto run_b = writer.create_run(second);
    launch::HistorySink a(writer, run_a), b(writer, run_b);
    // The records view the frame's text: it lives as long as they are used.
    const auto frame = [](int steps) {
      std::string records;
      for (int step = 1; step <= steps; ++step)
        records += std::string(step > 1 ? "," : "") + "{\"type\":\"step\",\"step\":" + std::to_string(step) +
                   ",\"rank\":0,\"wall_time_s\":1.0,\"loss\":2.0,\"lr\":0.1}";
      return "{\"v\":1,\"type\":\"data\",\"run\":\"0123456789abcdef0123456789abcdef\",\"seq\":1,\"records\":[" + records + "]}";
    };
    const std::string of_b = frame(20), of_a = frame(1);
    b.records(0, 1, protocol::get_records(protocol::read_frame(of_b), 1000));
    b.sync(true);  // commits b's 41 records
    QCOMPARE(b.durable_seq(0), int64_t{1});
    a.records(0, 1, protocol::get_records(protocol::read_frame(of_a), 1000));  // 3 records, queued, not committed
    a.sync(false);
    QCOMPARE(a.durable_seq(0), int64_t{0});
    QCOMPARE(store::History(db).points(run_a.id, "loss", 0).size(), size_t{0});
    writer.flush();
    a.sync(false);
    QCOMPARE(a.durable_seq(0), int64_t{1});
    QCOMPARE(store::History(db).points(run_a.id, "loss", 0).size(), size_t{1});
    writer.close();
  }

  void historySinkStoresADivergedStepsNaN() {
    QTemporaryDir dir;
    const std::string db = dir.filePath("history.sqlite").toStdString();
    const std::string frame =
        "{\"v\":1,\"type\":\"data\",\"run\":\"0123456789abcdef0123456789abcdef\",\"seq\":1,\"records\":["
        "{\"type\":\"step\",\"step\":1,\"rank\":0,\"wall_time_s\":0.5,\"loss\":5.5,\"grad_norm\":1.0},"
        "{\"type\":\"step\",\"step\":2,\"rank\":0,\"wall_time_s\":1.0,\"loss\":null,\"grad_norm\":\"inf\"},"
        "{\"type\":\"step\",\"step\":3,\"rank\":0,\"wall_time_s\":1.5,\"loss\":\"nan\",\"grad_norm\":\"-inf\",\"note\":\"x\"}]}";
    const SunkFrame sunk = sink_frame(db, "diverged", frame);
    const std::string& run_id = sunk.run_id;
    QCOMPARE(sunk.skipped, int64_t{0});
    QCOMPARE(sunk.points, int64_t{6});
    QCOMPARE(sunk.steps.size(), size_t{3});
    store::History history(db);
    const auto loss = history.points(run_id, "loss", 0);
    QCOMPARE(loss.size(), size_t{3});
    QCOMPARE(loss[0].value, 5.5);
    QVERIFY(std::isnan(loss[1].value) && std::isnan(loss[2].value));
    const auto grad_norm = history.points(run_id, "grad_norm", 0);
    QCOMPARE(grad_norm.size(), size_t{3});
    QCOMPARE(grad_norm[1].value, std::numeric_limits<double>::infinity());
    QCOMPARE(grad_norm[2].value, -std::numeric_limits<double>::infinity());
    const auto summary = history.summary(run_id);
    QVERIFY(summary.final_loss && std::isnan(*summary.final_loss));
  }

  // The agent's one look into a rank's record: valid JSON, and its top-level "type".
  void theTopLevelTypeOfARecordIsRead() {
    std::string type;
    QVERIFY(protocol::is_json(R"({"type":"run_end","state":"done"})", &type));
    QCOMPARE(type, std::string("run_end"));
    QVERIFY(protocol::is_json(R"({"a":{"type":"run_end"},"type":"step"})", &type));
    QCOMPARE(type, std::string("step"));
    QVERIFY(protocol::is_json(R"({"typ\u0065":"rank\u005fexit"})", &type));
    QCOMPARE(type, std::string("rank_exit"));
    QVERIFY(protocol::is_json(R"({"type":5,"x":"type"})", &type));
    QCOMPARE(type, std::string());
    QVERIFY(protocol::is_json(R"({"type":"run_end","type":5})", &type));  // the last decides, as for the workbench
    QCOMPARE(type, std::string());
    QVERIFY(!protocol::is_json(R"({"type":"step")", &type));
  }

  void fieldsAreTypedAndBounded() {
    const auto m = nlohmann::json::parse(
        R"({"run":"0123456789abcdef0123456789abcdef","seq":5,"big":18446744073709551615,"neg":-1,"s":"abc","a":[1,2,3]})");
    QCOMPARE(protocol::get_run_id(m), std::string("0123456789abcdef0123456789abcdef"));
    QCOMPARE(protocol::get_int(m, "seq", 0, 10), int64_t{5});
    QVERIFY_THROWS_EXCEPTION(protocol::ProtocolError, protocol::get_int(m, "big", 0, 10));
    QVERIFY_THROWS_EXCEPTION(protocol::ProtocolError, protocol::get_int(m, "neg", 0, 10));
    QVERIFY_THROWS_EXCEPTION(protocol::ProtocolError, protocol::get_int(m, "s", 0, 10));
    QVERIFY_THROWS_EXCEPTION(protocol::ProtocolError, protocol::get_string(m, "s", 2));
    QVERIFY_THROWS_EXCEPTION(protocol::ProtocolError, protocol::get_array(m, "a", 2));
    QVERIFY_THROWS_EXCEPTION(protocol::ProtocolError, protocol::get_object(m, "a"));
    QVERIFY(!protocol::is_run_id("../../etc/passwd0123456789abcdef"));
    QVERIFY(!protocol::is_run_id("0123456789ABCDEF0123456789abcdef"));
    const auto error = nlohmann::json::parse(protocol::make_error(ErrorCode::unknown_run, "no run x", "attach"));
    QCOMPARE(error["code"], "unknown_run");
    QCOMPARE(error["in_reply_to"], "attach");
  }

  void keyFilesRoundTripAndStaySecret() {
    QTemporaryDir dir;
    const std::string keys = dir.path().toStdString() + "/keys";
    const auto pair = protocol::generate_keypair();
    QVERIFY(protocol::is_z85_key(pair.public_key));
    protocol::write_keypair(keys, "agent", pair);
    QCOMPARE(protocol::read_keypair(keys, "agent").secret_key, pair.secret_key);
    QCOMPARE(protocol::read_public_key(keys + "/agent.pub"), pair.public_key);
    QCOMPARE(std::filesystem::status(keys + "/agent.key").permissions() & std::filesystem::perms::group_read,
             std::filesystem::perms::none);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, protocol::write_keypair(keys, "agent", pair));  // never overwritten
    std::filesystem::permissions(keys + "/agent.key", std::filesystem::perms::others_read, std::filesystem::perm_options::add);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, protocol::read_keypair(keys, "agent"));

    const std::string authorized = dir.path().toStdString() + "/authorized";
    std::ofstream(authorized) << "# comment\n\n" << pair.public_key << " alice@lab\n";
    QCOMPARE(protocol::read_authorized_keys(authorized), std::set<std::string>{pair.public_key});
    std::ofstream(authorized, std::ios::app) << "not-a-key\n";
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, protocol::read_authorized_keys(authorized));

    protocol::KnownAgents known(dir.path().toStdString() + "/known_agents");
    QVERIFY(!known.key_of("tcp://a:7070"));
    known.pin("tcp://a:7070", pair.public_key);
    known.pin("tcp://b:7070", protocol::generate_keypair().public_key);
    QCOMPARE(*known.key_of("tcp://a:7070"), pair.public_key);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, known.pin("tcp://c:1", "short"));
    // A space, tab, line break or DEL would make another field or entry of the file.
    for (const char* forged : {"tcp://c:1 tcp://d:1", "tcp://c:1\ttcp://d:1", "tcp://c:1\n", "tcp://c\x7f:1", ""})
      QVERIFY_THROWS_EXCEPTION(std::runtime_error, known.pin(forged, pair.public_key));
    QVERIFY(!known.key_of("tcp://c:1"));
  }

  // MASTER_ADDR's one rule, the agent's and tessera-train's: ":::" and "-oProxy" passed the agent's
  // own check and the ranks spent the rendezvous's minute on them.
  void masterAddressesFollowOneRule() {
    for (const char* host : {"10.0.0.1", "node-1.cluster.local", "gpu_7", "::1", "fe80::1%eth0", "localhost"})
      QVERIFY2(protocol::host_syntax_problem(host).empty(), host);
    QCOMPARE(protocol::host_syntax_problem(":::"), std::string("it has ':' but is no IPv6 address"));
    QCOMPARE(protocol::host_syntax_problem("-oProxy"), std::string("it starts with '-', which no host name has"));
    QCOMPARE(protocol::host_syntax_problem("a b"), std::string("it holds a space, which no host name or address has"));
    QCOMPARE(protocol::host_syntax_problem(""), std::string("it is empty"));
    QVERIFY(!protocol::host_syntax_problem(std::string(254, 'a')).empty());
  }

  void tcpEndpointsParseByOneRule() {
    using protocol::PortRule;
    const auto ipv6 = protocol::parse_tcp_endpoint("tcp://[fe80::1]:7070");
    QCOMPARE(ipv6.host, std::string("fe80::1"));
    QCOMPARE(ipv6.port, std::string("7070"));
    QCOMPARE(protocol::parse_tcp_endpoint("tcp://gpu-1:65535").port, std::string("65535"));
    QCOMPARE(protocol::parse_tcp_endpoint("tcp://127.0.0.1:0", PortRule::bind).port, std::string("0"));
    QCOMPARE(protocol::parse_tcp_endpoint("tcp://127.0.0.1:*", PortRule::bind).port, std::string("*"));
    for (const char* bad : {"tcp://gpu1:0", "tcp://gpu1:*", "tcp://gpu1:65536", "tcp://gpu1:123456", "tcp://gpu1:-1",
                            "tcp://gpu1:7070 ", "tcp://gpu\x7f:7070", "udp://gpu1:7070", "tcp://gpu1", "tcp://:7070", ""})
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, protocol::parse_tcp_endpoint(bad));
    for (const char* bad : {"tcp://gpu1:65536", "tcp://gpu1:abc", "tcp://gpu1:**", "tcp://gpu1:", "tcp://a b:1"})
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, protocol::parse_tcp_endpoint(bad, PortRule::bind));
    try {
      protocol::parse_tcp_endpoint("tcp://gpu1:99999", PortRule::bind);
      QFAIL("port 99999 was accepted");
    } catch (const std::invalid_argument& e) {
      QCOMPARE(std::string(e.what()), std::string("tcp://gpu1:99999 is not tcp://HOST:PORT (PORT is 0-65535; 0 or * picks a free port)"));
    }
    QCOMPARE(protocol::with_unsafe_shown("a b\tc\x7f"), std::string("a?b?c?"));
    QCOMPARE(protocol::with_unsafe_shown("a b\tc", protocol::is_control_byte), std::string("a b?c"));
    // The agent binds what ZeroMQ understands: 127.0.0.1 for localhost, '*' for a free port.
    QCOMPARE(agent::zmq_bind_address("tcp://localhost:0"), std::string("tcp://127.0.0.1:*"));
    QCOMPARE(agent::zmq_bind_address("tcp://[::1]:7070"), std::string("tcp://[::1]:7070"));
    QCOMPARE(agent::zmq_bind_address("tcp://0.0.0.0:00"), std::string("tcp://0.0.0.0:*"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, agent::zmq_bind_address("tcp://0.0.0.0:70000"));
  }

  void loopbackMeansAnAddressNotAName() {
    QVERIFY(protocol::is_loopback_endpoint("tcp://127.0.0.1:7070"));
    QVERIFY(protocol::is_loopback_endpoint("tcp://127.0.0.2:*"));
    QVERIFY(protocol::is_loopback_endpoint("tcp://localhost:1"));
    QVERIFY(protocol::is_loopback_endpoint("tcp://[::1]:1"));
    QVERIFY(!protocol::is_loopback_endpoint("tcp://127.evil.example.com:7070"));
    QVERIFY(!protocol::is_loopback_endpoint("tcp://0.0.0.0:7070"));
    QVERIFY(!protocol::is_loopback_endpoint("tcp://10.0.0.1:7070"));
  }

  void agentRefusesUnsafeOptions() {
    QTemporaryDir dir;
    agent::AgentOptions options;
    options.runtime = "/bin/true";
    options.workdir = dir.path().toStdString();
    options.bind = "tcp://0.0.0.0:7070";
    try {
      agent::check_options(options);
      QFAIL("a non-loopback bind without keys was accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY(std::string(e.what()).find("--keys") != std::string::npos);
    }
    options.bind = "tcp://127.0.0.1:7070";
    agent::check_options(options);
    options.keys = protocol::generate_keypair();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, agent::check_options(options));  // keys but nobody authorized
    options.authorized_keys = {protocol::generate_keypair().public_key};
    agent::check_options(options);
    for (const char* bad : {"tcp://127.0.0.1:99999", "tcp://127.0.0.1:abc", "tcp://127.0.0.1 :7070", "127.0.0.1:7070"}) {
      options.bind = bad;
      try {
        agent::check_options(options);
        QFAIL(qPrintable(QString("--bind %1 was accepted").arg(bad)));
      } catch (const std::invalid_argument& e) {
        QVERIFY2(std::string(e.what()).rfind("--bind ", 0) == 0 && std::string(e.what()).find("is not tcp://HOST:PORT") != std::string::npos, e.what());
      }
    }
    options.bind = "tcp://127.0.0.1:*";
    agent::check_options(options);
    options.runtime = "/nonexistent/tessera-train";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, agent::check_options(options));
    // A --workdir that is a file, or below one: named as the bad argument (it was a bare filesystem error).
    options.runtime = "/bin/true";
    QVERIFY(std::filesystem::is_directory(dir.filePath("runs").toStdString()));
    const std::string file = dir.filePath("a-file").toStdString();
    std::ofstream(file) << "x";
    for (const auto& [workdir, message] : {std::pair<std::string, std::string>{file, "--workdir " + file + " is not a directory"},
                                           {file + "/sub", "--workdir " + file + "/sub: cannot create " + file + "/sub/runs: "}}) {
      options.workdir = workdir;
      try {
        agent::check_options(options);
        QFAIL(qPrintable(QString::fromStdString("--workdir " + workdir + " was accepted")));
      } catch (const std::invalid_argument& e) {
        QVERIFY2(std::string(e.what()).find(message) == 0, e.what());
      }
    }
  }

  void outboxSpillsAndResendsUntilAcknowledged() {
    QTemporaryDir dir;
    const std::string spill = dir.path().toStdString() + "/outbox.spill";
    agent::Outbox outbox(spill, 1000, int64_t{1} << 20);  // about ten frames in memory, 1 MiB on disk
    auto frame = [](int64_t seq) { return "frame " + std::to_string(seq) + std::string(90, '.'); };
    for (int64_t seq = 1; seq <= 100; ++seq) outbox.push(frame(seq));
    QCOMPARE(outbox.last_seq(), int64_t{100});
    QVERIFY(outbox.memory_bytes() <= 1000);
    QVERIFY(outbox.spilled_frames() >= 85);
    QVERIFY(std::filesystem::exists(spill));
    for (int64_t seq = 1; seq <= 100; ++seq) QCOMPARE(outbox.frame(seq), frame(seq));
    outbox.acknowledge(40);
    QCOMPARE(outbox.pending(), int64_t{60});
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, outbox.frame(40));
    QCOMPARE(outbox.frame(41), frame(41));
    outbox.acknowledge(10);  // an old acknowledgement changes nothing
    QCOMPARE(outbox.acked(), int64_t{40});
    outbox.acknowledge(100);
    QCOMPARE(outbox.pending(), int64_t{0});
    QVERIFY(!std::filesystem::exists(spill));  // fully acknowledged: the spill file is gone
    outbox.push(frame(101));
    QCOMPARE(outbox.frame(101), frame(101));
  }

  void outboxThatCannotSpillPausesAndLosesNothing() {
    // The spill file cannot be created (a full disk reads the same): pushing goes on without an
    // exception escaping into the agent's loop; the frames stay in memory, the outbox reads full (the
    // ranks pause), and acknowledgements make room again.
    agent::Outbox outbox("/nonexistent-dir/outbox.spill", 1000, int64_t{1} << 20);
    auto frame = [](int64_t seq) { return "frame " + std::to_string(seq) + std::string(190, '.'); };
    for (int64_t seq = 1; seq <= 10; ++seq) outbox.push(frame(seq));
    QVERIFY(outbox.full());
    QVERIFY2(outbox.spill_error().find("cannot create the outbox spill file") != std::string::npos, outbox.spill_error().c_str());
    QCOMPARE(outbox.spilled_frames(), int64_t{0});
    for (int64_t seq = 1; seq <= 10; ++seq) QCOMPARE(outbox.frame(seq), frame(seq));
    outbox.acknowledge(8);
    QVERIFY(!outbox.full());
    QVERIFY(outbox.spill_error().empty());  // nothing left to spill: the last attempt did not fail
    QCOMPARE(outbox.frame(10), frame(10));
  }

  void ranksSplitIntoNodeSharesInGridOrder() {
    auto spec = spec::parse_spec(nlohmann::json{
        {"model", {{"preset", "tiny-gpt"}}},
        {"parallel", {{"tp", 2}, {"dp", 2}}},
        {"training", {{"micro_batch_size", 1}, {"precision", "fp32"}}},
        {"cluster", {{"gpu", "cpu"}, {"nodes", 2}, {"gpus_per_node", 2}}}});
    const auto shares = launch::node_shares(spec);
    QCOMPARE(shares, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
    QCOMPARE(launch::endpoint_host("tcp://127.0.0.2:7070"), std::string("127.0.0.2"));
    QCOMPARE(launch::endpoint_host("tcp://[::1]:7070"), std::string("::1"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch::endpoint_host("ipc:///tmp/x"));
    for (const char* bad : {"tcp://gpu1:7070\ntcp://x:1 AAAA", "tcp://gpu 1:7070", "tcp://gpu1:99999", "tcp://gpu1:0",
                            "tcp://gpu1:abc", "tcp://gpu1:", "tcp://:7070"})
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, launch::endpoint_host(bad));
    try {
      launch::endpoint_host("tcp://gpu1:7070\ntcp://x:1");
    } catch (const std::invalid_argument& e) {
      QCOMPARE(std::string(e.what()),
               std::string("agent endpoint tcp://gpu1:7070?tcp://x:1 is not tcp://HOST:PORT (no spaces or control characters)"));
    }
  }
};

QTEST_APPLESS_MAIN(TestWire)
#include "test_wire.moc"
