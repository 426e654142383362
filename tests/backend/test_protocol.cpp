// The metrics records of backend/protocol: JSON round trips with the documented field names and
// order, and a clear error for a missing or mistyped field.
#include <QtTest/QtTest>

#include "protocol/records.hpp"

using namespace tessera::protocol;

class TestProtocol : public QObject {
  Q_OBJECT
 private slots:
  void stepRecordRoundTrips() {
    StepRecord r{7, 3, 1.5, 2.25, 0.5, 3e-4, 0.1, 1000, 0.02, 0.01, 0.05, 0.2, 0.3, 123456789, 98765, 234567890};
    const auto j = to_json(r);
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.push_back(k);
    QCOMPARE(keys, (std::vector<std::string>{"type", "step", "rank", "wall_time_s", "loss", "grad_norm", "lr",
                                             "step_time_s", "tokens_per_s", "comm_s", "model_tflops", "peak_tflops",
                                             "mfu", "bubble", "peak_memory_bytes", "live_memory_bytes",
                                             "peak_reserved_bytes"}));
    QCOMPARE(record_type(nlohmann::json::parse(j.dump())), std::string("step"));
    QVERIFY(step_record_from_json(nlohmann::json::parse(j.dump())) == r);
  }

  void recordsWithoutReservedBytesReadAsNoCache() {
    StepRecord r{};
    r.peak_memory_bytes = 4096;
    r.peak_reserved_bytes = 8192;
    auto j = nlohmann::json::parse(to_json(r).dump());
    QCOMPARE(step_record_from_json(j).peak_reserved_bytes, int64_t{8192});
    j.erase("peak_reserved_bytes");  // a record of a run from before the field existed
    QCOMPARE(step_record_from_json(j).peak_reserved_bytes, int64_t{4096});
    j["peak_reserved_bytes"] = "many";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, step_record_from_json(j));
  }

  void timelineRecordRoundTrips() {
    TimelineRecord r{2, 1, 1, "B", 3, 1, 0.25, 0.5};
    const auto j = nlohmann::json::parse(to_json(r).dump());
    QCOMPARE(record_type(j), std::string("timeline"));
    QVERIFY(timeline_record_from_json(j) == r);
  }

  void missingOrMistypedFieldsAreNamed() {
    auto j = nlohmann::json::parse(to_json(StepRecord{}).dump());
    j.erase("grad_norm");
    try {
      step_record_from_json(j);
      QFAIL("no error");
    } catch (const std::invalid_argument& e) {
      QVERIFY(std::string(e.what()).find("\"grad_norm\"") != std::string::npos);
    }
    j = nlohmann::json::parse(to_json(TimelineRecord{}).dump());
    j["op"] = 5;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, timeline_record_from_json(j));
  }
};

QTEST_APPLESS_MAIN(TestProtocol)
#include "test_protocol.moc"
