// The layout search against planning every layout of its space one by one through the spec's JSON
// path (the same counts, the same fastest layouts in the same order, each re-planned to the same
// figures), ties to the simpler layout, the same result on any number of threads, the memory limit,
// the spec's own place (or why it has none on a new cluster), experts, ZeRO's spelling, what
// tessera-train runs, the default space's rules, progress, cancellation, planner failures and the
// errors that name a choice.
#include <QtTest/QtTest>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <tuple>

#include "planner/layout_search.hpp"
#include "planner/runtime_support.hpp"

using namespace tessera;
using nlohmann::json;

namespace {

json llama8b_doc() {
  return {{"model", {{"preset", "llama3-8b"}}},
          {"parallel", {{"tp", 2}, {"pp", 2}, {"sequence_parallel", true}}},
          {"training", {{"micro_batch_size", 1}, {"global_batch_size", 64}, {"recompute", "full"}}},
          {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}}};
}

planner::SearchSpace small_space() {
  planner::SearchSpace space;
  space.tp = {1, 2, 4, 8};
  space.cp = {1, 2};
  space.pp = {1, 2, 4};
  space.vpp = {2, 3};  // PP·3 never divides the 32 layers: left out of the space
  space.ep = {1};
  space.micro_batch_size = {1, 2, 3};  // 3 never divides the global batch with dp: invalid
  space.zero_stage = {0, 1, 3};
  space.recompute = {spec::Recompute::none, spec::Recompute::full};
  space.schedule = {spec::Schedule::one_f_one_b, spec::Schedule::interleaved};
  return space;
}

struct Reference {
  int64_t candidates = 0, invalid = 0, over_memory = 0, fitting = 0;
  std::vector<double> tokens_per_s;  // of those that fit, fastest first
};

// Every layout of small_space() planned on its own: a document per layout, parsed as a user's file
// would be (parse errors are the invalid ones). Left out as the search documents: layouts whose
// TP·CP·PP does not divide the world or whose PP·VPP does not divide the layers, any schedule but
// 1F1B without a pipeline, virtual stages without interleaving, ZeRO 2/3 with a pipeline.
Reference plan_each(const json& doc, const planner::SearchSpace& space) {
  Reference ref;
  const auto capacity = spec::PresetCatalog::builtin().gpu(doc["cluster"]["gpu"].get<std::string>())->memory_bytes;
  for (int64_t tp : space.tp)
    for (int64_t cp : space.cp)
      for (int64_t pp : space.pp)
        for (auto schedule : space.schedule)
          for (int64_t vpp : schedule == spec::Schedule::interleaved ? space.vpp : std::vector<int64_t>{1})
            for (int zero : space.zero_stage)
              for (int64_t mbs : space.micro_batch_size)
                for (auto recompute : space.recompute) {
                  if (8 % (tp * cp * pp) != 0) continue;  // the cluster of llama8b_doc: 8 GPUs
                  if (32 % (pp * vpp) != 0) continue;     // its 32 layers
                  if (pp == 1 && schedule != spec::Schedule::one_f_one_b) continue;
                  if (pp > 1 && zero > 1) continue;
                  ++ref.candidates;
                  json d = doc;
                  d["parallel"] = {{"tp", tp}, {"cp", cp}, {"pp", pp}, {"vpp", vpp},
                                   {"schedule", std::string(spec::to_string(schedule))}, {"zero_stage", zero},
                                   {"sequence_parallel", tp > 1}};
                  d["training"]["micro_batch_size"] = mbs;
                  d["training"]["recompute"] = std::string(spec::to_string(recompute));
                  try {
                    const auto plan = planner::make_plan(spec::parse_spec(d));
                    if (plan.memory.peak_bytes > capacity) {
                      ++ref.over_memory;
                    } else {
                      ++ref.fitting;
                      ref.tokens_per_s.push_back(plan.prediction.tokens_per_s);
                    }
                  } catch (const spec::SpecError&) {
                    ++ref.invalid;
                  }
                }
  std::sort(ref.tokens_per_s.rbegin(), ref.tokens_per_s.rend());
  return ref;
}

}  // namespace

class TestLayoutSearch : public QObject {
  Q_OBJECT
 private slots:
  void agreesWithPlanningEveryLayout() {
    const json doc = llama8b_doc();
    const auto space = small_space();
    const auto ref = plan_each(doc, space);
    planner::SearchOptions options;
    options.top = 25;
    const auto r = planner::search_layouts(spec::parse_spec(doc), space, options);
    QCOMPARE(r.candidates, ref.candidates);
    QCOMPARE(r.planned, r.candidates);
    QCOMPARE(r.invalid, ref.invalid);
    QCOMPARE(r.over_memory, ref.over_memory);
    QCOMPARE(r.fitting, ref.fitting);
    QVERIFY(r.invalid > 0 && r.over_memory > 0 && r.fitting > 25);  // the case exercises all three
    QVERIFY(!r.cancelled);
    int64_t named = 0;
    for (const auto& [field, count] : r.invalid_fields) named += count;
    QCOMPARE(named, r.invalid);
    QCOMPARE(r.best.size(), size_t{25});
    for (size_t i = 0; i < r.best.size(); ++i) {
      const auto& b = r.best[i];
      QCOMPARE(b.tokens_per_s, ref.tokens_per_s[i]);
      // Each listed layout is a valid spec whose own plan gives the listed figures.
      const auto plan = planner::make_plan(b.spec);
      QCOMPARE(plan.prediction.tokens_per_s, b.tokens_per_s);
      QCOMPARE(plan.prediction.iteration_time_s, b.iteration_time_s);
      QCOMPARE(plan.prediction.mfu, b.mfu);
      QCOMPARE(plan.memory.peak_bytes, b.peak_bytes);
      QVERIFY(b.peak_bytes <= r.memory_limit_bytes);
      QCOMPARE(b.spec.parallel.sequence_parallel, b.spec.parallel.tp > 1);
      QCOMPARE(b.spec.model, spec::parse_spec(doc).model);
      QCOMPARE(b.spec.training.global_batch_size, int64_t{64});
      if (i > 0) QVERIFY(b.tokens_per_s <= r.best[i - 1].tokens_per_s);
    }
  }

  void sameResultOnAnyNumberOfThreads() {
    const auto s = spec::parse_spec(llama8b_doc());
    planner::SearchOptions one, three;
    one.threads = 1;
    three.threads = 3;
    one.top = three.top = 40;
    const auto a = planner::search_layouts(s, small_space(), one);
    const auto b = planner::search_layouts(s, small_space(), three);
    QCOMPARE(a.threads, 1);
    QCOMPARE(b.threads, 3);
    QCOMPARE(a.fitting, b.fitting);
    QCOMPARE(a.invalid_fields, b.invalid_fields);
    QCOMPARE(a.best.size(), b.best.size());
    for (size_t i = 0; i < a.best.size(); ++i) {
      QVERIFY(a.best[i].spec == b.best[i].spec);  // ties broken the same way
      QCOMPARE(a.best[i].tokens_per_s, b.best[i].tokens_per_s);
    }
  }

  // A space's lists are sets: the order and repeats of their values change nothing.
  void listsAreSets() {
    const auto s = spec::parse_spec(llama8b_doc());
    auto shuffled = small_space();
    shuffled.tp = {8, 2, 1, 2, 4};
    shuffled.micro_batch_size = {3, 2, 1, 2};
    shuffled.zero_stage = {3, 0, 1, 0};
    shuffled.recompute = {spec::Recompute::full, spec::Recompute::none, spec::Recompute::full};
    planner::SearchOptions options;
    options.top = 50;
    const auto a = planner::search_layouts(s, small_space(), options);
    const auto b = planner::search_layouts(s, shuffled, options);
    QCOMPARE(b.candidates, a.candidates);
    QCOMPARE(b.best.size(), a.best.size());
    for (size_t i = 0; i < a.best.size(); ++i) QVERIFY(a.best[i].spec == b.best[i].spec);
  }

  void memoryLimitIsKept() {
    json doc = {{"model", {{"preset", "llama3-70b"}}},
                {"training", {{"micro_batch_size", 1}, {"global_batch_size", 32}}},
                {"parallel", {{"tp", 8}}},
                {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 8}, {"gpus_per_node", 8}}}};
    const auto s = spec::parse_spec(doc);
    auto space = planner::default_search_space(s);
    planner::SearchOptions all, half;
    all.top = half.top = 100000;
    half.memory_fraction = 0.5;
    const auto a = planner::search_layouts(s, space, all);
    const auto h = planner::search_layouts(s, space, half);
    const int64_t capacity = spec::PresetCatalog::builtin().gpu("h100-sxm")->memory_bytes;
    QCOMPARE(a.memory_limit_bytes, capacity);
    QCOMPARE(h.memory_limit_bytes, capacity / 2);
    QVERIFY(a.over_memory > 0);
    QVERIFY(h.fitting > 0 && h.fitting < a.fitting);
    QCOMPARE(a.candidates, h.candidates);
    QCOMPARE(h.fitting + h.over_memory, a.fitting + a.over_memory);
    QCOMPARE(a.best.size(), size_t(a.fitting));
    for (const auto& b : h.best) QVERIFY(b.peak_bytes <= capacity / 2);
    // Whatever fits in half fits in all, so the best of all is at least as fast.
    QVERIFY(a.best.front().tokens_per_s >= h.best.front().tokens_per_s);
    // Any layout that was over the half limit but fits in the whole memory is listed by `all` only.
    QVERIFY(std::any_of(a.best.begin(), a.best.end(), [&](const auto& b) { return b.peak_bytes > capacity / 2; }));
  }

  void theSpecsOwnPlace() {
    const auto s = spec::parse_spec(llama8b_doc());
    planner::SearchOptions options;
    options.top = 100000;
    const auto r = planner::search_layouts(s, small_space(), options);
    QVERIFY(r.given && r.given_fits);
    QVERIFY(r.given->spec == s);
    QCOMPARE(r.given->tokens_per_s, planner::make_plan(s).prediction.tokens_per_s);
    const auto faster = std::count_if(r.best.begin(), r.best.end(),
                                      [&](const auto& b) { return b.tokens_per_s > r.given->tokens_per_s; });
    QCOMPARE(r.given_place, int64_t{faster} + 1);
    QVERIFY(r.given_place > 1);  // TP2·PP2 with full recompute is not the fastest of this space
    // The spec's layout is in the space: it is listed with its own figures.
    QVERIFY(std::any_of(r.best.begin(), r.best.end(), [&](const auto& b) {
      return b.spec.parallel == s.parallel && b.spec.training == s.training && b.tokens_per_s == r.given->tokens_per_s;
    }));
    QVERIFY(r.given_searched);
    QCOMPARE(r.given_among(), r.fitting);
    QVERIFY(r.given_outside.empty());
    QCOMPARE(planner::outside_space(s, small_space()), std::string());
    // Outside the space (TP 4 only), it is placed among the fitting layouts and itself.
    auto tp4 = small_space();
    tp4.tp = {4};
    const auto outside = planner::search_layouts(s, tp4, options);
    QVERIFY(outside.given && outside.given_fits && !outside.given_searched);
    QCOMPARE(outside.given_among(), outside.fitting + 1);
    QVERIFY(outside.given_place <= outside.given_among());
    // And why it is not in the space: its first choice the space leaves out (tiny-3d's spec was said
    // to be outside with no reason; SP off where the search turns it on).
    QCOMPARE(outside.given_outside, std::string("TP 2 is not among the values tried"));
    auto no_sp = s;
    no_sp.parallel.sequence_parallel = false;
    const auto sp = planner::search_layouts(no_sp, small_space(), options);
    QVERIFY(sp.given && sp.given_fits && !sp.given_searched);
    QCOMPARE(sp.given_outside, std::string("its sequence parallelism is off, and the search turns it on wherever TP > 1"));
    auto gpipe = s;
    gpipe.parallel.schedule = spec::Schedule::gpipe;
    auto no_gpipe = small_space();
    no_gpipe.schedule = {spec::Schedule::one_f_one_b};
    QCOMPARE(planner::outside_space(gpipe, no_gpipe), std::string("the gpipe schedule is not among the values tried"));
    auto mbs = small_space();
    mbs.micro_batch_size = {s.training.micro_batch_size + 1};
    QCOMPARE(planner::outside_space(s, mbs), "micro-batch " + std::to_string(s.training.micro_batch_size) + " is not among the values tried");

    // A layout over the memory has no place.
    json over = llama8b_doc();
    over["parallel"] = {{"tp", 1}};
    over["training"]["recompute"] = "none";
    over["training"]["micro_batch_size"] = 8;
    const auto o = planner::search_layouts(spec::parse_spec(over), small_space(), options);
    QVERIFY(!o.given_fits);
    QVERIFY(o.given->peak_bytes > o.memory_limit_bytes);
  }

  void batchAndDataParallelAsTheSpecGaveThem() {
    // No global batch: held at the spec's one microbatch per DP rank (mbs 2 · dp 2 = 4).
    json doc = llama8b_doc();
    doc["training"].erase("global_batch_size");
    doc["training"]["micro_batch_size"] = 2;
    const auto r = planner::search_layouts(spec::parse_spec(doc), small_space());
    QCOMPARE(r.global_batch_size, int64_t{4});
    QVERIFY(!r.best.empty());
    for (const auto& b : r.best) {
      QCOMPARE(b.spec.training.global_batch_size, int64_t{4});
      QCOMPARE(b.spec.parallel.dp, int64_t{0});  // derived, as the spec had it
    }
    // An explicit dp is written for each layout (so that the saved spec says it).
    doc = llama8b_doc();
    doc["parallel"]["dp"] = 2;
    const auto e = planner::search_layouts(spec::parse_spec(doc), small_space());
    QVERIFY(!e.best.empty());
    for (const auto& b : e.best) {
      QCOMPARE(b.spec.parallel.dp * b.spec.parallel.tp * b.spec.parallel.pp * b.spec.parallel.cp, int64_t{8});
      QVERIFY(spec::validate(b.spec).empty());
    }
  }

  void defaultSpaceFollowsItsRules() {
    const auto llama70b = spec::parse_spec(json{{"model", {{"preset", "llama3-70b"}}},
                                                {"training", {{"global_batch_size", 128}}},
                                                {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 8}, {"gpus_per_node", 8}}}});
    auto space = planner::default_search_space(llama70b);
    QCOMPARE(space.tp, (std::vector<int64_t>{1, 2, 4, 8}));
    QCOMPARE(space.pp, (std::vector<int64_t>{1, 2, 4, 8, 16}));  // divisors of 80 that divide 64
    QCOMPARE(space.cp, (std::vector<int64_t>{1, 2, 4, 8}));      // 8192 tokens: 1024 a rank at cp 8
    QCOMPARE(space.ep, (std::vector<int64_t>{1}));
    QCOMPARE(space.vpp, (std::vector<int64_t>{2, 4, 8}));
    QCOMPARE(space.zero_stage, (std::vector<int>{0, 1, 2, 3}));
    QCOMPARE(space.micro_batch_size, (std::vector<int64_t>{1, 2, 4, 8}));
    QCOMPARE(space.recompute.size(), size_t{3});
    QVERIFY(std::find(space.schedule.begin(), space.schedule.end(), spec::Schedule::gpipe) == space.schedule.end());

    // The spec's own values are always in it; experts give EP's divisors.
    const auto mixtral = spec::parse_spec(json{{"model", {{"preset", "mixtral-8x7b"}}},
                                               {"parallel", {{"tp", 2}}},
                                               {"training", {{"micro_batch_size", 3}, {"global_batch_size", 36}}},
                                               {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 6}}}});
    space = planner::default_search_space(mixtral);
    QCOMPARE(space.tp, (std::vector<int64_t>{1, 2, 3, 6}));
    QCOMPARE(space.ep, (std::vector<int64_t>{1, 2, 4, 8}));
    QCOMPARE(space.micro_batch_size, (std::vector<int64_t>{1, 2, 3, 4, 8}));
    const auto with_gpipe = spec::parse_spec(json{{"model", {{"preset", "llama3-8b"}}},
                                                  {"parallel", {{"pp", 2}, {"schedule", "gpipe"}}},
                                                  {"training", {{"global_batch_size", 16}}},
                                                  {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}}});
    space = planner::default_search_space(with_gpipe);
    QVERIFY(std::find(space.schedule.begin(), space.schedule.end(), spec::Schedule::gpipe) != space.schedule.end());
  }

  // Llama 3 405B's 126 layers: of the powers of two only PP 1 and 2 divide them; the search also tries
  // the pipelines whose end stages are set apart (Megatron-LM's uneven first and last stages), 7, 8 ×
  // 14, 7 on 16 stages as Meta trained it, and keeps a spec's own uneven split on its own stages.
  void unevenStagesAreSearched() {
    json doc = {{"model", {{"preset", "llama3-405b"}}},
                {"parallel", {{"tp", 8}, {"pp", 16}, {"first_stage_layers", 6}, {"last_stage_layers", 8}, {"sequence_parallel", true},
                              {"zero_stage", 1}}},
                {"training", {{"micro_batch_size", 1}, {"global_batch_size", 64}, {"recompute", "full"}}},
                {"cluster", {{"gpu", "b200"}, {"nodes", 16}, {"gpus_per_node", 8}}}};  // PP8 fits in 192 GB
    const auto s = spec::parse_spec(doc);
    const auto space = planner::default_search_space(s);
    QCOMPARE(space.pp, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64}));  // 128 stages would outnumber the layers

    planner::SearchSpace narrow;
    narrow.tp = {8};
    narrow.cp = {1};
    narrow.pp = {8, 16};
    narrow.vpp = {2};
    narrow.ep = {1};
    narrow.micro_batch_size = {1};
    narrow.zero_stage = {1};
    narrow.recompute = {spec::Recompute::full};
    narrow.schedule = {spec::Schedule::one_f_one_b, spec::Schedule::interleaved};
    planner::SearchOptions options;
    options.top = 10;
    const auto r = planner::search_layouts(s, narrow, options);
    QCOMPARE(r.candidates, int64_t{4});
    QCOMPARE(r.invalid, int64_t{0});
    QCOMPARE(r.fitting, int64_t{4});
    QCOMPARE(r.best.size(), size_t{4});
    std::map<std::pair<int64_t, int64_t>, std::string> splits;
    for (const auto& b : r.best) {
      QVERIFY2(spec::validate(b.spec).empty(), b.spec.layout_label().c_str());
      splits[{b.spec.parallel.pp, b.spec.parallel.vpp}] = b.spec.stage_layers_text();
      // Re-planned from its JSON, as Apply hands it to the designer: the same figures.
      const auto again = planner::make_plan(spec::parse_spec(spec::to_json(b.spec)));
      QCOMPARE(again.prediction.tokens_per_s, b.tokens_per_s);
      QCOMPARE(again.memory.peak_bytes, b.peak_bytes);
    }
    QVERIFY(r.given && r.given_searched);
    QCOMPARE(r.given->spec.stage_layers_text(), std::string("6, 8 × 15"));  // the spec's own split on its own stages
    const std::map<std::pair<int64_t, int64_t>, std::string> want = {
        {{8, 1}, "15, 16 × 6, 15"}, {{8, 2}, "16 × 7, 14"}, {{16, 1}, "6, 8 × 15"}, {{16, 2}, "8 × 15, 6"}};
    QCOMPARE(splits, want);
  }

  void progressAndCancel() {
    const auto s = spec::parse_spec(llama8b_doc());
    std::vector<std::pair<int64_t, int64_t>> calls;
    planner::SearchOptions options;
    options.progress = [&](int64_t planned, int64_t candidates) { calls.emplace_back(planned, candidates); };
    const auto r = planner::search_layouts(s, small_space(), options);
    QVERIFY(!calls.empty());
    QCOMPARE(calls.back(), std::make_pair(r.candidates, r.candidates));
    for (size_t i = 1; i < calls.size(); ++i) QVERIFY(calls[i].first >= calls[i - 1].first);

    // What the progress callback throws ends the search and reaches the caller.
    options.progress = [](int64_t, int64_t) { throw std::runtime_error("stop"); };
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, planner::search_layouts(s, small_space(), options));

    // Stopped from the first progress report of a long search (~20 s of planning on two cores): the
    // counts are of the layouts planned so far.
    {
      auto big = spec::parse_spec(json{{"model", {{"preset", "llama3-70b"}}},
                                       {"training", {{"global_batch_size", 1 << 20}}},
                                       {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 512}, {"gpus_per_node", 8}}}});
      auto space = planner::default_search_space(big);
      for (int64_t m = 9; m <= 16; ++m) space.micro_batch_size.push_back(m);
      std::atomic<bool> stop{false};
      planner::SearchOptions mid;
      mid.cancel = &stop;
      mid.progress = [&](int64_t, int64_t) { stop = true; };
      const auto started = std::chrono::steady_clock::now();
      const auto r = planner::search_layouts(big, space, mid);
      const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      QVERIFY(r.cancelled);
      QVERIFY(r.planned > 0 && r.planned < r.candidates);
      QCOMPARE(r.invalid + r.over_memory + r.fitting, r.planned);
      QVERIFY2(elapsed_s < 5, qPrintable(QString::number(elapsed_s)));
    }

    std::atomic<bool> cancel{true};
    options.cancel = &cancel;
    options.progress = nullptr;
    const auto c = planner::search_layouts(s, small_space(), options);
    QVERIFY(c.cancelled);
    QCOMPARE(c.planned, int64_t{0});
    QVERIFY(c.best.empty());
    QVERIFY(c.given.has_value());  // the spec's own plan is still there
  }

  // Equally fast layouts are listed simpler first: smaller TP, CP, PP, lower ZeRO, 1F1B before
  // interleaving before ZB-H1, fewer virtual stages, smaller EP and micro-batch, less recompute.
  void tiesGoToTheSimplerLayout() {
    const auto s = spec::parse_spec(llama8b_doc());
    planner::SearchOptions options;
    options.top = 100000;
    const auto r = planner::search_layouts(s, planner::default_search_space(s), options);
    const auto schedule_rank = [](spec::Schedule sc) {
      return sc == spec::Schedule::one_f_one_b ? 0 : sc == spec::Schedule::interleaved ? 1 : sc == spec::Schedule::zb_h1 ? 2 : 3;
    };
    const auto key = [&](const spec::RunSpec& l) {
      const auto& p = l.parallel;
      return std::tuple{p.tp, p.cp, p.pp, l.effective_zero_stage(), schedule_rank(p.schedule), p.vpp, p.ep,
                        l.training.micro_batch_size, static_cast<int>(l.training.recompute)};
    };
    int ties = 0;
    for (size_t i = 1; i < r.best.size(); ++i) {
      if (r.best[i].tokens_per_s != r.best[i - 1].tokens_per_s) continue;
      ++ties;
      QVERIFY2(key(r.best[i - 1].spec) < key(r.best[i].spec), qPrintable(QString::number(i)));
    }
    QVERIFY(ties > 10);  // ZeRO-2/3, DP against CP·micro-batch: the case has many
  }

  // A cluster the spec's own layout does not suit (TP8·PP4 on 16 GPUs): searched all the same.
  void searchesFromALayoutTheClusterDoesNotTake() {
    auto doc = llama8b_doc();
    doc["parallel"] = {{"tp", 8}, {"pp", 4}};
    doc["cluster"]["gpus_per_node"] = 4;
    const auto s = spec::parse_spec(doc, spec::PresetCatalog::builtin(), spec::Rules::except_layout);
    QVERIFY_THROWS_EXCEPTION(spec::SpecError, spec::parse_spec(doc));
    const auto r = planner::search_layouts(s, planner::default_search_space(s));
    QVERIFY(!r.given);
    QVERIFY2(QString::fromStdString(r.given_problem).contains("exceeds the world size"), r.given_problem.c_str());
    QVERIFY(!r.best.empty());
    for (const auto& b : r.best) {
      QVERIFY(b.spec.parallel.tp <= 4);  // TP within a node of 4
      QVERIFY(spec::validate(b.spec).empty());
    }
    // Problems besides the layout still end the search.
    doc["model"]["hidden_size"] = 4097;
    QVERIFY_THROWS_EXCEPTION(spec::SpecError,
                             spec::parse_spec(doc, spec::PresetCatalog::builtin(), spec::Rules::except_layout));
  }

  void expertsAndZeroSpelling() {
    const auto mixtral = spec::parse_spec(json{{"model", {{"preset", "mixtral-8x7b"}}},
                                               {"parallel", {{"tp", 2}, {"pp", 4}, {"distributed_optimizer", true}}},
                                               {"training", {{"global_batch_size", 64}}},
                                               {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 2}, {"gpus_per_node", 8}}}});
    planner::SearchOptions options;
    options.top = 500;
    const auto r = planner::search_layouts(mixtral, planner::default_search_space(mixtral), options);
    QVERIFY(std::any_of(r.best.begin(), r.best.end(), [](const auto& b) { return b.spec.parallel.ep > 1; }));
    for (const auto& b : r.best) {
      const auto& p = b.spec.parallel;
      QCOMPARE(8 % p.ep, int64_t{0});
      QCOMPARE((b.spec.data_parallel() * p.cp) % p.ep, int64_t{0});
      QCOMPARE(planner::make_plan(b.spec).prediction.tokens_per_s, b.tokens_per_s);
      // The spec spelt ZeRO-1 as distributed_optimizer: kept so; other stages as zero_stage.
      if (b.spec.effective_zero_stage() == 1) QVERIFY(p.distributed_optimizer && p.zero_stage == 0);
      else QVERIFY(!p.distributed_optimizer && p.zero_stage == b.spec.effective_zero_stage());
    }
  }

  void onlyWhatTesseraTrainRuns() {
    const auto s = spec::parse_spec(llama8b_doc());
    const auto space = planner::default_search_space(s, true);
    QCOMPARE(space.cp, (std::vector<int64_t>{1}));
    QCOMPARE(space.ep, (std::vector<int64_t>{1}));
    QCOMPARE(space.zero_stage, (std::vector<int>{0, 1}));
    QVERIFY(std::find(space.schedule.begin(), space.schedule.end(), spec::Schedule::zb_h1) == space.schedule.end());
    planner::SearchOptions options;
    options.top = 100000;
    options.tessera_train = true;
    // Given the whole space, the layouts tessera-train refuses are counted apart (not as breaking a
    // rule of the spec), by the field of its first limit, and never listed.
    const auto r = planner::search_layouts(s, planner::default_search_space(s), options);
    QVERIFY(!r.best.empty());
    for (const auto& b : r.best) QVERIFY(planner::tessera_train_problems(b.spec).empty());
    planner::SearchOptions any_runtime;
    any_runtime.top = 100000;
    const auto all = planner::search_layouts(s, planner::default_search_space(s), any_runtime);
    QCOMPARE(r.candidates, all.candidates);
    QVERIFY(r.fitting < all.fitting);
    QCOMPARE(r.invalid, all.invalid);
    QVERIFY(r.unsupported > 0);
    QCOMPARE(all.unsupported, int64_t{0});
    QCOMPARE(r.invalid + r.unsupported + r.over_memory + r.fitting, r.candidates);
    int64_t named = 0;
    for (const auto& [field, count] : r.unsupported_fields) {
      QVERIFY2(field == "parallel.cp" || field == "parallel.schedule" || field == "parallel.zero_stage", field.c_str());
      named += count;
    }
    QCOMPARE(named, r.unsupported);
    // A model tessera-train does not train ends the search, naming why.
    const auto mixtral = spec::parse_spec(json{{"model", {{"preset", "mixtral-8x7b"}}},
                                               {"training", {{"global_batch_size", 64}}},
                                               {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 2}, {"gpus_per_node", 8}}}});
    try {
      planner::search_layouts(mixtral, planner::default_search_space(mixtral, true), options);
      QFAIL("no error");
    } catch (const spec::SpecError& e) {
      QCOMPARE(e.errors().front().field, std::string("model.arch"));
      QCOMPARE(e.errors().back().field, std::string("model.num_experts"));
    }
  }

  // A valid spec the planner cannot time (non-finite constants): counted as the planner's, no crash;
  // one over the memory limit is counted so, untimed.
  void plannerFailuresAreCounted() {
    const auto s = spec::parse_spec(llama8b_doc());
    planner::SearchOptions options;
    options.plan.constants.gemm_half_size = std::numeric_limits<double>::quiet_NaN();
    options.threads = 2;
    const auto r = planner::search_layouts(s, small_space(), options);
    QVERIFY(!r.given);
    QVERIFY(!r.given_problem.empty());
    QVERIFY(r.best.empty());
    QCOMPARE(r.invalid + r.over_memory, r.candidates);
    QCOMPARE(r.fitting, int64_t{0});
    QVERIFY(r.over_memory > 0);
    QVERIFY(std::any_of(r.invalid_fields.begin(), r.invalid_fields.end(), [](const auto& f) { return f.first == "planner" && f.second > 0; }));
  }

  void errorsNameTheChoice() {
    const auto s = spec::parse_spec(llama8b_doc());
    const auto field_of = [&](planner::SearchSpace space, planner::SearchOptions options = {}) -> std::string {
      try {
        planner::search_layouts(s, space, options);
      } catch (const spec::SpecError& e) {
        return e.errors().front().field + ": " + e.errors().front().message;
      }
      return "no error";
    };
    auto space = small_space();
    space.tp.clear();
    QCOMPARE(field_of(space), std::string("search.tp: search.tp must list at least one value"));
    space = small_space();
    space.pp = {2, 0};
    QCOMPARE(field_of(space), std::string("search.pp: search.pp=0 must be a positive integer"));
    space = small_space();
    space.zero_stage = {4};
    QCOMPARE(field_of(space), std::string("search.zero_stage: search.zero_stage=4 must be 0, 1, 2 or 3"));
    space = small_space();
    space.schedule.clear();
    QCOMPARE(field_of(space), std::string("search.schedule: search.schedule must list at least one value"));
    planner::SearchOptions options;
    options.memory_fraction = 0;
    QVERIFY(QString::fromStdString(field_of(small_space(), options)).startsWith("search.memory_fraction: "));
    auto bad = s;
    bad.model.hidden_size = 4097;  // 32 heads
    QVERIFY_THROWS_EXCEPTION(spec::SpecError, planner::search_layouts(bad, small_space()));
    // A space with no layout of the cluster: refused, naming the choices.
    space = small_space();
    space.pp = {2};
    space.zero_stage = {2, 3};
    QVERIFY(QString::fromStdString(field_of(space)).startsWith("search: the search space has no layout of 8 ranks"));
    space = small_space();
    space.tp = {3, 5};
    QVERIFY(QString::fromStdString(field_of(space)).startsWith("search: the search space has no layout of 8 ranks"));
    // More layouts than a search plans: refused, naming the limit.
    space = planner::default_search_space(s);
    space.micro_batch_size.clear();
    for (int64_t m = 1; m <= 200000; ++m) space.micro_batch_size.push_back(m);
    QVERIFY(QString::fromStdString(field_of(space)).contains("more than 2000000 layouts"));
  }
};

QTEST_APPLESS_MAIN(TestLayoutSearch)
#include "test_layout_search.moc"
