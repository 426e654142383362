// Layout search: enumerates the space's layouts by index (mixed radix), plans them on worker threads,
// and keeps each worker's fastest; the calling thread reports progress and merges.
#include "planner/layout_search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "planner/runtime_support.hpp"

namespace tessera::planner {

namespace {

using Clock = std::chrono::steady_clock;

template <typename T>
void add_unique(std::vector<T>& values, T value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// The pipeline part of a layout. The spec names some combinations as meaningless rather than wrong
// (a schedule without pipeline, virtual stages without interleaving, ZeRO-2/3 with a pipeline), so
// they are left out of the space instead of counted as invalid. In their order here the simpler
// comes first: fewer stages, lower ZeRO, then 1F1B, interleaved (fewer virtual stages first), ZB-H1
// and GPipe.
struct PipelineChoice {
  int64_t pp = 1, vpp = 1;
  spec::Schedule schedule = spec::Schedule::one_f_one_b;
  int zero_stage = 0;
};

std::vector<PipelineChoice> pipeline_choices(const SearchSpace& space) {
  static constexpr spec::Schedule kSimplerFirst[] = {spec::Schedule::one_f_one_b, spec::Schedule::interleaved,
                                                     spec::Schedule::zb_h1, spec::Schedule::gpipe};
  std::vector<PipelineChoice> out;
  for (int64_t pp : space.pp)
    for (int zero : space.zero_stage) {
      if (pp == 1) {
        out.push_back({1, 1, spec::Schedule::one_f_one_b, zero});  // one stage: no schedule to choose
        continue;
      }
      if (zero > 1) continue;
      for (auto schedule : kSimplerFirst) {
        if (std::find(space.schedule.begin(), space.schedule.end(), schedule) == space.schedule.end()) continue;
        if (schedule != spec::Schedule::interleaved) out.push_back({pp, 1, schedule, zero});
        else
          for (int64_t vpp : space.vpp)
            if (vpp >= 2) out.push_back({pp, vpp, schedule, zero});
      }
    }
  return out;
}

// Index i of the space <-> one spec. The digits, most significant first: the shape (TP, CP and the
// pipeline choice, only those whose TP·CP·PP divides the world and whose PP·VPP divides the layers:
// others are no layout of this cluster and model), EP, micro-batch, recompute. With the space's numbers ascending, a lower index is the
// simpler layout, which is how ties are broken.
class Enumeration {
 public:
  Enumeration(const spec::RunSpec& base, const SearchSpace& space) : base_(base), space_(space) {
    const int64_t world = base.world_size();
    const auto pipelines = pipeline_choices(space);
    for (int64_t tp : space.tp)
      for (int64_t cp : space.cp)
        for (const auto& pipe : pipelines) {
          int64_t model_parallel = 0;
          if (__builtin_mul_overflow(tp, cp, &model_parallel) || __builtin_mul_overflow(model_parallel, pipe.pp, &model_parallel))
            continue;
          if (model_parallel > world || world % model_parallel != 0) continue;
          if (const auto split = stage_split(base, pipe)) shapes_.push_back({tp, cp, pipe, *split});
        }
    radix_ = {static_cast<int64_t>(shapes_.size()), static_cast<int64_t>(space.ep.size()),
              static_cast<int64_t>(space.micro_batch_size.size()), static_cast<int64_t>(space.recompute.size())};
    size_ = 1;  // capped just above the most a search plans, so that the product cannot overflow
    for (int64_t r : radix_) size_ = std::min(size_ * r, kMaxSearchCandidates + 1);
  }

  int64_t size() const { return size_; }

  /// Whether a candidate with `s`'s TP and CP has sequence parallelism: wherever TP > 1 allows it (SP
  /// splits a t5 decoder's sequence too, so both lengths must divide).
  static bool sequence_parallel_of(const spec::RunSpec& s) {
    const auto& p = s.parallel;
    return p.tp > 1 && s.model.seq_length % (p.tp * p.cp) == 0 && s.model.output_seq_length() % (p.tp * p.cp) == 0;
  }

  spec::RunSpec at(int64_t index) const {
    int64_t digit[4];
    for (int i = 3; i >= 0; --i) {
      digit[i] = index % radix_[i];
      index /= radix_[i];
    }
    const auto& shape = shapes_[digit[0]];
    spec::RunSpec s = base_;
    auto& p = s.parallel;
    p.tp = shape.tp;
    p.cp = shape.cp;
    p.pp = shape.pipe.pp;
    p.vpp = shape.pipe.vpp;
    p.schedule = shape.pipe.schedule;
    p.first_stage_layers = shape.split.first;
    p.last_stage_layers = shape.split.second;
    if (shape.pipe.zero_stage != base_.effective_zero_stage()) {  // else the spec's own spelling stays
      p.zero_stage = shape.pipe.zero_stage;
      p.distributed_optimizer = false;
    }
    p.ep = space_.ep[digit[1]];
    p.sequence_parallel = sequence_parallel_of(s);
    p.dp = 0;  // derived; an explicit dp is written back for the layouts returned
    s.training.micro_batch_size = space_.micro_batch_size[digit[2]];
    s.training.recompute = space_.recompute[digit[3]];
    return s;
  }

 private:
  struct Shape {
    int64_t tp, cp;
    PipelineChoice pipe;
    std::pair<int64_t, int64_t> split;  ///< first_stage_layers, last_stage_layers (0, 0: even)
  };

  // How a pipeline splits the layers: the base's own split on the base's own stages where it holds,
  // else an even one, else the end stages set apart (spec::balanced_end_stages: Llama 3 405B's 126
  // layers on 16 stages); nothing when none can be made.
  static std::optional<std::pair<int64_t, int64_t>> stage_split(const spec::RunSpec& base, const PipelineChoice& pipe) {
    const auto& own = base.parallel;
    if (base.sets_end_stages() && pipe.pp == own.pp && pipe.vpp == own.vpp && base.stages_split_layers())
      return std::pair{own.first_stage_layers, own.last_stage_layers};
    spec::RunSpec fitted = base;
    fitted.parallel.pp = pipe.pp;
    fitted.parallel.vpp = pipe.vpp;
    if (!spec::fit_stage_split(fitted)) return std::nullopt;
    return std::pair{fitted.parallel.first_stage_layers, fitted.parallel.last_stage_layers};
  }
  const spec::RunSpec& base_;
  const SearchSpace& space_;
  std::vector<Shape> shapes_;
  std::vector<int64_t> radix_;
  int64_t size_ = 0;
};

struct Scored {
  double tokens_per_s = 0;
  int64_t peak_bytes = 0;
  int64_t index = 0;
  double iteration_time_s = 0, mfu = 0, bubble_fraction = 0;
};

// Ties (symmetric layouts, a DP reduction hidden either way) go to the simpler layout: the lower index.
bool faster(const Scored& a, const Scored& b) {
  if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  return a.index < b.index;
}

// What one worker found.
struct Tally {
  std::vector<Scored> best;  // at most `top`, kept as a heap (slowest on top)
  int64_t invalid = 0, unsupported = 0, over_memory = 0, fitting = 0, faster_than_given = 0;
  bool has_given = false;  // the given layout was one of the fitting candidates
  std::map<std::string, int64_t> invalid_fields, unsupported_fields;

  void keep(const Scored& s, size_t top) {
    if (top == 0) return;
    if (best.size() < top) {
      best.push_back(s);
      std::push_heap(best.begin(), best.end(), faster);
    } else if (faster(s, best.front())) {
      std::pop_heap(best.begin(), best.end(), faster);
      best.back() = s;
      std::push_heap(best.begin(), best.end(), faster);
    }
  }
};

RankedLayout ranked(spec::RunSpec spec, const Plan& plan) {
  return {std::move(spec), plan.prediction.iteration_time_s, plan.prediction.tokens_per_s, plan.prediction.mfu,
          plan.prediction.bubble_fraction, plan.memory.peak_bytes};
}

}  // namespace

SearchSpace default_search_space(const spec::RunSpec& spec, bool tessera_train) {
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  const int64_t world = spec.world_size();
  // The spec's own values join the defaults; one that no spec could have (its layout is not
  // validated here) does not: validate()'s bounds.
  const auto add_own = [](std::vector<int64_t>& values, int64_t own, int64_t least, int64_t most = int64_t{1} << 16) {
    if (own >= least && own <= most) add_unique(values, own);
  };
  SearchSpace space;
  space.tp = divisors(spec.cluster.gpus_per_node);
  add_own(space.tp, p.tp, 1);
  space.cp = {1};
  if (!tessera_train) {
    for (int64_t cp = 2; cp <= world && m.seq_length % (2 * cp) == 0 && m.output_seq_length() % (2 * cp) == 0 &&
                         m.seq_length / cp >= 1024;
         cp *= 2)
      space.cp.push_back(cp);
    add_own(space.cp, p.cp, 1);
  }
  // Stages that split the layers evenly, or with the end stages set apart (Megatron-LM's uneven
  // first and last stages), as the enumeration will split them.
  for (int64_t pp : divisors(world)) {
    spec::RunSpec staged = spec;
    staged.parallel.pp = pp;
    staged.parallel.vpp = 1;
    if (spec::fit_stage_split(staged)) space.pp.push_back(pp);
  }
  add_own(space.pp, p.pp, 1);
  space.vpp = {2, 4, 8};
  add_own(space.vpp, p.vpp, 2);
  space.ep = m.is_moe() && !tessera_train ? divisors(m.num_experts) : std::vector<int64_t>{1};
  if (!tessera_train) add_own(space.ep, p.ep, 1);
  space.zero_stage = tessera_train ? std::vector<int>{0, 1} : std::vector<int>{0, 1, 2, 3};
  space.micro_batch_size = {1, 2, 4, 8};
  add_own(space.micro_batch_size, spec.training.micro_batch_size, 1, int64_t{1} << 20);
  space.recompute = {spec::Recompute::none, spec::Recompute::selective, spec::Recompute::full};
  space.schedule = {spec::Schedule::one_f_one_b, spec::Schedule::interleaved};
  if (!tessera_train) space.schedule.push_back(spec::Schedule::zb_h1);
  if (!tessera_train || p.schedule != spec::Schedule::zb_h1) add_unique(space.schedule, p.schedule);
  for (auto* values : {&space.tp, &space.cp, &space.pp, &space.vpp, &space.ep, &space.micro_batch_size})
    std::sort(values->begin(), values->end());
  return space;
}

void check_search_space(const SearchSpace& space) {
  std::vector<spec::FieldError> errors;
  auto positive = [&](const char* name, const std::vector<int64_t>& values) {
    const std::string field = std::string("search.") + name;
    if (values.empty()) errors.push_back({field, field + " must list at least one value"});
    for (int64_t v : values)
      if (v < 1) {
        errors.push_back({field, field + "=" + std::to_string(v) + " must be a positive integer"});
        break;
      }
  };
  positive("tp", space.tp);
  positive("cp", space.cp);
  positive("pp", space.pp);
  positive("vpp", space.vpp);
  positive("ep", space.ep);
  positive("micro_batch_size", space.micro_batch_size);
  if (space.zero_stage.empty()) errors.push_back({"search.zero_stage", "search.zero_stage must list at least one value"});
  for (int z : space.zero_stage)
    if (z < 0 || z > 3) {
      errors.push_back({"search.zero_stage", "search.zero_stage=" + std::to_string(z) + " must be 0, 1, 2 or 3"});
      break;
    }
  if (space.recompute.empty()) errors.push_back({"search.recompute", "search.recompute must list at least one value"});
  if (space.schedule.empty()) errors.push_back({"search.schedule", "search.schedule must list at least one value"});
  if (!errors.empty()) throw spec::SpecError(std::move(errors));
}

std::string outside_space(const spec::RunSpec& spec, const SearchSpace& space) {
  const auto tried = [](const auto& values, auto value) { return std::find(values.begin(), values.end(), value) != values.end(); };
  const auto& p = spec.parallel;
  const auto missing = [](const std::string& what) { return what + " is not among the values tried"; };
  if (!tried(space.tp, p.tp)) return missing("TP " + std::to_string(p.tp));
  if (!tried(space.cp, p.cp)) return missing("CP " + std::to_string(p.cp));
  if (!tried(space.pp, p.pp)) return missing("PP " + std::to_string(p.pp));
  if (p.pp > 1 && !tried(space.schedule, p.schedule)) return missing("the " + std::string(spec::to_string(p.schedule)) + " schedule");
  if (p.pp == 1 && p.schedule != spec::Schedule::one_f_one_b)
    return "its schedule is " + std::string(spec::to_string(p.schedule)) + " with one stage, which the search counts as 1f1b";
  if (p.schedule == spec::Schedule::interleaved && !tried(space.vpp, p.vpp)) return missing("VPP " + std::to_string(p.vpp));
  if (!tried(space.ep, p.ep)) return missing("EP " + std::to_string(p.ep));
  if (!tried(space.zero_stage, spec.effective_zero_stage())) return missing("ZeRO-" + std::to_string(spec.effective_zero_stage()));
  if (!tried(space.micro_batch_size, spec.training.micro_batch_size))
    return missing("micro-batch " + std::to_string(spec.training.micro_batch_size));
  if (!tried(space.recompute, spec.training.recompute))
    return missing("recompute " + std::string(spec::to_string(spec.training.recompute)));
  const bool searched_sp = Enumeration::sequence_parallel_of(spec);
  if (p.sequence_parallel != searched_sp)
    return p.sequence_parallel ? "its sequence parallelism is on where the search cannot turn it on"
                               : "its sequence parallelism is off, and the search turns it on wherever TP > 1";
  return {};
}

SearchResult search_layouts(const spec::RunSpec& spec, const SearchSpace& space, const SearchOptions& options) {
  const auto start = Clock::now();
  spec::require_valid(spec, spec::PresetCatalog::builtin(), spec::Rules::except_layout);
  check_search_space(space);
  if (!(options.memory_fraction > 0) || options.memory_fraction > 1)
    throw spec::SpecError({{"search.memory_fraction", "search.memory_fraction=" + std::to_string(options.memory_fraction) +
                                                          " must be greater than 0 and at most 1"}});

  SearchResult result;
  spec::RunSpec base = spec;
  if (base.training.global_batch_size == 0)
    base.training.global_batch_size = base.training.micro_batch_size * base.data_parallel();
  result.global_batch_size = base.training.global_batch_size;
  if (options.tessera_train) {
    // What tessera-train refuses whatever the layout (the model, the precision) ends the search here.
    spec::RunSpec plain = base;
    plain.parallel = spec::ParallelSpec{};
    plain.training.global_batch_size = plain.training.micro_batch_size * plain.data_parallel();  // one microbatch
    std::vector<spec::FieldError> problems;
    for (auto& e : tessera_train_problems(plain))
      if (e.field.rfind("parallel.", 0) != 0) problems.push_back(std::move(e));
    if (!problems.empty()) throw spec::SpecError(std::move(problems));
  }

  PlanOptions plan_options = options.plan;
  plan_options.include_grid = false;
  plan_options.record_events = false;
  const int64_t capacity = spec::PresetCatalog::builtin().gpu(base.cluster.gpu)->memory_bytes;
  result.memory_limit_bytes = static_cast<int64_t>(static_cast<double>(capacity) * options.memory_fraction);
  const auto fits = [&](const Plan& plan) { return capacity == 0 || plan.memory.peak_bytes <= result.memory_limit_bytes; };
  // A candidate over the limit is counted, not timed.
  PlanOptions candidate_options = plan_options;
  if (capacity > 0) candidate_options.predict_within_bytes = result.memory_limit_bytes;

  // The spec's own layout, when it has one on this cluster.
  auto given_errors = spec::validate(base);
  if (given_errors.empty() && options.tessera_train) given_errors = tessera_train_problems(base);
  if (given_errors.empty()) {
    try {
      const Plan given = make_plan(base, plan_options);
      result.given = ranked(spec, given);
      result.given_fits = fits(given);
    } catch (const std::exception& e) {
      result.given_problem = e.what();
    }
  } else {
    result.given_problem = given_errors.front().message;
  }

  // Each value once, numbers ascending (the enumeration's order is the tie-break's).
  SearchSpace ordered = space;
  const auto sort_unique = [](auto& values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
  };
  for (auto* values : {&ordered.tp, &ordered.cp, &ordered.pp, &ordered.vpp, &ordered.ep, &ordered.micro_batch_size})
    sort_unique(*values);
  sort_unique(ordered.zero_stage);
  sort_unique(ordered.recompute);
  const Enumeration space_index(base, ordered);
  if (space_index.size() > kMaxSearchCandidates)
    throw spec::SpecError({{"search", "the search space has more than " + std::to_string(kMaxSearchCandidates) +
                                          " layouts; give fewer values for some choices"}});
  if (space_index.size() == 0)
    throw spec::SpecError({{"search", "the search space has no layout of " + std::to_string(base.world_size()) +
                                          " ranks: TP·CP·PP must divide the world and PP·VPP the layers, interleaving "
                                          "needs PP > 1 and VPP >= 2, ZeRO-2/3 need PP 1 (search.tp, search.cp, "
                                          "search.pp, search.vpp, search.schedule, search.zero_stage)"}});
  result.candidates = space_index.size();

  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t chunk = 64;
  result.threads = static_cast<int>(std::clamp<int64_t>((result.candidates + chunk - 1) / chunk, 1,
                                                        options.threads > 0 ? options.threads : hardware));
  std::atomic<int64_t> next{0}, planned{0};
  std::atomic<bool> abort{false};
  std::vector<Tally> tallies(result.threads);
  std::mutex mutex;
  std::condition_variable done_cv;
  int finished = 0;
  std::exception_ptr failure;  // what stopped a worker (memory), rethrown after all have ended
  const auto stopped = [&] {
    return abort.load(std::memory_order_relaxed) || (options.cancel && options.cancel->load(std::memory_order_relaxed));
  };
  const double given_tokens = result.given && result.given_fits ? result.given->tokens_per_s : 0;
  // A candidate is the given layout when every choice of the space is the same.
  const auto is_given = [&](const spec::RunSpec& s) {
    const auto &a = s.parallel, &b = base.parallel;
    return result.given && a.tp == b.tp && a.cp == b.cp && a.pp == b.pp && a.vpp == b.vpp && a.ep == b.ep &&
           a.schedule == b.schedule && a.sequence_parallel == b.sequence_parallel &&
           s.effective_zero_stage() == base.effective_zero_stage() &&
           s.training.micro_batch_size == base.training.micro_batch_size && s.training.recompute == base.training.recompute;
  };

  auto work = [&](Tally& tally) {
    try {
      for (int64_t first; !stopped() && (first = next.fetch_add(chunk)) < result.candidates;) {
        const int64_t last = std::min(first + chunk, result.candidates);
        for (int64_t i = first; i < last; ++i) {
          const spec::RunSpec s = space_index.at(i);
          if (const auto errors = spec::validate(s); !errors.empty()) {
            ++tally.invalid;
            ++tally.invalid_fields[errors.front().field];
            continue;
          }
          if (options.tessera_train)
            if (const auto limits = tessera_train_problems(s); !limits.empty()) {
              ++tally.unsupported;
              ++tally.unsupported_fields[limits.front().field];
              continue;
            }
          std::optional<Plan> plan;
          try {
            plan = make_plan(s, candidate_options);
          } catch (const std::invalid_argument&) {  // a valid spec the planner cannot time (non-finite costs)
          }
          if (plan && !fits(*plan)) {
            ++tally.over_memory;
            continue;
          }
          if (!plan || !(std::isfinite(plan->prediction.tokens_per_s) && plan->prediction.tokens_per_s > 0)) {
            ++tally.invalid;
            ++tally.invalid_fields["planner"];
            continue;
          }
          ++tally.fitting;
          if (is_given(s)) tally.has_given = true;
          const auto& pr = plan->prediction;
          if (given_tokens > 0 && pr.tokens_per_s > given_tokens) ++tally.faster_than_given;
          tally.keep({pr.tokens_per_s, plan->memory.peak_bytes, i, pr.iteration_time_s, pr.mfu, pr.bubble_fraction},
                     options.top);
        }
        planned.fetch_add(last - first, std::memory_order_relaxed);
      }
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!failure) failure = std::current_exception();
      abort = true;
    }
    std::lock_guard lock(mutex);
    ++finished;
    done_cv.notify_all();
  };

  {
    std::vector<std::jthread> workers;
    workers.reserve(result.threads);
    for (int t = 0; t < result.threads; ++t) workers.emplace_back(work, std::ref(tallies[t]));
    std::unique_lock lock(mutex);
    while (!done_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished == result.threads; })) {
      if (!options.progress || abort) continue;
      lock.unlock();
      try {
        options.progress(planned.load(), result.candidates);
      } catch (...) {
        lock.lock();
        if (!failure) failure = std::current_exception();
        abort = true;
        continue;
      }
      lock.lock();
    }
  }  // the workers are joined here
  if (failure) std::rethrow_exception(failure);

  std::vector<Scored> best;
  std::map<std::string, int64_t> fields, limits;
  for (const auto& t : tallies) {
    result.invalid += t.invalid;
    result.unsupported += t.unsupported;
    result.given_searched = result.given_searched || t.has_given;
    for (const auto& [field, count] : t.unsupported_fields) limits[field] += count;
    result.over_memory += t.over_memory;
    result.fitting += t.fitting;
    result.given_place += t.faster_than_given;
    best.insert(best.end(), t.best.begin(), t.best.end());
    for (const auto& [field, count] : t.invalid_fields) fields[field] += count;
  }
  result.given_place += 1;
  result.planned = planned.load();
  result.cancelled = result.planned < result.candidates;
  if (result.given && result.given_fits && !result.given_searched && !result.cancelled) result.given_outside = outside_space(base, space);
  std::sort(best.begin(), best.end(), faster);
  if (best.size() > options.top) best.resize(options.top);
  for (const auto& b : best) {
    spec::RunSpec layout = space_index.at(b.index);
    if (spec.parallel.dp != 0) layout.parallel.dp = layout.data_parallel();
    result.best.push_back({std::move(layout), b.iteration_time_s, b.tokens_per_s, b.mfu, b.bubble_fraction, b.peak_bytes});
  }
  const auto most_first = [](const auto& a, const auto& b) { return a.second > b.second; };
  result.invalid_fields.assign(fields.begin(), fields.end());
  std::stable_sort(result.invalid_fields.begin(), result.invalid_fields.end(), most_first);
  result.unsupported_fields.assign(limits.begin(), limits.end());
  std::stable_sort(result.unsupported_fields.begin(), result.unsupported_fields.end(), most_first);
  if (options.progress) options.progress(result.planned, result.candidates);
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace tessera::planner
