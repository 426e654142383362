// Bad input never crashes the planner: thousands of randomly mutated specs (wrong types, zero,
// negative, huge values, unknown fields, random bytes) either plan or fail with a SpecError.
#include <QtTest/QtTest>

#include <fstream>
#include <random>

#include "planner/plan.hpp"

using namespace tessera;
using nlohmann::json;

namespace {

json random_value(std::mt19937_64& rng) {
  switch (rng() % 12) {
    case 0: return 0;
    case 1: return -1;
    case 2: return int64_t{1} << 62;
    case 3: return int64_t{1} << 31;
    case 4: return static_cast<int64_t>(rng() % 9) + 1;
    case 5: return static_cast<int64_t>(1) << (rng() % 24);
    case 6: return 0.5;
    case 7: return 1e300;
    case 8: return "x";
    case 9: return true;
    case 10: return nullptr;
    default: return json::array({1, 2});
  }
}

json load(const char* name) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR "/resources/examples/") + name);
  return json::parse(in);
}

}  // namespace

class TestSpecFuzz : public QObject {
  Q_OBJECT
 private slots:
  void mutatedSpecsPlanOrFailCleanly() {
    std::mt19937_64 rng(20261129);
    const std::vector<json> bases = {load("tiny-3d.json"), load("llama3-70b-64xh100.json"), load("gpt3-175b-table1.json"),
                                     load("llama3-8b-8xh100.json")};
    int planned = 0, rejected = 0;
    for (int i = 0; i < 3000; ++i) {
      json doc = bases[rng() % bases.size()];
      const int mutations = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < mutations; ++k) {
        const auto& sections = spec::section_names();
        const std::string section = sections[rng() % sections.size()];
        const auto& fields = spec::field_names(section);
        std::string field = fields[rng() % fields.size()];
        if (rng() % 20 == 0) field += "_typo";
        if (rng() % 30 == 0) doc[section] = random_value(rng);  // a whole section of the wrong type
        else if (doc[section].is_object() || doc[section].is_null()) doc[section][field] = random_value(rng);
      }
      try {
        planner::PlanOptions options;
        options.include_grid = rng() % 4 == 0;
        const auto plan = planner::make_plan(spec::parse_spec(doc), options);
        QVERIFY(std::isfinite(plan.prediction.iteration_time_s));
        ++planned;
      } catch (const spec::SpecError& e) {
        QVERIFY(!e.errors().empty());
        for (const auto& err : e.errors()) QVERIFY2(!err.message.empty(), doc.dump().c_str());
        ++rejected;
      } catch (const std::exception& e) {
        QFAIL((std::string("unexpected ") + e.what() + " for " + doc.dump()).c_str());
      }
    }
    qInfo("planned %d, rejected %d", planned, rejected);
    QVERIFY(planned > 50);
    QVERIFY(rejected > 1000);
  }

  void randomBytesAreASpecError() {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 500; ++i) {
      std::string text(rng() % 64, '\0');
      for (auto& ch : text) ch = static_cast<char>(rng() % 256);
      if (i % 3 == 0) text = "{\"model\": " + text;
      try {
        spec::parse_spec_text(text);
        QFAIL("random bytes parsed as a spec");
      } catch (const spec::SpecError&) {
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestSpecFuzz)
#include "test_spec_fuzz.moc"
